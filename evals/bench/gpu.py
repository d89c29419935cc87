"""The GPU figures in one prepared run: ``python -m evals.bench_gpu --out FILE.json``
(``make bench-gpu``).

GPU time is lent in minutes, start-up included, so the figures come from one script
that fits in about 4 minutes of wall time on one GPU, compilation included, and keeps
what it measured if it is cut: the JSON is rewritten after every section, and a section
that fails records its error there while the next one still runs.  The sections, in
order (most wanted first):

device    the devices (name, platform, count), the processes and the versions.
engine    `evals.bench_engine`'s live and auto-reset loops at batch 4,096 to 1,048,576
          (x16 a size first, then the sizes between if time is left: each size costs a
          compile, so the largest comes early) against the plain-Python model timed
          between them; a size that would not fit in device memory (the largest size's
          peak per game says) or would overrun the section's time is skipped.
memory    device memory per game: the device's peak bytes in use after the engine's
          largest batch divided by its games, and the bytes a batch of fresh games
          holds; on a device without `memory_stats` (a CPU) "not available", beside
          the state's own bytes per game (`bench_engine.state_bytes`).
selfplay  chunks of ``selfplay_gpu.yaml`` cut by ``key=value`` overrides, through the
          trainer's own `make_train` and AOT-compiled chunk (`training.train`): env
          steps/s, PPO updates/s and gradient steps/s, compile seconds.
dqn       the same for ``dqn_gpu.yaml``: env steps/s, learner transitions/s and
          gradient updates/s (the best chunk is reported).
search    decisions per second of the registered search policy ``expected`` (the
          seat table's budget) at batch 1 (one state per call, `evals.bench_policy`),
          64 (one vmapped call, `evals.bench_policy`) and 1,024 (one vmapped call).

Each section has a time budget: once spent, it starts no new measurement (a compile in
flight cannot be cut), and the run has a deadline (``--budget``): a section that would
start with less than a compile's worth of it left is recorded as skipped.  ``--small``
(automatic when JAX's default device is a CPU) uses tiny sizes, networks and pools, and
a small search budget, so the script runs on a CPU in its test; ``--sections`` runs some.

The JSON has one key per section (its figures, ``seconds``, ``cpu_seconds`` -- below
``seconds`` on a shared host -- and on a GPU ``memory_after``; or ``error`` and
``traceback``; or ``skipped``), beside ``small``, ``sections``, ``budget_s``, ``wall_s``
and ``complete`` (false in the file of a run that was cut).

Nothing beyond jax, flax, optax, chex, numpy, pyyaml and rich is imported at the top,
not even the project: a bare GPU machine may lack the rest (W&B, Orbax, distrax, the web
stack), and a section that needs a missing one fails alone, its error in the JSON.
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

PROG = "python -m evals.bench_gpu"


@dataclasses.dataclass(frozen=True)
class Plan:
    """The sizes of one run and each section's seconds."""

    engine_batches: tuple
    engine_steps: int | None  # scan length T (None: bench_engine.scan_length)
    engine_repeats: int
    engine_min_time: float  # seconds of timed calls per measurement, at least
    python_chunk_s: float  # the Python model's chunk between two engine batches
    memory_games: int  # fresh games whose device bytes are measured
    selfplay_overrides: tuple
    dqn_overrides: tuple
    max_chunks: int
    search_batches: tuple  # the first is one state per call; the rest one vmapped call each
    search_policy: str  # a policy spec (coupjax.policies.spec)
    budgets: dict  # section -> seconds
    deadline_s: float  # the whole run
    min_section_s: float  # a section is skipped when less is left before the deadline (its compile alone is more)


# On one GPU: 10 + 70 + 5 + 45 + 35 + 50 s of sections inside a 220 s deadline: start-up
# and a compile that overruns its section take the rest of 4 minutes.  The training chunks are cut to a few
# updates: a chunk of the configs as shipped would take most of the budget; DQN's warm-up
# is cut to one step of its games, so that its chunks time steady updates.
FULL = Plan(engine_batches=(4096, 65536, 1048576, 16384, 262144), engine_steps=None, engine_repeats=2,
            engine_min_time=0.5, python_chunk_s=0.5, memory_games=65536,
            selfplay_overrides=("updates_per_chunk=4",), dqn_overrides=("updates_per_chunk=50", "warmup_steps=4096"),
            max_chunks=3,
            search_batches=(1, 64, 1024), search_policy="expected",
            budgets={"device": 10, "engine": 70, "memory": 5, "selfplay": 45, "dqn": 35, "search": 50},
            deadline_s=220, min_section_s=15)
