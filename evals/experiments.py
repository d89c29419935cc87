"""Every run directory the final report reads: training seeds of each config, then best responses.

    python -m evals.experiments --config configs/experiments.yaml [--out DIR] [--only NAME] [--dry-run]
                                [--no-wandb] [--quiet]

The config (``configs/experiments.yaml``; `load_config` checks every key before anything
runs) lists training configs by label and fresh training seeds (never a tuning seed,
`coupjax.seeds`).  The plan has two kinds of item, each with its estimated time on this
machine (the config's ``estimate`` rates; a finished item shows its measured time):

* ``train/LABEL/seed_S``: `training.train.run_training` of the config with ``seed = S``
  into ``DIR/train/LABEL/seed_S`` (a run directory: checkpoints, export, summary.json;
  a league with exploiters, `training.exploiter_league`, trains its passes inside it),
  for every training seed, or the first ``config_seeds[LABEL]`` of them (a compute
  curve's smaller budgets, say), or the seeds ``config_seeds[LABEL]`` lists (a label
  retrained on fresh seeds, once a choice has been made on its earlier ones);
* ``exploit/LABEL/seed_S/FAMILY/br_B``: one best response of `evals.exploit`
  (`evals.exploit.measure_family`) to that run's export, best-response seed ``B``, its
  record in ``DIR/exploit/LABEL/seed_S/FAMILY/br_B.json``.  ``exploit.families`` run on
  every training seed with every ``exploit.br_seeds`` (one list, or a list per training
  seed: seeds added later get best-response seeds of their own); ``exploit.one_seed_families`` on
  each label's first training seed only, of the labels ``exploit.one_seed_configs`` (default:
  all of ``exploit.configs``), with the seeds ``exploit.one_seed_br_seeds`` (one list, or a
  list per training seed as ``br_seeds``; default: that seed's ``exploit.br_seeds``).

Resumable: a finished item (a run with its export and a complete summary, a best
response's JSON) is skipped; a cut run resumes from its last checkpoint (the trainer's
``--resume``); a run cut before its first checkpoint, or a cut best response, starts
again.  ``--only NAME`` keeps the items named ``NAME``, under ``NAME/``, or of label
``NAME``; ``--dry-run`` prints the plan and runs nothing (and records no seed).  The
best-response seeds are report seeds: tuning seeds are refused, held-out seeds recorded
in the ledger when their item runs.  ``DIR/experiments.yaml`` keeps the config the
final report (``python -m evals.report --final --runs DIR``) reads the labels and its
``report`` section from (`evals.experiments_keys`: what it plays, and the optional
``curve`` and ``targets`` of issue 40).
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Mapping

import yaml

from coupjax.args import Parser, fail, seconds
from coupjax.seeds import TUNING_SEEDS
from coupjax.yaml_file import read_yaml
from evals.experiments_keys import REPORT_KEYS, ExperimentsError
from evals.experiments_keys import check_known as _known
from evals.experiments_keys import br_seeds_for, changed_keys, label_seeds
from evals.experiments_keys import refuse as _fail
from evals.experiments_keys import report_section as _report
from evals.experiments_keys import str_list as _strs

PROG = "python -m evals.experiments"
QUICKSTART = "quickstart"
KEYS = ("out", "training_seeds", "configs", "set", "config_seeds", "exploit", "report", "estimate")
EXPLOIT_KEYS = ("configs", "families", "one_seed_families", "one_seed_configs", "br_seeds", "one_seed_br_seeds",
                "games", "set", "ppo_set", "search")
ESTIMATE_KEYS = ("compile_seconds", "selfplay_env_steps_per_second", "dqn_transitions_per_second",
                 "best_response_transitions_per_second", "tables_per_second", "search_tables_per_second")


def _ints(key: str, v, lo: int = 0) -> tuple:
    if not isinstance(v, (list, tuple)) or not v or any(isinstance(x, bool) or not isinstance(x, int) or x < lo
                                                        for x in v):
        _fail(f"config key {key} must be a non-empty list of integers >= {lo}, got {v!r}")
    if len(set(v)) != len(v):
        _fail(f"config key {key} repeats a seed: {list(v)}")
    return tuple(v)


@dataclasses.dataclass(frozen=True)
class ExperimentsConfig:
    out: str
    training_seeds: tuple
    configs: dict  # label -> config file or shipped name as given, or "quickstart"
    set: dict  # label -> (KEY=VALUE, ...)
    exploit: dict
    report: dict
    estimate: dict
    paths: dict = dataclasses.field(default_factory=dict)  # label -> the config file found, or "quickstart"
    config_seeds: dict = dataclasses.field(default_factory=dict)  # label -> how many of training_seeds, or its own list

    def seeds_of(self, label: str) -> tuple:
        """The training seeds ``label`` trains on (`evals.experiments_keys.label_seeds`)."""
        return label_seeds(self.training_seeds, self.config_seeds, label)

    def to_dict(self) -> dict:
        d = json.loads(json.dumps(dataclasses.asdict(self)))
        d.pop("paths")
        return d


def config_from_dict(raw: Mapping, base_dir: Path | None = None) -> ExperimentsConfig:
    """Validate a mapping into an `ExperimentsConfig` (module doc); every training config
    is loaded with its overrides, so a wrong key there stops the run too."""
    from training.config import QUICKSTART as QUICK
    from training.config import ConfigError, config_file
    from training.config import config_from_dict as from_dict

    _known("", raw, KEYS)
    base = Path(base_dir or ".")
    out = raw.get("out", "runs/experiments")
    if not isinstance(out, str) or not out:
        _fail(f"config key out must be a folder, got {out!r}")
    seeds = _ints("training_seeds", raw.get("training_seeds"))
    for s in seeds:
        if s in TUNING_SEEDS:
            _fail(f"config key training_seeds: seed {s} was used to tune ({TUNING_SEEDS[s]}); training seeds of a "
                  "final claim are fresh")
    configs = raw.get("configs")
    if not isinstance(configs, Mapping) or not configs:
        _fail(f"config key configs must map labels to training configs, got {configs!r}")
    sets = raw.get("set") or {}
    _known("set", sets, list(configs))
    resolved = {}
    for label, name in configs.items():
        if not isinstance(label, str) or "/" in label or not label or not isinstance(name, str):
            _fail(f"config key configs.{label}: a label (no '/') and a config name, got {label!r}: {name!r}")
        overrides = _strs(f"set.{label}", sets.get(label, []))
        try:
            if name == QUICKSTART:
                cfg = from_dict(QUICK, overrides)
                resolved[label] = QUICKSTART
            else:
                path = base / name if (base / name).is_file() else config_file(name)
                cfg = _load(path, overrides)
                resolved[label] = str(path.resolve())
        except ConfigError as err:
            _fail(f"config key configs.{label}: {err}")
        if cfg.algo not in ("dqn", "selfplay", "exploiter_league"):
            _fail(f"config key configs.{label}: {cfg.algo} runs are not trained in chunks")
    counts = dict(raw.get("config_seeds") or {})
    _known("config_seeds", counts, list(configs))
    for label, k in counts.items():
        if isinstance(k, (list, tuple)):
            own = _ints(f"config_seeds.{label}", k)
            for s in own:
                if s in TUNING_SEEDS:
                    _fail(f"config key config_seeds.{label}: seed {s} was used to tune ({TUNING_SEEDS[s]}); "
                          "training seeds of a final claim are fresh")
            counts[label] = list(own)
        elif isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(seeds):
            _fail(f"config key config_seeds.{label} must be a number of training seeds in [1, {len(seeds)}] "
                  f"or a list of training seeds, got {k!r}")
    ex = dict(raw.get("exploit") or {})
    _known("exploit", ex, EXPLOIT_KEYS)
    exploit = _exploit(ex, list(configs), lambda label: label_seeds(seeds, counts, label))
    rep = dict(raw.get("report") or {})
    _known("report", rep, REPORT_KEYS)
    report = _report(rep, list(configs))
    est = dict(raw.get("estimate") or {})
    _known("estimate", est, ESTIMATE_KEYS)
    for k, v in est.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            _fail(f"config key estimate.{k} must be a positive number, got {v!r}")
    estimate = {"compile_seconds": 25, "selfplay_env_steps_per_second": 21000, "dqn_transitions_per_second": 2900,
                "best_response_transitions_per_second": 9000, "tables_per_second": 40, "search_tables_per_second": 6,
                **est}
    return ExperimentsConfig(out, seeds, dict(configs), {k: list(_strs(f"set.{k}", v)) for k, v in sets.items()},
                             exploit, report, estimate, resolved, dict(counts))


def _load(path: Path, overrides):
    """A training config: an algorithm's (`training.config`), or a league with
    exploiters' (`training.exploiter_league`, ``algo: exploiter_league``)."""
    from training.config import load_config, read_config

    if read_config(path).get("algo") == "exploiter_league":
        from training.exploiter_league import load_exploiter_league_config

        return load_exploiter_league_config(path, overrides)
    return load_config(path, overrides)


