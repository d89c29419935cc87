"""``role_bluffer:ROLE[:RATE]``: an exploit probe that claims one role whenever it can.

The cheapest way to beat an agent that seldom challenges is to claim the role it never
questions: "claim Duke whenever it pays".  This bot plays ``honest`` (it takes its top
honest option with probability 0.8, blocks truthfully, challenges only impossible
claims), except that it claims ROLE without holding it at rate RATE (default 1.0) at
every chance:

* at a main action, a bluffed ROLE action (Duke: tax; Assassin: assassinate, aimed
  uniformly; Captain: steal; Ambassador: exchange) takes RATE of the probability;
* when it can block only by bluffing ROLE (Duke against foreign aid, Contessa against an
  assassination, Captain or Ambassador against a steal), the bluff-block takes RATE of
  what ``honest`` would pass.

`evals.exploit_probe` tunes ROLE and RATE against the agent under test (on a tuning
seed) and measures the strongest probe against it and against a baseline.
"""
from __future__ import annotations

import jax.numpy as jnp

from coupjax import rules
from coupjax.game.tables import tables
from coupjax.observation import parse
from coupjax.policies.common import Policy, masked_logits, uniform_over
from coupjax.policies.pools import SCRIPTED_PARAMS
from coupjax.policies.scripted import scripted_policy


def parse_arg(arg: str) -> tuple[int, float]:
    """``"ROLE"`` or ``"ROLE:RATE"`` -> (role index, rate in [0, 1]); ValueError otherwise."""
    role, _, rate = str(arg).partition(":")
    if role not in rules.ROLES:
        raise ValueError(f"role_bluffer:ROLE[:RATE] needs a role of {', '.join(rules.ROLES)}, got {role!r}")
    try:
        value = float(rate) if rate else 1.0
    except ValueError:
        raise ValueError(f"role_bluffer: RATE must be a number in [0, 1], got {rate!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"role_bluffer: RATE must be in [0, 1], got {value}")
    return rules.ROLES.index(role), value


def make_role_bluffer(env, arg: str = "duke") -> Policy:
    """The probe of the module doc for ``env``; ``arg`` is "ROLE" or "ROLE:RATE"."""
    role, rate = parse_arg(arg)
    n = env.num_players
    T = tables(n)
    honest = scripted_policy(env, **SCRIPTED_PARAMS["honest"])
    claims_role = jnp.asarray(T.is_main) & (jnp.asarray(T.action_claim) == role)
    blocks_as_role = jnp.asarray(T.action_block_role) == role
    block_role = jnp.asarray(T.action_block_role)

    def policy(key, state):
        mask = state.legal_action_mask
        v = parse(state.observation, n)
        p = jnp.exp(honest(key, state))
        lacks = v.own_counts[role] == 0
        bluffs = mask & claims_role & lacks
        main = (1.0 - rate) * p + rate * uniform_over(bluffs)
        true_block = (mask & (block_role >= 0) & (v.own_counts[jnp.clip(block_role, 0)] > 0)).any()
        fakes = mask & blocks_as_role & lacks & ~true_block
        moved = rate * p[T.pass_id]
        react = p.at[T.pass_id].add(-moved) + moved * uniform_over(fakes)
        p = jnp.where((v.phase == rules.PH_ACTION) & bluffs.any(), main, p)
        p = jnp.where(((v.phase == rules.PH_REACT) | (v.phase == rules.PH_ANSWER_BLOCK)) & fakes.any(), react, p)
        return masked_logits(p, mask)

    policy.__name__ = f"role_bluffer_{rules.ROLES[role]}"
    return policy
