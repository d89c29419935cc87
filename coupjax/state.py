"""State and Event pytrees (flax.struct dataclasses).

Shapes are given for ``n`` players and ``A = 32 + 3n`` actions.  Card values are role
ids 0..4 (`coupjax.rules.ROLES`) and -1 for an empty slot; seats are absolute ints and
-1 for "none".  Only the Pgx fields are public; everything else is ``_``-prefixed and is
read outside the engine only through `coupjax.game.deal` and `coupjax.events`.
"""
from __future__ import annotations

import jax.numpy as jnp
from flax import struct

MAX_REVEALS = 4  # a forfeit (2 cards) and then one pending loss, and one spare slot


@struct.dataclass
class Event:
    """What one `step` did. Fixed shape; `coupjax.events` converts it to a dict.

    Private fields (never in `public_event`): ``action`` when ``phase`` is lose or
    exchange (which hand index / which cards were kept), ``redraw_role``,
    ``exchange_drawn`` and ``reveal_index``.
    """

    step: jnp.ndarray  # int32 []  index of this step in the match (0-based); -1: no step yet
    turn: jnp.ndarray  # int32 []  turn number when the decision was made
    seat: jnp.ndarray  # int32 []  the seat that decided
    phase: jnp.ndarray  # int32 []  phase of the decision (rules.PHASES)
    action: jnp.ndarray  # int32 []  action id as sent (relative to `seat`)
    forfeit: jnp.ndarray  # bool  []  the action was outside the legal set
    actor: jnp.ndarray  # int32 []  the turn's actor
    main_action: jnp.ndarray  # int32 []  the turn's main action kind (rules.MAIN_ACTIONS) or -1
    target: jnp.ndarray  # int32 []  the main action's target or -1
    claim_role: jnp.ndarray  # int32 []  role claimed by this decision (action or block) or -1
    challenged_seat: jnp.ndarray  # int32 []  seat whose claim was challenged by this decision, or -1
    challenged_role: jnp.ndarray  # int32 []  the role that was challenged, or -1
    bluff_caught: jnp.ndarray  # bool  []  the challenged seat did not hold the role
    redraw_role: jnp.ndarray  # int32 []  PRIVATE: replacement card drawn after a proven claim
    exchange_drawn: jnp.ndarray  # int32 [2] PRIVATE: the two cards drawn by an exchange
    reveal_seat: jnp.ndarray  # int32 [MAX_REVEALS] seats that revealed a card, in order
    reveal_role: jnp.ndarray  # int32 [MAX_REVEALS] the revealed roles (public)
    reveal_index: jnp.ndarray  # int32 [MAX_REVEALS] PRIVATE: hand index each card had
    eliminated: jnp.ndarray  # bool  [n] seats eliminated by this step
    resolved: jnp.ndarray  # bool  []  the main action took effect in this step (False if its target was already out)
    turn_ended: jnp.ndarray  # bool  []  the turn ended normally in this step (False when the match ended mid-turn)
    game_over: jnp.ndarray  # bool  []  the match ended in this step


@struct.dataclass
class State:
    """One match.  Public fields follow Pgx v2; see `coupjax.env.Env`."""

    current_player: jnp.ndarray  # int32 []   seat to decide (a valid seat after the end too)
    observation: jnp.ndarray  # float32 [obs]  `current_player`'s view (engine.observation_layout)
    rewards: jnp.ndarray  # float32 [n]  zero until the end; +1 winner, -1/(n-1) others
    terminated: jnp.ndarray  # bool []
    truncated: jnp.ndarray  # bool []  always False: the cap has a result
    legal_action_mask: jnp.ndarray  # bool [A]  all True once terminated
    _step_count: jnp.ndarray  # int32 []  decisions taken so far
    _turn: jnp.ndarray  # int32 []  turns completed
    _phase: jnp.ndarray  # int32 []  rules.PHASES
    _hands: jnp.ndarray  # int32 [n, 2]  hidden cards, compacted left, -1 empty
    _revealed: jnp.ndarray  # int32 [n, 2]  revealed cards in reveal order, -1 empty
    _coins: jnp.ndarray  # int32 [n]
    _deck: jnp.ndarray  # int32 [15]  storage; next card at index _deck_size - 1
    _deck_size: jnp.ndarray  # int32 []
    _shuffled: jnp.ndarray  # bool []  a reshuffle happened: draws pick a uniform card
    _drawn: jnp.ndarray  # int32 [2]  the exchanging actor's drawn cards, -1 otherwise
    _actor: jnp.ndarray  # int32 []  the turn's actor
    _action: jnp.ndarray  # int32 []  the turn's main action kind, -1 before it is declared
    _target: jnp.ndarray  # int32 []  -1 if none
    _blocker: jnp.ndarray  # int32 []  -1 if none
    _block_role: jnp.ndarray  # int32 []  -1 if none
    _after_loss: jnp.ndarray  # int32 []  in the lose phase: 1 the action resolves next, 0 the turn ends
    _elim_order: jnp.ndarray  # int32 [n]  order of elimination (0 first), -1 alive
    _num_elim: jnp.ndarray  # int32 []
    # Public record (what a belief needs).  Claim counts restart when a hand is renewed.
    _claims: jnp.ndarray  # int32 [n, 5]  action claims per role since the seat's hand was renewed
    _blocks: jnp.ndarray  # int32 [n, 5]  block claims per role since the hand was renewed
    _challenges_won: jnp.ndarray  # int32 [n]  challenges won (as challenger or as challenged)
    _challenges_lost: jnp.ndarray  # int32 [n]
    _renewals: jnp.ndarray  # int32 [n]  hand renewals (a redraw after a proven claim, or an exchange)
    # A caught bluff (action or block) proves the claimant held no card of the role; the
    # fact holds until its hand is renewed (losing a card keeps it).
    _disproven: jnp.ndarray  # bool [n, 5]  roles proven absent from the seat's hand since its last renewal
    _event: Event  # the latest step's event
