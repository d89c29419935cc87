"""Run configuration: YAML files in ``configs/`` loaded into frozen dataclasses.

``load_config(path, overrides)`` reads a YAML mapping, applies ``key=value`` overrides
(values parsed as YAML), and checks every key and value *before* anything is computed.
An unknown key stops the run with a message naming it and the nearest known key::

    config key 'lr' is not known; did you mean 'learning_rate'?

``algo`` selects the dataclass: ``dqn`` -> `DQNConfig`, ``bc`` -> `BCConfig`,
``selfplay`` -> `SelfPlayConfig`.  Each dataclass's defaults are the base of its
algorithm, and a file states only what differs from its base: the defaults, or another
config named by ``base:`` (a shipped config's name such as ``dqn_cpu``, or a path
relative to the file), whose keys it overrides::

    base: selfplay_cpu        # configs/selfplay_gpu.yaml
    num_envs: 4096

Each key's type comes from its default and its range is declared beside it (`key`), so
a new key is checked where it is defined.

Opponent pools (``opponents`` for DQN and self-play, ``teachers`` for BC) are one of:

* a mapping ``policy spec -> weight`` (`coupjax.policies.spec`: a registered name, a
  run or export directory, or ``module:function``), e.g. ``{honest: 1, bluffer: 2}``;
* the name of a condition in `coupjax.policies.pools.CONDITIONS` (``aggressive_heavy``);
* ``scripted``: uniform over the evaluation pool `coupjax.policies.pools.OPPONENTS`
  (random, honest, cautious, aggressive, bluffer, belief_ev);
* a single policy spec (every opponent seat plays it).

``policy_modules`` lists extra modules imported first, for policies registered
outside `coupjax.policies`.
"""
from __future__ import annotations

import dataclasses
import difflib
import importlib
import json
import math
from pathlib import Path
from typing import Any, Mapping

import yaml

from coupjax.paths import CONFIG_DIR
from coupjax.policies import PolicySpecError, policy_names
from coupjax.policies.pools import CONDITIONS, OPPONENTS
from coupjax.policies.spec import describe_spec
from coupjax.yaml_file import read_yaml

# The main job's embedded default (`python -m coupjax`, `make run`): the shipped
# `configs/selfplay_cpu.yaml` (self-play PPO with a magnet and a learned belief) cut to 6
# of its 10 chunks, on a training seed of its own, so a fresh machine trains and
# evaluates in minutes.
QUICKSTART = {"base": "selfplay_cpu", "num_chunks": 6, "checkpoint_every": 3, "seed": 5}


class ConfigError(ValueError):
    """A config key or value is wrong; the message names the key."""


@dataclasses.dataclass(frozen=True)
class Range:
    """The values a numeric key accepts: ``lo <= x <= hi`` (``lo < x`` when ``open_low``)."""

    lo: float = -math.inf
    hi: float = math.inf
    open_low: bool = False

    def admits(self, x) -> bool:
        return (x > self.lo if self.open_low else x >= self.lo) and x <= self.hi

    def __str__(self) -> str:
        if self.hi == math.inf:
            return f"{'>' if self.open_low else '>='} {self.lo:g}"
        if (self.lo, self.hi) == (0, 1):
            return "in [0, 1]"
        return f"from {self.lo:g} to {self.hi:g}"


POSITIVE, NONNEGATIVE, UNIT = Range(0, open_low=True), Range(0), Range(0, 1)


def key(default, check: Range | tuple | None = None):
    """A config field: its default, and the range (a `Range`) or choices (a tuple) it
    accepts, checked by `config_from_dict` for every config that sets it."""
    return dataclasses.field(default=default, metadata={"check": check} if check is not None else {})


