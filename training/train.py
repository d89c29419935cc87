"""Command line: ``python -m training.train --config FILE --run-dir DIR [--resume]
[--no-wandb] [--set key=value ...]``.

The config is loaded and checked before anything is computed (a bad key or value
exits with status 2 and a message naming it).  W&B runs offline unless the user opts
in (``WANDB_MODE`` defaults to ``offline``; ``--no-wandb`` turns it off); its files go
under ``DIR`` unless ``WANDB_DIR`` is set.

DQN (`training.dqn`) and self-play (`training.selfplay`) share one chunk driver,
`run_training`: one AOT-compiled ``train_chunk`` is called once per chunk (a rich
progress bar over chunks); every chunk logs its metrics to W&B and saves an Orbax
checkpoint every ``checkpoint_every`` chunks; ``--resume`` restores the latest one and
continues with the identical next chunk.  At the end ``DIR/export/`` is written
(`coupjax.inference.load_policy`), then an optional evaluation, and ``DIR/summary.json``
(wall time, compile time, env steps per second, final metrics).

BC: collects games of the scripted teachers, fits, exports (``training.bc``).

Several processes, one job (``--coordinator HOST:PORT --num-processes N --process-id
I``, or a SLURM / Open MPI launch; `coupjax.distributed`, docs/scaling.md): the games
span every process's devices, each process saves and restores its shards of the
checkpoints, and process 0 alone writes the rest of the run directory.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from coupjax import compile_cache, distributed
from coupjax.args import fail, rate, seconds
from coupjax.console import console
from coupjax.devices import use_host_cores
from coupjax.policies.spec import describe_spec, locate
from training.config import (BCConfig, ConfigError, DQNConfig, SelfPlayConfig, config_to_dict, load_config,
                             resolve_pool)
from training.runs import (RESUME_FREE_KEYS, RunDirError, check_run_dir, evaluate_run, init_wandb, log_metrics,
                           progress_bar, run_parser)


# ------------------------------------------------------------------ the algorithms
# What the one chunk driver needs of each algorithm: its ``make_train(cfg)`` (a setup
# with init / train_chunk / abstract_state / put / env), its export of a runner state,
# and the metrics shown on the progress line.
PROGRESS_KEYS = {"dqn": ("win_rate", "loss", "q_mean", "epsilon", "entropy"),
                 "selfplay": ("win_rate", "entropy", "kl_magnet", "belief_loss", "belief_ece")}


def _algorithm(cfg):
    """(make_train, export(setup, rs, run_dir)) of ``cfg.algo``."""
    if cfg.algo == "dqn":
        from training.dqn import export_dqn, make_train

        return make_train, lambda setup, rs, run_dir: export_dqn(setup, rs.params, Path(run_dir) / "export")
    if cfg.algo == "selfplay":
        from training.selfplay import export, make_train

        return make_train, export
    raise ValueError(f"{cfg.algo!r} runs are not trained in chunks")


def _scalars(setup, m) -> dict:
    """Chunk metrics as host scalars (and 1-D arrays such as DQN's action histogram)."""
    import jax

    flatten = getattr(setup, "flatten_metrics", None)
    m = flatten(m) if flatten else jax.device_get(m)
    return {k: (float(v) if np.ndim(v) == 0 else np.asarray(v)) for k, v in m.items()}


_COMPILED: dict = {}  # id(setup) -> (setup, its compiled chunk): one compile per setup and process
# Config keys that shape no compiled program of a run: its length, seed, checkpoints, export and logging.  A run
# that changes only these reuses the saved trace and the executable of its chunk (`compiled_chunk`).
PROGRAM_FREE_KEYS = frozenset(RESUME_FREE_KEYS | {"seed", "export_seed"})


def program_key(cfg) -> tuple:
    """Everything a run's compiled chunk depends on besides its argument types and coupjax's
    own source (`coupjax.compile_cache.traced_once`): the config's program keys, the
    training code, and the files its opponents are read from (a pool's exports and
    policy modules), so that a changed file is traced again."""
    program = {k: v for k, v in config_to_dict(cfg).items() if k not in PROGRAM_FREE_KEYS}
    files = hashlib.sha256()
    for spec in resolve_pool(cfg.opponents, cfg.policy_modules):
        kind = describe_spec(spec)
        paths = [locate(spec)] if kind == "path" else []
        if kind == "registered:arg" and locate(spec.partition(":")[2]):
            paths.append(locate(spec.partition(":")[2]))
        modules = [spec.partition(":")[0]] if kind == "module" else []
        for name in [*cfg.policy_modules, *modules]:
            found = importlib.util.find_spec(name)
            paths += [Path(found.origin)] if found is not None and found.origin else []
        for path in paths:
            for f in sorted(x for x in [path, *path.rglob("*")] if x.is_file()):
                files.update(str(f).encode() + b"\0" + f.read_bytes())
    return (json.dumps(program, sort_keys=True), compile_cache.source_digest(Path(__file__).resolve().parent),
            files.hexdigest())


def compiled_program(setup, part: str, fn, args: tuple, say=None, saved: bool = True):
    """``fn`` (``setup.init`` or ``setup.train_chunk``) compiled ahead of time for ``args``,
    through its saved trace (`coupjax.compile_cache.compiled`): a second start of the same
    config, or of one that changes only `PROGRAM_FREE_KEYS`, neither traces nor compiles
    it.  ``saved=False``: ``fn``'s own trace, for a caller that has already called ``fn``
    (its trace is in memory; the saved one would be a second program to compile).  ``say``
    gets a line before and after compiling."""
    import jax

    name = f"{setup.config.algo}-{part}"
    if jax.process_count() > 1 or not saved:  # several processes: a saved trace runs on one process's devices only
        with compile_cache.compile_log(name, say):
            return jax.jit(fn).lower(*args).compile()
    return compile_cache.compiled(fn, name, *program_key(setup.config), setup.num_devices, args=args, say=say)


def compiled_chunk(setup, rs, say=None, saved: bool = True):
    """``setup.train_chunk`` compiled for states like ``rs`` (`compiled_program`), once per
    setup and process."""
    hit = _COMPILED.get(id(setup))
    if hit is None or hit[0] is not setup:
        chunk = compiled_program(setup, "train-chunk", setup.train_chunk, (rs,), say, saved)
        hit = _COMPILED[id(setup)] = (setup, chunk)
    return hit[1]


def run_training(cfg: DQNConfig | SelfPlayConfig, run_dir, resume: bool = False, use_wandb: bool = True, setup=None,
                 quiet: bool = False, stop_after: int | None = None) -> dict:
    """Train (or resume) a DQN or self-play run in ``run_dir``; returns the summary dict.

    One AOT-compiled ``train_chunk`` is called once per chunk; checkpoints every
    ``checkpoint_every`` chunks; the export, the optional evaluation and
    ``summary.json`` at the end.  The run directory is checked before anything is
    computed or written (`training.runs.check_run_dir`).  ``setup``: a prebuilt
    ``make_train(cfg)`` of the algorithm (tests reuse compiles); ``stop_after``: stop
    after this many chunks in this call (simulates an interruption).
    """
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    from training import checkpoint

    t_start = time.time()
    run_dir = Path(run_dir)
    cfg_dict = config_to_dict(cfg)
    primary = distributed.is_primary()  # of several processes, only process 0 writes files and logs
    if primary:  # the others checked before joining the job (`main`); now process 0 may be writing
        check_run_dir(run_dir, cfg_dict, resume)
    ckpt_dir = run_dir / "checkpoints"
    make_train, export = _algorithm(cfg)
    saved = setup is None  # a caller's own setup (tests, a PSRO iteration) keeps its own compiles
    setup = make_train(cfg) if setup is None else setup
    notes = console(stderr=True)
    say = (lambda line: notes.print(line, markup=False, highlight=False)) if primary else (lambda line: None)
    if resume:
        host, _, done = checkpoint.restore_checkpoint(ckpt_dir, setup.abstract_state())
        rs = setup.for_this_run(setup.put(host))
    else:
        done = 0
        key = jax.random.PRNGKey(cfg.seed)
        if saved and jax.process_count() == 1:  # on every device of the mesh, as the saved initialisation expects it
            key = jax.device_put(key, NamedSharding(setup.mesh, PartitionSpec()))
        # several processes: compiled in each, then run together (gloo waits 30 s for a peer's first collective)
        init = compiled_program(setup, "init", setup.init, (key,), say) if saved or jax.process_count() > 1 \
            else setup.init  # the caller's own, compiled when it made its states
        distributed.barrier("init compiled")
        rs = setup.for_this_run(init(key))
    if primary:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.json").write_text(json.dumps(cfg_dict, indent=2))
    manager = checkpoint.checkpoint_manager(ckpt_dir, cfg.max_checkpoints)  # every process: Orbax saves in step
    wb = init_wandb(cfg, run_dir, use_wandb and primary, resume)
    no_bar, quiet = quiet or not primary, quiet and primary  # the other processes print nothing

    t0 = time.time()
    chunk = compiled_chunk(setup, rs, say, saved)  # the one compiled function for every chunk
    compile_s = time.time() - t0
    distributed.barrier("compiled")  # several processes: all compiled before the next collective
    keys = PROGRESS_KEYS[cfg.algo]
    prog, task = progress_bar(cfg.num_chunks, done, no_bar)
    train_s, env_steps, transitions, last = 0.0, 0, 0, {}
    history = []
    with prog:
        prog.update(task, info=f"compiled in {compile_s:.0f}s")
        stop = cfg.num_chunks if stop_after is None else min(cfg.num_chunks, done + stop_after)
        for c in range(done, stop):
            t1 = time.time()
            rs, m = chunk(rs)
            m = _scalars(setup, m)
            dt = time.time() - t1
            train_s += dt
            env_steps += int(m["env_steps"])
            transitions += int(m["transitions"])
            m = dict(m, chunk=c + 1, chunk_seconds=dt, env_steps_per_s=m["env_steps"] / dt,
                     transitions_per_s=m["transitions"] / dt)
            log_metrics(wb, m, int(m["step"]))
            last = {k: (float(v) if np.ndim(v) == 0 else np.asarray(v).tolist()) for k, v in m.items()}
            history.append(last)  # action_hist too: the exploration ablation reads it per chunk
            if (c + 1) % cfg.checkpoint_every == 0 or c + 1 == cfg.num_chunks:
                checkpoint.save_checkpoint(manager, c + 1, rs, cfg_dict)
            if quiet:
                print(json.dumps({k: round(last[k], 4) for k in ("chunk", *keys, "env_steps_per_s", "chunk_seconds")}),
                      flush=True)
            prog.update(task, advance=1, info=" ".join(f"{k} {last[k]:.3f}" for k in keys[:3])
                        + f" {last['env_steps_per_s']:.0f} env steps/s")
    summary = {"algo": cfg.algo, "chunks_done": stop, "compile_seconds": compile_s, "train_seconds": train_s,
               "env_steps": env_steps, "transitions": transitions,
               "env_steps_per_s": env_steps / max(train_s, 1e-9),
               "transitions_per_s": transitions / max(train_s, 1e-9), "final": last, "history": history}
    if stop == cfg.num_chunks and primary:
        export(setup, rs, run_dir)
        if cfg.eval_games > 0:
            t2 = time.time()
            summary["eval"] = evaluate_run(setup.env, run_dir, cfg.eval_games)
            summary["eval_seconds"] = time.time() - t2
            if wb is not None:
                wb.log({f"eval/{k}_win_rate": v["win_rate"] for k, v in summary["eval"].items()},
                       step=int(last["step"]))
    summary["wall_seconds"] = time.time() - t_start
    if primary:
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    if wb is not None:
        wb.summary.update({k: v for k, v in summary.items() if np.ndim(v) == 0})
        wb.finish()
    manager.close()
    distributed.barrier("run written")  # the others wait for process 0's export, evaluation and summary
    return summary


# ------------------------------------------------------------------ CLI
def parse_args(argv=None):
    ap = run_parser("python -m training.train", __doc__.split("\n\n")[0], "YAML config file (configs/*.yaml)",
                    "directory for checkpoints, export, W&B files, summary",
                    "continue from the latest checkpoint in --run-dir", quiet_help="no progress bar")
    distributed.add_flags(ap)
    args = ap.parse_args(argv)
    problem = distributed.check_flags(args)
    if problem:
        ap.error(problem)
    return args


def describe_summary(summary: dict, run_dir) -> str:
    """The summary's headline figures for people (rounded, with units)."""
    parts = [f"trained in {seconds(summary['wall_seconds'])}"]
    if "compile_seconds" in summary:
        parts.append(f"compile {seconds(summary['compile_seconds'])}")
    if summary.get("env_steps_per_s"):
        parts.append(rate(summary["env_steps_per_s"], "env steps"))
    lines = ["; ".join(parts), f"export: {Path(run_dir) / 'export'}; summary: {Path(run_dir) / 'summary.json'}"]
    for name, row in summary.get("eval", {}).items():
        lines.append(f"  {name:<12} win rate {row['win_rate']:.3f} [{row['ci95_low']:.3f}, {row['ci95_high']:.3f}] "
                     f"over {row['games']:,} tables")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    prog = "python -m training.train"
    try:
        cfg = load_config(args.config, args.set)
        if isinstance(cfg, BCConfig) and args.resume:
            raise RunDirError("--resume: behaviour cloning runs are not checkpointed; start a new --run-dir")
        check_run_dir(args.run_dir, config_to_dict(cfg), args.resume)
        if distributed.wanted(args) and isinstance(cfg, BCConfig):
            raise ConfigError("behaviour cloning runs train in one process; drop --coordinator "
                              "(or the launcher's several tasks)")
    except (ConfigError, RunDirError) as err:
        fail(prog, err)
    use_host_cores(args.host_devices)  # before JAX starts its backends
    distributed.initialize(args, prog)  # several processes: one job, one global mesh (docs/scaling.md)
    os.environ.setdefault("WANDB_MODE", "offline")
    if isinstance(cfg, BCConfig):
        from training.bc import run_bc

        summary = run_bc(cfg, args.run_dir, use_wandb=not args.no_wandb, quiet=args.quiet)
    else:
        with distributed.fail_on_lost_peer(prog):
            summary = run_training(cfg, args.run_dir, resume=args.resume, use_wandb=not args.no_wandb,
                                   quiet=args.quiet)
    if distributed.is_primary():
        print(describe_summary(summary, args.run_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
