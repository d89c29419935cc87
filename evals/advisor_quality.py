"""Advisor quality: how well the challenge advice separates bluffs from true claims.

    python -m evals.advisor_quality --games-per-condition 10000 --out advisor_quality.json   # seed 7
    python -m evals.advisor_quality --fit --seed 1000 --games-per-condition 4000   # refit configs/advisor.yaml
    python -m evals.advisor_quality --seat-table 2000 --seed 3 --alphas 0.2,0.5   # belief_ev at the seat table
    python -m evals.advisor_quality --seat-table 2000 --seed 1001 --alphas 0.2,0.5,1.0 --tune

Three stages, one module each under `evals.lib.advisor`:

* `evals.lib.advisor.record` plays 4-player games of the scripted bots, seats drawn per
  game from each condition (aggressive_heavy, honest_heavy), and records every
  challengeable claim ONCE, from the seat with the first chance to challenge it, with
  its ground truth (bluff or not) read by the recorder only;
* `evals.lib.advisor.score` runs the advisor on the recorded observations and computes
  the metrics;
* `evals.lib.advisor.fit` (``--fit``) fits the advisor's constants on the records and
  writes configs/advisor.yaml.

Output JSON: per condition, for ``coupvisor`` and ``exact`` (each through its fitted
calibration map, as the advisor uses them) and for ``coupvisor_uncalibrated`` and
``exact_uncalibrated`` (the raw beliefs under the same thresholds): ``f1, precision,
recall, false_challenge_share, missed_bluff_share, brier, ece, claims, games``, plus
``roc_auc, outcome_accuracy, bluff_rate, challenge_rate, tp/fp/fn/tn, reliability`` and
``per_kind``; per condition ``overflow`` and ``unfinished_games``; and ``meta``.

Honest seeds (`coupjax.seeds`): the evaluation refuses every tuning seed (default seed
`coupjax.seeds.REPORT_SEED`); ``--fit`` runs only on a recorded tuning seed (its
printed figures are in-sample: the fitting games).

``--seat-table GAMES`` instead seats each pool policy (the scripted bots and
belief_ev) and, with ``--alphas a,b``, belief_ev variants challenging with those
alphas, in one seat of GAMES tables against three pool opponents, in the arena
(`evals.lib.advisor.variants`).  It is a report (tuning seeds refused); ``--tune``
marks a run that chooses belief_ev's PLAY_OVERRIDES, accepted only on a tuning seed.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from coupjax.advice import challenge
from coupjax.args import Parser, output_file
from coupjax.paths import config_path
from coupjax.seeds import REPORT_SEED, SeedError, check_report_seed, check_tuning_seed
from evals.lib.advisor.fit import fit_constants, params_dict, write_config
from evals.lib.advisor.record import NUM_PLAYERS, record_conditions
from evals.lib.advisor.score import evaluate, metrics_text
from evals.lib.advisor.variants import variant_table

CONFIG = config_path("advisor.yaml")


def run_seat_table(args) -> dict:
    from rich.progress import Progress

    t0 = time.perf_counter()
    alphas = [float(a) for a in args.alphas.split(",") if a]
    with Progress(transient=True, disable=args.quiet) as progress:
        res = variant_table(args.seat_table, args.seed, args.chunk or 2000, alphas=alphas, tune=args.tune,
                         progress=progress)
    res["seconds"] = round(time.perf_counter() - t0, 1)
    for name, r in sorted(res["policies"].items(), key=lambda kv: -kv[1]["win_rate"]):
        print(f"{name:24s} win rate {r['win_rate']:.4f}  (95% {r['ci95_low']:.4f}-{r['ci95_high']:.4f}, "
              f"{r['wins']}/{r['games']} tables, mean place {r['mean_placement']:.2f})")
    print(f"{res['games']} tables per policy against the pool, seed {res['seed']} ({res['purpose']}), "
          f"{res['seconds']} s")
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))
    return res


def main(argv=None):
    ap = Parser(prog="python -m evals.advisor_quality", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games-per-condition", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=REPORT_SEED,
                    help=f"game seed (default {REPORT_SEED}); tuning seeds are refused except by --fit and --tune, "
                         "which accept only them")
    ap.add_argument("--out", type=output_file, default=None, help="JSON output file")
    ap.add_argument("--chunk", type=int, default=None,
                    help="games per jitted chunk (default 1000; 2000 for --seat-table)")
    ap.add_argument("--style", choices=tuple(challenge.STYLES), default="balanced")
    ap.add_argument("--params", type=str, default=None, help="YAML with a params mapping (default: AdvisorParams())")
    ap.add_argument("--fit", action="store_true", help="fit the constants on these games and write --config")
    ap.add_argument("--config", type=str, default=str(CONFIG))
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--seat-table", type=int, default=0, metavar="GAMES",
                    help="instead: seat each pool policy (and the --alphas variants of belief_ev) in one seat of "
                         "GAMES 4-player tables against the pool and report its win rate (coupjax.seat_tables)")
    ap.add_argument("--alphas", type=str, default="",
                    help="with --seat-table: also seat belief_ev variants challenging with these alphas (1,2,...)")
    ap.add_argument("--tune", action="store_true",
                    help="with --seat-table: a tuning run (choosing belief_ev's PLAY_OVERRIDES); only on tuning seeds")
    args = ap.parse_args(argv)
    if args.tune and not args.seat_table:
        ap.error("--tune goes with --seat-table (--fit is the advisor's own tuning run)")
    try:
        if args.seat_table:
            return run_seat_table(args)
        if args.fit:
            check_tuning_seed(args.seed, "advisor_quality --fit")
        else:
            check_report_seed(args.seed, "the advisor evaluation")
    except SeedError as err:
        ap.error(str(err))

    t0 = time.perf_counter()
    records = record_conditions(args.games_per_condition, args.seed, args.chunk or 1000, quiet=args.quiet)
    t_play = time.perf_counter() - t0
    params = challenge.load_params(args.params) if args.params else challenge.AdvisorParams()
    if args.fit:
        params, info = fit_constants(records, args.seed, args.games_per_condition)
        write_config(args.config, params, info)
        print(f"wrote {args.config}")
    result = evaluate(records, params, args.style)
    t_all = time.perf_counter() - t0
    result["meta"] = {"games_per_condition": args.games_per_condition, "seed": args.seed, "style": args.style,
                      "num_players": NUM_PLAYERS, "fit": bool(args.fit), "params": params_dict(params),
                      "seconds_play": round(t_play, 1), "seconds_total": round(t_all, 1)}
    print(metrics_text(result))
    print(f"play {t_play:.1f} s, total {t_all:.1f} s")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
        print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
