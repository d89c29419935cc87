"""The policy interface and what every policy shares.

A policy acts for ``state.current_player`` and returns float32[num_actions] logits:
``-inf`` exactly on the illegal actions, finite on every legal one (a legal action a
policy never takes gets ``log(1e-30)`` ~ -69, which `jax.random.categorical` never
samples: its Gumbel noise spans less than 22 nats).  Policies are jit/vmap-able and
read only ``state.observation`` and ``state.legal_action_mask`` -- what the acting
seat can see (`coupjax.testing.check_policy` checks both).
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from coupjax.game.tables import tables
from coupjax.observation import parse

Policy = Callable[[jax.Array, object], jax.Array]

NEVER = 1e-30  # probability floor for legal actions a policy never takes (log ~ -69)
NEVER_LOGIT = float(np.log(NEVER))


def masked_logits(probs_or_scores, mask) -> jax.Array:
    """Probabilities (>= 0, any scale) -> log, floored at log(1e-30) on legal actions, -inf on illegal ones."""
    p = jnp.asarray(probs_or_scores, jnp.float32)
    return jnp.where(mask, jnp.log(jnp.maximum(p, NEVER)), -jnp.inf).astype(jnp.float32)


def sample_action(key, logits) -> jax.Array:
    """One action id (int32) sampled from ``logits``."""
    return jax.random.categorical(key, logits).astype(jnp.int32)


def uniform_over(sel) -> jax.Array:
    """float32: uniform probabilities over the True entries of ``sel`` (all 0 if none)."""
    sel = sel.astype(jnp.float32)
    return sel / jnp.maximum(sel.sum(), 1.0)


def policy_entropy(logits):
    """Entropy in nats of the distribution ``softmax(logits)`` (-inf entries excluded)."""
    logp = jax.nn.log_softmax(logits)
    p = jnp.exp(logp)
    return -jnp.sum(jnp.where(p > 0, p * logp, 0.0))


def bluff_actions(obs, mask, num_players: int) -> jax.Array:
    """bool[A]: legal main actions claiming a role absent from the observer's own hand."""
    T = tables(num_players)
    own = parse(obs, num_players).own_counts
    claim = jnp.asarray(T.action_claim)
    return mask & (claim >= 0) & (own[jnp.clip(claim, 0)] == 0)
