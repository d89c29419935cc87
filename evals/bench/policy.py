"""Seconds per decision of any policy on this machine.

    python -m evals.bench_policy --policy SPEC [--policy SPEC ...] [--positions N] [--out FILE.json]

Each policy (any `coupjax.policies.spec` spec: a registered name, a run or export
directory, ``selfplay_search:DIR,...``, ``module:function``) decides at the same ``N``
mid-game 4-player positions (`coupjax.testing.sample_positions`, seeded): once per
position, one state per jitted call as a player at a table would ask (compilation
excluded: the first call is timed apart), and once for all ``N`` in one vmapped call.
Printed and written per policy: ``single_mean_s``, ``single_median_s``,
``single_p95_s``, ``single_max_s``, ``batched_per_decision_s``, ``compile_s`` and the
load average before and after (the machine may be shared: compare policies measured
in the same run).
"""
from __future__ import annotations

import json
import os
import time

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

from coupjax.args import Parser, fail, output_file, positive_int
from coupjax.env import Env
from coupjax.policies import PolicySpecError, resolve_policy
from coupjax.policies.spec import describe_spec
from coupjax.testing import sample_positions

PROG = "python -m evals.bench_policy"


def time_policy(env: Env, spec: str, states, seed: int = 7) -> dict:
    """Seconds per decision of ``spec`` at the positions ``states`` (a batched state)."""
    policy = resolve_policy(spec, env)
    count = int(states.current_player.shape[0])
    one, batched = jax.jit(policy), jax.jit(jax.vmap(policy))
    key = jax.random.PRNGKey(seed)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    jax.block_until_ready(one(key, jax.tree.map(lambda x: x[0], states)))
    compile_s = time.perf_counter() - t0
    single = []
    for i in range(count):
        state = jax.tree.map(lambda x, i=i: x[i], states)
        t0 = time.perf_counter()
        jax.block_until_ready(one(jax.random.fold_in(key, i), state))
        single.append(time.perf_counter() - t0)
    jax.block_until_ready(batched(jax.random.split(key, count), states))  # compile
    t0 = time.perf_counter()
    jax.block_until_ready(batched(jax.random.split(jax.random.fold_in(key, count + 1), count), states))
    batch_s = time.perf_counter() - t0
    s = np.asarray(single)
    return {"positions": count, "single_mean_s": float(s.mean()), "single_median_s": float(np.median(s)),
            "single_p95_s": float(np.percentile(s, 95)), "single_max_s": float(s.max()),
            "batched_per_decision_s": batch_s / count, "compile_s": compile_s - float(np.median(s)),
            "load_average_before": list(load0), "load_average_after": list(os.getloadavg()),
            "cpus": os.cpu_count()}


def main(argv=None) -> dict:
    ap = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", action="append", required=True, help="policy spec (repeatable)")
    ap.add_argument("--positions", type=positive_int, default=40, help="mid-game positions (decisions timed)")
    ap.add_argument("--seed", type=int, default=7, help="seed of the positions and of the policies' keys")
    ap.add_argument("--out", type=output_file)
    args = ap.parse_args(argv)
    for spec in args.policy:
        try:
            describe_spec(spec)
        except PolicySpecError as err:
            fail(PROG, err)
    env = Env(4)
    states = sample_positions(env, args.positions, args.seed)
    out = {spec: time_policy(env, spec, states, args.seed) for spec in args.policy}
    table = Table(title=f"seconds per decision, {args.positions} positions (4 players), seed {args.seed}")
    for col in ("policy", "mean", "median", "p95", "max", "batched", "compile"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for spec, r in out.items():
        table.add_row(spec, *(f"{r[k]:.4f}" for k in ("single_mean_s", "single_median_s", "single_p95_s",
                                                      "single_max_s", "batched_per_decision_s")),
                      f"{r['compile_s']:.1f}")
    Console().print(table)
    if args.out:
        args.out.write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
