"""The suite's policies: specs resolved once, and the advised scripted seats.

An *advised* seat (advice on) is a scripted bot whose challenge decisions follow the
challenge advisor (`coupjax.advice.challenge.advise_challenge`, fitted constants,
balanced style, the chosen belief; the constants are the page's, `coupjax.advice.recommend.advice_params`,
fitted for games won: one advisor in every table of the report, issue 41): where ``challenge`` is legal and the advisor
recommends it, the challenge takes the bot's mass except what the bot puts on blocks
(a block the bot would make stays, as a sound player blocks with the card it holds
rather than gamble on a challenge); where the advisor says pass, the bot's
distribution with the challenge mass removed (renormalised).  Everything else (main actions, blocks, reveals,
exchanges) is the bot's own, so seated beside the plain bot on the same tables the
difference is the advice alone (advice off).
"""
from __future__ import annotations

import jax.numpy as jnp

from coupjax.advice.challenge import AdvisorParams, advise_challenge
from coupjax.advice.recommend import advice_params
from coupjax.game.tables import tables
from coupjax.policies import make_policy
from coupjax.policies.common import masked_logits
from coupjax.policies.spec import resolve_policy


def make_advised(env, base: str, belief: str = "exact", params: AdvisorParams | None = None):
    """``base`` (a scripted bot name) with the advisor's challenge decisions (module doc)."""
    bot = make_policy(base, env)
    n = env.num_players
    T = tables(n)
    params = advice_params() if params is None else params
    is_block = jnp.asarray(T.action_block_role) >= 0

    def policy(key, state):
        logits = bot(key, state)
        mask = state.legal_action_mask
        can = mask[T.challenge_id]
        adv = advise_challenge(state.observation, n, belief, params)
        p = jnp.exp(logits - jnp.max(logits))
        p = jnp.where(mask, p, 0.0)
        no_chal = p.at[T.challenge_id].set(0.0)
        no_chal = jnp.where(no_chal.sum() > 0, no_chal, (mask & (jnp.arange(T.num_actions) != T.challenge_id)))
        # a recommended challenge takes the bot's mass except what it puts on blocks (a block
        # the bot makes stays: blocking with the card is safer than challenging)
        block_mass = jnp.where(is_block, p, 0.0)
        chal = block_mass.at[T.challenge_id].set(jnp.maximum(p.sum() - block_mass.sum(), 1e-6))
        probs = jnp.where(can, jnp.where(adv["challenge"], chal, no_chal), p)
        return masked_logits(probs, mask)

    return policy


def build_policies(env, cfg, labels=None) -> dict:
    """label -> policy for ``labels`` (default every label of the config) at ``env``'s size."""
    out = {}
    every = {**cfg.policies, **cfg.search_policies}
    for label in (labels if labels is not None else [*every, *cfg.advised]):
        if label in cfg.advised:
            a = cfg.advised[label]
            out[label] = make_advised(env, a["base"], a["belief"])
        else:
            out[label] = resolve_policy(every[label], env)
    return out


def fits_table(spec: str, num_players: int) -> bool:
    """Whether a spec can sit at a table of ``num_players`` (exports are trained for one
    size: a path, ``NAME:DIR`` or a registered policy's committed weights)."""
    from coupjax.policies.registry import export_of

    where = export_of(spec)
    if where is None:
        return True
    from coupjax.inference import read_export

    info, _ = read_export(where)
    return int(info["num_players"]) == num_players
