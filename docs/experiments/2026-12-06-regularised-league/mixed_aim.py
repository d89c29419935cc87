"""Diagnostic of docs/experiments/2026-12-06-regularised-league.md: the greedy export at
$AIM_EXPORT with its aim mixed at play time, as ``module:function`` policy specs.

``mixed_aim:greedy`` is the export played greedily (its shipped ``temperature: 0``);
``mixed_aim:uniform`` takes the same greedy decision, but when that decision is a targeted
main action (coup, assassinate, steal) the target is drawn uniformly among the legal targets
of that action: the same choice of what to do, with an aim no best response can steer."""
import os

import jax.numpy as jnp

from coupjax.game.tables import tables
from coupjax.inference import NEVER_LOGIT, load_policy


def _make(env, mix_aim: bool):
    pol = load_policy(os.environ["AIM_EXPORT"], temperature=1.0, num_players=env.num_players)
    T = tables(env.num_players)
    kind, offset = jnp.asarray(T.main_kind), jnp.asarray(T.target_offset)
    ids = jnp.arange(env.num_actions)

    def policy(key, state):
        legal = state.legal_action_mask
        best = jnp.argmax(jnp.where(legal, pol(key, state), -jnp.inf))
        targeted = mix_aim & (kind[best] >= 0) & (offset[best] >= 0)
        chosen = jnp.where(targeted, legal & (kind == kind[best]) & (offset >= 0), ids == best)
        return jnp.where(legal, jnp.where(chosen, 0.0, NEVER_LOGIT), -jnp.inf)
    return policy


def greedy(env): return _make(env, False)
def uniform(env): return _make(env, True)
