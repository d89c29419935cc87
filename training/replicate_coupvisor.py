"""CoupVisor's policy benchmark (VI.F), side by side under both rewards.

    python -m training.replicate_coupvisor --out FILE.json [--seeds 5] [--seed 7] [--games 1000]
        [--online-games 200] [--dqn-episodes 200] [--quick] [--quiet]

CoupVisor's setting is offline: logged games, one row per logged decision, and an
environment that steps through the rows of one logged game per episode (B.2).  For
each seed (``--seeds`` of them: ``--seed``, ``--seed`` + 1, ...; default from
`coupjax.seeds.REPORT_SEED`, tuning seeds refused) the benchmark
(`training.replication.benchmark`)

1. **logs** ``--games`` 4-player games (rounded up to a multiple of the 100 games
   played in parallel) of the scripted bots (`training.replication.logs`; seats drawn
   uniformly per game; ``belief_ev`` is not among them, so its match rates are not
   matches with itself).  Every decision of every seat is a row: the acting seat's
   observation and legal mask, the logged action, the actor, the game, whether the
   actor wins the game (the rules' winner, `coupjax.game.board.winner`), and the row's
   shaped reward (B.1: the actor's coin change plus the number of its opponents
   eliminated up to its next decision, or to its elimination or the end of the game).
   A share ``--test-fraction`` of the games (default 0.2) is held out whole (the same
   split function as behaviour cloning's validation).
2. **BC** (C.6): multinomial logistic regression on the observation features, fitted on
   every training row with `training.bc.fit` (every logged player imitated).
3. **DQN** (C.1-C.5, `training.replication.offline_dqn`), trained offline on the
   logged-row environment, one network per reward, ``--dqn-episodes`` episodes (default
   200, C.2); B.2's rewards: ``shaped`` = the row's shaped reward + 1 if the chosen
   action is the logged one; ``win`` = 1 if it is the logged one and the row's actor
   wins the game.
4. **Evaluation** of ``bc``, ``dqn``, ``belief_ev`` and ``random``.  Offline, on the
   held-out games (BC and DQN greedy over the legal actions; ``belief_ev`` and
   ``random`` one sample of their logits, recorded while the game was logged):

   * ``reward_per_episode``: the B.2 reward summed over the rows of a held-out game,
     averaged over held-out games;
   * ``winner_action_match``: the share of the eventual winners' rows where the policy
     chooses the logged action;
   * ``action_match`` (extra): the share of all held-out rows matched.

   Online, ``win_rate``: the policy in one seat of ``--online-games`` 4-player tables per
   seed against 3 opponents drawn uniformly from the evaluation pool
   (`coupjax.policies.pools.OPPONENTS`), in `coupjax.seat_tables` (the one table loop and
   the one definition of winning: placement 1 by the rules' ranking), with common
   random numbers across policies.

BC, ``belief_ev`` and ``random`` do not depend on the reward: the same policy is
evaluated in both blocks (its ``winner_action_match`` and ``win_rate`` are identical
there; only the reward differs).  DQN is a different network per block.

Aggregation over seeds: mean and a 95% Student-t interval over the per-seed values
(``mean +- t_{0.975, k-1} * sd / sqrt(k)``, rates clipped to [0, 1]; with one seed the
interval is the point).
The JSON is keyed by reward (``shaped``, ``win``), then policy (``bc``, ``dqn``,
``belief_ev``, ``random``), then metric (``mean``, ``ci95_low``, ``ci95_high``,
``per_seed``), plus ``config``, ``meta`` (per-seed counts, arena rows, DQN training
curves, timings) and ``comparison`` (CoupVisor's published numbers and which findings
match).
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from coupjax.args import Parser
from coupjax.seeds import REPORT_SEED, SeedError, check_report_seed
from training.config import ConfigError
from training.replication.benchmark import POLICIES, PUBLISHED, QUICK, REWARDS, Settings, run_benchmark
from training.replication.offline_dqn import dqn_config


def _fmt(x: dict, digits: int = 3) -> str:
    return f"{x['mean']:.{digits}f} [{x['ci95_low']:.{digits}f}, {x['ci95_high']:.{digits}f}]"


def print_table(out: dict, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=160)
    st = out["config"]["settings"]
    for mode in REWARDS:
        t = Table(title=f"{mode} reward: mean [95% t-interval] over {st['seeds']} seeds "
                        f"({st['games']} logged games/seed, {st['online_games']} seat-table games/policy/seed)")
        for col in ("policy", "reward/episode", "CoupVisor", "winner-action match", "CoupVisor", "win rate",
                    "action match (all rows)"):
            t.add_column(col, justify="left" if col == "policy" else "right")
        for pol in POLICIES:
            r = out[mode][pol]
            pub = PUBLISHED[mode].get(pol, {})
            t.add_row(pol, _fmt(r["reward_per_episode"], 2), f"{pub['reward_per_episode']:+.2f}" if pub else "-",
                      _fmt(r["winner_action_match"]),
                      f"{pub['winner_action_match']:.3f}" if "winner_action_match" in pub else "-",
                      _fmt(r["win_rate"]), _fmt(r["action_match"]))
        console.print(t)
    c = out["comparison"]
    console.print(f"shaped order: {' > '.join(c['shaped_order'])} (CoupVisor: bc > dqn > random); "
                  f"BC leads: {c['bc_leads_shaped']} (its interval above all others: {c['bc_leads_shaped_separated']})")
    console.print(f"win order: {' > '.join(c['win_order'])} (CoupVisor: dqn > belief_ev > bc > random); "
                  f"DQN leads: {c['dqn_leads_win']} (its interval above all others: {c['dqn_leads_win_separated']})")
    d = c["diagnostics"]["bc_winners_only"]["winner_action_match"]
    console.print(f"diagnostic: logistic regression on the winners' rows only: winner-action match {_fmt(d)}")
    console.print(f"wall time {out['meta']['wall_seconds']:.0f} s")


def settings_from_args(args) -> Settings:
    base = QUICK if args.quick else Settings()
    changes = {k: getattr(args, k) for k in ("seeds", "games", "online_games", "dqn_episodes", "test_fraction")
               if getattr(args, k) is not None}
    if args.seed is not None:
        changes["first_seed"] = args.seed
    if args.dqn_set:
        changes["dqn_overrides"] = tuple(args.dqn_set)
    return dataclasses.replace(base, **changes)


def main(argv=None) -> int:
    ap = Parser(prog="python -m training.replicate_coupvisor", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="JSON file for the results")
    ap.add_argument("--seeds", type=int, help="number of seeds (SEED, SEED + 1, ...); default 5")
    ap.add_argument("--seed", type=int, help=f"first seed; default {REPORT_SEED} (tuning seeds are refused)")
    ap.add_argument("--games", type=int, help="logged games per seed; default 1000")
    ap.add_argument("--online-games", type=int, help="seat-table games per policy and seed; default 200")
    ap.add_argument("--dqn-episodes", type=int, help="DQN training episodes (logged games); default 200")
    ap.add_argument("--test-fraction", type=float, help="held-out share of the logged games; default 0.2")
    ap.add_argument("--dqn-set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a key of configs/dqn_coupvisor.yaml (diagnostics, e.g. gamma=0)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (tests, smoke runs)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    settings = settings_from_args(args)
    try:
        dqn_config(settings.dqn_overrides)
    except ConfigError as e:
        print(f"{ap.prog}: error: --dqn-set: {e}", file=sys.stderr)
        return 2
    if settings.seeds < 1 or settings.games < 2 or settings.dqn_episodes < 1 or not 0 < settings.test_fraction < 1:
        print(f"{ap.prog}: error: need --seeds >= 1, --games >= 2, --dqn-episodes >= 1, 0 < --test-fraction < 1",
              file=sys.stderr)
        return 2
    try:
        for seed in settings.seed_list():
            check_report_seed(seed, "the replication")
    except SeedError as e:
        print(f"{ap.prog}: error: {e}", file=sys.stderr)
        return 2
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    prog = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, disable=args.quiet)
    with prog:
        out = run_benchmark(settings, progress=prog, log=(lambda m: prog.console.print(m)) if not args.quiet else None)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2))
    print_table(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
