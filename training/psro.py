"""PSRO: Policy-Space Response Oracles around training, as OpenSpiel's ``psro_v2`` runs it.

    python -m training.psro --config configs/psro_cpu.yaml --run-dir DIR [--resume] [--no-wandb]
                            [--set key=value ...] [--quiet]

An outer loop over the one chunk driver ("A Unified Game-Theoretic Approach to
Multiagent Reinforcement Learning", Lanctot et al. 2017).  The population starts as the
policy specs of ``initial``; each iteration k

1. trains an oracle: `training.train.run_training` of the algorithm config ``oracle``
   (self-play PPO or DQN, with ``oracle_set``) whose ``opponents`` pool is the current
   meta-strategy over the population (member -> probability), into ``DIR/iteration_k``;
2. adds its export to the population;
3. fills the empirical game: ``payoffs[i, j]`` is member i's win rate in one seat of
   ``payoff_games`` tables whose other seats all play member j (the arena,
   `coupjax.seat_tables.play_tables`; the same seeded tables for every entry), only the
   new row and column;
4. solves it with the meta-solver (``uniform``, or ``prd``: projected replicator
   dynamics, a Nash approximation), the mixture the next oracle trains against.

The empirical game is treated as symmetric (every member may sit at every seat), with
one population and one meta-strategy; a member's payoff against a mixture is taken as
the mixture of its payoffs against three copies of each member, an approximation of
tables whose opponents are drawn from the mixture seat by seat.  The algorithm configs
know nothing of this loop: it only sets their ``opponents`` and ``seed``.

``DIR/psro.json`` holds the state after every iteration (population, payoff matrix,
meta-strategy, one row of figures per iteration); ``--resume`` continues from it, an
oracle cut mid-training resuming from its own checkpoint.  Each oracle is a run
directory (checkpoints, export, summary, its W&B run); the loop's own figures go to
the console and to one W&B run of ``DIR`` (step = iteration).
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from functools import partial
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np
import yaml

from training.config import (NONNEGATIVE, POSITIVE, ConfigError, Range, checked_values, config_file, config_to_dict,
                             key, load_config, read_config, replace)

STATE_FILE = "psro.json"
ORACLE_ALGOS = ("dqn", "selfplay")
MIN_SHARE = 1e-3  # a member below this share is left out of the oracle's pool (a policy run for no seat)


# ------------------------------------------------------------------ the config
@dataclasses.dataclass(frozen=True)
class PSROConfig:
    """A PSRO run (module doc); loaded by `load_psro_config`."""

    algo: str = key("psro", ("psro",))
    seed: int = key(0, NONNEGATIVE)  # oracle k trains on seed 1000 * seed + k; the payoff tables on seed
    oracle: str = "selfplay_cpu.yaml"  # the algorithm config of every best response: a file or a shipped name
    oracle_set: tuple = ()  # key=value overrides of the oracle config
    initial: tuple = ("random",)  # the first population: policy specs
    iterations: int = key(3, POSITIVE)  # oracles trained
    meta_solver: str = key("prd", ("prd", "uniform"))
    prd_steps: int = key(1_000_000, POSITIVE)  # projected replicator dynamics: Euler steps (averaged)
    prd_dt: float = key(0.01, POSITIVE)  # step size
    prd_gamma: float = key(1e-6, Range(0, 0.1))  # smallest probability of a member (exploration)
    payoff_games: int = key(1000, POSITIVE)  # tables per payoff entry
    wandb_project: str = "coupjax"
    wandb_mode: str = key("", ("", "offline", "online", "disabled"))


RESUME_FREE = {"iterations", "wandb_project", "wandb_mode"}  # may change when a run is resumed


def checked_fields(cls, raw: Mapping, overrides=()):
    """An instance of the config dataclass ``cls`` from ``raw`` and ``key=value``
    overrides, every key and value checked by the algorithm configs' rules
    (`training.config`: unknown keys named with the nearest known one, types, ranges)."""
    data = dict(raw)
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like key=value")
        k, v = item.split("=", 1)
        data[k.strip()] = yaml.safe_load(v)
    names = [f.name for f in dataclasses.fields(cls)]
    for k in data:
        if k not in names:
            close = difflib.get_close_matches(str(k), names, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(names)}"
            raise ConfigError(f"config key {k!r} is not known{hint}")
    cfg = cls(**checked_values(cls, data))
    for f in dataclasses.fields(cls):
        value = getattr(cfg, f.name)
        if isinstance(value, tuple) and not all(isinstance(x, str) and x for x in value):
            raise ConfigError(f"config key {f.name!r} must be a list of strings, got {list(value)!r}")
    return cfg


def psro_config_from_dict(raw: Mapping, overrides=()) -> PSROConfig:
    """A checked `PSROConfig` (`checked_fields`); the oracle config is loaded too, so a
    wrong key there stops the run before anything is computed."""
    cfg = checked_fields(PSROConfig, raw, overrides)
    if not cfg.initial:
        raise ConfigError("config key 'initial' must name at least one policy")
    for spec in cfg.initial:
        _check_spec(spec)
    oracle_config(cfg, {cfg.initial[0]: 1.0}, 1)
    return cfg


def load_psro_config(path, overrides=()) -> PSROConfig:
    """Read a PSRO config file (its ``base`` chain applied, as the algorithm configs')."""
    return psro_config_from_dict(read_config(path), overrides)


def _check_spec(spec: str) -> None:
    from coupjax.policies import PolicySpecError
    from coupjax.policies.spec import describe_spec

    try:
        describe_spec(spec)
    except PolicySpecError as err:
        raise ConfigError(f"config key 'initial': {err}") from None


def oracle_config(cfg: PSROConfig, mixture: dict, iteration: int):
    """The algorithm config of oracle ``iteration``: ``oracle`` with ``oracle_set``, its
    pool the ``mixture`` (spec -> probability), its seed ``1000 * seed + iteration``."""
    try:
        base = load_config(config_file(cfg.oracle), cfg.oracle_set)
    except ConfigError as err:
        raise ConfigError(f"config key 'oracle': {err}") from None
    if base.algo not in ORACLE_ALGOS:
        raise ConfigError(f"config key 'oracle' must name a DQN or self-play config, got algo {base.algo!r}")
    pool = {spec: float(p) for spec, p in mixture.items() if p >= MIN_SHARE}
    return replace(base, opponents=pool, seed=1000 * cfg.seed + iteration)


# ------------------------------------------------------------------ meta-solvers
def uniform(payoffs) -> jnp.ndarray:
    """The same probability for every member."""
    n = jnp.shape(payoffs)[0]
    return jnp.full(n, 1.0 / n)


@partial(jax.jit, static_argnames="steps")
def projected_replicator_dynamics(payoffs, steps: int = 100_000, dt: float = 1e-3, gamma: float = 1e-6):
    """The mean of ``steps`` Euler steps of the replicator dynamics of the symmetric game
    ``payoffs`` (row member's payoff against the column member), each projected back to
    the simplex with every probability at least ``gamma`` (Lanctot et al. 2017, one
    population): ``x += dt * x * (payoffs @ x - x @ payoffs @ x)``.  From the uniform
    mixture; the mean over the trajectory converges where the last point cycles (as in
    rock-paper-scissors)."""
    payoffs = jnp.asarray(payoffs, jnp.float32)

    def step(x, _):
        values = payoffs @ x
        x = x + dt * x * (values - x @ values)
        x = jnp.maximum(x, gamma)
        x = x / x.sum()
        return x, x

    _, path = jax.lax.scan(step, uniform(payoffs), None, length=steps)
    return path.mean(axis=0)


def regret(payoffs, mixture) -> float:
    """How much the best member gains over ``mixture`` against ``mixture`` in the
    symmetric game: ``max_i (payoffs @ x)_i - x @ payoffs @ x`` (0 at a Nash equilibrium)."""
    payoffs, x = np.asarray(payoffs, np.float64), np.asarray(mixture, np.float64)
    values = payoffs @ x
    return float(values.max() - x @ values)


def meta_strategy(cfg: PSROConfig, payoffs) -> np.ndarray:
    """The meta-solver's mixture over the population."""
    if cfg.meta_solver == "uniform":
        return np.asarray(uniform(payoffs), np.float64)
    x = projected_replicator_dynamics(jnp.asarray(payoffs), steps=cfg.prd_steps, dt=cfg.prd_dt, gamma=cfg.prd_gamma)
    x = np.asarray(x, np.float64)
    return x / x.sum()


# ------------------------------------------------------------------ the empirical game
def fill_payoffs(env, members: list[str], payoffs, games: int, seed: int) -> np.ndarray:
    """``payoffs`` grown to the population ``members`` (absolute specs), its missing
    entries played: for each column j, the members without an entry in one seat against
    three copies of j, on the same seeded tables (`coupjax.seat_tables.play_tables`)."""
    from coupjax.seat_tables import play_tables

    m, known = len(members), len(payoffs)
    out = np.full((m, m), np.nan)
    out[:known, :known] = np.asarray(payoffs, np.float64).reshape(known, known)
    for j in range(m):
        rows = [i for i in range(m) if np.isnan(out[i, j])]
        if rows:
            got = play_tables(env, [members[i] for i in rows], games, seed, opponents=members[j])
            for i in rows:
                out[i, j] = got[members[i]]["win_rate"]
    return out


# ------------------------------------------------------------------ the loop
def train_or_resume(cfg, run_dir: Path, use_wandb: bool, quiet: bool) -> dict:
    """An oracle's run: read back when finished, resumed from its checkpoint when cut,
    started afresh when cut before its first checkpoint."""
    from training.train import run_training

    summary_file = run_dir / "summary.json"
    if summary_file.is_file() and (run_dir / "export").is_dir():
        summary = json.loads(summary_file.read_text())
        if summary.get("chunks_done") == cfg.num_chunks:
            return summary
    resume = (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").iterdir())
    if not resume and run_dir.exists():
        shutil.rmtree(run_dir)
    return run_training(cfg, run_dir, resume=resume, use_wandb=use_wandb, quiet=quiet)


def _member_path(run_dir: Path, spec: str) -> str:
    """A population member as a policy spec: an oracle (stored relative to the run) as
    its absolute run directory, anything else as it is."""
    return str((run_dir / spec).resolve()) if spec.startswith("iteration_") else spec


def check_psro_dir(run_dir, cfg: PSROConfig, resume: bool) -> None:
    """Refuse a run directory that is not empty (without ``resume``), or a resumption of
    another config (only `RESUME_FREE` keys may differ) or of nothing."""
    from training.runs import RunDirError

    run_dir = Path(run_dir)
    if not resume:
        if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
            raise RunDirError(f"run directory {str(run_dir)!r} exists and is not empty; pass --resume to continue "
                              f"it or choose another --run-dir")
        return
    saved = run_dir / "config.json"
    if not saved.is_file():
        raise RunDirError(f"--resume: {str(run_dir)!r} holds no PSRO run to continue")
    old, new = json.loads(saved.read_text()), config_to_dict(cfg)
    diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k) and k not in RESUME_FREE)
    if diff:
        raise RunDirError(f"--resume: the run in {str(run_dir)!r} was made with another config "
                          f"(keys {', '.join(diff)} differ)")


