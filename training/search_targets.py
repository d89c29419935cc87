"""Search-improved policy targets for self-play: expert iteration with the sampled-world
search as teacher (Ataraxos's and ReBeL's training half).

Why: PPO learns a decision only from the rewards of the moves it samples there, and the
decisions a sound player must not miss are rare in self-play (a claim that every visible
copy of its role makes impossible, a bluffer caught and claiming again): a policy that
stopped challenging early never sees what a challenge wins.  The search plays each legal
action out in worlds sampled from the seat's exact posterior, so it sees it at once.

Each update, ``search_target_states`` of the games' current decisions (those with more
than one legal action, drawn at random) are searched by `coupjax.search` with the
current network in every role `coupjax.search.selfplay_search` gives an export at test
time: the rollout policy of every seat (sampled at temperature 1), the prior of the
regularised mode (mixed with the uniform policy over the legal actions,
``search_target_prior_uniform``, so the search can move mass the network has dropped),
and the value head scoring rollouts cut after ``search_target_rollout_steps``
decisions.  The target is the regularised search policy ``pi ∝ prior exp(q / tau)``;
the loss is the cross-entropy from it to the network's policy on those decisions.
Everything reads the searching seat's observation only (the worlds are sampled from it),
so nothing hidden enters the target.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
from flax import struct

from coupjax.search.policy import make_batched_decider
from coupjax.search.selfplay_search import SELFPLAY_CONFIG, value_cut


@struct.dataclass
class SearchTargets:
    obs: jnp.ndarray  # float32 [M, obs]  the searched decisions' observations (the seat to move)
    mask: jnp.ndarray  # bool [M, A]
    target: jnp.ndarray  # float32 [M, A]  the search policy's probabilities
    valid: jnp.ndarray  # bool [M]  a searched decision (False: padding where fewer were eligible)


def pick_decisions(key, states, count: int):
    """(indices int32[count], valid bool[count]): ``count`` games drawn at random, without
    replacement, among those whose seat to move has more than one legal action."""
    eligible = (states.legal_action_mask.sum(-1) > 1) & ~states.terminated
    u = jnp.where(eligible, jax.random.uniform(key, eligible.shape), -1.0)
    _, idx = jax.lax.top_k(u, count)
    return idx, eligible[idx]


def make_search_targets(env, cfg, policy_logits: Callable, value_apply: Callable):
    """``targets(params, key, states [B]) -> SearchTargets`` for a `SelfPlayConfig`
    ``cfg``; ``policy_logits(policy params, obs)`` and ``value_apply(value params, obs)
    -> f32[...]`` are the run's networks.  Jittable; the params may be traced."""
    count = int(cfg.search_target_states)

    def targets(params, key, states) -> SearchTargets:
        k_pick, k_search = jax.random.split(key)
        idx, valid = pick_decisions(k_pick, states, count)
        picked = jax.tree.map(lambda x: x[idx], states)

        def net(k, s):
            return jnp.where(s.legal_action_mask, policy_logits(params["policy"], s.observation), -jnp.inf)

        config = dataclasses.replace(
            SELFPLAY_CONFIG, rollout_policy=net, prior_policy=net, tau=cfg.search_target_tau,
            prior_uniform=cfg.search_target_prior_uniform, max_rollout_steps=cfg.search_target_rollout_steps,
            cut_value=value_cut(env, lambda obs: value_apply(params["value"], obs)))
        decide = make_batched_decider(env, "regularized", config)
        logits, _ = decide(jax.random.split(k_search, count), picked)
        target = jax.lax.stop_gradient(jnp.exp(logits))
        return SearchTargets(obs=picked.observation, mask=picked.legal_action_mask,
                             target=jnp.where(picked.legal_action_mask, target, 0.0), valid=valid)

    return targets


def cross_entropy(logp_all, t: SearchTargets):
    """Mean over the valid searched decisions of ``-sum_a target(a) log pi(a)`` and the
    share where the network's most likely action is the target's."""
    w = t.valid.astype(jnp.float32)
    xent = -(t.target * jnp.where(t.mask, logp_all, 0.0)).sum(-1)
    agree = (jnp.argmax(logp_all, -1) == jnp.argmax(t.target, -1)).astype(jnp.float32)
    denom = jnp.maximum(w.sum(), 1.0)
    return (xent * w).sum() / denom, (agree * w).sum() / denom
