"""Challenge and block rates per claimed role: how a policy answers each claim.

    python -m evals.reaction_rates --policy SPEC [--policy ...] [--opponents CONDITION|SPEC]
        --games N --seed S [--out FILE.json]

An agent that never challenges a Duke can be fed Duke claims every turn; one that
challenges every Captain loses a card to every true one.  Win rates do not show that,
so this counts, for each policy in one seat of the same tables (seat uniform, the other
seats drawn from the condition, default ``aggressive_heavy``, or all playing
``--opponents SPEC``; common random numbers as in `coupjax.seat_tables`), per role:

* ``challenge_opportunities``: its decisions where it may challenge a claim of that role
  (a main action's claim, or a block's claimed role when it answers a block);
  ``challenges``: how many it challenged; ``challenge_rate``;
* ``block_opportunities``: its decisions where it may block by claiming that role
  (Duke against foreign aid, Contessa against an assassination, Captain or Ambassador
  against a steal); ``blocks``: how many it blocked with that role, ``bluff_blocks`` how
  many of those without holding it; ``block_rate``.

Rates are ratios of counts pooled over the tables (None where there was no
opportunity).  The counting is `evals.lib.reactions`; the report has a section of them.
"""
from __future__ import annotations

import json

from rich.table import Table

from coupjax import console, rules
from coupjax.args import Parser, fail, output_file, positive_int
from coupjax.env import Env
from coupjax.policies import PolicySpecError
from coupjax.policies.pools import CONDITIONS
from coupjax.policies.spec import describe_spec
from coupjax.seeds import REPORT_SEED, SeedError, check_report_seed
from evals.lib.paired import DEFAULT_CONDITION
from evals.lib.reactions import COUNTS, make_rate_runner, reaction_rates, reaction_tally, summarize

PROG = "python -m evals.reaction_rates"
# the counting lives in evals.lib.reactions (the report counts with it too); its names stay importable here
__all__ = ["COUNTS", "PROG", "main", "make_rate_runner", "reaction_rates", "reaction_tally", "render", "summarize"]


def render(out: dict, title: str) -> Table:
    table = Table(title=title)
    table.add_column("policy")
    for role in rules.ROLES:
        table.add_column(f"{role}: challenged / blocked", justify="right")

    def pct(x):
        return "-" if x is None else f"{x:.2f}"

    for spec, roles in out.items():
        table.add_row(spec, *(f"{pct(roles[r]['challenge_rate'])} / {pct(roles[r]['block_rate'])}" for r in rules.ROLES))
    return table


def main(argv=None) -> dict:
    ap = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", action="append", required=True, help="policy spec (repeatable)")
    ap.add_argument("--opponents", help=f"a condition ({', '.join(CONDITIONS)}; default {DEFAULT_CONDITION}) "
                                        "or a policy spec for every other seat")
    ap.add_argument("--games", type=positive_int, required=True, help="tables per policy")
    ap.add_argument("--seed", type=int, default=REPORT_SEED, help="table seed (tuning seeds are refused)")
    ap.add_argument("--players", type=int, default=4, choices=range(2, 7), metavar="{2..6}")
    ap.add_argument("--chunk", type=positive_int, default=1000, help="tables per compiled call")
    ap.add_argument("--out", type=output_file)
    args = ap.parse_args(argv)
    try:
        for spec in args.policy + ([args.opponents] if args.opponents and args.opponents not in CONDITIONS else []):
            describe_spec(spec)
    except PolicySpecError as err:
        fail(PROG, err)
    try:
        args.seed = check_report_seed(args.seed, PROG)  # a held-out seed recorded, now that the run is valid
    except SeedError as err:
        fail(PROG, err)
    out = reaction_rates(Env(args.players), list(dict.fromkeys(args.policy)), args.games, args.seed, args.opponents,
                         min(args.chunk, args.games))
    console.console().print(render(out, f"challenge / block rate per claimed role: {args.games:,} tables of seed "
                                        f"{args.seed}, other seats {args.opponents or DEFAULT_CONDITION}"))
    if args.out:
        args.out.write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