@dataclasses.dataclass(frozen=True)
class DQNConfig:
    algo: str = "dqn"
    seed: int = key(42, NONNEGATIVE)
    num_players: int = key(4, Range(2, 6))
    # --- the learner's view
    num_envs: int = key(1, POSITIVE)  # games stepped in parallel (B); sharded over jax.devices()
    opponents: Any = "scripted"  # pool, see the module doc
    policy_modules: tuple = ()
    reward: str = key("shaped", ("shaped", "win", "engine"))  # training.rewards
    max_inner_steps: int = key(4096, POSITIVE)  # safety cap on opponent steps between two learner decisions
    # --- DQN
    gamma: float = key(0.98, UNIT)
    learning_rate: float = key(1e-3, POSITIVE)
    batch_size: int = key(64, POSITIVE)
    buffer_size: int = key(10_000, POSITIVE)  # transitions (rows of num_envs)
    warmup_steps: int = key(256, NONNEGATIVE)  # transitions stored before the first update
    target_update_steps: int = key(200, POSITIVE)  # gradient updates between target syncs
    hidden_sizes: tuple = (128, 128)
    loss: str = key("mse", ("mse", "huber"))
    max_grad_norm: float = key(0.0, NONNEGATIVE)  # 0: no clipping
    double_q: bool = False  # False: the max over legal actions of Q_target (CoupVisor C.5)
    gradient_steps: int = key(1, POSITIVE)  # gradient updates per env step of the batch
    # --- exploration
    exploration: str = key("epsilon_greedy", ("epsilon_greedy", "boltzmann"))
    epsilon_start: float = key(1.0, UNIT)
    epsilon_end: float = key(0.05, UNIT)
    epsilon_decay_steps: int = key(5_000, POSITIVE)  # env steps of the batch (scan iterations)
    temperature: float = key(1.0, POSITIVE)  # Boltzmann temperature (q-value units)
    # --- loop, logging, checkpoints, export
    updates_per_chunk: int = key(500, POSITIVE)  # scan iterations per jitted chunk (one env step of the batch + gradient_steps)
    num_chunks: int = key(20, POSITIVE)
    checkpoint_every: int = key(1, POSITIVE)  # chunks
    max_checkpoints: int = key(2, POSITIVE)
    export_temperature: float = key(0.0, NONNEGATIVE)  # load_policy default: 0 greedy (ties uniform), > 0 softmax(q / T)
    eval_games: int = key(0, NONNEGATIVE)  # after training: seat-table games (evals.seat_table pool) per policy (0: skip)
    wandb_project: str = "coupjax"
    wandb_mode: str = key("", ("", "offline", "online", "disabled"))  # "" -> $WANDB_MODE, default offline