def run_psro(cfg: PSROConfig, run_dir, resume: bool = False, use_wandb: bool = True, quiet: bool = False) -> dict:
    """The loop of the module doc in ``run_dir``; returns the final state (``psro.json``)."""
    from coupjax.env import Env
    from training.runs import init_wandb, log_metrics

    t_start = time.time()
    run_dir = Path(run_dir)
    check_psro_dir(run_dir, cfg, resume)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(config_to_dict(cfg), indent=2))
    state_file = run_dir / STATE_FILE
    state = json.loads(state_file.read_text()) if resume and state_file.is_file() else \
        {"population": list(cfg.initial), "payoffs": [], "meta_strategy": [], "iterations": []}
    env = Env(oracle_config(cfg, {cfg.initial[0]: 1.0}, 0).num_players)

    def members():
        return [_member_path(run_dir, s) for s in state["population"]]

    def save():
        tmp = state_file.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(state, indent=1))
        tmp.replace(state_file)  # a cut iteration leaves the previous state whole

    def say(msg: str, row: dict | None = None):
        print(json.dumps(row) if quiet and row is not None else msg, flush=True)

    if len(state["payoffs"]) < len(state["population"]):  # the initial population's game
        state["payoffs"] = fill_payoffs(env, members(), state["payoffs"], cfg.payoff_games, cfg.seed).tolist()
        state["meta_strategy"] = meta_strategy(cfg, state["payoffs"]).tolist()
        save()
    for k in range(len(state["iterations"]) + 1, cfg.iterations + 1):
        t0 = time.time()
        mixture = dict(zip(members(), state["meta_strategy"]))
        ocfg = oracle_config(cfg, mixture, k)
        say(f"PSRO iteration {k}/{cfg.iterations}: training a {ocfg.algo} oracle against "
            + ", ".join(f"{Path(s).name} {p:.3f}" for s, p in mixture.items()))
        summary = train_or_resume(ocfg, run_dir / f"iteration_{k}", use_wandb, quiet)
        old = np.asarray(state["payoffs"], np.float64)
        state["population"].append(f"iteration_{k}")
        payoffs = fill_payoffs(env, members(), old, cfg.payoff_games, cfg.seed)
        sigma = np.asarray(state["meta_strategy"], np.float64)
        new = meta_strategy(cfg, payoffs)
        row = {"iteration": k, "oracle": f"iteration_{k}", "trained_against": {Path(s).name: p for s, p in
                                                                                 mixture.items()},
               "oracle_train_win_rate": summary["final"].get("win_rate"),
               "oracle_value": float(payoffs[-1, :-1] @ sigma),  # its payoff against the mixture it trained on
               "mixture_value": float(sigma @ old @ sigma),  # the mixture's own, before it
               "regret": regret(payoffs, new),
               "seconds": time.time() - t0}
        row["oracle_gain"] = row["oracle_value"] - row["mixture_value"]  # > 0: the mixture was exploitable
        state.update(payoffs=payoffs.tolist(), meta_strategy=new.tolist())
        state["iterations"].append(row)
        save()
        say(f"PSRO iteration {k}: the oracle wins {row['oracle_value']:.3f} against the mixture (which wins "
            f"{row['mixture_value']:.3f} against itself); meta-strategy "
            + ", ".join(f"{s} {p:.3f}" for s, p in zip(state["population"], new)) + f"; {row['seconds']:.0f} s", row)
        wb = init_wandb(cfg, run_dir, use_wandb, resume=k > 1 or resume)
        log_metrics(wb, {"psro/oracle_value": row["oracle_value"], "psro/mixture_value": row["mixture_value"],
                         "psro/oracle_gain": row["oracle_gain"],
                         "psro/regret": row["regret"], "psro/population": len(state["population"]),
                         "psro/meta_entropy": float(-(new * np.log(np.maximum(new, 1e-12))).sum())}, k)
        if wb is not None:
            wb.finish()
    state["wall_seconds"] = time.time() - t_start
    save()
    return state


