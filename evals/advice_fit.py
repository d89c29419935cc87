"""Fit the advice's challenge constants for games won, on a tuning seed.

    python -m evals.advice_fit [--seed 1001] [--games 300] [--base honest]

The advisor's `AdvisorParams` were fitted for F1 at detecting bluffs; played for real
that eagerness loses games (issue "Advice that wins").  This plays ``advised:BASE``
(`coupjax.policies.advised`) with each (alpha, v_last) of a small grid against BASE
itself, paired on the same tables (`evals.compare.play_paired`), in both opponent
conditions, and prints each variant's win-rate difference with its paired bootstrap
interval; the variant with the best mean difference over the conditions is the one
`coupjax.advice.recommend.PLAY_OVERRIDES` records.  Runs only on a tuning seed
(`coupjax.seeds.check_tuning_seed`).
"""
from __future__ import annotations

import itertools
import json

import numpy as np

from coupjax.advice.challenge import AdvisorParams
from coupjax.args import Parser, fail, positive_int
from coupjax.env import Env
from coupjax.policies.advised import make_advised
from coupjax.policies.pools import CONDITIONS
from coupjax.seeds import SeedError, check_tuning_seed
from evals.lib.paired import play_paired
from evals.lib.stats import paired_bootstrap

PROG = "python -m evals.advice_fit"
ALPHAS = (0.05, 0.1, 0.2, 0.35, 1.0)
V_LASTS = (1.25, 2.0)


def fit(env, base: str, games: int, seed: int, alphas=ALPHAS, v_lasts=V_LASTS) -> list[dict]:
    grid = list(itertools.product(alphas, v_lasts))
    units = [make_advised(env, base, params=AdvisorParams().replace(alpha=a, v_last=v)) for a, v in grid]
    rows = [{"alpha": a, "v_last": v} for a, v in grid]
    for cond in CONDITIONS:
        wa, wb = play_paired(env, units, [base], games, [seed], cond)["wins"]
        for j, row in enumerate(rows):
            b = paired_bootstrap(wa[j:j + 1], wb, n_boot=1000)
            row[cond] = {"diff": round(b["diff"], 4), "ci95": [round(b["ci_low"], 4), round(b["ci_high"], 4)]}
    for row in rows:
        row["mean_diff"] = round(float(np.mean([row[c]["diff"] for c in CONDITIONS])), 4)
    return sorted(rows, key=lambda r: -r["mean_diff"])


def main(argv=None) -> list[dict]:
    ap = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1001)
    ap.add_argument("--games", type=positive_int, default=300)
    ap.add_argument("--base", default="honest")
    args = ap.parse_args(argv)
    try:
        check_tuning_seed(args.seed, "evals.advice_fit")
    except SeedError as err:
        fail(PROG, err)
    rows = fit(Env(4), args.base, args.games, args.seed)
    for row in rows:
        print(json.dumps(row))
    return rows


if __name__ == "__main__":
    main()
