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
* ``:search`` after either (``advised:honest:search``): the page's default advice, the
  recommendation with the page's search at the page's budget (`coupjax.search.advised`,
  which the registry's ``advised`` entry names: the search sits above this layer and
  hands its values in as ``search_values``), so the page's default can be judged by the
  games it wins against BASE as the advice without search is.

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
SEARCH_STREAM = 0x5EA2C4  # folded into the policy's key for the search's draws


def parse_arg(arg: str) -> tuple[str, str, bool]:
    """``"BASE"``, ``"BASE:all"``, ``"BASE:search"`` or ``"BASE:all:search"`` -> (base spec,
    scope, whether the page's search is on)."""
    if not isinstance(arg, str) or not arg or arg in ("all", "search", "all:search"):
        raise ValueError(f"advised:BASE[:all][:search] needs a base policy spec, got {arg!r}")
    base, sep, tail = arg.rpartition(":")
    search = bool(sep) and tail == "search"
    if search:
        arg = base
    base, sep, tail = arg.rpartition(":")
    return ((base, "all") if sep and tail == "all" else (arg, "reactions")) + (search,)


def make_advised(env, base: str = "honest", params: AdvisorParams | None = None, style: str = "balanced",
                 search_values=None, **base_kwargs) -> Policy:
    """The advised policy (module doc) for ``env``; ``base`` is "BASE[:all][:search]";
    ``search_values``: ``(key, state) -> (q f32[A], se f32[A], searched bool[A])``, the
    search's values (`coupjax.search.advised.make_search_values`), required with ``:search``."""
    from coupjax.policies.spec import resolve_policy  # the resolver imports the registry, which names this module

    if style not in STYLES:
        raise ValueError(f"style must be one of {tuple(STYLES)}, got {style!r}")
    base_spec, scope, search = parse_arg(base)
    if search and search_values is None:
        raise ValueError("advised:BASE:search needs the search's values: make it with coupjax.search.advised "
                         "(the registry's advised entry)")
    base_policy = resolve_policy(base_spec, env, **base_kwargs)
    params = advice_params() if params is None else params
    n = env.num_players

    def policy(key, state):
        own = base_policy(key, state)
        mask = state.legal_action_mask
        if search_values is None:
            rec = decide(state.observation, mask, n, params, STYLES[style])
        else:  # the base's key stays its own: with and without search, BASE plays the same draws
            q, se, searched = search_values(jax.random.fold_in(key, SEARCH_STREAM), state)
            rec = decide(state.observation, mask, n, params, STYLES[style], q, se, searched)
        phase = parse(state.observation, n).phase
        covered = (phase == rules.PH_REACT) | (phase == rules.PH_ANSWER_BLOCK)
        if scope == "all":
            covered = covered | (phase == rules.PH_ACTION)
        use = covered & (rec["action"] >= 0)
        advised = masked_logits(jax.nn.one_hot(jnp.clip(rec["action"], 0), mask.shape[-1]), mask)
        return jnp.where(use, advised, own).astype(jnp.float32)

    return policy
