"""The single-seat wrapper: one seat played from outside, the others inside ``step``.

A learner (`training.learner.Learner`) and a Gymnasium user (`coupjax.gymnasium`) both
see a multi-agent game as a single-agent one: they choose for one seat, and the other
seats' decisions are played by seated policies until that seat must decide again or
its game is over.  `SingleSeat.advance` is that loop, once: a `lax.while_loop` of
`coupjax.rollout.step` on a batch of one game (callers `vmap` it).

Two ways a game ends for the seat (Pgx-style wrappers, chosen at construction):

* auto-reset (``new_game`` given, the learner's): the game is over for the seat when it
  ends or the seat is eliminated (its later turns would never come); it is replaced
  at once by ``new_game(key) -> (state, seat, seats)`` and the loop goes on in the new
  game until the seat's first decision, in the same call;
* play-out (``new_game=None``, the Gymnasium adapter's): a seat knocked out watches
  the match to its end in that same call, so an episode is a whole match.

Randomness is the caller's: ``step_keys(key, t) -> (key, k_new, k_pol, k_act, k_step)``
for the game's decision ``t`` (the learner splits a carried key; the adapter folds
its step count into its deal and policy keys), so each keeps its own key scheme.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from coupjax import rollout
from coupjax.events import last_event
from coupjax.state import State


class Advanced(NamedTuple):
    """What `SingleSeat.advance` returns (one game)."""

    state: State  # the game, at a decision of ``seat`` or over (play-out)
    seat: jax.Array  # int32[]: the seat (a new game's under auto-reset)
    seats: jax.Array  # int32[n]: the policy of each seat
    over: jax.Array  # bool[]: the game at entry ended for the seat (auto-reset)
    last: State  # that game's last state, when ``over``
    steps: jax.Array  # int32[]: engine steps taken in live games
    record: object  # the caller's ``record`` carry


class Seat(NamedTuple):
    """The carry of `SingleSeat.advance`'s loop (one game)."""

    game: rollout.Tables  # the game, a batch of one
    key: jax.Array  # the caller's carried key (``step_keys``)
    seat: jax.Array  # int32[]: the outside seat (a new game's under auto-reset)
    alive: jax.Array  # bool[]: the seat has influence (auto-reset)
    pending: jax.Array  # bool[]: the outside action is still to be applied
    recorded: jax.Array  # bool[]: the game at entry ended for the seat
    last: State  # that game's last state, once ``recorded``


def _one(x):
    return jax.tree.map(lambda v: v[None], x)


def _first(x):
    return jax.tree.map(lambda v: v[0], x)


class SingleSeat:
    """One seat played from outside, the others by ``policies`` (module doc).

    ``policies``: each ``(key, state) -> logits``; ``seats`` (per game) says which plays
    each seat (the entry of the outside seat is computed and ignored).  ``max_steps``:
    engine steps per call at most (a safety bound; a match ends far sooner).
    """

    def __init__(self, env, policies, max_steps: int = rollout.MAX_STEPS, new_game: Callable | None = None):
        self.players = rollout.Players(env, tuple(policies))
        self.max_steps = int(max_steps)
        self.new_game = new_game

    def over(self, c: Seat):
        """The game is over for the seat (ended, or under auto-reset the seat is out), and
        no outside action waits."""
        out = ~c.alive if self.new_game is not None else jnp.array(False)
        return (_first(c.game.state).terminated | out) & ~c.pending

    def go_on(self, c: Seat):
        """An action waits, or the seat is not to move in a live game (and under play-out
        the match is not over)."""
        s = _first(c.game.state)
        at_seat = ~s.terminated & c.alive & (s.current_player == c.seat)
        played_out = s.terminated if self.new_game is None else jnp.array(False)  # auto-reset plays on in a new game
        return c.pending | (~at_seat & ~played_out & (c.game.it < self.max_steps))

    def advance(self, state, seat, seats, key, step_keys: Callable, action=None, steps=0,
                record: Callable | None = None, record_init=None, pending=None) -> Advanced:
        """Apply ``action`` for ``seat`` (None: none; the game must then be at a decision of
        ``seat``), then the other seats' decisions until ``seat`` must decide (module doc).

        ``steps``: the game's decision count so far (what ``step_keys`` and ``record``
        see as ``t``).  ``record(carry, t, state, action) -> carry``: what the caller keeps
        of each step (e.g. the adapter's action list), from ``record_init``.
        ``pending``: bool[], whether ``action`` is applied (default: ``action is not
        None``); a traced flag lets one compiled call (`vmap`-ed) start some games at a
        decision of another seat while it steps others.
        """
        t0 = jnp.asarray(steps, jnp.int32)
        pending = jnp.array(action is not None) if pending is None else jnp.asarray(pending, bool)
        action = jnp.int32(0) if action is None else jnp.asarray(action, jnp.int32)

        def body(carry):
            c, rec = carry
            key, k_new, k_pol, k_act, k_step = step_keys(c.key, t0 + c.game.steps[0])
            over, s = self.over(c), _first(c.game.state)
            game, moved = rollout.step(self.players, c.game, rollout.StepKeys(k_pol[None], k_act[None], k_step[None]),
                                       ~over[None], jnp.where(c.pending, action, -1)[None])
            if record is not None:
                rec = jax.lax.cond(moved.served[0], lambda r: record(r, t0 + c.game.steps[0], s, moved.action[0]),
                                   lambda r: r, rec)
            c = c._replace(game=game, key=key, pending=jnp.array(False), recorded=c.recorded | over,
                           last=jax.tree.map(lambda x, y: jnp.where(over & ~c.recorded, x, y), s, c.last))
            if self.new_game is None:
                return c, rec
            alive = c.alive & ~last_event(_first(game.state)).eliminated[c.seat]  # the public event of the step
            fresh, f_seat, f_seats = self.new_game(k_new)
            s_new = jax.tree.map(lambda x, y: jnp.where(over, x, y), fresh, _first(game.state))
            game = game._replace(state=_one(s_new), seats=jnp.where(over, f_seats, game.seats[0])[None])
            return c._replace(game=game, seat=jnp.where(over, f_seat, c.seat), alive=jnp.where(over, True, alive)), rec

        first = Seat(rollout.start(_one(state), jnp.asarray(seats, jnp.int32)[None]), key, jnp.asarray(seat, jnp.int32),
                     jnp.array(True), pending, jnp.array(False), state)
        c, rec = jax.lax.while_loop(lambda carry: self.go_on(carry[0]), body, (first, record_init))
        return Advanced(_first(c.game.state), c.seat, c.game.seats[0], c.recorded, c.last, c.game.steps[0], rec)
