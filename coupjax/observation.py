"""The one typed view of an observation: `parse(obs, num_players) -> ObsView`.

Every reader of the observation (beliefs, the exact posterior, policies, advice, the
learned networks' input scale, training rewards) goes through this parser; the layout
itself is `coupjax.game.views.observation_layout`.  Pure and jit/vmap-able
(``num_players`` static); seats are relative to the observer (row 0 is the observer,
row k the seat k places clockwise), absent things are -1.
"""
from __future__ import annotations

import math

import jax.numpy as jnp
from flax import struct

from coupjax import rules
from coupjax.game.views import SEAT_FEATURES, observation_layout

SEAT_SLICES = {}
_start = 0
for _name, _size in SEAT_FEATURES:
    SEAT_SLICES[_name] = (_start, _size)
    _start += _size


@struct.dataclass
class ObsView:
    """One observation, parsed (counts as int32, seats relative, -1 for none).

    Own cards: ``own_cards`` i32[2] role by hand index, ``own_counts`` i32[5],
    ``drawn`` i32[5] the observer's own exchange draw.  Per relative seat [n]:
    ``coins``, ``hidden``, ``alive`` (bool), ``challenges_won``, ``challenges_lost``,
    ``renewals``; per seat and role [n, 5]: ``revealed``, ``claims`` and ``blocks``
    (since the seat's hand was last renewed), ``disproven`` (bool: a caught bluff
    proved the seat holds no card of the role since its hand was last renewed).  The decision: ``phase``,
    ``main_action``, ``actor``, ``target``, ``claim``, ``blocker``, ``block_role``,
    ``turn``.  Derived: ``visible`` i32[5] copies the observer can see (every revealed
    card, its own hand and draw); ``unseen`` = max(0, 3 - visible); ``num_unseen`` =
    15 - visible total; ``exchanger`` the relative seat choosing an exchange (-1
    outside that phase); ``other_drawn`` 2 when another seat holds drawn cards, else 0;
    ``rest`` unseen cards outside the opponents' hands; ``deck_size``.
    """

    own_cards: jnp.ndarray
    own_counts: jnp.ndarray
    drawn: jnp.ndarray
    coins: jnp.ndarray
    hidden: jnp.ndarray
    alive: jnp.ndarray
    revealed: jnp.ndarray
    claims: jnp.ndarray
    blocks: jnp.ndarray
    challenges_won: jnp.ndarray
    challenges_lost: jnp.ndarray
    renewals: jnp.ndarray
    disproven: jnp.ndarray
    phase: jnp.ndarray
    main_action: jnp.ndarray
    actor: jnp.ndarray
    target: jnp.ndarray
    claim: jnp.ndarray
    blocker: jnp.ndarray
    block_role: jnp.ndarray
    turn: jnp.ndarray
    visible: jnp.ndarray
    unseen: jnp.ndarray
    num_unseen: jnp.ndarray
    exchanger: jnp.ndarray
    other_drawn: jnp.ndarray
    rest: jnp.ndarray
    deck_size: jnp.ndarray

    @property
    def num_players(self) -> int:
        return self.coins.shape[-1]

    def in_phase(self, phase: int):
        """bool[]: the decision is in ``phase`` (`rules.PHASES`)."""
        return self.phase == phase


def _index(one_hot):
    """Index of a one-hot block, -1 when it is all zero."""
    return jnp.where(one_hot.sum(axis=-1) > 0.5, jnp.argmax(one_hot, axis=-1), -1).astype(jnp.int32)


def parse(obs, num_players: int) -> ObsView:
    """Parse one observation (float32[obs]) of a ``num_players`` table."""
    n = num_players
    obs = jnp.asarray(obs, jnp.float32)
    lay = observation_layout(n)

    def part(name):
        start, shape = lay[name]
        size = int(math.prod(shape)) if shape else 1
        return obs[start:start + size].reshape(shape)

    ints = lambda x: jnp.round(x).astype(jnp.int32)  # noqa: E731
    seats = part("seats")
    per_seat = {}
    for name, (start, size) in SEAT_SLICES.items():
        block = ints(seats[:, start:start + size])
        per_seat[name] = block[:, 0] if size == 1 else block
    own_hand = part("own_hand")
    own_counts = ints(own_hand.sum(axis=0))
    drawn = ints(part("drawn"))
    visible = per_seat["revealed"].sum(axis=0) + own_counts + drawn
    num_unseen = jnp.int32(rules.DECK_SIZE) - visible.sum()
    phase = _index(part("phase"))
    actor = _index(part("actor"))
    exchanger = jnp.where(phase == rules.PH_EXCHANGE, actor, -1).astype(jnp.int32)
    other_drawn = jnp.where(exchanger > 0, 2, 0).astype(jnp.int32)
    rest = num_unseen - per_seat["hidden"][1:].sum()
    return ObsView(
        own_cards=_index(own_hand), own_counts=own_counts, drawn=drawn,
        coins=per_seat["coins"], hidden=per_seat["hidden"], alive=per_seat["alive"] > 0,
        revealed=per_seat["revealed"], claims=per_seat["claims"], blocks=per_seat["blocks"],
        challenges_won=per_seat["challenges_won"], challenges_lost=per_seat["challenges_lost"],
        renewals=per_seat["renewals"], disproven=per_seat["disproven"] > 0,
        phase=phase, main_action=_index(part("main_action")), actor=actor, target=_index(part("target")),
        claim=_index(part("claim")), blocker=_index(part("blocker")), block_role=_index(part("block_role")),
        turn=ints(part("turn"))[0],
        visible=visible, unseen=jnp.maximum(0, rules.COPIES_PER_ROLE - visible), num_unseen=num_unseen,
        exchanger=exchanger, other_drawn=other_drawn, rest=rest, deck_size=rest - other_drawn,
    )
