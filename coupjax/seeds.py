"""Honest seeds: the seeds used to tune anything, in one recorded list.

A figure is only honest on games that played no part in choosing what it measures.
Every command that reports figures refuses the seeds below (`check_report_seed`) and
accepts any other; every command that tunes (fits constants, chooses defaults) only
runs on seeds recorded here (`check_tuning_seed`), so a new tuning seed must be added
to this list before it is used.  Seeds of different commands index different games
(seat tables, advisor games, training runs), but a seed used to tune by any of them
is kept out of every report.
"""
from __future__ import annotations

TUNING_SEEDS: dict[int, str] = {
    0: "evals.seat_table tables on which the search defaults and the dqn_cpu and selfplay_* configs were chosen; "
       "training seed of the runs the selfplay_* configs were chosen on",
    1000: "evals.advisor_quality --fit: the advisor's claim likelihoods, calibration and value constants",
    1001: "evals.advisor_quality --seat-table: belief_ev's play overrides (PLAY_OVERRIDES); "
          "evals.exploit --tune: the shipped best response configs/best_responses/selfplay_seed0",
    1002: "evals.exploit --tune: the best responses on which the self-play exploiter's settings, "
          "the frozen best response's weight and selfplay_psro_cpu's PSRO variants were compared",
}

# The default seed of the reporting commands (never a tuning seed).
REPORT_SEED = 7


class SeedError(ValueError):
    """A seed used for the wrong purpose; the message says which list it is (not) in."""


def check_report_seed(seed: int, what: str = "this report") -> int:
    """``seed`` if it was never used to tune; SeedError otherwise."""
    seed = int(seed)
    if seed in TUNING_SEEDS:
        raise SeedError(f"seed {seed} was used to tune ({TUNING_SEEDS[seed]}); {what} refuses it: "
                        f"report on a seed never used to tune, e.g. {REPORT_SEED}")
    return seed


def check_tuning_seed(seed: int, what: str = "tuning") -> int:
    """``seed`` if it is recorded in `TUNING_SEEDS`; SeedError otherwise."""
    seed = int(seed)
    if seed not in TUNING_SEEDS:
        raise SeedError(f"{what} runs only on recorded tuning seeds ({', '.join(map(str, TUNING_SEEDS))}); "
                        f"add seed {seed} to coupjax.seeds.TUNING_SEEDS first, and it will be kept out of every report")
    return seed