# On a CPU (the test): the same code on tiny sizes, networks and pools.
SMALL = Plan(engine_batches=(64,), engine_steps=8, engine_repeats=1, engine_min_time=0.0, python_chunk_s=0.1,
             memory_games=64,
             selfplay_overrides=("num_seeds=1", "num_envs=8", "rollout_steps=4", "num_minibatches=1", "num_epochs=1",
                                 "updates_per_chunk=1", "hidden_sizes=[16]", "belief_hidden_sizes=[16]",
                                 "num_snapshots=1", "opponents=random"),
             dqn_overrides=("num_envs=8", "batch_size=8", "buffer_size=64", "warmup_steps=8", "updates_per_chunk=2",
                            "gradient_steps=1", "hidden_sizes=[16]", "opponents=random"),
             max_chunks=2, search_batches=(1, 4), search_policy="evals.bench.gpu:small_search",
             budgets={"device": 30, "engine": 60, "memory": 30, "selfplay": 60, "dqn": 60, "search": 60},
             deadline_s=600, min_section_s=1)


class Section:
    """One section's clock: ``left()`` seconds of its budget (and of the run's deadline)."""

    def __init__(self, budget: float, deadline: float):
        self.t0 = time.perf_counter()
        self.end = min(self.t0 + budget, deadline)

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def left(self) -> float:
        return self.end - time.perf_counter()


def memory_stats(device=None) -> dict | None:
    """The device's allocator figures (None where the backend keeps none, e.g. a CPU)."""
    device = device or jax.devices()[0]
    try:
        stats = device.memory_stats()
    except (AttributeError, NotImplementedError, RuntimeError):
        return None
    return dict(stats) if stats else None


def _is_oom(err: BaseException) -> bool:
    text = str(err)
    return "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()


# ------------------------------------------------------------------ sections
def section_device(plan: Plan, clock: Section, report: dict) -> dict:
    import chex
    import flax
    import optax
    import yaml

    devices = jax.devices()
    try:
        import jaxlib

        jaxlib_version = jaxlib.__version__
    except (ImportError, AttributeError):
        jaxlib_version = None
    stats = memory_stats(devices[0])
    return {
        "name": devices[0].device_kind, "platform": devices[0].platform, "count": len(devices),
        "devices": [f"{d} ({d.device_kind})" for d in devices], "default_backend": jax.default_backend(),
        "process_count": jax.process_count(), "local_device_count": jax.local_device_count(),
        "bytes_limit": None if stats is None else stats.get("bytes_limit"),
        "versions": {"jax": jax.__version__, "jaxlib": jaxlib_version, "flax": flax.__version__,
                     "optax": optax.__version__, "chex": chex.__version__, "numpy": np.__version__,
                     "pyyaml": yaml.__version__, "python": platform.python_version()},
        "host": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "environment_info": jax.print_environment_info(return_string=True),
    }


def next_batch_verdict(last: dict | None, batch: int, bytes_limit: int | None, seconds_left: float) -> str | None:
    """Why the engine should not measure ``batch`` after ``last``, the row of the largest
    batch measured so far (None: measure it).

    Memory: the first device's peak bytes in use after ``last`` per game it held, times
    the games it would hold of ``batch``, must stay under 90% of its limit.  Time:
    ``last``'s compile plus its timed calls scaled by the batch ratio must fit in what is
    left."""
    if last is None:
        return None
    peak_per_game = last.get("peak_bytes_per_game")
    games = batch // last.get("shards", 1)
    if peak_per_game and bytes_limit and peak_per_game * games > 0.9 * bytes_limit:
        return f"batch {batch} would not fit: {peak_per_game:.0f} bytes/game x {games} > 90% of {bytes_limit}"
    predicted = last["compile_s"] + batch / last["batch"] * max(last["wall_s"] - last["compile_s"], 0.0)
    if predicted > seconds_left:
        return f"batch {batch} would overrun the section's time ({predicted:.0f} s predicted, {seconds_left:.0f} left)"
    return None