def planned_chunks(tc) -> int:
    """The chunks a finished run of ``tc`` has done (a league's: every pass's)."""
    if tc.algo == "exploiter_league":
        from training.exploiter_league import total_chunks

        return total_chunks(tc)
    return tc.num_chunks


def _br_seeds(raw, training_seeds, key: str = "br_seeds") -> list | dict:
    """``exploit.br_seeds`` (or ``key``): one list for every training seed, or a mapping
    from each training seed to its own list (training seeds added later get best-response
    seeds no earlier criterion has spent, while the earlier runs keep theirs)."""
    if not isinstance(raw, Mapping):
        return list(_ints(f"exploit.{key}", raw))
    out = {}
    for name, seeds in raw.items():
        try:
            seed = int(name)
        except (TypeError, ValueError):
            _fail(f"config key exploit.{key}: {name!r} is not a training seed")
        if seed not in training_seeds:
            _fail(f"config key exploit.{key}: {seed} is not a training seed of the best responses' configs "
                  f"({list(training_seeds)})")
        out[seed] = list(_ints(f"exploit.{key}.{seed}", seeds))
    missing = [s for s in training_seeds if s not in out]
    if missing and key == "br_seeds":
        _fail(f"config key exploit.br_seeds names no best-response seeds for training seed(s) {missing}")
    return out


