"""The evaluation suite's design matrix (``configs/eval.yaml``), checked before anything runs.

Every key is known (a wrong key stops the run and names it, with the nearest known key),
every value is checked, every seed is a report seed (`coupjax.seeds.check_report_seed`:
tuning seeds are refused) and every policy spec resolves to something
(`coupjax.policies.spec.describe_spec`).  The matrix is fixed before any game is played,
so every table and figure of one report describes the same games.

Keys (see ``coupjax/configs/eval.yaml`` for the default and its sizes):

* ``policies``: label -> policy spec (registered name, run/export directory,
  ``module:function``) seated at every table of the main matrix;
* ``search_policies``: label -> spec, seated on the first ``search_games`` tables of
  each condition and seed (the same tables as the others' first ones);
* ``advised``: label -> ``{base: SCRIPTED_BOT, belief: exact | coupvisor}``: the base
  bot whose challenge decisions follow the challenge advisor, seated beside its base
  on the same tables (advice on vs off);
* ``advice_bases`` (scripted bot names) and ``advice_games``: each base with the page's
  one recommendation at its reactions (``advised:BASE``, `coupjax.policies.advised`) and
  without it, in the same seat of the same ``advice_games`` tables per condition and
  seed, compared paired (`evals.report.paired.play_paired`, as ``python -m evals.compare``);
* ``advice_search_bases`` and ``advice_search_games``: the same for the page's default
  advice, search on at the page's budget (``advised:BASE:search``, `coupjax.search.advised`),
  against BASE: which setting the page should default to is judged by the games won;
* ``reaction_policies`` (label -> spec) and ``reaction_games``: each policy's challenge
  and block rates per claimed role (`evals.reaction_rates`), in one seat of the same
  ``reaction_games`` tables per condition (first seed);
* ``exploit_probes`` (label -> ``{policy: SPEC, baseline: SPEC}``), ``probe_games`` and
  ``probe_tune_games``: the strongest scripted probe tuned against the policy (tuning
  seed 1003, ``probe_tune_games`` tables per probe), then played against the policy and
  the baseline on the same ``probe_games`` tables of the first seed (`evals.report.probes`);
* ``conditions`` (`coupjax.policies.pools.CONDITIONS`), ``seeds``, ``num_players``,
  ``games`` (tables per policy, condition and seed), ``search_games``;
* ``cross_play_games`` (tables per ordered pair), ``cross_play`` (labels; default all
  of ``policies``), ``mixed_games`` (tables of the rating pool), ``player_counts`` and
  ``player_count_games`` (per condition, first seed), ``position_games`` (logged games
  per condition and seed for the offline metrics), ``advisor_games`` (recorded games
  per condition and seed), ``scenarios`` (true/false), ``ablation`` (label -> summary
  JSON of a training run), ``batch`` (games per jitted call; results do not depend on it).
"""
from __future__ import annotations

import dataclasses
import difflib
import json
from pathlib import Path
from typing import Any, Mapping

import yaml

from coupjax import rules
from coupjax.policies.pools import CONDITIONS, SCRIPTED_NAMES
from coupjax.policies.spec import PolicySpecError, describe_spec
from coupjax.seeds import SeedError, check_report_seed

BELIEFS = ("exact", "coupvisor")


class EvalConfigError(ValueError):
    """A wrong key or value of the evaluation config; the message names it."""


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    policies: dict
    search_policies: dict = dataclasses.field(default_factory=dict)
    advised: dict = dataclasses.field(default_factory=dict)
    advice_bases: tuple = ()
    advice_games: int = 3000
    advice_search_bases: tuple = ()
    advice_search_games: int = 200
    reaction_policies: dict = dataclasses.field(default_factory=dict)
    reaction_games: int = 0
    exploit_probes: dict = dataclasses.field(default_factory=dict)
    probe_games: int = 0
    probe_tune_games: int = 600
    conditions: tuple = ("aggressive_heavy", "honest_heavy")
    seeds: tuple = (7, 8, 9, 10, 11)
    num_players: int = 4
    games: int = 10000
    search_games: int = 200
    cross_play: tuple = ()
    cross_play_games: int = 2000
    mixed_games: int = 10000
    player_counts: tuple = (2, 3, 4, 5, 6)
    player_count_games: int = 2000
    position_games: int = 1000
    advisor_games: int = 10000
    scenarios: bool = True
    ablation: dict = dataclasses.field(default_factory=dict)
    batch: int = 2000

    def to_dict(self) -> dict:
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @property
    def cross_labels(self) -> list:
        return list(self.cross_play) or list(self.policies)


