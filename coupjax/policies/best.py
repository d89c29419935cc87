"""``best``: the policy coupjax ships for play, the recipe's trained network alone.

The network is issue 40's recipe (`configs/recipe_cpu.yaml`, training seed 26 of
``configs/experiments.yaml``, the first of its fresh seeds): self-play that reads the
exact posterior, trained towards the sampled-world search on random-play decisions.  Its
weights, and the command and seed that made them, are in ``coupjax/policies/weights/best``.

Why no hand-written rules on top: a public-fact layer (the advice's challenges and true
blocks, dominant main actions, the scripted bots' card-keeping rule) lost to the recipe's
network alone (then training seed 21's) in a paired held-out comparison, in both
conditions (docs/experiments/2026-12-04-recipe-final-layer-results.md), so it was
deleted.  For a run of your own, give its directory as the spec instead.
"""
from __future__ import annotations

from pathlib import Path

from coupjax.inference import load_policy
from coupjax.policies.common import Policy

WEIGHTS = Path(__file__).resolve().parent / "weights" / "best"


def make_best(env) -> Policy:
    """`best` for ``env``: the committed network, for the table size it was trained on
    (a ``ValueError`` names the size otherwise)."""
    policy = load_policy(WEIGHTS, num_players=env.num_players)
    policy.__name__ = "best"
    return policy