def _exploit(ex: dict, labels: list, seeds_of) -> dict:
    """``exploit``, checked; ``seeds_of(label)``: the training seeds a label trains on."""
    from evals.exploit import SEARCH_KEYS, parse_families

    out = {"configs": list(_strs("exploit.configs", ex.get("configs", labels)))}
    for c in out["configs"]:
        if c not in labels:
            _fail(f"config key exploit.configs: {c!r} is not a label of configs ({', '.join(labels)})")
    for key, default in (("families", ["dqn"]), ("one_seed_families", [])):
        try:
            out[key] = parse_families(",".join(_strs(f"exploit.{key}", ex.get(key, default)))) \
                if ex.get(key, default) else []
        except ValueError as err:
            _fail(f"config key exploit.{key}: {err}")
    out["one_seed_families"] = [f for f in out["one_seed_families"] if f not in out["families"]]
    out["one_seed_configs"] = list(_strs("exploit.one_seed_configs", ex.get("one_seed_configs", out["configs"])))
    for c in out["one_seed_configs"]:
        if c not in out["configs"]:
            _fail(f"config key exploit.one_seed_configs: {c!r} is not a label of exploit.configs "
                  f"({', '.join(out['configs'])})")
    if out["configs"] and (out["families"] or out["one_seed_families"]):
        training_seeds = list(dict.fromkeys(s for c in out["configs"] for s in seeds_of(c)))
        out["br_seeds"] = _br_seeds(ex.get("br_seeds"), training_seeds)
        one = ex.get("one_seed_br_seeds")
        out["one_seed_br_seeds"] = None if one is None else _br_seeds(one, training_seeds, "one_seed_br_seeds")
        if isinstance(out["one_seed_br_seeds"], dict) and out["one_seed_families"]:
            firsts = [seeds_of(c)[0] for c in out["one_seed_configs"]]
            missing = [s for s in dict.fromkeys(firsts) if s not in out["one_seed_br_seeds"]]
            if missing:
                _fail(f"config key exploit.one_seed_br_seeds names no best-response seeds for training seed(s) "
                      f"{missing}, the first of a label of exploit.one_seed_configs")
        for key in ("br_seeds", "one_seed_br_seeds"):
            seeds = [] if out[key] is None else out[key].values() if isinstance(out[key], dict) else [out[key]]
            for s in (s for group in seeds for s in group):
                if s in TUNING_SEEDS:
                    _fail(f"config key exploit.{key}: seed {s} was used to tune ({TUNING_SEEDS[s]}); best "
                          "responses are reports")
    else:
        out["br_seeds"], out["one_seed_br_seeds"] = [], []
    games = ex.get("games", 1000)
    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
        _fail(f"config key exploit.games must be a positive integer, got {games!r}")
    out["games"] = games
    out["set"] = list(_strs("exploit.set", ex.get("set", [])))
    out["ppo_set"] = list(_strs("exploit.ppo_set", ex.get("ppo_set", [])))
    search = ex.get("search") or {}
    _known("exploit.search", search, SEARCH_KEYS)
    out["search"] = {k: int(v) for k, v in search.items()}
    return out


