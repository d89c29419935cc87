"""Public facts of a state that the stages, the views and the result all read.

`placements` is the one definition of a match's result (the rules' "End of the
match"): the last seat with influence first, then the eliminated from the most recent
elimination to the first; a match ended by the turn cap ranks its survivors by hidden
influence, then coins, then lowest seat.  `winner` is its first entry.
"""
from __future__ import annotations

import jax.numpy as jnp

from coupjax.state import State


def alive(s: State):
    """bool[n]: seats with at least one hidden card."""
    return s._hands[..., 0] >= 0


def is_over(s: State):
    """bool[]: at most one seat has influence left."""
    return alive(s).sum() <= 1


def hidden_counts(s: State):
    """int32[n]: hidden cards per seat (public)."""
    return (s._hands >= 0).sum(axis=-1).astype(jnp.int32)


def next_alive_after(s: State, actor, seat):
    """First live seat clockwise after ``seat`` and before coming back round to ``actor``.

    Returns (seat int32[], whether there is one bool[]).
    """
    n = s._hands.shape[0]
    pos = (jnp.arange(n) - actor) % n
    cand = alive(s) & (pos > (seat - actor) % n)
    first = jnp.min(jnp.where(cand, pos, n))
    return ((actor + first) % n).astype(jnp.int32), cand.any()


def rank_score(s: State):
    """int32[n], higher is better: survivors by hidden cards, coins, lower seat; then
    the eliminated, latest first."""
    n = s._hands.shape[0]
    seats = jnp.arange(n)
    hidden = hidden_counts(s)
    coins = jnp.clip(s._coins, 0, (1 << 19) - 1)
    alive_score = (1 << 30) + (hidden << 27) + (coins << 4) + (n - 1 - seats)  # n <= 6 < 16
    return jnp.where(hidden > 0, alive_score, s._elim_order).astype(jnp.int32)


def placements(s: State):
    """int32[n]: seats in finishing order (meaningful once terminated)."""
    return jnp.argsort(-rank_score(s), stable=True).astype(jnp.int32)


def winner(s: State):
    """int32[]: the seat placed first (meaningful once terminated)."""
    return jnp.argmax(rank_score(s)).astype(jnp.int32)


def terminal_rewards(s: State):
    """float32[n]: +1 for the winner, -1/(n-1) for every other seat."""
    n = s._hands.shape[0]
    return jnp.where(jnp.arange(n) == winner(s), 1.0, -1.0 / (n - 1)).astype(jnp.float32)


def coins(s: State):
    """int32[n]: coins per seat (public)."""
    return s._coins


def phase(s: State):
    """int32[]: the decision's phase (`rules.PHASES`)."""
    return s._phase


def turn(s: State):
    """int32[]: turns completed."""
    return s._turn


def actor(s: State):
    """int32[]: the turn's actor."""
    return s._actor


def main_action(s: State):
    """int32[]: the turn's main action kind (`rules.MAIN_ACTIONS`), -1 before it is declared."""
    return s._action


def target(s: State):
    """int32[]: the main action's target, -1 if none."""
    return s._target


def blocker(s: State):
    """int32[]: the seat blocking the main action, -1 if none."""
    return s._blocker


def block_role(s: State):
    """int32[]: the role the block claims, -1 if none."""
    return s._block_role


def deck_size(s: State):
    """int32[]: cards in the deck."""
    return s._deck_size


__all__ = ["alive", "is_over", "hidden_counts", "next_alive_after", "rank_score", "placements", "winner",
           "terminal_rewards", "coins", "phase", "turn", "actor", "main_action", "target", "blocker", "block_role",
           "deck_size"]
