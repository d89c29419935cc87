"""Throughput of the JAX engine against the plain-Python reference model.

Run ``python -m evals.bench_engine`` (``--quick`` for a ~1 minute smoke run,
``--batch-sizes 1,256,4096`` to choose the batches, ``--out FILE.json`` to keep the
figures).  For every batch size ``B`` it measures, on one device and sharded over all (d):

(a) **live steps/s, fresh games.**  ``B`` games from ``vmap(env.init)`` are stepped
    ``T`` times by a vmapped ``env.step`` inside one jitted ``lax.scan``.  Only steps
    taken by games that had not terminated count as live (a finished game is still
    computed, branch-free, but its steps are wasted).  A random 4-player game lasts
    about 32 steps, so the live share falls as ``T`` grows: the ``live %`` column shows
    it.  ``T = 32`` (16 with ``--quick``) unless ``--steps`` is given.
(b) **steps/s and games/s with auto-reset.**  The same loop, but after every step each
    game that terminated is replaced by a fresh match (``env.step_autoreset``: Pgx's
    auto-reset semantics, fused into the step), so every step is live.  Calls are chained (each timed call
    continues from the previous final state) after a warm-up of at least 64 steps, so
    the figures are for a steady mix of game ages; games/s counts the games finished.
(c) **the Python baseline**, in the same run: ``tests/reference_model.py``'s ``RefGame``
    plays complete games (a fresh game each time, its construction included) with
    uniformly random legal actions from ``random.Random``, in chunks taken between the
    JAX measurements; the best chunk is the reference (both sides best-of, same load).  The table
    gives JAX / Python ratios of steps/s for (a) and (b) (and of games/s for (b)).
(d) **cores.**  On a CPU, JAX gives the host one device and XLA runs most of a step's
    small ops on one thread, so the benchmark first splits the host into
    ``--host-devices`` XLA devices (`coupjax.devices.use_host_cores`; default one per
    core, as the trainer's data-parallel step uses them) and measures every batch twice,
    side by side: on one device, and sharded over all of them (the batch split along its game axis, each
    device stepping its share; a batch that does not divide evenly is not sharded).
(e) **bytes of state per game**: the sum of ``nbytes`` over every leaf of one
    ``env.init`` state, observation and event included.

The policy is a cheap uniform-legal sampler, one batch-wide random draw per step: one
uniform number per game picks the k-th legal action (a prefix sum of the mask).  It is
uniform over the legal actions like ``argmax(where(mask, uniform((B, A)), -1))`` but
draws ``B`` numbers instead of ``B * A``; on a 2-core CPU that full-width draw costs
about a fifth of an engine step.  ``jax.random.categorical`` is not used.  The engine needs one key
per game and step; for each batch size the cheaper of ``jax.random.split(k, B)`` and
``vmap(jax.random.fold_in, (None, 0))(k, arange(B))`` is measured and used (``keys``).

Each jitted function is compiled and run once first (``block_until_ready``), then timed
over several calls (at least ``--repeats``, and until about a second has been spent):
rates are the best call's time with the live share and the games finished per step
averaged over all timed calls.  The final states are returned by the jitted functions and
kept, so nothing can be optimised away.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import platform
import random
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import Env
from coupjax.args import output_file
from coupjax.devices import batch_sharding, data_mesh, use_host_cores

DEFAULT_BATCH_SIZES = (1, 16, 256, 1024, 4096, 16384, 65536)
QUICK_BATCH_SIZES = (1, 256)
WARMUP_STEPS = 64  # auto-reset runs step at least this far before timing (two game lengths)


# ------------------------------------------------------------------ helpers
def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_ref_game():
    """``RefGame`` from ``tests/reference_model.py`` (loaded by path: ``tests`` is no package)."""
    path = Path(__file__).resolve().parents[2] / "tests" / "reference_model.py"
    spec = importlib.util.spec_from_file_location("_coupjax_reference_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.RefGame


def uniform_legal(mask: jax.Array, key: jax.Array) -> jax.Array:
    """A uniformly random legal action per row of ``mask`` [B, A]: one uniform per game."""
    count = mask.sum(axis=1, dtype=jnp.int32)
    u = jax.random.uniform(key, mask.shape[:1])
    k = jnp.minimum((u * count).astype(jnp.int32), count - 1)  # k-th legal action, 0-based
    # A prefix sum by `associative_scan` (log2(A) fused shift-and-add passes): XLA lowers
    # `jnp.cumsum` on CPU to a reduce-window that cost as much as a fifth of an engine step.
    rank = jax.lax.associative_scan(jnp.add, mask.astype(jnp.int32), axis=1)
    return jnp.argmax(rank > k[:, None], axis=1).astype(jnp.int32)


def keys_split(key, batch):
    return jax.random.split(key, batch)


def keys_fold_in(key, batch):
    return jax.vmap(jax.random.fold_in, (None, 0))(key, jnp.arange(batch, dtype=jnp.uint32))


KEY_METHODS = {"split": keys_split, "fold_in": keys_fold_in}


def _best_of(fn, *args, repeats=3):
    jax.block_until_ready(fn(*args))
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return best


def pick_key_method(batch: int, iters: int = 32) -> tuple[str, dict]:
    """Time each way of making ``batch`` per-game keys (inside a scan); return the cheaper."""
    times = {}
    for name, derive in KEY_METHODS.items():
        def run(key, derive=derive):
            def body(acc, i):
                keys = derive(jax.random.fold_in(key, i), batch)
                return acc + jax.random.key_data(keys).sum(dtype=jnp.uint32), None
            return jax.lax.scan(body, jnp.uint32(0), jnp.arange(iters))[0]
        times[name] = _best_of(jax.jit(run), jax.random.key(0)) / iters
    return min(times, key=times.get), times


def scan_length(batch: int, quick: bool) -> int:
    """T = 32 steps per timed call: about the mean length of a random 4-player game, so
    the fresh-game measurement steps games that are mostly still live (the table prints
    the live share).  Longer scans would mostly time no-op steps of finished games."""
    return 16 if quick else 32


# ------------------------------------------------------------------ the measured loops
def _make_loop(step_fn, batch: int, steps: int, derive, count, sharding=None):
    """jit(state, key) -> (final state, count(state before, state after) per step [T]).

    ``sharding``: the games' sharding over devices (None: one device); the per-game
    actions and keys are laid out like the games."""
    step = jax.vmap(step_fn)
    place = (lambda x: x) if sharding is None else (lambda x: jax.lax.with_sharding_constraint(x, sharding))

    def run(state, key):
        def body(carry, _):
            s, k = carry
            k, k_policy, k_step = jax.random.split(k, 3)
            action = place(uniform_legal(s.legal_action_mask, k_policy))
            new = step(s, action, place(derive(k_step, batch)))
            return (new, k), count(s, new)
        (state, _), counts = jax.lax.scan(body, (state, key), None, length=steps)
        return state, counts

    return jax.jit(run)


def make_live(env: Env, batch: int, steps: int, derive, sharding=None):
    """Fresh games stepped with `env.step`; counts the games live before each step."""
    return _make_loop(env.step, batch, steps, derive, lambda s, _: jnp.sum(~s.terminated, dtype=jnp.int32),
                      sharding)


def make_autoreset(env: Env, batch: int, steps: int, derive, sharding=None):
    """Games stepped with `env.step_autoreset`; counts the games finished by each step."""
    return _make_loop(env.step_autoreset, batch, steps, derive,
                      lambda _, new: jnp.sum(new.terminated, dtype=jnp.int32), sharding)


def games_sharding(batch: int, shards: int):
    """The batch split along its game axis over the first ``shards`` devices (None: one device)."""
    if shards <= 1 or batch % shards:
        return None
    return batch_sharding(data_mesh(jax.devices()[:shards], "games"))


def _timed(fn, state, key):
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn(state, key))
    return time.perf_counter() - t0, out


def bench_batch(env: Env, batch: int, steps: int, repeats: int, min_time: float, seed: int,
                shards: int = 1) -> dict:
    key_method, key_times = pick_key_method(batch)
    derive = KEY_METHODS[key_method]
    root = jax.random.key(seed)
    init = jax.jit(jax.vmap(env.init))
    sharding = games_sharding(batch, shards)
    fresh = jax.block_until_ready(init(derive(jax.random.fold_in(root, 0), batch)))
    if sharding is not None:
        fresh = jax.block_until_ready(jax.device_put(fresh, sharding))
    max_calls = max(repeats, 200)

    # (a) fresh games, live steps only
    live_fn = make_live(env, batch, steps, derive, sharding)
    t0 = time.perf_counter()
    final, live = jax.block_until_ready(live_fn(fresh, jax.random.fold_in(root, 1)))
    compile_live = time.perf_counter() - t0
    best, total, calls, live_steps = math.inf, 0.0, 0, 0
    while calls < max_calls and (calls < repeats or total < min_time):
        dt, (final, live) = _timed(live_fn, fresh, jax.random.fold_in(root, 100 + calls))
        best, total, calls = min(best, dt), total + dt, calls + 1
        live_steps += int(np.asarray(live, np.int64).sum())
    live_fraction = live_steps / (calls * batch * steps)
    live_calls, live_best = calls, best

    # (b) auto-reset, chained calls from a warmed-up state
    auto_fn = make_autoreset(env, batch, steps, derive, sharding)
    t0 = time.perf_counter()
    state, _ = jax.block_until_ready(auto_fn(fresh, jax.random.fold_in(root, 2)))
    compile_auto = time.perf_counter() - t0
    for i in range(math.ceil(WARMUP_STEPS / steps) - 1):
        state, _ = jax.block_until_ready(auto_fn(state, jax.random.fold_in(root, 3 + i)))
    best, total, calls, games = math.inf, 0.0, 0, 0
    while calls < max_calls and (calls < repeats or total < min_time):
        dt, (state, finished) = _timed(auto_fn, state, jax.random.fold_in(root, 10_000 + calls))
        best, total, calls = min(best, dt), total + dt, calls + 1
        games += int(np.asarray(finished, np.int64).sum())
    games_per_step = games / (calls * batch * steps)
    del final, state  # kept alive until here: the results were materialised

    return dict(
        batch=batch, steps=steps, key_method=key_method, shards=1 if sharding is None else shards,
        key_us_per_step={k: v * 1e6 for k, v in key_times.items()},
        live_steps_per_s=live_fraction * batch * steps / live_best,
        live_fraction=live_fraction,
        autoreset_steps_per_s=batch * steps / best,
        autoreset_games_per_s=games_per_step * batch * steps / best,
        compile_s=compile_live + compile_auto,
        calls=live_calls + calls,
    )


def bench_python(RefGame, num_players: int, seconds: float, seed: int) -> dict:
    """Complete random games of the Python model for about ``seconds``."""
    rng = random.Random(seed)
    steps = games = 0
    t0 = time.perf_counter()
    while True:
        g = RefGame(num_players, seed=rng.getrandbits(32))
        while not g.done:
            g.play(rng.choice(g.legal_actions()))
            steps += 1
        games += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            break
    return dict(python_steps_per_s=steps / elapsed, python_games_per_s=games / elapsed,
                python_steps_per_game=steps / games, python_games=games)


class PythonBaseline:
    """The Python model timed in chunks taken between the JAX measurements; the best chunk
    is the reference for every ratio (both sides best-of, under the same load)."""

    def __init__(self, num_players: int, chunk_seconds: float, seed: int):
        self.RefGame = load_ref_game()
        self.num_players, self.chunk_seconds, self.seed = num_players, chunk_seconds, seed
        self.chunks: list[dict] = []

    def chunk(self) -> dict:
        """Time one more chunk; returns the best so far."""
        self.chunks.append(bench_python(self.RefGame, self.num_players, self.chunk_seconds,
                                        self.seed + len(self.chunks)))
        return max(self.chunks, key=lambda c: c["python_steps_per_s"])


def add_ratios(result: dict, py: dict) -> dict:
    """``result`` (a `bench_batch` row) with its JAX / Python ratios against ``py``."""
    result["ratio_live"] = result["live_steps_per_s"] / py["python_steps_per_s"]
    result["ratio_autoreset"] = result["autoreset_steps_per_s"] / py["python_steps_per_s"]
    result["ratio_autoreset_games"] = result["autoreset_games_per_s"] / py["python_games_per_s"]
    return result


def state_bytes(env: Env) -> tuple[int, int]:
    s = env.init(jax.random.key(0))
    return sum(int(x.nbytes) for x in jax.tree.leaves(s)), int(s.observation.nbytes)


# ------------------------------------------------------------------ output
def _fmt(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.1f}"


def print_report(report: dict) -> None:
    head = (f"coupjax engine throughput - {report['num_players']} players, "
            f"devices {', '.join(report['devices'])}, jax {report['jax_version']}")
    py = (f"Python model (RefGame): {_fmt(report['python_steps_per_s'])} steps/s, "
          f"{_fmt(report['python_games_per_s'])} games/s, "
          f"{report['python_steps_per_game']:.1f} steps/game")
    size = (f"state per game: {report['state_bytes_per_game']} bytes "
            f"(observation {report['observation_bytes']} bytes)")
    columns = ["batch", "devices", "T", "keys", "live steps/s", "live %", "x py", "auto-reset steps/s", "games/s",
               "x py", "x py games"]
    rows = [[str(r["batch"]), str(r["shards"]), str(r["steps"]), r["key_method"], _fmt(r["live_steps_per_s"]),
             f"{100 * r['live_fraction']:.0f}", f"{r['ratio_live']:.2f}", _fmt(r["autoreset_steps_per_s"]),
             _fmt(r["autoreset_games_per_s"]), f"{r['ratio_autoreset']:.2f}", f"{r['ratio_autoreset_games']:.2f}"]
            for r in report["results"]]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain aligned text
        widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(columns)]
        print(head)
        print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
        for row in rows:
            print("  ".join(v.rjust(w) for v, w in zip(row, widths)))
        print(py)
        print(size)
        return
    table = Table(title=head, caption=f"{py}\n{size}")
    for c in columns:
        table.add_column(c, justify="left" if c == "keys" else "right")
    for row in rows:
        table.add_row(*row)
    Console(width=max(120, len(head) + 4)).print(table)


# ------------------------------------------------------------------ main
def parse_batch_sizes(text: str) -> list[int]:
    sizes = [int(t) for t in text.replace(" ", ",").split(",") if t]
    if not sizes or any(b < 1 for b in sizes):
        raise argparse.ArgumentTypeError(f"batch sizes must be positive integers, got {text!r}")
    return sizes


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m evals.bench_engine", description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch-sizes", type=parse_batch_sizes, default=None,
                    help=f"comma-separated (default {','.join(map(str, DEFAULT_BATCH_SIZES))}; "
                         f"--quick: {','.join(map(str, QUICK_BATCH_SIZES))})")
    ap.add_argument("--quick", action="store_true", help="fast smoke run: small batches, few steps and repeats")
    ap.add_argument("--num-players", type=int, default=4)
    ap.add_argument("--steps", type=int, default=None, help="scan length T (default: from the batch size)")
    ap.add_argument("--repeats", type=int, default=None, help="least timed calls per measurement (default 5, quick 2)")
    ap.add_argument("--python-seconds", type=float, default=None, help="Python baseline duration (default 3, quick 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--host-devices", type=int, default=None,
                    help="XLA host devices to split a CPU into (default: one per core; see coupjax.devices)")
    ap.add_argument("--out", type=output_file, default=None, help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    use_host_cores(args.host_devices)  # before JAX starts its backends (no-op once they run)

    batch_sizes = args.batch_sizes or list(QUICK_BATCH_SIZES if args.quick else DEFAULT_BATCH_SIZES)
    repeats = args.repeats or (2 if args.quick else 5)
    min_time = 0.2 if args.quick else 1.0
    py_seconds = args.python_seconds or (1.0 if args.quick else 3.0)
    env = Env(args.num_players)

    baseline = PythonBaseline(args.num_players, py_seconds / 2, args.seed)
    log(f"Python baseline (chunks of {py_seconds / 2:g} s between measurements) ...")
    baseline.chunk()
    total_bytes, obs_bytes = state_bytes(env)

    devices = len(jax.devices())
    results = []
    for batch in batch_sizes:
        steps = args.steps or scan_length(batch, args.quick)
        for shards in sorted({1, devices if games_sharding(batch, devices) is not None else 1}):
            log(f"batch {batch} on {shards} device(s): T={steps} ...")
            results.append(bench_batch(env, batch, steps, repeats, min_time, args.seed, shards))
            baseline.chunk()
    py = baseline.chunk()
    for r in results:
        add_ratios(r, py)
        log(f"  batch {r['batch']} x{r['shards']} devices: keys={r['key_method']} "
            f"live {_fmt(r['live_steps_per_s'])} steps/s (x{r['ratio_live']:.2f}), "
            f"auto-reset {_fmt(r['autoreset_steps_per_s'])} steps/s (x{r['ratio_autoreset']:.2f}), "
            f"compile {r['compile_s']:.1f} s")

    report = dict(
        num_players=args.num_players, devices=[f"{d} ({d.device_kind})" for d in jax.devices()],
        backend=jax.default_backend(), jax_version=jax.__version__, python_version=platform.python_version(),
        state_bytes_per_game=total_bytes, observation_bytes=obs_bytes, quick=args.quick,
        **py, results=results,
    )
    print_report(report)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        log(f"wrote {args.out}")
    return report


if __name__ == "__main__":
    main()