def load_config(path) -> ExperimentsConfig:
    """Read and validate an experiments config file (YAML); config files it names are
    looked up next to it, then among the shipped configs."""
    return config_from_dict(read_yaml(path, ExperimentsError), Path(path).parent)


# ------------------------------------------------------------------ the plan
def training_config(cfg: ExperimentsConfig, label: str, seed: int):
    """The training config of ``label`` on training ``seed`` (its overrides, then the seed)."""
    from training.config import QUICKSTART as QUICK
    from training.config import config_from_dict as training_config_from_dict

    overrides = [*cfg.set.get(label, []), f"seed={int(seed)}"]
    name = cfg.paths[label]
    if name == QUICKSTART:
        return training_config_from_dict(QUICK, overrides)
    return _load(Path(name), overrides)


def run_dir(out: Path, label: str, seed: int) -> Path:
    return Path(out) / "train" / label / f"seed_{seed}"


def exploit_file(out: Path, label: str, seed: int, family: str, br: int) -> Path:
    return Path(out) / "exploit" / label / f"seed_{seed}" / family / f"br_{br}.json"


@dataclasses.dataclass
class Item:
    name: str
    kind: str  # "train" | "exploit"
    label: str
    seed: int
    path: Path
    estimate: float
    family: str | None = None
    br_seed: int | None = None
    state: str = "to do"  # "done" | "cut" | "to do"
    measured: float | None = None
    stale: list = dataclasses.field(default_factory=list)  # a done or cut run's keys made otherwise (`stale_keys`)


def _train_estimate(tc, est: dict) -> float:
    if tc.algo == "exploiter_league":  # its passes, and a DQN best response between two
        from training.config import config_file, load_config as load
        from training.exploiter_league import learner_config

        ex = load(config_file(tc.exploiter))
        chunks = tc.exploiter_budget or ex.num_chunks
        return (tc.passes * _train_estimate(learner_config(tc), est) + (tc.passes - 1)
                * (est["compile_seconds"] + chunks * ex.updates_per_chunk * ex.num_envs
                   / est["best_response_transitions_per_second"]))
    if tc.algo == "dqn":
        work = tc.num_chunks * tc.updates_per_chunk * tc.num_envs
        secs = est["compile_seconds"] + work / est["dqn_transitions_per_second"]
    else:
        work = tc.num_chunks * tc.updates_per_chunk * tc.num_envs * tc.rollout_steps * tc.num_seeds
        secs = est["compile_seconds"] + work / est["selfplay_env_steps_per_second"]
    return secs + (tc.eval_games / est["tables_per_second"] if tc.eval_games else 0.0)


def _exploit_estimate(cfg: ExperimentsConfig, family: str, est: dict) -> float:
    from evals.exploit import DEFAULT_CONFIG, search_curve_worlds
    from training.config import config_file, load_config as load
    from training.best_response import PPO_CONFIG

    games = cfg.exploit["games"]
    if family in ("dqn", "dqn4x"):
        d = load(config_file(DEFAULT_CONFIG), cfg.exploit["set"])
        work = d.num_chunks * d.updates_per_chunk * d.num_envs * (4 if family == "dqn4x" else 1)
        return (est["compile_seconds"] + work / est["best_response_transitions_per_second"]
                + games / est["tables_per_second"])
    if family == "ppo":
        p = load(config_file(PPO_CONFIG), cfg.exploit["ppo_set"])
        work = p.num_chunks * p.updates_per_chunk * p.num_envs * p.rollout_steps
        return est["compile_seconds"] + work / est["selfplay_env_steps_per_second"] + games / est["tables_per_second"]
    from coupjax.search import DEFAULT_CONFIG as SEARCH

    worlds = cfg.exploit["search"].get("num_worlds", SEARCH.num_worlds)
    return len(search_curve_worlds(worlds)) * games / est["search_tables_per_second"]