@dataclasses.dataclass(frozen=True)
class BCConfig:
    algo: str = "bc"
    seed: int = key(0, NONNEGATIVE)
    num_players: int = key(4, Range(2, 6))
    model: str = key("logreg", ("logreg", "mlp"))
    hidden_sizes: tuple = (128, 128)  # mlp only
    teachers: Any = "scripted"  # seats of the logged games drawn from this pool
    imitate: tuple = ()  # teacher names whose decisions are imitated; () = every logged player
    policy_modules: tuple = ()
    num_games: int = key(2000, POSITIVE)
    learning_rate: float = key(1e-3, POSITIVE)
    weight_decay: float = key(0.0, NONNEGATIVE)
    batch_size: int = key(512, POSITIVE)
    epochs: int = key(5, POSITIVE)
    val_fraction: float = key(0.1, UNIT)
    export_temperature: float = key(1.0, NONNEGATIVE)  # 1: sample the cloned distribution
    eval_games: int = key(0, NONNEGATIVE)  # as for DQN
    wandb_project: str = "coupjax"
    wandb_mode: str = key("", ("", "offline", "online", "disabled"))


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Self-play PPO with a magnet and a learned belief (`training.selfplay`)."""

    algo: str = "selfplay"
    seed: int = key(0, NONNEGATIVE)
    num_players: int = key(4, Range(2, 6))
    num_seeds: int = key(1, POSITIVE)  # training seeds side by side (vmap); the export is seed `export_seed`
    num_envs: int = key(64, POSITIVE)  # games per seed stepped in parallel; sharded over jax.devices()
    rollout_steps: int = key(32, POSITIVE)  # engine steps per game between two updates (T)
    # --- the league: seat shares of the current network, its snapshots, the pool
    opponents: Any = "scripted"  # the fixed pool (module doc): bots, run dirs (e.g. a DQN export)
    policy_modules: tuple = ()
    self_weight: float = key(0.3, UNIT)  # share of the other seats played by the current network (trained on)
    snapshot_weight: float = key(0.2, UNIT)  # share played by past snapshots, uniform over the filled ones
    num_snapshots: int = key(4, POSITIVE)  # snapshots kept (a ring)
    snapshot_every: int = key(25, POSITIVE)  # updates between two snapshots
    table_concentration: float = key(0.0, NONNEGATIVE)  # 0: seats iid from the weights; c > 0: a Dirichlet(c w) mix per table
    pool_margin: float = key(0.0, NONNEGATIVE)  # 0: each pool policy runs on every game; z > 0: on its share + z sigma (league doc)
    # --- PPO with a magnet (reverse KL to an EMA of the policy)
    gamma: float = key(0.995, UNIT)  # per own decision
    gae_lambda: float = key(0.9, UNIT)
    learning_rate: float = key(3e-4, POSITIVE)
    anneal_lr: bool = False  # linear decay to 0 over the run
    max_grad_norm: float = key(0.5, NONNEGATIVE)
    num_epochs: int = key(2, POSITIVE)
    num_minibatches: int = key(4, POSITIVE)
    clip_eps: float = key(0.2, UNIT)
    value_coef: float = key(0.5, NONNEGATIVE)
    entropy_coef: float = key(0.01, NONNEGATIVE)
    magnet_coef: float = key(0.05, NONNEGATIVE)  # reverse KL(pi || magnet)
    magnet_ema: float = key(0.99, UNIT)  # magnet <- ema * magnet + (1 - ema) * policy, after every update
    hidden_sizes: tuple = (128, 128)  # policy and value MLPs
    # --- the learned belief: P(role in hand) per opponent, from the observation
    belief_coef: float = key(1.0, NONNEGATIVE)
    belief_hidden_sizes: tuple = (128, 128)  # []: a head on the policy MLP's last hidden layer
    policy_reads_belief: bool = False  # the policy reads the belief's probabilities beside the observation
    policy_reads_posterior: bool = False  # the policy reads the exact posterior's marginals and claims' truth too
    exploring_starts: float = key(0.0, UNIT)  # share of the games restarted each update from a random-play position
    # --- expert iteration: the sampled-world search as teacher (training.search_targets); 0 = off
    search_target_coef: float = key(0.0, NONNEGATIVE)  # weight of the cross-entropy to the search's policy
    search_target_states: int = key(32, POSITIVE)  # decisions searched per update (drawn among the games')
    search_target_tau: float = key(0.05, POSITIVE)  # the regularised search's temperature on its values
    search_target_prior_uniform: float = key(0.3, UNIT)  # the uniform policy's share in the search's prior
    search_target_rollout_steps: int = key(4, POSITIVE)  # decisions before the value head scores a rollout
    search_target_rollouts_per_world: int = key(4, POSITIVE)  # rollouts per (sampled world, legal action)
    # who plays the teacher's rollouts: the current network (scored by its value head at the cut), or the
    # scripted bots' mix as the registered search policies do (scored by the search's heuristic value)
    search_target_rollout_policy: str = key("network", ("network", "scripted_mix"))
    search_target_margin: float = key(0.0, NONNEGATIVE)  # a decision counts only where its best value leads by this
    search_target_random_share: float = key(0.0, UNIT)  # share of them from random play (exploring starts)
    search_target_impossible_share: float = key(0.0, UNIT)  # share of the random ones facing a claim ruled out
    search_target_impossible_pool: int = key(128, POSITIVE)  # random positions played per such decision wanted
    # --- loop, logging, checkpoints, export
    updates_per_chunk: int = key(10, POSITIVE)
    num_chunks: int = key(10, POSITIVE)
    checkpoint_every: int = key(1, POSITIVE)
    max_checkpoints: int = key(2, POSITIVE)
    export_seed: int = key(0, NONNEGATIVE)  # which training seed RUN/export holds (all are in RUN/exports/seed_K)
    export_temperature: float = key(1.0, NONNEGATIVE)  # load_policy default: 1 samples the policy, 0 greedy
    eval_games: int = key(0, NONNEGATIVE)
    wandb_project: str = "coupjax"
    wandb_mode: str = key("", ("", "offline", "online", "disabled"))


CONFIG_CLASSES = {"dqn": DQNConfig, "bc": BCConfig, "selfplay": SelfPlayConfig}

_POOLS = {"opponents", "teachers"}


def _fail(msg):
    raise ConfigError(msg)


def _check_range(name: str, value, check) -> None:
    if isinstance(check, Range) and not check.admits(value):
        _fail(f"config key {name!r} must be {check}, got {value}")


def _check_value(name: str, value, cls) -> Any:
    """Type- and range-check one value; returns it normalised (lists -> tuples)."""
    field = {f.name: f for f in dataclasses.fields(cls)}[name]
    default, check = field.default, field.metadata.get("check")
    if name in _POOLS:
        if not isinstance(value, (str, Mapping)):
            _fail(f"config key {name!r} must be a policy pool (a mapping name -> weight, a condition name, "
                  f"'scripted' or a policy name), got {value!r}")
        return dict(value) if isinstance(value, Mapping) else value
    if isinstance(default, bool):
        if not isinstance(value, bool):
            _fail(f"config key {name!r} must be true or false, got {value!r}")
        return value
    if isinstance(default, tuple):
        if not isinstance(value, (list, tuple)):
            _fail(f"config key {name!r} must be a list, got {value!r}")
        value = tuple(value)
        sizes = name in ("hidden_sizes", "belief_hidden_sizes")
        if sizes and not all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in value):
            _fail(f"config key {name!r} must be a list of positive ints, got {list(value)!r}")
        if name in ("policy_modules", "imitate") and not all(isinstance(x, str) for x in value):
            _fail(f"config key {name!r} must be a list of strings, got {list(value)!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                _fail(f"config key {name!r} must be an integer, got {value!r}")
        _check_range(name, value, check)
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _fail(f"config key {name!r} must be a number, got {value!r}")
        value = float(value)
        if not math.isfinite(value):
            _fail(f"config key {name!r} must be finite, got {value}")
        _check_range(name, value, check)
        return value
    if isinstance(default, str):
        if not isinstance(value, str):
            _fail(f"config key {name!r} must be a string, got {value!r}")
        if isinstance(check, tuple) and value not in check:
            _fail(f"config key {name!r} must be one of {', '.join(repr(c) for c in check)}, got {value!r}")
        return value
    return value


def checked_values(cls, data: Mapping) -> dict:
    """``data``'s values checked and normalised as the fields of the config dataclass
    ``cls`` (their `key` ranges and choices): the outer loops' configs (`training.psro`,
    `training.exploiter_league`) are checked by the same rules as the algorithms'."""
    return {k: _check_value(k, v, cls) for k, v in data.items()}


