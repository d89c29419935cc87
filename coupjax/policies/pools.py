"""The one roster: the scripted bots' parameters and measured rates, the evaluation pool
and the opponent conditions.  Every command, test and config reads these names here.
"""
from __future__ import annotations

# The scripted bots (`coupjax.policies.scripted`), in this order everywhere.
SCRIPTED_NAMES = ("random", "honest", "cautious", "aggressive", "bluffer")

# Parameters of the parametrised scripted bots (`scripted.scripted_policy`).
SCRIPTED_PARAMS = {
    "honest": dict(bluff=0.0, challenge=0.0, challenge_impossible=1.0, bluff_block=0.0, target_leader=False),
    "cautious": dict(bluff=0.05, challenge=0.0, challenge_impossible=1.0, bluff_block=0.05, target_leader=False),
    "aggressive": dict(bluff=0.25, challenge=0.35, challenge_impossible=1.0, bluff_block=0.25, target_leader=True),
    "bluffer": dict(bluff=0.5, challenge=0.10, challenge_impossible=0.10, bluff_block=0.5, target_leader=False),
}

# Bluff / challenge rate per bot (bluffs / bluff opportunities, challenges / challenge
# opportunities).  Exact by construction, except those in `MEASURED_RATES` (random's two
# rates; the challenges of impossible claims, which honest and cautious challenge always
# and aggressive always rather than at 0.35), measured with `coupjax.seat_tables.measure_rates`
# over 20,000 games; tests/test_policies.py checks every entry within its standard error.
SCRIPTED_RATES = {
    "random": {"bluff": 0.5012, "challenge": 0.4616},
    "honest": {"bluff": 0.0, "challenge": 0.0056},
    "cautious": {"bluff": 0.05, "challenge": 0.0060},
    "aggressive": {"bluff": 0.25, "challenge": 0.3536},
    "bluffer": {"bluff": 0.5, "challenge": 0.10},
}
MEASURED_RATES = {"random": ("bluff", "challenge"), "honest": ("challenge",), "cautious": ("challenge",),
                  "aggressive": ("challenge",)}

# The evaluation pool: the seat table's opponents, the DQN's default opponents and
# the replication's online opponents (the scripted bots and belief_ev).
OPPONENTS = (*SCRIPTED_NAMES, "belief_ev")

# The rollout mix (`scripted_mix`): the scripted bots, equal weights by default.
MIX_NAMES = SCRIPTED_NAMES

# Opponent conditions (CoupVisor's two tables): seat weights over the scripted bots.
CONDITIONS = {
    "aggressive_heavy": {"aggressive": 0.4, "bluffer": 0.3, "honest": 0.1, "cautious": 0.1, "random": 0.1},
    "honest_heavy": {"honest": 0.4, "cautious": 0.3, "aggressive": 0.1, "bluffer": 0.1, "random": 0.1},
}