def section_engine(plan: Plan, clock: Section, report: dict) -> dict:
    from coupjax import Env
    from evals.bench import engine as bench_engine

    env = Env(4)
    baseline = bench_engine.PythonBaseline(4, plan.python_chunk_s, seed=0)
    baseline.chunk()
    shards = len(jax.devices())
    rows, skipped = [], []
    for batch in plan.engine_batches:
        largest = max(rows, key=lambda r: r["batch"], default=None)
        why = next_batch_verdict(largest, batch, (memory_stats() or {}).get("bytes_limit"), clock.left())
        if why:
            skipped.append({"batch": batch, "why": why})
            continue
        steps = plan.engine_steps or bench_engine.scan_length(batch, quick=False)
        t0 = time.perf_counter()
        try:
            row = bench_engine.bench_batch(env, batch, steps, plan.engine_repeats, plan.engine_min_time, 0,
                                 shards if bench_engine.games_sharding(batch, shards) is not None else 1)
        except Exception as err:  # noqa: BLE001 - a size that does not fit is skipped, not the section
            if not _is_oom(err):
                raise
            skipped.append({"batch": batch, "why": f"did not fit: {str(err).splitlines()[0][:300]}"})
            continue
        row["wall_s"] = time.perf_counter() - t0
        stats = memory_stats()
        if stats is not None and (largest is None or batch > largest["batch"]):  # the peak so far is this batch's
            row["peak_bytes_in_use"] = stats.get("peak_bytes_in_use")
            row["peak_bytes_per_game"] = stats.get("peak_bytes_in_use", 0) * row["shards"] / batch  # device 0's share
        rows.append(row)
        baseline.chunk()
    py = baseline.chunk()
    for r in rows:
        bench_engine.add_ratios(r, py)
    total, obs = bench_engine.state_bytes(env)
    return {"num_players": 4, "batches": sorted(rows, key=lambda r: r["batch"]), "skipped": skipped, **py,
            "state_bytes_per_game": total, "observation_bytes": obs}