def config_from_dict(raw: Mapping, overrides=(), origin: Path | None = None) -> DQNConfig | BCConfig | SelfPlayConfig:
    """Validate a mapping (plus ``key=value`` overrides) into a frozen config.  A
    ``base`` key is resolved first (module doc); ``origin`` is the folder a relative
    ``base`` path is read from (the including file's)."""
    data = dict(_with_bases(raw, origin, ()))
    for item in overrides:
        if "=" not in item:
            _fail(f"override {item!r} must look like key=value")
        k, v = item.split("=", 1)
        data[k.strip()] = yaml.safe_load(v)
    algo = data.get("algo", "dqn")
    if algo not in CONFIG_CLASSES:
        _fail(f"config key 'algo' must be one of {', '.join(map(repr, CONFIG_CLASSES))}, got {algo!r}")
    cls = CONFIG_CLASSES[algo]
    names = [f.name for f in dataclasses.fields(cls)]
    for key in data:
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1, cutoff=0.5)
            if not close:  # abbreviations: 'lr' -> 'learning_rate'
                initials = {"".join(w[0] for w in n.split("_")): n for n in names}
                close = [initials[key]] if key in initials else []
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(names)}"
            _fail(f"config key {key!r} is not known{hint}")
    values = {k: _check_value(k, v, cls) for k, v in data.items()}
    cfg = cls(**values)
    _check_cross(cfg)
    return cfg


