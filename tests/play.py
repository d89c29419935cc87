"""Shared move choices for tests that play matches by protocol names."""
from __future__ import annotations


def stalling_choice(rng, legal):
    """Never adds coins to the table (exchange, steal, pass): games run to the turn cap."""
    for pick in ("exchange", "pass"):
        if pick in legal and rng.random() < 0.6:
            return pick
    steals = [a for a in legal if a.startswith("steal:")]
    if steals and rng.random() < 0.8:
        return rng.choice(steals)
    calm = [a for a in legal if not a.startswith(("challenge", "income", "tax", "foreign_aid", "assassinate", "coup"))]
    return rng.choice(calm or legal)