def _fail(msg):
    raise EvalConfigError(msg)


def _int(key, v, lo=1):
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        _fail(f"config key {key!r} must be an integer >= {lo}, got {v!r}")
    return v


def _specs(key, v) -> dict:
    if not isinstance(v, Mapping):
        _fail(f"config key {key!r} must be a mapping label -> policy spec, got {v!r}")
    out = {}
    for label, spec in v.items():
        if not isinstance(label, str) or not label or not isinstance(spec, str):
            _fail(f"config key {key}.{label}: a label and a policy spec (strings), got {label!r}: {spec!r}")
        try:
            describe_spec(spec)
        except PolicySpecError as err:
            _fail(f"config key {key}.{label}: {err}")
        out[label] = spec
    return out


def _probes(v) -> dict:
    if not isinstance(v, Mapping):
        _fail(f"config key 'exploit_probes' must be a mapping label -> {{policy, baseline}}, got {v!r}")
    out = {}
    for label, entry in v.items():
        if not isinstance(entry, Mapping) or set(entry) != {"policy", "baseline"}:
            _fail(f"config key exploit_probes.{label} must be a mapping with exactly policy and baseline, got {entry!r}")
        out[str(label)] = _specs(f"exploit_probes.{label}", dict(entry))
    return out


def _advised(v) -> dict:
    if not isinstance(v, Mapping):
        _fail(f"config key 'advised' must be a mapping label -> {{base, belief}}, got {v!r}")
    out = {}
    for label, entry in v.items():
        if not isinstance(entry, Mapping):
            _fail(f"config key advised.{label} must be a mapping with base and belief, got {entry!r}")
        extra = set(entry) - {"base", "belief"}
        if extra:
            _fail(f"config key advised.{label}.{sorted(extra)[0]} is not known; known: base, belief")
        base, belief = entry.get("base"), entry.get("belief", "exact")
        if base not in SCRIPTED_NAMES[1:]:
            _fail(f"config key advised.{label}.base must be one of {', '.join(SCRIPTED_NAMES[1:])}, got {base!r}")
        if belief not in BELIEFS:
            _fail(f"config key advised.{label}.belief must be one of {', '.join(BELIEFS)}, got {belief!r}")
        out[label] = {"base": base, "belief": belief}
    return out