def _check_cross(cfg) -> None:
    if isinstance(cfg, DQNConfig):
        if cfg.buffer_size < cfg.num_envs:
            _fail(f"config key 'buffer_size' ({cfg.buffer_size}) must be at least num_envs ({cfg.num_envs})")
        if cfg.epsilon_end > cfg.epsilon_start:
            _fail("config key 'epsilon_end' must not exceed epsilon_start")
    if isinstance(cfg, SelfPlayConfig):
        if cfg.self_weight + cfg.snapshot_weight > 1.0:
            _fail(f"config keys 'self_weight' + 'snapshot_weight' must be at most 1, got "
                  f"{cfg.self_weight + cfg.snapshot_weight:g}")
        if (cfg.num_envs * cfg.rollout_steps) % cfg.num_minibatches:
            _fail(f"config key 'num_minibatches' ({cfg.num_minibatches}) must divide num_envs x rollout_steps "
                  f"({cfg.num_envs * cfg.rollout_steps})")
        if cfg.export_seed >= cfg.num_seeds:
            _fail(f"config key 'export_seed' ({cfg.export_seed}) must be below num_seeds ({cfg.num_seeds})")
        if cfg.policy_reads_belief and not cfg.belief_hidden_sizes:
            _fail("config key 'policy_reads_belief' needs a belief MLP of its own: belief_hidden_sizes must not "
                  "be [] (a head on the policy's torso cannot be the policy's input)")
        if cfg.policy_reads_posterior and (cfg.policy_reads_belief or not cfg.belief_hidden_sizes):
            _fail("config key 'policy_reads_posterior' needs policy_reads_belief false and a belief MLP of its own "
                  "(belief_hidden_sizes not [])")
    for key in ("opponents", "teachers"):
        if hasattr(cfg, key):
            resolve_pool(getattr(cfg, key), cfg.policy_modules, key)
    if isinstance(cfg, BCConfig) and cfg.imitate:
        pool = resolve_pool(cfg.teachers, cfg.policy_modules, "teachers")
        bad = [x for x in cfg.imitate if x not in pool]
        if bad:
            _fail(f"config key 'imitate' names {bad} that are not in the teachers pool {sorted(pool)}")


