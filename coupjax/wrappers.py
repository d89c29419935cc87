"""The single-seat wrapper: one seat played from outside, the others inside ``step``.

A learner (`training.learner.Learner`) and a Gymnasium user (`coupjax.gymnasium`) both
see a multi-agent game as a single-agent one: they choose for one seat, and the other
seats' decisions are played by seated policies until that seat must decide again or
its game is over.  `SingleSeat.advance` is that loop, once, on `coupjax.rollout.play`
(a batch of one game: callers `vmap` it).

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


class Advanced(NamedTuple):
    """What `SingleSeat.advance` returns (one game)."""

    state: object  # the game, at a decision of ``seat`` or over (play-out)
    seat: jax.Array  # int32[]: the seat (a new game's under auto-reset)
    seats: jax.Array  # int32[n]: the policy of each seat
    over: jax.Array  # bool[]: the game at entry ended for the seat (auto-reset)
    last: object  # that game's last state, when ``over``
    steps: jax.Array  # int32[]: engine steps taken in live games
    record: object  # the caller's ``record`` carry


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
        self.env = env
        self.policies = list(policies)
        self.max_steps = int(max_steps)
        self.new_game = new_game

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
        reset = self.new_game is not None
        pending0 = jnp.array(action is not None) if pending is None else jnp.asarray(pending, bool)
        action = jnp.int32(0) if action is None else jnp.asarray(action, jnp.int32)
        t0 = jnp.asarray(steps, jnp.int32)
        aux0 = {"seat": jnp.asarray(seat, jnp.int32), "alive": jnp.array(True), "recorded": jnp.array(False),
                "last": state, "pending": pending0, "over": jnp.array(False), "record": record_init}

        def over_of(c):
            s, a = _first(c.state), c.aux
            return (s.terminated | (~a["alive"] if reset else False)) & ~a["pending"]

        def live(c):
            return ~over_of(c)[None]

        def cond(c):
            s, a = _first(c.state), c.aux
            at_seat = ~s.terminated & a["alive"] & (s.current_player == a["seat"])
            played_out = jnp.array(False) if reset else s.terminated  # auto-reset plays on in a new game
            return a["pending"] | (~at_seat & ~played_out & (c.it < self.max_steps))

        def keys(carry, t, lv):
            key, _ = carry
            key, k_new, k_pol, k_act, k_step = step_keys(key, t0 + t[0])
            return (key, k_new), (k_pol[None], k_act[None], k_step[None])

        def forced(c, sampled):
            return jnp.where(c.aux["pending"], action, sampled)

        def tally(a, c, act, logits, served):
            over = ~served[0]
            s = _first(c.state)
            a = {**a, "over": over, "last": jax.tree.map(lambda x, y: jnp.where(over & ~a["recorded"], x, y), s,
                                                         a["last"]),
                 "recorded": a["recorded"] | over}
            if record is not None:
                a["record"] = jax.lax.cond(served[0], lambda r: record(r, t0 + c.steps[0], s, act[0]), lambda r: r,
                                           a["record"])
            return a

        def after(c):
            a, s, over = c.aux, _first(c.state), c.aux["over"]
            alive = a["alive"] & ~last_event(s).eliminated[a["seat"]]  # the public event of the step
            a = {**a, "pending": jnp.array(False)}
            if not reset:
                return c._replace(aux=a)
            fresh, f_seat, f_seats = self.new_game(c.key[1])
            s = jax.tree.map(lambda x, y: jnp.where(over, x, y), fresh, s)
            a = {**a, "seat": jnp.where(over, f_seat, a["seat"]), "alive": jnp.where(over, True, alive)}
            return c._replace(state=_one(s), seats=jnp.where(over, f_seats, c.seats[0])[None], aux=a)

        k_new = step_keys(key, t0)[1]  # the shape of the carried new-game key
        seats = jnp.asarray(seats, jnp.int32)[None]
        c, _ = rollout.play(self.env, self.policies, _one(state), (key, k_new), seats=seats,
                            step_keys=keys, live=live, cond=cond, forced=forced, tally=tally, aux=aux0, reset=after)
        a = c.aux
        return Advanced(_first(c.state), a["seat"], c.seats[0], a["recorded"], a["last"], c.steps[0], a["record"])
