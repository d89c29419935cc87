"""Sampled hidden worlds as engine states, rollout policies, and the value of a cut rollout."""
from __future__ import annotations

import jax
import jax.numpy as jnp

from coupjax.beliefs import posterior
from coupjax.game import board
from coupjax.game.deal import replace_hidden
from coupjax.policies.common import Policy
from coupjax.policies.registry import make_policy
from coupjax.search.config import DEFAULT_CONFIG, MODES


def rollout_policy(env, policy) -> Policy:
    """A registered name or a callable -> ``policy(key, state) -> logits`` (a search mode
    cannot roll out: it searches itself)."""
    if isinstance(policy, str):
        if policy in MODES:
            raise ValueError(f"{policy!r} cannot be a rollout policy (it searches itself)")
        return make_policy(policy, env)
    if callable(policy):
        return policy
    raise TypeError(f"not a policy: {policy!r}")


def heuristic_value(state, seat, beta: float = DEFAULT_CONFIG.heuristic_beta) -> jax.Array:
    """A crude value for ``seat`` of an unfinished game: win chance ``p_i ∝ alive_i *
    exp(beta * (hidden_i + min(coins_i, 10) / 7))`` (a coup's 7 coins ~ one card), mapped
    to the reward scale ``p * (1 + 1/(n-1)) - 1/(n-1)``.  Reads public counts only."""
    hidden = board.hidden_counts(state).astype(jnp.float32)
    n = hidden.shape[-1]
    coins = jnp.minimum(board.coins(state), 10).astype(jnp.float32)
    score = jnp.where(hidden > 0, beta * (hidden + coins / 7.0), -jnp.inf)
    p = jax.nn.softmax(score, axis=-1)
    return p[seat] * (1.0 + 1.0 / (n - 1)) - 1.0 / (n - 1)


def raw_key(key):
    """A PRNG key as raw uint32 data (new-style typed keys are unwrapped)."""
    key = jnp.asarray(key) if not hasattr(key, "dtype") else key
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return key


def world_states(env, key, state, num_worlds: int, params: posterior.PosteriorParams = posterior.PosteriorParams(),
                 sampler=None):
    """``num_worlds`` engine states (a batched `State`) with every hidden card sampled
    from the posterior of ``state.current_player``'s observation: every opponent's hand,
    the deck, and another exchanging seat's drawn cards (the observer's own row and own
    draw come back as they are).  ``sampler``: another ``sampler(key, obs, n, K) ->
    posterior.Worlds`` from the observation alone (default: `posterior.sample_worlds`
    with ``params``).  Jittable."""
    seat = state.current_player
    if sampler is None:
        w = posterior.sample_worlds(key, state.observation, env.num_players, num_worlds, params)
    else:
        w = sampler(key, state.observation, env.num_players, num_worlds)
    hands = posterior.to_absolute(w.hands, seat)  # [K, n, 2]; the observer's row is its own hand
    return jax.vmap(lambda h, deck, drawn: replace_hidden(state, h, deck, drawn))(hands, w.deck, w.drawn)
