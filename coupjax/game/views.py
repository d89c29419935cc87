"""What a seat sees and may do: the observation (and its layout) and the legal mask.

Both are functions of the state alone; the env derives them once per step, after its
selects.  `coupjax.observation` is the one typed parser of the observation for every reader.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rules
from coupjax.game import board
from coupjax.game.tables import one_hot, role_counts, tables, take
from coupjax.state import State

SEAT_FEATURES = (
    ("coins", 1), ("hidden", 1), ("alive", 1), ("revealed", rules.NUM_ROLES), ("claims", rules.NUM_ROLES),
    ("blocks", rules.NUM_ROLES), ("challenges_won", 1), ("challenges_lost", 1), ("renewals", 1),
    ("disproven", rules.NUM_ROLES),
)
NUM_SEAT_FEATURES = sum(size for _, size in SEAT_FEATURES)  # 26


def observation_layout(num_players: int) -> dict[str, tuple[int, tuple[int, ...]]]:
    """Name -> (start index, shape) of each part of the flat observation.

    Seats are relative to the observer (row 0 is the observer, row k the seat k places
    clockwise).  One-hot blocks are all zero when the thing is absent (-1).

    own_hand [2, 5]     one-hot role of the observer's hidden card at hand index 0 and 1
    drawn [5]           counts of the 2 cards drawn in the observer's own exchange choice
    seats [n, 26]       per relative seat: coins, hidden cards, alive, revealed counts per
                        role [5], claims per role since the hand was renewed [5], blocks
                        per role since renewal [5], challenges won, challenges lost,
                        hand renewals (redraws after a proven claim, exchanges), and
                        disproven [5]: 1 where a caught bluff (action or block) proved
                        the seat holds no card of the role since its hand was renewed
    phase [5]           one-hot rules.PHASES
    main_action [7]     one-hot of the pending main action (rules.MAIN_ACTIONS)
    actor [n]           one-hot relative seat of the turn's actor
    target [n]          one-hot relative seat of the target
    claim [5]           one-hot role claimed by the main action
    blocker [n]         one-hot relative seat of the blocker
    block_role [5]      one-hot role claimed by the block
    turn [1]            turns completed
    """
    n = num_players
    parts = [
        ("own_hand", (2, rules.NUM_ROLES)), ("drawn", (rules.NUM_ROLES,)), ("seats", (n, NUM_SEAT_FEATURES)),
        ("phase", (rules.NUM_PHASES,)), ("main_action", (rules.NUM_MAIN_ACTIONS,)), ("actor", (n,)),
        ("target", (n,)), ("claim", (rules.NUM_ROLES,)), ("blocker", (n,)), ("block_role", (rules.NUM_ROLES,)),
        ("turn", (1,)),
    ]
    layout, start = {}, 0
    for name, shape in parts:
        layout[name] = (start, shape)
        start += int(np.prod(shape))
    layout["size"] = (start, ())
    return layout


def observation_size(num_players: int) -> int:
    return observation_layout(num_players)["size"][0]


def legal_mask(s: State) -> jax.Array:
    """bool[A]: the actions ``s.current_player`` may take now."""
    n = s._hands.shape[0]
    T = tables(n)
    p, phase = s.current_player, s._phase
    coins = take(s._coins, p)
    opponents = board.alive(s)[(p + jnp.arange(n)) % n] & (jnp.arange(n) > 0)
    in_action = phase == rules.PH_ACTION
    free = in_action & (coins < rules.FORCED_COUP_COINS)
    kind = jnp.clip(s._action, 0)
    in_react, in_answer = phase == rules.PH_REACT, phase == rules.PH_ANSWER_BLOCK
    may_block = in_react & take(T.blockers, kind) & (~take(T.target_only, kind) | (p == s._target))
    hand = take(s._hands, p)
    pool = role_counts(hand) + role_counts(s._drawn)
    hidden = (hand >= 0).sum()
    keeps = ((phase == rules.PH_EXCHANGE) & (jnp.asarray(T.keep_size) == hidden)
             & jnp.all(jnp.asarray(T.keep_counts) <= pool, axis=1))
    return jnp.concatenate([
        jnp.broadcast_to(free, (4,)),
        in_action & (coins >= rules.ACTION_COST[rules.COUP]) & opponents,
        free & (coins >= rules.ACTION_COST[rules.ASSASSINATE]) & opponents,
        free & opponents,
        jnp.stack([in_react | in_answer, (in_react & (take(T.claim, kind) >= 0)) | in_answer]),
        may_block,
        jnp.broadcast_to(phase == rules.PH_LOSE, (2,)),
        keeps,
    ])


def observe(s: State, seat) -> jax.Array:
    """float32[obs]: what ``seat`` sees (`observation_layout`); no card it cannot see."""
    n = s._hands.shape[0]
    T = tables(n)
    rel = lambda x: jnp.where(x >= 0, (x - seat) % n, -1)  # noqa: E731
    own = (take(s._hands, seat)[:, None] == jnp.arange(rules.NUM_ROLES)).astype(jnp.float32)
    sees_drawn = (s._phase == rules.PH_EXCHANGE) & (s._actor == seat)
    drawn = jnp.where(sees_drawn, role_counts(s._drawn), 0)
    hidden = board.hidden_counts(s)
    revealed = (s._revealed[:, :, None] == jnp.arange(rules.NUM_ROLES)).sum(axis=1)
    seats = jnp.concatenate([
        s._coins[:, None], hidden[:, None], (hidden > 0)[:, None], revealed, s._claims, s._blocks,
        s._challenges_won[:, None], s._challenges_lost[:, None], s._renewals[:, None], s._disproven,
    ], axis=1)[(seat + jnp.arange(n)) % n]  # rows relative to the observer
    claim = jnp.where(s._action >= 0, take(T.claim, jnp.clip(s._action, 0)), -1)
    return jnp.concatenate([
        own.ravel(), drawn.astype(jnp.float32), seats.ravel().astype(jnp.float32),
        one_hot(s._phase, rules.NUM_PHASES), one_hot(s._action, rules.NUM_MAIN_ACTIONS),
        one_hot(rel(s._actor), n), one_hot(rel(s._target), n), one_hot(claim, rules.NUM_ROLES),
        one_hot(rel(s._blocker), n), one_hot(s._block_role, rules.NUM_ROLES),
        s._turn[None].astype(jnp.float32),
    ])


def with_views(s: State) -> State:
    """Fill the derived public fields: the legal mask (all True once terminated) and the
    observation of the seat to move."""
    mask = jnp.where(s.terminated, True, legal_mask(s))
    return s.replace(legal_action_mask=mask, observation=observe(s, s.current_player))
