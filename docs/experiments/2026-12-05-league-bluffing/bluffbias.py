"""Diagnostic of docs/experiments/2026-12-05-league-bluffing.md: the greedy export at
$BLUFF_EXPORT made to bluff or to challenge more, by a bias added to the log-probabilities
of its bluffed claims (`coupjax.policies.common.bluff_actions`) or of its challenges before
the argmax, as ``module:function`` policy specs (``bluffbias:b0`` ... ``bluffbias:b4`` and
``bluffbias:c1`` ... ``bluffbias:c8``, the bias in nats)."""
import os
import jax.numpy as jnp
from coupjax.game.tables import tables
from coupjax.inference import load_policy, NEVER_LOGIT
from coupjax.policies.common import bluff_actions


def _make(env, bias, on="bluff"):
    pol = load_policy(os.environ["BLUFF_EXPORT"], temperature=1.0, num_players=env.num_players)
    n = env.num_players
    challenge = jnp.arange(env.num_actions) == tables(n).challenge_id

    def policy(key, state):
        lp = pol(key, state)
        b = bluff_actions(state.observation, state.legal_action_mask, n) if on == "bluff" else challenge
        v = jnp.where(b, lp + bias, lp)
        best = jnp.max(v, axis=-1, keepdims=True)
        return jnp.where(state.legal_action_mask, jnp.where(v >= best, 0.0, NEVER_LOGIT), -jnp.inf)
    return policy


def b0(env): return _make(env, 0.0)
def b1(env): return _make(env, 1.0)
def b2(env): return _make(env, 2.0)
def b4(env): return _make(env, 4.0)
def c1(env): return _make(env, 1.0, "challenge")
def c2(env): return _make(env, 2.0, "challenge")
def c4(env): return _make(env, 4.0, "challenge")
def c8(env): return _make(env, 8.0, "challenge")
