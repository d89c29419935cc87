"""Throughput of the sampled-world search (`coupjax.search`).

``python -m evals.search_bench --out FILE.json`` searches the first decision of each of
64 seeded 4-player games as ONE batch: K = 32 worlds from each seat's posterior, every
legal action, R = 16 full-length rollouts per (world, action) with the ``random``
rollout policy (no step cap).  At the first decision 7 actions are legal (income,
foreign aid, tax, exchange, steal on each of 3 opponents), so one call plays
64 x 32 x 7 x 16 = 229,376 complete games from the root.

Reported (best timed call; the JSON also keeps every call):

* ``decisions_per_s`` = batch / wall time of one jitted call (compile excluded);
* ``rollout_steps_per_s`` = engine steps taken in rollouts / wall time;
* ``rollouts``, ``mean_rollout_steps``, ``A`` (mean legal actions per decision), ``M``
  (static action slots), ``lane_use`` (rollout steps / lane steps computed: the share
  of the vmapped work that was live), ``K``, ``R``, ``batch``, ``wall_s``, ``compile_s``.

``--compare`` also times the naive schedule: every rollout in one vmapped
`lax.while_loop` that runs until the longest has finished (one lane per job, all loaded
at the start), to show what the work queue saves.  The machine's load average is
recorded before and after (timings on a shared CPU are noisy: compare ratios).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import time

import jax
import numpy as np

from coupjax import search
from coupjax.args import output_file
from coupjax.env import Env


def first_decisions(env: Env, seed: int, games: int):
    return jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(seed), games))


def bench(env, states, config: search.SearchConfig, key, repeats: int) -> dict:
    searcher = jax.jit(search.make_searcher(env, config))
    B = states.current_player.shape[0]
    keys = jax.random.split(key, B)
    t0 = time.perf_counter()
    res = jax.block_until_ready(searcher(keys, states))  # compile + first run
    compile_s = time.perf_counter() - t0
    calls = []
    for i in range(repeats):
        keys = jax.random.split(jax.random.fold_in(key, i + 1), B)
        t0 = time.perf_counter()
        res = jax.block_until_ready(searcher(keys, states))
        wall = time.perf_counter() - t0
        steps = int(res.rollout_steps)
        rollouts = int(np.asarray(res.rollouts).sum())
        lane_steps = int(res.iterations) * int(res.lanes)
        calls.append({"wall_s": wall, "rollout_steps": steps, "rollouts": rollouts,
                      "lane_use": steps / max(lane_steps, 1)})
    best = min(calls, key=lambda c: c["wall_s"])
    valid = np.asarray(res.valid)
    return {
        "decisions_per_s": B / best["wall_s"],
        "rollout_steps_per_s": best["rollout_steps"] / best["wall_s"],
        "wall_s": best["wall_s"], "compile_s": compile_s - best["wall_s"],
        "rollouts": best["rollouts"], "rollout_steps": best["rollout_steps"],
        "mean_rollout_steps": best["rollout_steps"] / max(best["rollouts"], 1),
        "lane_use": best["lane_use"], "A": float(valid.sum(axis=1).mean()), "M": int(valid.shape[1]),
        "K": config.num_worlds, "R": config.rollouts_per_world, "batch": B,
        "max_rollout_steps": config.max_rollout_steps, "lanes": config.lanes, "calls": calls,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=output_file, help="write the figures as JSON here")
    ap.add_argument("--players", type=int, default=4)
    ap.add_argument("--games", type=int, default=64, help="decisions searched in one batch")
    ap.add_argument("--worlds", type=int, default=32, help="K")
    ap.add_argument("--rollouts", type=int, default=16, help="R per (world, action)")
    ap.add_argument("--max-rollout-steps", type=int, default=None, help="step cap (default: full games)")
    ap.add_argument("--rollout-policy", default="random")
    ap.add_argument("--lanes", type=int, default=8192, help="rollouts in flight (the work queue's width)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compare", action="store_true", help="also time the naive one-loop schedule")
    args = ap.parse_args(argv)

    env = Env(args.players)
    states = first_decisions(env, args.seed, args.games)
    config = search.SearchConfig(num_worlds=args.worlds, rollouts_per_world=args.rollouts,
                            rollout_policy=args.rollout_policy, max_rollout_steps=args.max_rollout_steps,
                            lanes=args.lanes)
    load_before = os.getloadavg()
    runs = {"queue": bench(env, states, config, jax.random.PRNGKey(args.seed + 1), args.repeats)}
    if args.compare:
        J = int(np.asarray(states.legal_action_mask).sum()) * args.worlds * args.rollouts  # every job at once
        naive = dataclasses.replace(config, lanes=J)
        runs["naive"] = bench(env, states, naive, jax.random.PRNGKey(args.seed + 1), max(1, args.repeats - 1))
    load_after = os.getloadavg()

    cols = ("decisions_per_s", "rollout_steps_per_s", "wall_s", "compile_s", "rollouts", "mean_rollout_steps",
            "lane_use", "A", "K", "R", "batch")
    print(f"search_bench: {args.players} players, first decision of {args.games} games, K={args.worlds}, "
          f"R={args.rollouts}, {args.rollout_policy} rollouts, cap {args.max_rollout_steps}; "
          f"load {load_before[0]:.2f} -> {load_after[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'schedule':9s}" + "".join(f"{c:>20s}" for c in cols))
    for name, r in runs.items():
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"{v:20.3g}" if isinstance(v, float) else f"{v:20d}")
        print(f"{name:9s}" + "".join(cells))
    out = dict(runs["queue"])
    out.update({"schedules": runs, "players": args.players, "rollout_policy": args.rollout_policy,
                "load_before": load_before, "load_after": load_after, "cpus": os.cpu_count(),
                "jax": jax.__version__, "device": str(jax.devices()[0]), "platform": platform.platform()})
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2)
        print(f"wrote {args.out}")
    return out


if __name__ == "__main__":
    main()
