"""`Env`: the thin Pgx v2 wrapper over the pure game functions of `coupjax.game`.

``init(key)`` and ``step(state, action, key)`` are pure and jit/vmap-able.  Public
fields of the state follow Pgx v2 (``current_player``, ``observation``, ``rewards``,
``terminated``, ``truncated``, ``legal_action_mask``); everything else is
``_``-prefixed and read outside `coupjax.game` only through its readers.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from coupjax import rules
from coupjax.game import board, deal, stages, views
from coupjax.game.views import observation_layout
from coupjax.state import State


class Env:
    """Coup for ``num_players`` (2..6, static).  Pure functions; wrap them in jit/vmap."""

    def __init__(self, num_players: int = 4):
        n = rules.check_num_players(num_players)
        self.num_players = n
        self.layout = rules.ActionLayout(n)
        self.num_actions = self.layout.num_actions
        self.obs_layout = observation_layout(n)
        self.observation_shape = (self.obs_layout["size"][0],)
        self._deal_words = deal.deal_words(n)
        deal.template(n)  # built now, outside any trace

    @property
    def id(self) -> str:
        return "coup"

    @property
    def version(self) -> str:
        return "v1"

    def init(self, key: jax.Array) -> State:
        """A fresh match: a uniform deal onto a constant template (cheap: it runs every
        step under auto-reset).  The deck counts as shuffled (see `coupjax.game.deal.fresh`)."""
        return deal.deal(jax.random.bits(key, (self._deal_words,), jnp.uint32), self.num_players)

    def step(self, state: State, action: jax.Array, key: jax.Array) -> State:
        """Apply ``action`` (an id for `state.current_player`); a terminated state is
        returned unchanged (with zero rewards).  An action outside the legal set forfeits."""
        new = stages.apply_action(state, jnp.asarray(action, jnp.int32), jax.random.bits(key, (2,), jnp.uint32))
        done = state.terminated
        kept = state.replace(rewards=jnp.zeros_like(state.rewards))
        # Select first, then derive the mask and observation once (they are functions of
        # the rest of the state): half the cost of a step at large batch sizes.
        s = jax.tree.map(lambda a, b: jnp.where(done, a, b), kept, new)
        return views.with_views(s)

    def step_autoreset(self, state: State, action: jax.Array, key: jax.Array) -> State:
        """`step`, then a fresh match wherever the match ended (Pgx's ``auto_reset``).

        Where a match ended, the returned state is a new match whose ``terminated`` and
        ``rewards`` still report the one that ended (so a learner sees the result); the
        next call plays on in the new match.  The input's ``terminated`` flag is ignored.
        Fused for speed: one select against the constant template, views derived once.
        """
        u = jax.random.bits(key, (2 + self._deal_words,), jnp.uint32)
        new = stages.apply_action(state, jnp.asarray(action, jnp.int32), u[:2])
        fresh = deal.fresh(u[2:], self.num_players).replace(terminated=new.terminated, rewards=new.rewards)
        s = jax.tree.map(lambda a, b: jnp.where(new.terminated, a, b), fresh, new)
        return s.replace(legal_action_mask=views.legal_mask(s), observation=views.observe(s, s.current_player))

    def observe(self, state: State, seat) -> jax.Array:
        """The observation of any ``seat`` (float32[obs]); depends only on what it can see."""
        return views.observe(state, jnp.asarray(seat, jnp.int32))

    def placements(self, state: State) -> jax.Array:
        """Seats in finishing order (int32[n]); meaningful once terminated."""
        return board.placements(state)
