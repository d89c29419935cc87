"""``belief_ev``: the exact posterior, the challenge advisor and the one-step EV as a policy.

It challenges when the advisor (exact posterior, `play_params`) says so, blocks
truthfully, bluff-blocks an assassination of its last card when the actor seldom
challenges, plays the main action of highest one-step EV
(`coupjax.advice.action_ev.recommend_action`: coup / assassinate aimed at the most
threatening seat; a bluff only when it beats every honest action by
``bluff_margin``), reveals its least valuable card and keeps its best cards in an
exchange.
"""
from __future__ import annotations

import jax.numpy as jnp

from coupjax import rules
from coupjax.advice.action_ev import EVParams, challenge_probs, recommend_action
from coupjax.advice.challenge import AdvisorParams, advise_challenge
from coupjax.beliefs.posterior import exact_posterior
from coupjax.game.tables import tables
from coupjax.policies.common import Policy, masked_logits, uniform_over
from coupjax.policies.scripted import reveal_and_keep
from coupjax.observation import parse

# belief_ev's challenge rule: the fitted advisor with these value constants (see
# configs/advisor.yaml, section belief_ev): the F1-fitted advisor (alpha 1.0)
# challenges more eagerly than pays when playing.
PLAY_OVERRIDES = {"alpha": 0.35, "v_last": 2.0, "band": 0.02}


def play_params(params: AdvisorParams | None = None) -> AdvisorParams:
    """The advisor constants belief_ev challenges with: ``params`` (default the fitted
    `AdvisorParams`) with `PLAY_OVERRIDES`."""
    return (AdvisorParams() if params is None else params).replace(**PLAY_OVERRIDES)


def make_belief_ev(env, params: AdvisorParams | None = None, ev: EVParams = EVParams(),
                   style: str = "balanced") -> Policy:
    """belief_ev (module doc).  ``params`` default: `play_params()`; pass an
    `AdvisorParams` to challenge with other constants."""
    params = play_params() if params is None else params
    n = env.num_players
    T = tables(n)
    lay = T.layout
    is_main = jnp.asarray(T.is_main)
    block_role = jnp.asarray(T.action_block_role)

    def policy(key, state):
        del key
        mask = state.legal_action_mask
        obs = state.observation
        v = parse(obs, n)
        own = v.own_counts
        ids = jnp.arange(T.num_actions)

        # one exact posterior for both the action values and the challenge advice
        post = exact_posterior(obs, n, params.posterior_params())

        # ---- main action
        rec = recommend_action(obs, mask, n, params, ev, posterior=post)
        values = rec["ev"]
        top = jnp.where(is_main & mask, values >= values.max() - 1e-4, False)
        p_main = uniform_over(top)

        # ---- reactions and answers to a block
        adv = advise_challenge(obs, n, "exact", params, style, posterior=post)
        can_chal = mask[T.challenge_id]
        want_chal = can_chal & adv["challenge"]
        blocks = mask & (block_role >= 0)
        true_blocks = blocks & (own[jnp.clip(block_role, 0)] > 0)
        # last card, assassinated, no contessa: bluff-block unless the actor likely challenges
        ctx_t = (v.main_action == rules.ASSASSINATE) & (v.target == 0) & (v.hidden[0] == 1)
        c_actor = challenge_probs(v, n, ev)[jnp.clip(v.actor, 0)]
        contessa_gone = v.visible[rules.CONTESSA] >= rules.COPIES_PER_ROLE
        bluff_contessa = (ctx_t & ~true_blocks.any() & mask[lay.block + 1] & ~contessa_gone
                          & (c_actor < adv["p_truth"]) & ~adv["impossible"])
        bluff_block = (ids == lay.block + 1) & bluff_contessa
        chal_now = want_chal & ~(true_blocks.any() & ~adv["impossible"]) & ~bluff_contessa
        p_react = jnp.select(
            [chal_now, true_blocks.any(), bluff_contessa],
            [(ids == T.challenge_id).astype(jnp.float32), uniform_over(true_blocks),
             bluff_block.astype(jnp.float32)],
            (ids == T.pass_id).astype(jnp.float32))

        # ---- losing influence (the least valuable card) and exchanges (the best multiset)
        p_lose, p_keep = reveal_and_keep(T, v.own_cards, mask)

        phase = v.phase
        probs = jnp.select(
            [phase == rules.PH_ACTION, (phase == rules.PH_REACT) | (phase == rules.PH_ANSWER_BLOCK), phase == rules.PH_LOSE],
            [p_main, p_react, p_lose], p_keep)
        probs = jnp.where((probs * mask).sum() > 0, probs, mask.astype(jnp.float32))
        return masked_logits(probs, mask)

    return policy
