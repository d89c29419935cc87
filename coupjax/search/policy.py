"""The search as policies: the three decision rules and the registered factories.

policies affordable inside `policies.make_table_runner`, whose vmapped
`lax.while_loop` calls a policy on every game at every step.

Decisions (registered policies; `search_logits`)
------------------------------------------------
* ``thompson``: logits = log(share of the K sampled worlds in which the action is best;
  ties split evenly), so sampling the logits is the Thompson draw (a world from the
  posterior, then its best action).  "Best in world k" is judged on the world's values
  with the rollout noise shrunk out (`_denoised_world_values`, ``denoise_worlds``; on by
  default), not on the raw ``q_world``: with a few rollouts per world the raw argmax is
  mostly noise wherever the worlds do not really differ, and a Thompson draw should
  follow the posterior over worlds, not over rollout luck.  A legal action best in no
  sampled world gets the floor ``log(thompson_floor)`` (1e-6, about -13.8): finite, as
  the policy interface requires, and sampled with probability at most 1e-6 each.
* ``expected``: the action with the highest ``q`` (ties: the lowest action id) gets 0,
  every other legal action ``log(1e-30)`` (about -69: never sampled), illegal -inf.
* ``regularized``: ``pi(a) ∝ pi_prior(a) * exp(q[a] / tau)``, the maximiser of
  ``E_pi[q] - tau * KL(pi || pi_prior)`` -- Ataraxos's KL-regularized policy
  improvement, which keeps the search from over-fitting to the rollout policy's
  idiosyncrasies.  ``pi_prior`` is the rollout policy unless ``prior_policy`` names
  another (Ataraxos anchors to its trusted policy network), optionally mixed with the
  uniform policy over the legal actions (``prior_uniform``).  Default ``tau = 0.02``:
  Ataraxos's Stratego search weights the reverse KL to its policy network by 0.02
  (Table S12; its other games state an "update step size" 1/tau of 5-30).  With a weak
  prior (``random``) a larger tau plays closer to random; with a trained checkpoint as
  prior a larger tau is the point.  Logits are the normalised log of that ``pi``.

A decision that was not searched (one legal action, or terminated) gets the same
formulas with ``q = 0`` everywhere: the single legal action, or ``pi_prior``.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from coupjax.policies.common import Policy, masked_logits
from coupjax.search.config import DEFAULT_CONFIG, MODES, SearchConfig, default_config
from coupjax.search.queue import make_searcher
from coupjax.search.sampled_worlds import raw_key, rollout_policy


def _full(ids, valid, x, A, fill=0.0):
    """Scatter per-slot values ``x`` [M] to action ids [A] (unsearched ids get ``fill``)."""
    return jnp.full(A, fill, jnp.float32).at[jnp.where(valid, ids, A)].set(x, mode="drop")


def search_logits(mode: str, res_b, mask, prior_logits=None, config: SearchConfig = DEFAULT_CONFIG):
    """float32[A] logits of one decision from its `SearchResult` row (``res_b``: the
    result's fields indexed at b; see the module doc for the three modes)."""
    A = mask.shape[-1]
    ids, valid = res_b.action_ids, res_b.valid
    searched = valid.any()
    if mode == "thompson":
        share = _full(ids, valid, res_b.best_share, A)
        share = jnp.where(searched, share, mask / jnp.maximum(mask.sum(), 1))
        return jnp.where(mask, jnp.log(jnp.maximum(share, config.thompson_floor)), -jnp.inf).astype(jnp.float32)
    if mode == "expected":
        q = jnp.where(valid, res_b.q, -jnp.inf)
        best = jnp.where(searched, ids[jnp.argmax(q)], jnp.argmax(mask))
        return masked_logits(jnp.arange(A) == best, mask)
    if mode == "regularized":
        prior = jax.nn.log_softmax(jnp.where(mask, prior_logits, -jnp.inf))
        if config.prior_uniform > 0:
            u = config.prior_uniform
            prior = jnp.log((1.0 - u) * jnp.exp(prior) + u * mask / jnp.maximum(mask.sum(), 1))
        q = _full(ids, valid, res_b.q, A)
        z = jnp.where(mask, prior + q / config.tau, -jnp.inf)
        return jax.nn.log_softmax(z).astype(jnp.float32)
    raise ValueError(f"mode must be one of {MODES}, got {mode!r}")


def make_batched_decider(env, mode: str | None = None, config: SearchConfig = DEFAULT_CONFIG):
    """``decide(keys [B], states [B]) -> (logits f32[B, A], SearchResult)`` for ``mode``;
    with ``mode=None`` the logits are a dict over all `MODES` (one search serves all:
    XLA drops what a caller does not use).  Jittable."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    search = make_searcher(env, config)
    prior_policy = rollout_policy(env, config.rollout_policy if config.prior_policy is None else config.prior_policy)

    def decide(keys, states):
        keys = raw_key(keys)
        res = search(keys, states)
        k_prior = jax.vmap(lambda k: jax.random.split(k, 3)[2])(keys)
        prior = jax.vmap(prior_policy)(k_prior, states)
        fields = res._asdict()
        per = {k: fields[k] for k in _Row._fields}
        logits = {m: jax.vmap(lambda d, mk, p: search_logits(m, _Row(**d), mk, p, config))(
            per, states.legal_action_mask, prior) for m in (MODES if mode is None else (mode,))}
        return (logits if mode is None else logits[mode]), res

    return decide


class _Row(NamedTuple):
    action_ids: jax.Array
    valid: jax.Array
    q: jax.Array
    best_share: jax.Array


def pooled_under_vmap(batched):
    """``f(key, state)`` from ``batched(raw_keys [B], states [B]) -> outputs [B]``: called
    on one state it runs a batch of one; under `jax.vmap` it runs the whole batch in one
    call (`jax.custom_batching.custom_vmap`), so a search pools its work queue.

    The primal goes through `jax.jit` so that its traced body closes over no array
    constants: custom_vmap hands a primal's constants to the primitive as operands, and
    a vmapped `lax.switch` (policies.make_table_runner) batches every operand, which
    custom_vmap rejects."""

    @jax.jit
    def one(key, state):
        out = batched(raw_key(key)[None], jax.tree.map(lambda x: x[None], state))
        return jax.tree.map(lambda x: x[0], out)

    @jax.custom_batching.custom_vmap
    def f(key, state):
        return one(key, state)

    @f.def_vmap
    def _rule(axis_size, in_batched, key, state):
        kb, sb = in_batched
        grow = lambda x, b: x if b else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x))  # noqa: E731
        out = batched(grow(raw_key(key), kb), jax.tree.map(grow, state, sb))
        return out, jax.tree.map(lambda _: True, out)

    return f


def make_search_policy(env, mode: str, config: SearchConfig = DEFAULT_CONFIG) -> Policy:
    """The policy ``policy(key, state) -> logits`` of ``mode``.  Called on one state it
    searches that state; under `jax.vmap` it searches the whole batch in one pooled
    work queue (`jax.custom_batching.custom_vmap`), with the same result per state."""
    decide = make_batched_decider(env, mode, config)
    policy = pooled_under_vmap(lambda keys, states: decide(keys, states)[0])

    def search_policy(key, state):
        return policy(key, state)

    search_policy.__name__ = f"search_{mode}"
    search_policy.config = config
    return search_policy



def _factory(mode):
    def make(env, **kwargs) -> Policy:
        return make_search_policy(env, mode, dataclasses.replace(default_config(mode), **kwargs))
    make.__name__ = make.__qualname__ = f"make_{mode}"
    make.__doc__ = f"The registered ``{mode}`` policy: `make_search_policy` over `default_config`, fields overridable."
    return make


make_thompson = _factory("thompson")
make_expected = _factory("expected")
make_regularized = _factory("regularized")