def _finished_run(path: Path, num_chunks: int) -> bool:
    try:
        summary = json.loads((path / "summary.json").read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return summary.get("chunks_done") == num_chunks and (path / "export").is_dir()


# keys a finished or cut run may differ in from its config now: they shape neither its
# export nor its state (the chunks done are the item's state; eval_games only its summary)
RUN_FREE_KEYS = ("num_chunks", "checkpoint_every", "max_checkpoints", "eval_games", "wandb_project", "wandb_mode")


def stale_keys(path: Path, tc) -> list[str]:
    """The keys of the training config ``tc`` that the run in ``path`` was made with other
    values of (its ``config.json``; a key it lacks, added since, counts as its default; a
    key ``tc`` lacks, dropped since, is not compared).  Why: a finished run is reused, so
    editing a config (a recipe's new setting) would otherwise keep the old runs as its."""
    from training.config import config_to_dict
    from training.runs import differing_keys

    try:
        saved = json.loads((path / "config.json").read_text())
    except (OSError, json.JSONDecodeError):
        return []  # no config written: a run cut before it started, which starts again
    return differing_keys(saved, config_to_dict(tc), config_to_dict(type(tc)()), RUN_FREE_KEYS, dropped=False)


def plan(cfg: ExperimentsConfig, out: Path, only: str | None = None) -> list[Item]:
    """Every item of the module doc, in order (the training before the best responses
    that read it), each with its state on disk and its estimated seconds."""
    out = Path(out)
    items = []
    for label in cfg.configs:
        for s in cfg.seeds_of(label):
            tc = training_config(cfg, label, s)
            p = run_dir(out, label, s)
            it = Item(f"train/{label}/seed_{s}", "train", label, s, p, _train_estimate(tc, cfg.estimate))
            if _finished_run(p, planned_chunks(tc)):
                it.state = "done"
                it.measured = json.loads((p / "summary.json").read_text()).get("wall_seconds")
            elif (p / "checkpoints").is_dir() and any((p / "checkpoints").iterdir()):
                it.state = "cut"
            if it.state != "to do":
                it.stale = stale_keys(p, tc)
            items.append(it)
    ex = cfg.exploit
    for label in ex["configs"]:
        for i, s in enumerate(cfg.seeds_of(label)):
            one_seed = ex["one_seed_families"] if i == 0 and label in ex["one_seed_configs"] else []
            for family in ex["families"] + one_seed:
                for br in br_seeds_for(ex, s, "one_seed_br_seeds" if family in one_seed else "br_seeds"):
                    p = exploit_file(out, label, s, family, br)
                    it = Item(f"exploit/{label}/seed_{s}/{family}/br_{br}", "exploit", label, s, p,
                              _exploit_estimate(cfg, family, cfg.estimate), family, br)
                    if p.is_file():
                        it.state = "done"
                        rec = json.loads(p.read_text())
                        it.measured = rec.get("train_seconds", 0.0) + rec.get("eval_seconds", 0.0)
                    items.append(it)
    if only:
        items = [it for it in items if it.name == only or it.name.startswith(only.rstrip("/") + "/")
                 or it.label == only]
    return items


def describe_plan(items: list[Item]) -> str:
    """The plan as printed: one line per item (state, estimate or measured time), then the totals."""
    lines = []
    for it in items:
        when = (f"measured {seconds(it.measured)}" if it.measured is not None else f"est. {seconds(it.estimate)}")
        lines.append(f"  [{it.state:>5}] {it.name:<58} {when}")
    left = [it for it in items if it.state != "done"]
    split = {}
    for it in left:
        split[it.kind] = split.get(it.kind, 0.0) + it.estimate
    parts = ", ".join(f"{k} {seconds(v)}" for k, v in split.items()) or "nothing"
    lines.append(f"{len(items)} items, {len(items) - len(left)} done; left: {len(left)} items, "
                 f"est. {seconds(sum(it.estimate for it in left))} ({parts})")
    return "\n".join(lines)


# ------------------------------------------------------------------ running it
def run_item(cfg: ExperimentsConfig, out: Path, it: Item, use_wandb: bool = True, quiet: bool = True) -> None:
    """Run one item of the plan (module doc): train or resume a run, or fit one best response."""
    if it.kind == "train":
        from training.train import run_training

        tc = training_config(cfg, it.label, it.seed)
        if tc.algo == "exploiter_league":  # resumes pass by pass on its own
            from training.exploiter_league import run_exploiter_league

            run_exploiter_league(tc, it.path, use_wandb=use_wandb, quiet=quiet)
            return
        resume = it.state == "cut"
        if not resume and it.path.exists():  # cut before its first checkpoint: nothing to resume
            shutil.rmtree(it.path)
        run_training(tc, it.path, resume=resume, use_wandb=use_wandb, quiet=quiet)
        return
    from evals.exploit import measure_family

    spec = str(run_dir(out, it.label, it.seed))
    ex = cfg.exploit
    rec = measure_family(it.family, spec, it.br_seed, games=ex["games"], overrides=ex["set"],
                         ppo_overrides=ex["ppo_set"], search=ex["search"])
    rec.update(family=it.family, training_seed=it.seed, label=it.label)
    it.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = it.path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(rec, indent=1))
    tmp.replace(it.path)  # a cut item leaves no half-written record