def section_memory(plan: Plan, clock: Section, report: dict) -> dict:
    from coupjax import Env
    from evals.bench import engine as bench_engine

    env = Env(4)
    total, obs = bench_engine.state_bytes(env)
    out = {"state_bytes_per_game": total, "observation_bytes": obs}
    before = memory_stats()
    if before is None:
        return {**out, "available": False, "peak_bytes_per_game": "not available",
                "fresh_bytes_per_game": "not available"}
    engine_rows = report.get("engine", {}).get("batches") or []
    largest = max(engine_rows, key=lambda r: r["batch"], default=None)
    init = jax.jit(jax.vmap(env.init))
    games = jax.block_until_ready(init(jax.random.split(jax.random.key(0), plan.memory_games)))
    after = memory_stats()
    fresh = (after["bytes_in_use"] - before["bytes_in_use"]) / plan.memory_games
    del games
    limit = after.get("bytes_limit")
    peak = None if largest is None else largest.get("peak_bytes_per_game")
    return {**out, "available": True, "bytes_limit": limit, "peak_bytes_in_use": after.get("peak_bytes_in_use"),
            "peak_bytes_per_game": peak if peak is not None else "not measured (no engine batch)",
            "peak_batch": None if largest is None else largest["batch"],
            "fresh_bytes_per_game": fresh, "fresh_games": plan.memory_games,
            "games_that_fit_at_peak": int(limit // peak) if limit and peak else None}


def train_chunks(plan: Plan, clock: Section, config: str, overrides: tuple) -> dict:
    """Chunks of the trainer's own compiled ``train_chunk`` for ``config`` + ``overrides``."""
    import importlib

    from training.config import config_file, config_to_dict, load_config
    from training.train import compiled_chunk

    cfg = load_config(config_file(config), overrides)
    make_train = importlib.import_module(f"training.{cfg.algo}").make_train
    t0 = time.perf_counter()
    setup = make_train(cfg)
    rs = jax.block_until_ready(setup.init(jax.random.PRNGKey(cfg.seed)))
    init_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    chunk = compiled_chunk(setup, rs)
    compile_s = time.perf_counter() - t0
    flatten = getattr(setup, "flatten_metrics", jax.device_get)
    chunks = []
    while len(chunks) < plan.max_chunks and (not chunks or chunks[-1]["seconds"] < clock.left()):
        t0 = time.perf_counter()
        rs, m = chunk(rs)
        m = flatten(m)  # to the host: waits for the chunk
        chunks.append({"seconds": time.perf_counter() - t0, "env_steps": int(m["env_steps"]),
                       "transitions": int(m["transitions"]),
                       "updates": int(m["updates_in_chunk"]) if cfg.algo == "dqn" else cfg.updates_per_chunk})
    best = min(chunks, key=lambda c: c["seconds"] / max(c["env_steps"], 1))
    return {"config": config, "overrides": list(overrides), "devices": setup.num_devices,
            "num_envs": cfg.num_envs, "updates_per_chunk": cfg.updates_per_chunk, "init_s": init_s,
            "compile_s": compile_s, "chunks": chunks, "env_steps_per_s": best["env_steps"] / best["seconds"],
            "transitions_per_s": best["transitions"] / best["seconds"],
            "updates_per_s": best["updates"] / best["seconds"], "cfg": config_to_dict(cfg)}


def section_selfplay(plan: Plan, clock: Section, report: dict) -> dict:
    out = train_chunks(plan, clock, "selfplay_gpu.yaml", plan.selfplay_overrides)
    cfg = out["cfg"]
    # one PPO update is num_epochs x num_minibatches gradient steps on every training seed
    out["gradient_steps_per_s"] = out["updates_per_s"] * cfg["num_epochs"] * cfg["num_minibatches"]
    out["num_seeds"] = cfg["num_seeds"]
    return out


def section_dqn(plan: Plan, clock: Section, report: dict) -> dict:
    return train_chunks(plan, clock, "dqn_gpu.yaml", plan.dqn_overrides)  # updates: gradient updates


def _take(states, count: int):
    return jax.tree.map(lambda x: x[:count], states)


def time_batched(env, spec: str, states, seed: int = 7) -> dict:
    """Seconds per decision of ``spec`` over ``states`` in one vmapped call (best of two)."""
    from coupjax.policies import resolve_policy

    count = int(states.current_player.shape[0])
    batched = jax.jit(jax.vmap(resolve_policy(spec, env)))
    t0 = time.perf_counter()
    jax.block_until_ready(batched(jax.random.split(jax.random.PRNGKey(seed), count), states))
    compile_s = time.perf_counter() - t0
    calls = []
    for i in range(2):
        keys = jax.random.split(jax.random.PRNGKey(seed + 1 + i), count)
        t0 = time.perf_counter()
        jax.block_until_ready(batched(keys, states))
        calls.append(time.perf_counter() - t0)
    return {"seconds_per_decision": min(calls) / count, "compile_s": compile_s - min(calls)}


def small_search(env):
    """``expected`` at a budget a loaded CPU compiles in seconds (``--small``): two worlds,
    one random rollout per action cut after two decisions, 64 lanes."""
    from coupjax.search import SearchConfig, make_search_policy

    return make_search_policy(env, "expected", SearchConfig(num_worlds=2, rollouts_per_world=1,
                                                            rollout_policy="random", max_rollout_steps=2, lanes=64))


def section_search(plan: Plan, clock: Section, report: dict) -> dict:
    from coupjax.env import Env
    from coupjax.testing import sample_positions
    from evals.bench.policy import time_policy

    env = Env(4)
    first, *more = plan.search_batches
    if first != 1 or not more:
        raise ValueError(f"search batches must start with 1 and have a second size, got {plan.search_batches}")
    states = sample_positions(env, max(plan.search_batches), seed=7)
    timed = time_policy(env, plan.search_policy, _take(states, more[0]))
    rows = [{"batch": 1, "seconds_per_decision": timed["single_median_s"], "compile_s": timed["compile_s"],
             "how": f"one state per jitted call, median of {timed['positions']}"},
            {"batch": more[0], "seconds_per_decision": timed["batched_per_decision_s"],
             "how": "one vmapped call"}]
    for batch in more[1:]:
        if clock.left() <= 0:
            rows.append({"batch": batch, "skipped": "the section's time was spent"})
            continue
        rows.append({"batch": batch, **time_batched(env, plan.search_policy, _take(states, batch)),
                     "how": "one vmapped call, best of 2"})
    for r in rows:
        if "seconds_per_decision" in r:
            r["decisions_per_s"] = 1.0 / r["seconds_per_decision"]
    from coupjax.policies import resolve_policy

    config = getattr(resolve_policy(plan.search_policy, env), "config", None)
    return {"policy": plan.search_policy, "config": None if config is None else config.describe(), "batches": rows}


SECTIONS = {"device": section_device, "engine": section_engine, "memory": section_memory,
            "selfplay": section_selfplay, "dqn": section_dqn, "search": section_search}


# ------------------------------------------------------------------ output
def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


# The columns printed of a section's rows (the JSON keeps every figure): key -> heading.
ROW_COLUMNS = {"batch": "batch", "shards": "devices", "steps": "T", "live_steps_per_s": "live steps/s",
               "ratio_live": "x py", "autoreset_steps_per_s": "auto-reset steps/s", "ratio_autoreset": "x py",
               "autoreset_games_per_s": "games/s", "peak_bytes_per_game": "peak B/game",
               "decisions_per_s": "decisions/s", "seconds_per_decision": "s/decision", "how": "how",
               "skipped": "skipped", "why": "why", "env_steps": "env steps", "transitions": "transitions",
               "updates": "updates", "seconds": "seconds", "compile_s": "compile s"}


def print_section(console: Console, name: str, result: dict) -> None:
    """A key/value table of the section's scalars, and a table per list of rows."""
    table = Table(title=f"{name} ({result.get('seconds', 0):.1f} s)", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right", overflow="fold")
    for k, v in result.items():
        if k in ("environment_info", "cfg", "traceback") or isinstance(v, (list, dict)) and k not in ("overrides",):
            continue
        table.add_row(k, _cell(v))
    console.print(table)
    for k, v in result.items():
        if isinstance(v, list) and v and all(isinstance(r, dict) for r in v):
            cols = [c for c in ROW_COLUMNS if any(c in r for r in v)]
            rows = Table(title=f"{name}: {k}")
            for c in cols:
                rows.add_column(ROW_COLUMNS[c], justify="right")
            for r in v:
                rows.add_row(*(_cell(r.get(c, "")) for c in cols))
            console.print(rows)
    if "error" in result:
        console.print(f"[red]{name} failed:[/red] {result['error']}")


def write_json(path: Path | None, report: dict) -> None:
    """Rewrite ``path`` whole (a temporary file renamed over it: a cut run leaves no half file)."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=2, default=str) + "\n")
    os.replace(tmp, path)


# ------------------------------------------------------------------ main
def _output_file(text: str):
    """`coupjax.args.output_file`, imported when the arguments are parsed: this module
    imports nothing of the project at its top (a section imports what it uses)."""
    from coupjax.args import output_file

    return output_file(text)


def main(argv=None) -> dict:
    from coupjax.args import Parser, fail

    ap = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=_output_file, default=None, help="write the figures here (JSON, after every section)")
    ap.add_argument("--small", action="store_true", help="tiny sizes (automatic when the default device is a CPU)")
    ap.add_argument("--sections", default=",".join(SECTIONS),
                    help=f"comma-separated, in the order given (default {','.join(SECTIONS)})")
    ap.add_argument("--budget", type=float, default=None,
                    help=f"the run's deadline in seconds (default {FULL.deadline_s:g}; --small {SMALL.deadline_s:g})")
    args = ap.parse_args(argv)
    names = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = [s for s in names if s not in SECTIONS]
    if unknown or not names:
        fail(PROG, f"--sections: unknown {unknown or args.sections!r}; choose from {', '.join(SECTIONS)}")
    if args.budget is not None and not args.budget > 0:
        fail(PROG, f"--budget must be a positive number of seconds, got {args.budget:g}")

    start = time.perf_counter()
    small = args.small or jax.default_backend() == "cpu"
    plan = SMALL if small else FULL
    deadline = start + (args.budget or plan.deadline_s)
    console = Console(width=120)
    report = {"script": PROG, "argv": list(sys.argv[1:] if argv is None else argv), "small": small,
              "sections": names, "budget_s": deadline - start, "complete": False}
    for name in names:
        if deadline - time.perf_counter() < plan.min_section_s:
            report[name] = {"skipped": "the run's deadline was reached", "seconds": 0.0}
            write_json(args.out, report)
            continue
        clock, cpu0 = Section(plan.budgets[name], deadline), time.process_time()
        console.print(f"[bold]{name}[/bold] (budget {min(plan.budgets[name], clock.left()):.0f} s) ...")
        try:
            result = SECTIONS[name](plan, clock, report)
        except Exception as err:  # noqa: BLE001 - recorded; the next section still runs
            result = {"error": f"{type(err).__name__}: {err}",
                      "traceback": traceback.format_exc(limit=-8).splitlines()[-20:]}
        result["seconds"] = clock.elapsed()
        result["cpu_seconds"] = time.process_time() - cpu0  # below `seconds` on a shared host
        stats = memory_stats()
        if stats is not None:
            result["memory_after"] = {k: stats.get(k) for k in ("bytes_in_use", "peak_bytes_in_use", "bytes_limit")}
        report[name] = result
        report["wall_s"] = time.perf_counter() - start
        write_json(args.out, report)
        print_section(console, name, result)
    report["complete"] = True
    report["wall_s"] = time.perf_counter() - start
    write_json(args.out, report)
    failed = [n for n in names if "error" in report[n]]
    console.print(f"done in {report['wall_s']:.0f} s" + (f"; failed: {', '.join(failed)}" if failed else "")
                  + (f"; wrote {args.out}" if args.out else ""))
    return report


if __name__ == "__main__":
    main()