def resolve_pool(spec, policy_modules=(), key: str = "opponents") -> dict[str, float]:
    """A pool spec -> {policy spec: weight > 0} (see the module doc)."""
    for mod in policy_modules:
        try:
            importlib.import_module(mod)
        except ImportError as e:
            _fail(f"config key 'policy_modules': cannot import {mod!r} ({e})")
    known = policy_names()

    def check_spec(name):
        try:
            describe_spec(str(name))
        except PolicySpecError as err:
            close = difflib.get_close_matches(str(name), known + list(CONDITIONS) + ["scripted"], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            _fail(f"config key {key!r}: {err}{hint}")

    if isinstance(spec, str):
        if spec == "scripted":
            return {name: 1.0 for name in OPPONENTS}
        if spec in CONDITIONS:
            spec = dict(CONDITIONS[spec])
        else:
            check_spec(spec)
            spec = {spec: 1.0}
    pool = {}
    for name, weight in dict(spec).items():
        check_spec(name)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0 or not math.isfinite(weight):
            _fail(f"config key {key!r}: weight of {name!r} must be a number >= 0, got {weight!r}")
        if weight > 0:
            pool[str(name)] = float(weight)
    if not pool:
        _fail(f"config key {key!r}: the pool has no policy with a positive weight")
    return pool


def _with_bases(raw, origin: Path | None, seen: tuple) -> dict:
    """``raw`` over its ``base`` chain: every key of the base files, each overridden by
    the files that name them."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        _fail(f"a config must be a mapping of key: value, got {type(raw).__name__}")
    data = dict(raw)
    if "base" not in data:
        return data
    name = data.pop("base")
    if not isinstance(name, str) or not name:
        _fail(f"config key 'base' must name a config (a shipped name such as 'dqn_cpu', or a file), got {name!r}")
    path = _base_file(name, origin)
    if path.resolve() in seen:
        _fail(f"config key 'base': {name!r} names itself through its bases "
              f"({' -> '.join(p.stem for p in (*seen, path.resolve()))})")
    return {**_with_bases(read_yaml(path, ConfigError), path.parent, (*seen, path.resolve())), **data}


def _base_file(name: str, origin: Path | None) -> Path:
    file = name if name.endswith((".yaml", ".yml")) else f"{name}.yaml"
    for folder in ([origin] if origin is not None else []) + [CONFIG_DIR]:
        if (folder / file).is_file():
            return folder / file
    known = ", ".join(sorted(p.stem for p in CONFIG_DIR.glob("*.yaml")))
    _fail(f"config key 'base': no config {name!r} (next to the file or shipped: {known})")


def read_config(path) -> dict:
    """A config file's keys with its ``base`` chain applied (not yet validated)."""
    p = Path(path)
    return _with_bases(read_yaml(p, ConfigError), p.parent, (p.resolve(),))


def load_config(path, overrides=()) -> DQNConfig | BCConfig | SelfPlayConfig:
    """Read and validate a YAML config file (its ``base`` chain included)."""
    return config_from_dict(read_config(path), overrides)


def config_file(name) -> Path:
    """The config file ``name`` names (``evals.exploit --config``, a PSRO run's ``oracle``): a file,
    else the shipped config of that name."""
    p = Path(name)
    if p.is_file():
        return p
    if str(name) == p.name and (CONFIG_DIR / p.name).is_file():
        return CONFIG_DIR / p.name
    raise ConfigError(f"no config file {str(name)!r} (neither a file nor a shipped config)")


def config_to_dict(cfg) -> dict:
    """JSON-able dict (tuples -> lists)."""
    return json.loads(json.dumps(dataclasses.asdict(cfg)))


def replace(cfg, **changes):
    """A validated copy with ``changes``."""
    return config_from_dict({**config_to_dict(cfg), **changes})


# ------------------------------------------------------------------ the reference in docs/training.md
REFERENCE_BEGIN = "<!-- config reference: made by `python -m training.config`, kept equal by tests/test_docs.py -->"
REFERENCE_END = "<!-- end of the config reference -->"


def _field_notes(cls) -> dict[str, str]:
    """Each field's trailing comment in ``cls``'s source (the one place a key is explained)."""
    import inspect
    import io
    import tokenize

    lines = inspect.getsource(cls).splitlines()
    notes = {}
    for tok in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
        if tok.type == tokenize.COMMENT and not tok.line.lstrip().startswith("#"):
            name = tok.line.strip().split(":")[0]
            notes[name] = tok.string.lstrip("#").strip()
    return notes


def _range_text(f) -> str:
    check = f.metadata.get("check")
    if isinstance(check, Range):
        return str(check)
    if isinstance(check, tuple):
        return "one of " + ", ".join(f"`{c!r}`" if c == "" else f"`{c}`" for c in check)
    if f.name in _POOLS:
        return "a policy pool"
    if isinstance(f.default, bool):
        return "true or false"
    if isinstance(f.default, tuple):
        return "list of positive ints" if f.name.endswith("hidden_sizes") else "list of strings"
    return ""


def reference_markdown() -> str:
    """Every config key of every algorithm with its default, range and note, as Markdown
    tables: the reference in docs/training.md, made from the dataclasses themselves."""
    out = []
    for algo, cls in CONFIG_CLASSES.items():
        notes = _field_notes(cls)
        out += [f"**`algo: {algo}`** (`{cls.__name__}`)", "", "| key | default | range | what |", "|---|---|---|---|"]
        for f in dataclasses.fields(cls):
            if f.name == "algo":
                continue
            default = json.dumps(list(f.default) if isinstance(f.default, tuple) else f.default)
            note = notes.get(f.name, "").replace("|", "\\|")
            out.append(f"| `{f.name}` | `{default}` | {_range_text(f)} | {note} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(reference_markdown(), end="")
