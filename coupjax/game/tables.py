"""Static per-table-size arrays derived from `coupjax.rules`, and small fusion-friendly helpers.

`tables(n)` is built once per table size (NumPy arrays: constants under `jit`).  The
helpers replace per-game gathers under `vmap`: indexing with a per-game index becomes
an XLA gather, which does not fuse with its neighbours on CPU; the tables here are a
few rows long, so a one-hot select-and-sum is cheaper.
"""
from __future__ import annotations

import functools
from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np

from coupjax import rules


def take(table, index):
    """``table[index]`` (first axis) as a one-hot select-and-sum instead of a gather.

    An ``index`` outside the table gives zeros (False).
    """
    table = jnp.asarray(table)
    hit = (jnp.arange(table.shape[0]) == index).reshape((-1,) + (1,) * (table.ndim - 1))
    if table.dtype == jnp.bool_:
        return jnp.any(hit & table, axis=0)
    return jnp.sum(jnp.where(hit, table, 0), axis=0, dtype=table.dtype)


def one_hot(index, size):
    """One-hot float32 vector; all zeros for index -1."""
    return (jnp.arange(size) == index).astype(jnp.float32)


def role_counts(cards):
    """Counts per role of a card array (-1 ignored) -> int32[5]."""
    return (cards[..., None] == jnp.arange(rules.NUM_ROLES)).sum(axis=tuple(range(cards.ndim))).astype(jnp.int32)


@functools.lru_cache(maxsize=None)
def tables(num_players: int) -> SimpleNamespace:
    """The rules' tables for ``num_players`` seats (NumPy; see `rules` for their meaning).

    layout: `rules.ActionLayout`; main_kind / target_offset [A]: each action id's main
    action kind and relative target (-1: none); cost / claim / opens_window /
    target_only / gain [7] per main action; blockers [7, 4] per block slot
    (`rules.BLOCK_ROLES`); block_roles [4]; keep_counts [20, 5], keep_size [20] and
    keep_hand [20, 2] per keep multiset; cards [15] the court deck in role order.
    Per action id [A]: is_main, action_claim (the role a main action claims, -1 none),
    action_block_role (the role a block claims, -1 none), kind_onehot [A, 7]; and the
    ids pass_id and challenge_id.
    """
    n = rules.check_num_players(num_players)
    lay = rules.ActionLayout(n)
    gain = np.zeros(rules.NUM_MAIN_ACTIONS, np.int32)
    for kind, coins in rules.INCOME_GAIN.items():
        gain[kind] = coins
    keep_hand = np.full((rules.NUM_KEEPS, 2), -1, np.int32)
    for k, roles in enumerate(rules.KEEPS):
        keep_hand[k, : len(roles)] = roles
    kind = lay.main_kind
    action_claim = np.full(lay.num_actions, -1, np.int32)
    action_claim[kind >= 0] = rules.ACTION_CLAIM[kind[kind >= 0]]
    action_block_role = np.full(lay.num_actions, -1, np.int32)
    action_block_role[lay.block:lay.block + len(rules.BLOCK_ROLES)] = rules.BLOCK_ROLES
    kind_onehot = np.zeros((lay.num_actions, rules.NUM_MAIN_ACTIONS), np.float32)
    kind_onehot[kind >= 0, kind[kind >= 0]] = 1.0
    return SimpleNamespace(
        num_players=n, layout=lay, num_actions=lay.num_actions,
        main_kind=lay.main_kind, target_offset=lay.target_offset,
        cost=rules.ACTION_COST, claim=rules.ACTION_CLAIM, opens_window=rules.OPENS_WINDOW,
        blockers=rules.ACTION_BLOCKERS[:, list(rules.BLOCK_ROLES)], target_only=rules.BLOCK_BY_TARGET_ONLY,
        block_roles=np.asarray(rules.BLOCK_ROLES, np.int32), gain=gain,
        keep_counts=rules.KEEP_COUNTS, keep_size=rules.KEEP_SIZE, keep_hand=keep_hand,
        cards=np.repeat(np.arange(rules.NUM_ROLES, dtype=np.int32), rules.COPIES_PER_ROLE),
        # per action id
        is_main=kind >= 0, action_claim=action_claim, action_block_role=action_block_role, kind_onehot=kind_onehot,
        pass_id=lay.reaction + rules.PASS, challenge_id=lay.reaction + rules.CHALLENGE,
    )
