"""Explicit positions, replacing hidden cards, and reading a state's cards.

These are the functions the rest of the project uses instead of touching ``State._*``
fields.  `make_position` and `replace_hidden` are pure and jittable; the readers
(`hands`, `deck_order`, ...) take one unbatched state and return Python lists.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rules as R
from coupjax.engine import Env
from coupjax.state import State


def _deck_storage(deck):
    """Deck in draw order (next first, -1 padded to 15) -> engine storage (top at size-1)."""
    deck = jnp.asarray(deck, jnp.int32)
    size = (deck >= 0).sum().astype(jnp.int32)
    idx = size - 1 - jnp.arange(R.DECK_SIZE)
    return jnp.where(idx >= 0, deck[jnp.clip(idx, 0)], -1), size


def make_position(env: Env, hands, deck, coins=None, revealed=None, current_player=0, turn=0) -> State:
    """A state at the start of ``current_player``'s turn from an explicit position.

    hands: int[n, 2] hidden role ids, -1 for an empty slot (cards compacted left);
    deck: int[15] role ids in draw order, next card first, -1 padded; coins: int[n];
    revealed: int[n, 2] revealed role ids, -1 padded; turn: turns already played.
    Seats with no hidden card are eliminated, in seat order.  Jittable; validate
    card conservation beforehand with `check_cards`.
    """
    n = env.num_players
    hands = jnp.asarray(hands, jnp.int32)
    hands = jnp.where((hands[:, :1] < 0) & (hands[:, 1:] >= 0), hands[:, ::-1], hands)  # compact left
    coins = jnp.full(n, R.START_COINS, jnp.int32) if coins is None else jnp.asarray(coins, jnp.int32)
    revealed = jnp.full((n, 2), -1, jnp.int32) if revealed is None else jnp.asarray(revealed, jnp.int32)
    storage, size = _deck_storage(deck)
    out = hands[:, 0] < 0
    elim_order = jnp.where(out, jnp.cumsum(out) - 1, -1).astype(jnp.int32)
    player = jnp.asarray(current_player, jnp.int32)
    s = env._template.replace(
        _hands=hands, _deck=storage, _deck_size=size, _coins=coins, _revealed=revealed,
        _elim_order=elim_order, _num_elim=out.sum().astype(jnp.int32), _turn=jnp.asarray(turn, jnp.int32),
        current_player=player, _actor=player,
    )
    over = env._over(s)
    rewards = jnp.where(jnp.arange(n) == env.placements(s)[0], 1.0, -1.0 / (n - 1))
    s = s.replace(terminated=over, rewards=jnp.where(over, rewards, 0.0).astype(jnp.float32))
    return env._with_views(s)


def replace_hidden(env: Env, state: State, hands, deck) -> State:
    """The same public state with other hidden cards (a sampled world).

    hands: int[n, 2] (same hidden counts per seat as before); deck: int[15] in draw
    order, next first, -1 padded.  Cards drawn by an exchanging actor stay as they
    are.  Jittable.
    """
    storage, size = _deck_storage(deck)
    s = state.replace(_hands=jnp.asarray(hands, jnp.int32), _deck=storage, _deck_size=size)
    return env._with_views(s)


def check_cards(hands, deck, revealed, drawn=()) -> None:
    """Raise ValueError unless hands + deck + revealed + drawn hold 3 of each role."""
    cards = [c for row in hands for c in row if c >= 0] + [c for c in deck if c >= 0]
    cards += [c for row in revealed for c in row if c >= 0] + [c for c in drawn if c >= 0]
    counts = np.bincount(np.asarray(cards, int), minlength=R.NUM_ROLES) if cards else np.zeros(R.NUM_ROLES, int)
    if len(counts) != R.NUM_ROLES or (counts != R.COPIES_PER_ROLE).any():
        got = ", ".join(f"{R.ROLES[r]}={counts[r]}" for r in range(R.NUM_ROLES))
        raise ValueError(f"hands, deck and revealed cards must hold 3 of each role; got {got}")


# ---------------------------------------------------------------- readers (one state)
def _np(state: State) -> State:
    return jax.tree.map(np.asarray, state)


def hands(state: State) -> list[list[int]]:
    """Each seat's hidden role ids, in the order ``reveal:<i>`` indexes."""
    return [[int(c) for c in row if c >= 0] for row in np.asarray(state._hands)]


def deck_order(state: State) -> list[int]:
    """Cards in the deck, next first (after a reshuffle any order is equally likely)."""
    size = int(state._deck_size)
    return [int(c) for c in np.asarray(state._deck)[:size][::-1]]


def drawn(state: State) -> list[int]:
    return [int(c) for c in np.asarray(state._drawn) if c >= 0]


def revealed(state: State) -> list[list[int]]:
    return [[int(c) for c in row if c >= 0] for row in np.asarray(state._revealed)]


def coins(state: State) -> list[int]:
    return [int(c) for c in np.asarray(state._coins)]


def hand_arrays(hand_lists, num_players: int) -> np.ndarray:
    """List of per-seat role-id lists -> int32[n, 2], -1 padded."""
    out = np.full((num_players, 2), -1, np.int32)
    for seat, row in enumerate(hand_lists):
        if len(row) > 2:
            raise ValueError(f"seat {seat} holds {len(row)} cards; at most 2")
        out[seat, : len(row)] = row
    return out


def deck_array(deck_list) -> np.ndarray:
    out = np.full(R.DECK_SIZE, -1, np.int32)
    out[: len(deck_list)] = deck_list
    return out
