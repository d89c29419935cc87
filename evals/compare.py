"""Paired comparison: does A do better than B in the same seat of the same tables?

    python -m evals.compare --a SPEC --b SPEC [--opponents SPEC|CONDITION] --games N --seeds S [S ...]
                            [--comparisons M] [--out FILE.json]

A and B each take the same (uniformly drawn) seat of the same tables: the same other
seats and the same game keys per table seed (common random numbers), so most of the
luck of the deal cancels in the difference.  The other seats are drawn from an opponent
condition (`coupjax.policies.pools.CONDITIONS`, default ``aggressive_heavy``), or all
play ``--opponents SPEC`` (head to head).  ``--games`` tables per seed.

A spec names a policy (`coupjax.policies.spec`) or several training runs of one recipe,
comma-separated or as a glob (``'runs/sp_s*'``): each is a training-seed unit, all
playing the same tables, so the interval counts what varies between training seeds.

Printed and kept (A minus B): the difference in win rate with its 95% interval and
p-value: where a side names several training-seed units, Welch's t on the units' mean
win rates (`evals.report.stats.unit_test`: the training seed is the unit of noise, and a
bootstrap over three of them says "beats" far more often than 5% when nothing differs);
one unit a side, the hierarchical paired bootstrap over table seeds and tables
(`evals.report.stats.paired_bootstrap`, ``test`` says which).  The mean placement's
difference comes with the paired bootstrap's interval.  With ``--comparisons M`` (the
pairs one report ranks) also the Bonferroni interval at 1 - 0.05 / M and the p-value a
report corrects with `evals.report.stats.holm`.  The verdict names a winner only where the (corrected)
interval excludes 0, else "no significant difference".  ``--out`` keeps at its top
level ``diff``, ``ci95_low``, ``ci95_high`` (win rate, A minus B), ``games`` (tables per
seed) and ``seeds``.  Tuning seeds are refused, a held-out seed is recorded
(`coupjax.seeds`).
"""
from __future__ import annotations

import json

from rich.table import Table

from coupjax import console
from coupjax.args import Parser, fail, output_file, positive_int
from coupjax.env import Env
from coupjax.policies import PolicySpecError
from coupjax.policies.pools import CONDITIONS
from coupjax.policies.spec import describe_spec, locate
from coupjax.seeds import REPORT_SEED, SeedError, check_report_seed, seed_role
from evals.report.paired import (DEFAULT_CONDITION, compare, condition_tables, expand_spec, play_paired,
                                 table_player)
from evals.report.policies import fits_table

PROG = "python -m evals.compare"
# the paired play lives in evals.report.paired (the report ranks with it too); its names stay importable here
__all__ = ["DEFAULT_CONDITION", "PROG", "compare", "condition_tables", "expand_spec", "main", "play_paired", "render",
           "table_player"]


def render(out: dict) -> Table:
    """The comparison as a rich table: each side's figures, then A minus B."""
    table = Table(title=f"{out['a']} vs {out['b']}: {out['games']:,} tables x {len(out['seeds'])} seeds "
                        f"({', '.join(map(str, out['seeds']))}), other seats {out['opponents']}")
    for col in ("", "win rate", "95% interval", "mean place", "95% interval"):
        table.add_column(col, justify="left" if not col else "right")
    p = out["placement"]
    table.add_row(f"A: {out['a']} ({len(out['units_a'])} unit(s))", f"{out['win_rate_a']:.3f}", "",
                  f"{p['mean_a']:.2f}", "")
    table.add_row(f"B: {out['b']} ({len(out['units_b'])} unit(s))", f"{out['win_rate_b']:.3f}", "",
                  f"{p['mean_b']:.2f}", "")
    table.add_row("A - B (paired)", f"{out['diff']:+.3f}", f"[{out['ci95_low']:+.3f}, {out['ci95_high']:+.3f}]",
                  f"{p['diff']:+.2f}", f"[{p['ci95_low']:+.2f}, {p['ci95_high']:+.2f}]")
    if "ci_corrected_low" in out:
        table.add_row(f"A - B, Bonferroni over {out['comparisons']}", "",
                      f"[{out['ci_corrected_low']:+.3f}, {out['ci_corrected_high']:+.3f}]", "", "")
    return table


def main(argv=None) -> dict:
    ap = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="policy spec of A (runs: comma-separated or a glob)")
    ap.add_argument("--b", required=True, help="policy spec of B (runs: comma-separated or a glob)")
    ap.add_argument("--opponents", help=f"a condition ({', '.join(CONDITIONS)}; default {DEFAULT_CONDITION}) "
                                        "or a policy spec for every other seat")
    ap.add_argument("--games", type=positive_int, required=True, help="tables per seed")
    ap.add_argument("--seeds", type=int, nargs="+", default=[REPORT_SEED],
                    help=f"table seeds (default {REPORT_SEED}; tuning seeds are refused, held-out seeds recorded)")
    ap.add_argument("--players", type=int, default=4, choices=range(2, 7), metavar="{2..6}")
    ap.add_argument("--comparisons", type=positive_int, default=1,
                    help="pairs ranked in one report: the verdict uses the Bonferroni interval")
    ap.add_argument("--boot", type=positive_int, default=2000, help="bootstrap resamples")
    ap.add_argument("--batch", type=positive_int, default=1000,
                    help="game slots of the runner (results do not depend on it)")
    ap.add_argument("--out", type=output_file)
    args = ap.parse_args(argv)
    if len(set(args.seeds)) != len(args.seeds):
        fail(PROG, f"--seeds repeats a seed: {args.seeds}")
    tuning = [s for s in args.seeds if seed_role(s) == "tuning"]
    if tuning:
        try:
            check_report_seed(tuning[0], PROG)
        except SeedError as err:
            fail(PROG, err)
    try:
        named = expand_spec(args.a) + expand_spec(args.b)
        if args.opponents is not None and args.opponents not in CONDITIONS:
            if "," in args.opponents or any(c in args.opponents for c in "*?["):
                fail(PROG, f"--opponents names one policy or a condition, got {args.opponents!r}")
            describe_spec(args.opponents)
            named.append(args.opponents)
    except PolicySpecError as err:
        fail(PROG, err)
    for spec in named:
        where = locate(spec) if describe_spec(spec) == "path" else None
        if where is not None and not fits_table(str(where), args.players):
            fail(PROG, f"{spec} was trained for another table size than --players {args.players}")
    seeds = [check_report_seed(s, PROG) for s in args.seeds]  # held-out seeds recorded, now that the run is valid
    out = compare(Env(args.players), args.a, args.b, args.games, seeds, args.opponents, args.comparisons, args.boot,
                  args.batch)
    console.console().print(render(out))
    console.console().print(f"verdict: {out['verdict']} (win rate, A minus B{', corrected' if args.comparisons > 1 else ''})")
    if args.out:
        args.out.write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
