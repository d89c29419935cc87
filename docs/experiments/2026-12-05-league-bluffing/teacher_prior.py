"""Diagnostic of docs/experiments/2026-12-05-league-bluffing.md: how much of the recipe's
teacher's mass on bluffs comes from its prior (the network, mixed with 0.3 of the uniform
policy) rather than from its rollouts' values: the teacher as configured and with the prior
all but uniform (``search_target_prior_uniform: 0.99``; 1 is not allowed), on the decisions
and with the measures of `teacher_bluff_mix.py` (512 action decisions with a legal bluff and a
legal honest action, from random play and from the network's own games).

    PYTHONPATH=. python docs/experiments/2026-12-05-league-bluffing/teacher_prior.py EXPORT OUT.json
"""
import sys

from teacher_bluff_mix import compare_teachers  # beside this script (its folder is on sys.path)

PRIORS = {"network (as configured)": (), "uniform (0.99)": ("search_target_prior_uniform=0.99",)}

if __name__ == "__main__":
    compare_teachers(sys.argv[1], sys.argv[2], PRIORS)