# ------------------------------------------------------------------ CLI
def main(argv=None) -> int:
    from coupjax.args import fail
    from coupjax.devices import use_host_cores
    from training.runs import RunDirError, run_parser

    prog = "python -m training.psro"
    ap = run_parser(prog, __doc__.split("\n\n")[0], "PSRO config (YAML, e.g. configs/psro_cpu.yaml)",
                    "directory of the oracles' runs and psro.json",
                    "continue the run in --run-dir", quiet_help="no progress bars; JSON lines of figures")
    args = ap.parse_args(argv)
    try:
        cfg = load_psro_config(args.config, args.set)
        check_psro_dir(args.run_dir, cfg, args.resume)
    except (ConfigError, RunDirError) as err:
        fail(prog, err)
    use_host_cores(args.host_devices)  # before JAX starts its backends, as training.train
    os.environ.setdefault("WANDB_MODE", "offline")
    state = run_psro(cfg, args.run_dir, resume=args.resume, use_wandb=not args.no_wandb, quiet=args.quiet)
    print(f"PSRO: {len(state['iterations'])} iterations in {state['wall_seconds']:.0f} s; meta-strategy "
          + ", ".join(f"{s} {p:.3f}" for s, p in zip(state["population"], state["meta_strategy"]))
          + f"; state: {Path(args.run_dir) / STATE_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
