"""``advised:BASE``: a base policy whose challenges and blocks follow the advice.

The point is to judge the advice by the games won by a player who follows it: the
policy plays BASE's own actions, except at the decisions the advice covers, where it
plays exactly the one recommendation the page shows without search
(`coupjax.advice.recommend.decide`, the same function, the same advisor constants
`coupjax.advice.recommend.advice_params` unless ``params`` says otherwise):

* ``advised:BASE``: reactions to a claim or a foreign aid and answers to a block
  (challenge, block, pass);
* ``advised:BASE:all``: also the main action (the best one-step expected value).
  Losing a card and keeping cards in an exchange have no advice without search, so
  BASE plays them in both.

BASE is any policy spec (`coupjax.policies.spec`), e.g. ``advised:honest``.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from coupjax import rules
from coupjax.advice.challenge import STYLES, AdvisorParams
from coupjax.advice.recommend import advice_params, decide
from coupjax.policies.common import Policy, masked_logits
from coupjax.observation import parse

SCOPES = ("reactions", "all")


def parse_arg(arg: str) -> tuple[str, str]:
    """``"BASE"`` or ``"BASE:all"`` -> (base spec, scope)."""
    if not isinstance(arg, str) or not arg or arg == "all":
        raise ValueError(f"advised:BASE[:all] needs a base policy spec, got {arg!r}")
    base, sep, tail = arg.rpartition(":")
    return (base, "all") if sep and tail == "all" else (arg, "reactions")


def make_advised(env, base: str = "honest", params: AdvisorParams | None = None, style: str = "balanced",
                 **base_kwargs) -> Policy:
    """The advised policy (module doc) for ``env``; ``base`` is "BASE" or "BASE:all"."""
    from coupjax.policies.spec import resolve_policy  # the resolver imports the registry, which names this module

    if style not in STYLES:
        raise ValueError(f"style must be one of {tuple(STYLES)}, got {style!r}")
    base_spec, scope = parse_arg(base)
    base_policy = resolve_policy(base_spec, env, **base_kwargs)
    params = advice_params() if params is None else params
    n = env.num_players

    def policy(key, state):
        own = base_policy(key, state)
        mask = state.legal_action_mask
        rec = decide(state.observation, mask, n, params, STYLES[style])
        phase = parse(state.observation, n).phase
        covered = (phase == rules.PH_REACT) | (phase == rules.PH_ANSWER_BLOCK)
        if scope == "all":
            covered = covered | (phase == rules.PH_ACTION)
        use = covered & (rec["action"] >= 0)
        advised = masked_logits(jax.nn.one_hot(jnp.clip(rec["action"], 0), mask.shape[-1]), mask)
        return jnp.where(use, advised, own).astype(jnp.float32)

    return policy
