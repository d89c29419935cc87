"""Speed of the evaluation suite's parts, side by side in one run.

    python -m evals.report.bench [--states 1024] [--games 4000] [--repeat 5]

Per batch of ``--states`` mid-game 4-player states (ms per call, best of
``--repeat``): env.step, each scripted bot, the DQN export, belief_ev, its two
posterior consumers computing the posterior each (before) and sharing one (after),
the advised seats; then games per second of the same ``--games`` seat-table games in
`coupjax.seat_tables.make_table_runner` (batches wait for their longest game) and
`coupjax.seat_tables.make_queue_runner` (slots refilled), and of the advisor's claim
recorder (`evals.lib.advisor.record.QueueRecorder`, beside the queue runner's rate).
Ratios are printed beside; the machine's load average is printed with
them, since the machine may be shared.
"""
from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import seat_tables
from coupjax.advice.action_ev import recommend_action
from coupjax.advice.challenge import AdvisorParams, advise_challenge
from coupjax.args import Parser, positive_int
from coupjax.beliefs.posterior import exact_posterior
from coupjax.env import Env
from coupjax.policies import make_policy, resolve_policy
from coupjax.policies.pools import SCRIPTED_NAMES
from evals.lib.policies import make_advised

N = 4


def best_of(fn, repeat: int) -> float:
    jax.block_until_ready(fn())  # compile
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return min(times)


def mid_game_states(env, count: int):
    run = seat_tables.make_table_runner(env, [make_policy(x, env) for x in SCRIPTED_NAMES])
    rng = np.random.default_rng(0)
    idx = jnp.asarray(rng.integers(0, len(SCRIPTED_NAMES), (count, N)), jnp.int32)
    limit = jnp.asarray(rng.integers(0, 60, count), jnp.int32)
    states, _ = run(seat_tables.game_keys(11, 0, count), idx, step_limit=limit)
    return states


def main(argv=None):
    ap = Parser(prog="python -m evals.report.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--states", type=positive_int, default=1024)
    ap.add_argument("--games", type=positive_int, default=4000)
    ap.add_argument("--repeat", type=positive_int, default=5)
    args = ap.parse_args(argv)
    env = Env(N)
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores)")
    s = mid_game_states(env, args.states)
    keys = jax.random.split(jax.random.PRNGKey(0), args.states)
    acts = jax.vmap(lambda k, m: jax.random.categorical(k, jnp.where(m, 0.0, -jnp.inf)))(keys, s.legal_action_mask)
    params = AdvisorParams()
    rows = {}
    step = jax.jit(jax.vmap(env.step))
    rows["env.step"] = best_of(lambda: step(s, acts, keys), args.repeat)
    pols = {x: make_policy(x, env) for x in (*SCRIPTED_NAMES, "belief_ev")}
    pols["dqn_ref"] = resolve_policy("evals/reference/dqn/export", env)
    pols["honest+advisor (exact)"] = make_advised(env, "honest", "exact")
    pols["honest+advisor (coupvisor)"] = make_advised(env, "honest", "coupvisor")
    for name, pol in pols.items():
        f = jax.jit(jax.vmap(pol))
        rows[name] = best_of(lambda f=f: f(keys, s), args.repeat)

    def separate(o, m):
        return recommend_action(o, m, N, params)["ev"], advise_challenge(o, N, "exact", params)["p_truth"]

    def shared(o, m):
        post = exact_posterior(o, N, params.posterior_params())
        return (recommend_action(o, m, N, params, posterior=post)["ev"],
                advise_challenge(o, N, "exact", params, posterior=post)["p_truth"])

    f_sep, f_sh = jax.jit(jax.vmap(separate)), jax.jit(jax.vmap(shared))
    rows["EV + advice, a posterior each (before)"] = best_of(lambda: f_sep(s.observation, s.legal_action_mask),
                                                            args.repeat)
    rows["EV + advice, one shared posterior (after)"] = best_of(lambda: f_sh(s.observation, s.legal_action_mask),
                                                               args.repeat)
    base = rows["env.step"]
    print(f"\nms per call of {args.states} states (ratio to env.step)")
    for name, sec in rows.items():
        print(f"  {name:44s} {1e3 * sec:8.2f} ms  x{sec / base:6.1f}")
    before, after = rows["EV + advice, a posterior each (before)"], rows["EV + advice, one shared posterior (after)"]
    print(f"  posterior sharing: {before / after:.2f}x faster")

    # the runners on the same seat-table games: 5 scripted bots + belief_ev in one seat
    G = args.games
    entries = [make_policy(x, env) for x in SCRIPTED_NAMES] + [pols["belief_ev"]]
    seats, opp = seat_tables.draw_tables(G, N, 13, len(SCRIPTED_NAMES))
    idx = seat_tables.seat_index(seats, opp, len(SCRIPTED_NAMES), N)
    gkeys = seat_tables.game_keys(13, 0, G)
    B = min(2000, G)
    table = seat_tables.make_table_runner(env, entries)
    cap = seat_tables.capacities(idx[:B], len(entries))

    def run_table():
        out = None
        for start in range(0, G, B):
            out = table(gkeys[start:start + B], idx[start:start + B], capacity=cap)[1]["wins"]
        return out

    queue = seat_tables.make_queue_runner(env, entries, B)
    t_table = best_of(run_table, 1)
    t_queue = best_of(lambda: queue(gkeys, idx, capacity=cap)["wins"], 1)
    print(f"\nseat table, {G} games (5 bots + belief_ev), batch/slots {B}:")
    print(f"  make_table_runner  {G / t_table:8.0f} games/s")
    print(f"  make_queue_runner  {G / t_queue:8.0f} games/s   x{t_table / t_queue:.2f}")

    from evals.lib.advisor.record import QueueRecorder, play_condition

    g = min(G, 4000)
    bots = [make_policy(x, env) for x in SCRIPTED_NAMES]
    recorder = QueueRecorder(env, bots, slots=1000, games_per_call=g)
    key = jax.random.PRNGKey(3)
    t_new = best_of(lambda: play_condition(recorder, key, "aggressive_heavy", g, 1000)["label"], 1)
    print(f"\nadvisor claim recorder, {g} games (aggressive_heavy):")
    print(f"  queue of slots (QueueRecorder)          {g / t_new:8.0f} games/s   "
          f"({g / t_new / (G / t_queue):.2f} x the seat table's games/s)")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
