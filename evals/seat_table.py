"""Seat table: each policy against three opponents drawn from the scripted pool.

    python -m evals.seat_table --policy NAME_OR_RUN_DIR [--policy ...] --games N --seed S --out FILE.json

Each ``--policy`` (a registered policy name, or a run directory written by
``training.train``) takes one seat of a 4-player table (the seat drawn uniformly per
game) against three opponents drawn uniformly with replacement from ``OPPONENTS``.
Every policy faces the same draws and the same game keys (common random numbers), so
differences between rows are differences between policies.  The JSON maps each
``--policy`` argument, exactly as given, to ``win_rate``, ``ci95_low``, ``ci95_high``
(Wilson interval), ``mean_placement`` (1 = first), ``action_entropy`` (mean entropy in
nats of its action distribution at its decisions) and ``games``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from coupjax import policies as P
from coupjax.engine import Env
from coupjax.metrics import wilson_interval

OPPONENTS = ("random", "honest", "cautious", "aggressive", "bluffer", "belief_ev")


def resolve_policy(spec: str, env: Env):
    """A registered name, or a run/export directory loaded with `coupjax.load_policy`."""
    if spec in P.policy_names():
        return P.make_policy(spec, env)
    if Path(spec).exists():
        from coupjax.inference import load_policy

        policy = load_policy(spec)
        return policy
    raise ValueError(f"--policy {spec!r} is neither a registered policy ({', '.join(P.policy_names())}) "
                     f"nor an existing run directory")


def draw_tables(num_games: int, num_players: int, seed: int):
    """(seat of the tested policy [N], opponent indices into OPPONENTS [N, n-1])."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, num_players, num_games), rng.integers(0, len(OPPONENTS), (num_games, num_players - 1))


def seat_index(seats, opponents, tested: int, num_players: int) -> np.ndarray:
    """int32[N, n] policy indices: ``tested`` at the drawn seat, opponents elsewhere
    (opponent k of `OPPONENTS` is policy index k)."""
    n_games = len(seats)
    idx = np.zeros((n_games, num_players), np.int32)
    for g in range(n_games):
        others = [s for s in range(num_players) if s != seats[g]]
        idx[g, others] = opponents[g]
        idx[g, seats[g]] = tested
    return idx


def evaluate_all(specs, env: Env, num_games: int, seed: int, chunk: int = 1000, progress=None) -> dict:
    """Seat-table rows for every spec; one compiled runner serves them all."""
    missing = [o for o in OPPONENTS if o not in P.policy_names()]
    if missing:
        raise RuntimeError(f"opponent policies not registered: {', '.join(missing)}")
    n = env.num_players
    policy_list = [P.make_policy(o, env) for o in OPPONENTS]
    where = {}
    for spec in specs:
        if spec in OPPONENTS:
            where[spec] = OPPONENTS.index(spec)
        elif spec not in where:
            where[spec] = len(policy_list)
            policy_list.append(resolve_policy(spec, env))
    run = P.make_table_runner(env, policy_list)
    placements = jax.jit(jax.vmap(env.placements))
    seats, opponents = draw_tables(num_games, n, seed)
    results = {}
    for spec in specs:
        idx_all = seat_index(seats, opponents, where[spec], n)
        wins, places, entropy, decisions = [], [], 0.0, 0
        task = progress.add_task(spec, total=num_games) if progress else None
        for start in range(0, num_games, chunk):
            idx = idx_all[start:start + chunk]
            real = len(idx)
            if real < chunk:  # pad the last chunk: one compilation for every chunk
                idx = np.concatenate([idx, np.repeat(idx[-1:], chunk - real, axis=0)])
            final, stats = run(jax.random.fold_in(jax.random.PRNGKey(seed), start), jnp.asarray(idx))
            seat = seats[start:start + real]
            rows = np.arange(real)
            wins.append(np.asarray(stats["wins"])[rows, seat])
            order = np.asarray(placements(final))[:real]
            places.append(np.argmax(order == seat[:, None], axis=1) + 1)
            entropy += float(np.asarray(stats["entropy"])[rows, seat].sum())
            decisions += int(np.asarray(stats["decisions"])[rows, seat].sum())
            if progress:
                progress.advance(task, real)
        wins, places = np.concatenate(wins), np.concatenate(places)
        low, high = wilson_interval(int(wins.sum()), len(wins))
        results[spec] = {"win_rate": float(wins.mean()), "ci95_low": low, "ci95_high": high,
                         "mean_placement": float(places.mean()), "action_entropy": entropy / max(decisions, 1),
                         "games": int(len(wins))}
    return results


def render_table(results: dict, title: str, labels: dict | None = None) -> Table:
    """The rows of `evaluate_all` as a rich table (``labels``: display names for specs)."""
    table = Table(title=title)
    for col in ("policy", "win_rate", "ci95", "mean_placement", "action_entropy"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for spec, r in results.items():
        table.add_row((labels or {}).get(spec, spec), f"{r['win_rate']:.4f}",
                      f"[{r['ci95_low']:.4f}, {r['ci95_high']:.4f}]", f"{r['mean_placement']:.3f}",
                      f"{r['action_entropy']:.3f}")
    return table


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m evals.seat_table", description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", action="append", required=True, help="registered name or run directory (repeatable)")
    ap.add_argument("--games", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--players", type=int, default=4)
    ap.add_argument("--chunk", type=int, default=1000, help="games per jitted call")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    env = Env(args.players)
    results = {}
    console = Console(stderr=True)
    try:
        with Progress(console=console) as progress:
            results = evaluate_all(args.policy, env, args.games, args.seed, min(args.chunk, args.games), progress)
    except (ValueError, RuntimeError) as err:
        sys.exit(f"seat_table: {err}")
    Console().print(render_table(results, f"seat table: {args.games} games, {args.players} players, seed {args.seed}"))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
