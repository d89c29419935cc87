"""Seat table: each policy in one seat of 4-player tables against the evaluation pool.

    python -m evals.seat_table --policy SPEC [--policy ...] [--opponents SPEC] --games N --seed S --out FILE.json

Each ``--policy`` (a policy spec: a registered name, a run or export directory, or
``module:function``; `coupjax.policies.spec`) takes one seat of every table (the seat
drawn uniformly per table); the other seats are drawn uniformly with replacement from
the evaluation pool (`coupjax.policies.pools.OPPONENTS`), or all play ``--opponents``
(head-to-head: one seat against three copies).  Every policy faces the same draws and
the same game keys (common random numbers).  Win rate and placement follow the one
definition in `coupjax.seat_tables`.  The JSON maps each ``--policy`` argument, exactly as
given, to ``win_rate``, ``ci95_low``, ``ci95_high`` (Wilson interval over tables),
``mean_placement`` (1 = first), ``action_entropy`` (mean nats per decision), ``games``
and ``wins``.  Seeds used to tune are refused (`coupjax.seeds`).

Several processes (``--coordinator HOST:PORT --num-processes N --process-id I``, or a
SLURM / Open MPI launch; `coupjax.distributed`) share the tables chunk by chunk and pool
them: the counts are exactly those of one process; process 0 prints and writes ``--out``.
"""
from __future__ import annotations

import json

from rich.table import Table

from coupjax.seat_tables import play_tables
from coupjax import console
from coupjax import distributed
from coupjax.args import Parser, fail, output_file, positive_int, report_seed
from coupjax.env import Env
from coupjax.policies import PolicySpecError
from coupjax.policies.spec import describe_spec
from coupjax.seeds import REPORT_SEED


def render_table(results: dict, title: str, labels: dict | None = None) -> Table:
    """Seat-table rows as a rich table (``labels``: display names for specs)."""
    table = Table(title=title)
    for col in ("policy", "win rate", "95% interval", "mean place", "entropy (nats)", "tables"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for spec, r in results.items():
        table.add_row((labels or {}).get(spec, spec), f"{r['win_rate']:.3f}",
                      f"[{r['ci95_low']:.3f}, {r['ci95_high']:.3f}]", f"{r['mean_placement']:.2f}",
                      f"{r['action_entropy']:.3f}", f"{r['games']:,}")
    return table


def main(argv=None) -> dict:
    prog = "python -m evals.seat_table"
    ap = Parser(prog=prog, description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", action="append", required=True, help="policy spec (repeatable)")
    ap.add_argument("--opponents", help="a policy spec for every other seat (head-to-head) instead of the pool")
    ap.add_argument("--games", type=positive_int, default=2000, help="tables per policy")
    ap.add_argument("--seed", type=report_seed, default=REPORT_SEED, help="table seed (tuning seeds are refused)")
    ap.add_argument("--players", type=int, default=4, choices=range(2, 7), metavar="{2..6}")
    ap.add_argument("--chunk", type=positive_int, default=1000,
                    help="tables per jitted call (results do not depend on it)")
    ap.add_argument("--out", type=output_file)
    distributed.add_flags(ap)
    args = ap.parse_args(argv)
    problem = distributed.check_flags(args)
    if problem:
        ap.error(problem)
    for spec in args.policy + ([args.opponents] if args.opponents else []):
        try:
            describe_spec(spec)
        except PolicySpecError as err:
            fail(prog, err)
    distributed.initialize(args, prog)  # several processes: each plays its share of the tables
    env = Env(args.players)
    with console.progress(transient=True, disable=not distributed.is_primary()) as progress, \
            distributed.fail_on_lost_peer(prog):
        results = play_tables(env, args.policy, args.games, args.seed, opponents=args.opponents,
                              chunk=args.chunk, progress=progress, split=True)
    if not distributed.is_primary():
        return results
    against = f"3 x {args.opponents}" if args.opponents else "opponents from the pool"
    console.console().print(render_table(results, f"seat table: {args.games:,} tables, {args.players} players, {against}, "
                                          f"seed {args.seed}"))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