def config_from_dict(raw: Mapping, base_dir: Path | None = None) -> EvalConfig:
    """Validate a mapping into an `EvalConfig` (module doc)."""
    if not isinstance(raw, Mapping):
        _fail(f"an eval config must be a mapping of key: value, got {type(raw).__name__}")
    names = [f.name for f in dataclasses.fields(EvalConfig)]
    for key in raw:
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(names)}"
            _fail(f"config key {key!r} is not known{hint}")
    if "policies" not in raw:
        _fail("config key 'policies' is required")
    d = dict(raw)
    v: dict[str, Any] = {"policies": _specs("policies", d["policies"])}
    if not v["policies"]:
        _fail("config key 'policies' names no policy")
    v["search_policies"] = _specs("search_policies", d.get("search_policies") or {})
    v["advised"] = _advised(d.get("advised") or {})
    labels = [*v["policies"], *v["search_policies"], *v["advised"]]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        _fail(f"config: label {dup[0]!r} is used twice (policies, search_policies and advised share labels)")
    for base in {a["base"] for a in v["advised"].values()}:
        if base not in v["policies"] or v["policies"][base] != base:
            _fail(f"config key 'advised': its base {base!r} must also be seated unadvised (policies.{base}: {base})")
    bases = d.get("advice_bases") or []
    if not isinstance(bases, (list, tuple)) or any(b not in SCRIPTED_NAMES for b in bases) or len(set(bases)) < len(
            bases):
        _fail(f"config key 'advice_bases' must list distinct scripted bots of {', '.join(SCRIPTED_NAMES)}, "
              f"got {bases!r}")
    v["advice_bases"] = tuple(bases)
    bases = d.get("advice_search_bases") or []
    if not isinstance(bases, (list, tuple)) or any(b not in SCRIPTED_NAMES for b in bases) or len(set(bases)) < len(
            bases):
        _fail(f"config key 'advice_search_bases' must list distinct scripted bots of {', '.join(SCRIPTED_NAMES)}, "
              f"got {bases!r}")
    v["advice_search_bases"] = tuple(bases)
    v["reaction_policies"] = _specs("reaction_policies", d.get("reaction_policies") or {})
    v["exploit_probes"] = _probes(d.get("exploit_probes") or {})
    conds = d.get("conditions", list(EvalConfig.conditions))
    if not isinstance(conds, (list, tuple)) or not conds or any(c not in CONDITIONS for c in conds):
        _fail(f"config key 'conditions' must list conditions of {', '.join(CONDITIONS)}, got {conds!r}")
    v["conditions"] = tuple(conds)
    seeds = d.get("seeds", list(EvalConfig.seeds))
    if not isinstance(seeds, (list, tuple)) or not seeds:
        _fail(f"config key 'seeds' must be a non-empty list of integers, got {seeds!r}")
    for s in seeds:
        _int("seeds", s, 0)
        try:
            check_report_seed(s, "the evaluation report")
        except SeedError as err:
            _fail(f"config key 'seeds': {err}")
    if len(set(seeds)) != len(seeds):
        _fail(f"config key 'seeds' repeats a seed: {seeds!r}")
    v["seeds"] = tuple(seeds)
    for key in ("num_players",):
        v[key] = _int(key, d.get(key, 4), 2)
        if v[key] > rules.MAX_PLAYERS:
            _fail(f"config key 'num_players' must be from 2 to {rules.MAX_PLAYERS}, got {v[key]}")
    for key in ("games", "batch"):
        v[key] = _int(key, d.get(key, getattr(EvalConfig, key)), 1)
    for key in ("search_games", "cross_play_games", "mixed_games", "player_count_games", "position_games",
                "advisor_games", "advice_games", "advice_search_games", "reaction_games", "probe_games"):
        v[key] = _int(key, d.get(key, getattr(EvalConfig, key)), 0)
    v["probe_tune_games"] = _int("probe_tune_games", d.get("probe_tune_games", EvalConfig.probe_tune_games), 1)
    if v["search_games"] > v["games"]:
        _fail(f"config key 'search_games' ({v['search_games']}) must not exceed games ({v['games']})")
    cross = d.get("cross_play") or []
    if not isinstance(cross, (list, tuple)) or any(c not in v["policies"] for c in cross):
        _fail(f"config key 'cross_play' must list labels of policies, got {cross!r}")
    v["cross_play"] = tuple(cross)
    counts = d.get("player_counts", list(EvalConfig.player_counts))
    if not isinstance(counts, (list, tuple)) or any(isinstance(c, bool) or c not in range(2, rules.MAX_PLAYERS + 1)
                                                    for c in counts):
        _fail(f"config key 'player_counts' must list table sizes from 2 to {rules.MAX_PLAYERS}, got {counts!r}")
    v["player_counts"] = tuple(counts)
    if not isinstance(d.get("scenarios", True), bool):
        _fail(f"config key 'scenarios' must be true or false, got {d['scenarios']!r}")
    v["scenarios"] = d.get("scenarios", True)
    abl = d.get("ablation") or {}
    if not isinstance(abl, Mapping):
        _fail(f"config key 'ablation' must be a mapping label -> summary JSON, got {abl!r}")
    for label, path in abl.items():
        p = Path(path)
        if not p.is_absolute() and base_dir is not None and not p.exists():
            p = base_dir / p
        if not isinstance(path, str) or not p.is_file():
            _fail(f"config key ablation.{label}: no summary file {path!r}")
    v["ablation"] = {str(k): str(p) for k, p in abl.items()}
    return EvalConfig(**v)


def load_config(path, seeds=None) -> EvalConfig:
    """Read and validate an eval config file (YAML); ``seeds``: instead of its seeds (the
    final report's held-out seeds)."""
    p = Path(path)
    if not p.is_file():
        raise EvalConfigError(f"config file {str(p)!r} does not exist")
    try:
        raw = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise EvalConfigError(f"config file {str(p)!r} is not valid YAML: {e}") from None
    if seeds is not None and isinstance(raw, Mapping):
        raw = {**raw, "seeds": list(seeds)}
    return config_from_dict(raw or {})