def exploit_summaries(cfg: ExperimentsConfig, out: Path) -> dict:
    """Label -> `evals.exploit.summarize` of every best response recorded for it (the
    maximum over families, training seeds and best-response seeds), beside ``missing``:
    the planned best responses without a record."""
    from evals.exploit import summarize

    res = {}
    for label in cfg.exploit["configs"]:
        families, missing = {}, []
        for it in plan(cfg, out, f"exploit/{label}"):
            if it.state == "done":
                families.setdefault(it.family, []).append(json.loads(it.path.read_text()))
            else:
                missing.append(it.name)
        if families:
            res[label] = dict(summarize(label, families), missing=missing)
        else:
            res[label] = {"missing": missing}
    return res


def main(argv=None) -> int:
    ap = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="configs/experiments.yaml", help="the experiments (YAML)")
    ap.add_argument("--out", type=Path, default=None, help="the run directories' folder (default: the config's out)")
    ap.add_argument("--only", default=None, metavar="NAME", help="only the items NAME, under NAME/, or of label NAME")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and run nothing")
    ap.add_argument("--no-wandb", action="store_true", help="no W&B runs for the training (offline by default)")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)
    try:
        cfg = load_config(args.config)
    except ExperimentsError as err:
        fail(PROG, err)
    out = args.out or Path(cfg.out)
    if out.exists() and not out.is_dir():
        fail(PROG, f"--out {str(out)!r} exists and is not a folder")
    saved = out / "experiments.yaml"
    if saved.is_file():
        try:
            old = read_yaml(saved, ExperimentsError)
        except ExperimentsError as err:
            fail(PROG, err)
        diff = changed_keys(old, cfg.to_dict())
        if not diff and old.get("training_seeds") != list(cfg.training_seeds):
            print(f"{PROG}: training seeds {old['training_seeds']} extended to {list(cfg.training_seeds)}; "
                  "the runs already there are kept", flush=True)
        if diff:
            fail(PROG, f"--out {str(out)!r} holds experiments of another config (keys {', '.join(diff)} differ); "
                       "choose another --out")
        for label in (x for x in old.get("configs") or {} if x in cfg.configs):
            was = label_seeds(old["training_seeds"], old.get("config_seeds"), label)
            if tuple(was) != cfg.seeds_of(label):
                print(f"{PROG}: {label} now trains on training seeds {list(cfg.seeds_of(label))} (was {list(was)}); "
                      f"its runs of the others stay in {out} unread", flush=True)
    items = plan(cfg, out, args.only)
    if not items:
        fail(PROG, f"--only {args.only!r} names no item of the plan")
    for it in (it for it in items if it.stale):
        print(f"{PROG}: warning: {it.path} was made with another {it.label} config (keys {', '.join(it.stale)} "
              "differ) and is reused as it is; move it aside to train it again", flush=True)
    print(f"plan ({args.config} into {out}):\n{describe_plan(items)}", flush=True)
    if args.dry_run:
        return 0
    import os

    os.environ.setdefault("WANDB_MODE", "offline")
    out.mkdir(parents=True, exist_ok=True)
    saved.write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    t0 = time.time()
    for n, it in enumerate(items, 1):
        if it.state == "done":
            continue
        print(f"[{n}/{len(items)}] {it.name} ({'resuming' if it.state == 'cut' else 'starting'}; "
              f"est. {seconds(it.estimate)})", flush=True)
        t1 = time.time()
        run_item(cfg, out, it, use_wandb=not args.no_wandb, quiet=args.quiet)
        print(f"[{n}/{len(items)}] {it.name} done in {seconds(time.time() - t1)}", flush=True)
    summaries = exploit_summaries(cfg, out)
    (out / "exploit.json").write_text(json.dumps(summaries, indent=1))
    print(f"done in {seconds(time.time() - t0)}; best responses summarized in {out / 'exploit.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
