"""belief_ev and its challenge variants at the seat table (``advisor_quality --seat-table``).

Each tested policy -- the evaluation pool (`coupjax.policies.pools.OPPONENTS`: the
scripted bots and belief_ev) and one belief_ev variant per value of ``alphas`` (its
challenge rule with that alpha, the way `coupjax.policies.belief_ev.PLAY_OVERRIDES`
is chosen) -- takes one seat of the same ``games`` tables against three opponents
drawn from the pool, in `coupjax.seat_tables.play_tables`: the one table loop and the one
definition of winning (placement 1; win rate over tables with a Wilson interval).
The variants are built here and handed to the arena as policies.

It is a report on a seed never used to tune (`coupjax.seeds.check_report_seed`);
``tune=True`` (``--tune``) marks a run that chooses belief_ev's constants, accepted
only on a recorded tuning seed (`check_tuning_seed`).
"""
from __future__ import annotations

from coupjax import seat_tables
from coupjax.env import Env
from coupjax.policies import belief_ev
from coupjax.policies.pools import OPPONENTS
from coupjax.seeds import check_report_seed, check_tuning_seed
from evals.lib.advisor.record import NUM_PLAYERS

SEAT_TABLE_NAMES = tuple(OPPONENTS)


def variant_name(alpha: float) -> str:
    return f"belief_ev[alpha={float(alpha)}]"


def variant_table(games: int, seed: int, chunk: int = 2000, names=SEAT_TABLE_NAMES, alphas=(), tune: bool = False,
               progress=None) -> dict:
    """Each of ``names`` and the alpha variants in one seat of ``games`` 4-player tables
    (module doc).  Returns ``games`` (tables per policy), ``seed``, ``purpose``
    ("report" or "tuning"), ``finished`` (tables played, every one to its end),
    ``opponents`` and ``policies``: name -> the arena's row (`coupjax.seat_tables.summarize`)
    plus ``seats`` (= tables) and ``wilson95`` ([ci95_low, ci95_high])."""
    if tune:
        check_tuning_seed(seed, "advisor_quality --seat-table --tune")
    else:
        check_report_seed(seed, "advisor_quality --seat-table")
    env = Env(NUM_PLAYERS)
    built = {variant_name(a): belief_ev.make_belief_ev(env, belief_ev.play_params().replace(alpha=float(a))) for a in alphas}
    specs = list(dict.fromkeys([*names, *built]))
    rows = seat_tables.play_tables(env, specs, games, seed, pool=OPPONENTS, chunk=chunk, progress=progress,
                             policies=built)
    return {"games": games, "seed": seed, "purpose": "tuning" if tune else "report", "finished": games * len(specs),
            "opponents": list(OPPONENTS),
            "policies": {spec: dict(r, seats=r["games"], wilson95=[r["ci95_low"], r["ci95_high"]])
                         for spec, r in rows.items()}}
