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

``search_target_rollout_policy: scripted_mix`` plays the rollouts with the scripted
bots' mix instead, as the registered search policies (``expected``) do, scored by the
search's heuristic value: a teacher that does not share the network's blind spots (the
network's own rollouts never challenge, so its search undervalues a challenge).
``search_target_margin`` > 0 keeps only the decisions whose best action's value leads
the next one's by that much: the teacher speaks where it is sure and leaves the close
calls to PPO.

``search_target_random_share`` of the searched decisions come instead from games of
uniformly random legal play stopped after up to ``RANDOM_DECISIONS`` decisions
(exploring starts): self-play rarely reaches the positions where a claim is impossible or
a caught bluffer claims again, random play reaches them often (random claims are
bluffs, and cards are revealed), and the target there is still the search's with the
current network's rollouts.

``search_target_impossible_share`` of those random-play decisions are drawn among the ones
that face a claim the seat's own view rules out (every copy of the role visible to it, or
a bluff caught and claimed again: `facing_impossible_claim`), from a pool of random
positions large enough to hold them (``search_target_impossible_pool`` per such decision
wanted; a decision not found is not searched).  The pool is every position along
``pool / (RANDOM_DECISIONS + 1)`` random games (`coupjax.testing.trajectory_positions`):
each is distributed as a position of a game stopped at a uniform decision, at a 41st of
the play (5.4 ms for 50 games against 47.1 ms for 1,024 games each stopped once, one
device).  2.9% of such positions face an impossible claim (476 of 16,384, four keys), so
the default 128 per decision wanted (2,050 positions for the recipe's 16) finds 56 on
average and fell short in none of 400 draws; 1,025 positions found 27.9 and fell short in
1.5% (the positions of one game come in clusters).  A pool of 16 per decision (5f6295f,
which counted finished games among them: 2,820 of 16,384) found 7.4 on average.
Searched among
all random-play decisions, they were too rare for a network to learn that such a claim is
a free card: with this at 0, every recipe network missed some of the scenario benchmark's
impossible action claims (training seed 21 all four, seed 25 ``impossible_assassination``
and ``impossible_steal``).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
from flax import struct

from coupjax import rules
from coupjax.game.tables import tables
from coupjax.observation import parse
from coupjax.search.policy import make_batched_decider
from coupjax.search.selfplay_search import SELFPLAY_CONFIG, value_cut
from coupjax.testing import position_player, trajectory_positions


@struct.dataclass
class SearchTargets:
    obs: jnp.ndarray  # float32 [M, obs]  the searched decisions' observations (the seat to move)
    mask: jnp.ndarray  # bool [M, A]
    target: jnp.ndarray  # float32 [M, A]  the search policy's probabilities
    valid: jnp.ndarray  # bool [M]  a searched decision (False: padding where fewer were eligible)
    inputs: object = None  # what the policy reads beside the observation (computed once: every minibatch reads it)


def pick_decisions(key, states, count: int, among=None):
    """(indices int32[count], valid bool[count]): ``count`` games drawn at random, without
    replacement, among those whose seat to move has more than one legal action (and where
    ``among`` bool[B] holds, if given)."""
    eligible = (states.legal_action_mask.sum(-1) > 1) & ~states.terminated
    if among is not None:
        eligible = eligible & among
    u = jnp.where(eligible, jax.random.uniform(key, eligible.shape), -1.0)
    _, idx = jax.lax.top_k(u, count)
    return idx, eligible[idx]


RANDOM_DECISIONS = 40  # random play stops after 0..40 decisions (as `coupjax.testing.sample_positions`)


def facing_impossible_claim(states, num_players: int):
    """bool[B]: the seat to move may challenge a claim its own view rules out: the
    claimed role's three copies are all visible to it, or the claimant was caught
    bluffing that role and has not renewed its hand since (the claim is the block's when
    it answers a block, else the action's).  The exact posterior gives these claims
    probability 0 too (a test checks it), at some twenty times the cost."""
    def one(obs):
        v = parse(obs, num_players)
        answering_block = v.phase == rules.PH_ANSWER_BLOCK
        claimed = jnp.where(answering_block, v.block_role, v.claim)
        role = jnp.clip(claimed, 0, rules.NUM_ROLES - 1)
        claimant = jnp.where(answering_block, v.blocker, v.actor)
        has_claim = claimed >= 0
        seen_all = v.visible[role] >= rules.COPIES_PER_ROLE
        caught = v.disproven[jnp.clip(claimant, 0, num_players - 1), role]
        return has_claim & (claimant > 0) & (seen_all | caught)

    may_challenge = states.legal_action_mask[:, tables(num_players).challenge_id] & ~states.terminated
    return may_challenge & jax.vmap(one)(states.observation)


def random_positions(env, key, count: int):
    """``count`` positions (a batched state) of games played with uniformly random legal
    moves for a random number of decisions in [0, RANDOM_DECISIONS]
    (`coupjax.testing.position_player`; a game that ended early stays ended:
    `pick_decisions` skips it)."""
    k_stop, k_play = jax.random.split(key)
    limit = jax.random.randint(k_stop, (count,), 0, RANDOM_DECISIONS + 1)
    return position_player(env)(k_play, limit, jnp.zeros(count, bool))


# Legal actions per searched decision, on average over the teacher's random-play positions
# (measured 3.6 with a quarter of them facing an impossible claim, 3.9 without): the
# search's work queue runs its lanes at every step, so lanes for this many rollouts keep
# most of them live, where a lane per (world, action slot) left three quarters idle.
MEAN_LEGAL_ACTIONS = 4


def teacher_lanes(cfg) -> int:
    """The teacher's lanes (`coupjax.search.config.SearchConfig.lanes`): its rollouts at
    `MEAN_LEGAL_ACTIONS` per decision.  Lanes change the speed only, never a value (the
    queue's keys are per rollout): 64 states, 4 worlds, 1 rollout each took 66 ms on
    3,328 lanes and 27 ms on 1,024, with the same targets."""
    return max(64, int(cfg.search_target_states) * SELFPLAY_CONFIG.num_worlds
               * int(cfg.search_target_rollouts_per_world) * MEAN_LEGAL_ACTIONS)


def teacher(env, cfg, net: Callable, value: Callable):
    """The batched search that makes the targets (``decide(keys [M], states [M]) ->
    (log-probabilities [M, A], results)``): the regularised search of `SELFPLAY_CONFIG`
    with ``net(key, state) -> masked logits`` as prior (and as rollout policy when
    ``search_target_rollout_policy`` is ``network``, its rollouts then cut by ``value(obs)``),
    at the config's temperature, prior mix and budget.  One construction for training and
    for `evals.report.decision_benchmark`'s scoring of the teacher."""
    scripted = cfg.search_target_rollout_policy != "network"
    config = dataclasses.replace(
        SELFPLAY_CONFIG, rollout_policy=cfg.search_target_rollout_policy if scripted else net, prior_policy=net,
        tau=cfg.search_target_tau, prior_uniform=cfg.search_target_prior_uniform,
        max_rollout_steps=cfg.search_target_rollout_steps,
        rollouts_per_world=int(cfg.search_target_rollouts_per_world),
        cut_value=None if scripted else value_cut(env, value), lanes=teacher_lanes(cfg))
    return make_batched_decider(env, "regularized", config)


def make_search_targets(env, cfg, policy_logits: Callable, value_apply: Callable,
                        policy_inputs: Callable | None = None):
    """``targets(params, key, states [B]) -> SearchTargets`` for a `SelfPlayConfig`
    ``cfg``; ``policy_logits(policy params, obs[, inputs])`` and ``value_apply(value
    params, obs) -> f32[...]`` are the run's networks, ``policy_inputs(obs)`` what the
    policy reads beside the observation (or None).  Jittable; the params may be traced."""
    count = int(cfg.search_target_states)
    from_random = int(round(count * cfg.search_target_random_share))
    from_impossible = int(round(from_random * cfg.search_target_impossible_share))

    def targets(params, key, states) -> SearchTargets:
        k_pick, k_search, k_random, k_pick_random = jax.random.split(key, 4)
        idx, valid = pick_decisions(k_pick, states, count - from_random)
        picked = jax.tree.map(lambda x: x[idx], states)
        if from_random:  # every position along random games (`trajectory_positions`), at least 2x those drawn
            pool_size = max(2 * from_random, cfg.search_target_impossible_pool * from_impossible)
            pool = trajectory_positions(env, k_random, -(-pool_size // (RANDOM_DECISIONS + 1)), RANDOM_DECISIONS)
            if from_impossible:
                k_pick_random, k_pick_impossible = jax.random.split(k_pick_random)
                impossible = facing_impossible_claim(pool, env.num_players)
                idx_i, valid_i = pick_decisions(k_pick_impossible, pool, from_impossible, impossible)
                idx_o, valid_o = pick_decisions(k_pick_random, pool, from_random - from_impossible, ~impossible)
                idx_r, valid_r = jnp.concatenate([idx_i, idx_o]), jnp.concatenate([valid_i, valid_o])
            else:
                idx_r, valid_r = pick_decisions(k_pick_random, pool, from_random)
            picked = jax.tree.map(lambda a, b: jnp.concatenate([a, b[idx_r]]), picked, pool)
            valid = jnp.concatenate([valid, valid_r])

        def net(k, s):
            return jnp.where(s.legal_action_mask, policy_logits(params["policy"], s.observation), -jnp.inf)

        decide = teacher(env, cfg, net, lambda obs: value_apply(params["value"], obs))
        logits, res = decide(jax.random.split(k_search, count), picked)
        target = jax.lax.stop_gradient(jnp.exp(logits))
        if cfg.search_target_margin > 0:  # only where the search is sure: its best action leads the next
            top2 = jax.lax.top_k(jnp.where(res.valid, res.q, -jnp.inf), 2)[0]
            valid = valid & (top2[:, 0] - top2[:, 1] >= cfg.search_target_margin)
        inputs = None if policy_inputs is None else policy_inputs(picked.observation)
        return SearchTargets(obs=picked.observation, mask=picked.legal_action_mask,
                             target=jnp.where(picked.legal_action_mask, target, 0.0), valid=valid, inputs=inputs)

    return targets


def cross_entropy(logp_all, t: SearchTargets):
    """Mean over the valid searched decisions of ``-sum_a target(a) log pi(a)`` and the
    share where the network's most likely action is the target's."""
    w = t.valid.astype(jnp.float32)
    xent = -(t.target * jnp.where(t.mask, logp_all, 0.0)).sum(-1)
    agree = (jnp.argmax(logp_all, -1) == jnp.argmax(t.target, -1)).astype(jnp.float32)
    denom = jnp.maximum(w.sum(), 1.0)
    return (xent * w).sum() / denom, (agree * w).sum() / denom
