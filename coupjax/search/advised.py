"""``advised:BASE[:all][:search]``: the advised policy with the page's search on.

The page searches by default (`coupjax.search.advise`, mode ``expected`` at
`coupjax.search.config.default_config`'s budget) and its one recommendation
(`coupjax.advice.recommend.decide`) follows the search unless a public fact settles the
choice.  ``advised:BASE`` (`coupjax.policies.advised`) plays that recommendation without
search; with ``:search`` it plays the page's default, the search's values handed in by
`make_search_values`, so the two settings can be judged by the games they win (issue 41).
The registry's ``advised`` entry names `make_advised_spec` here: the search sits above
the policies' layer.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from coupjax.policies.advised import make_advised, parse_arg
from coupjax.search.config import SearchConfig, default_config
from coupjax.search.policy import make_batched_decider, pooled_under_vmap
from coupjax.search.sampled_worlds import raw_key

PAGE_MODE = "expected"  # coupjax.tracker.seat_report.advice's default, which the page uses


def make_search_values(env, config: SearchConfig | None = None):
    """``(key, state) -> (q f32[A], se f32[A], searched bool[A])``: the search's value and
    standard error of each legal action it searched, at ``config`` (default the page's
    budget).  Under `jax.vmap` one pooled search serves the batch, as the search policies'."""
    config = default_config(PAGE_MODE) if config is None else config
    decide = make_batched_decider(env, PAGE_MODE, config)
    num_actions = env.num_actions

    def dense(res):
        rows = jnp.arange(res.q.shape[0])[:, None]
        q = jnp.zeros((res.q.shape[0], num_actions), jnp.float32).at[rows, res.action_ids].add(
            jnp.where(res.valid, res.q, 0.0))
        se = jnp.zeros_like(q).at[rows, res.action_ids].add(jnp.where(res.valid, res.se, 0.0))
        ok = jnp.zeros(q.shape, bool).at[rows, res.action_ids].max(res.valid)
        return q, se, ok

    def search_key(key):  # the page's: `coupjax.search.action_values.advice_function` splits its key so
        return jax.random.split(raw_key(key))[0]

    def batched(keys, states):
        _, res = decide(jax.vmap(search_key)(keys), states)
        return dense(res)

    values = pooled_under_vmap(batched)
    return values


def make_advised_spec(env, base: str = "honest", search: SearchConfig | None = None, **kwargs):
    """The registry's ``advised``: `coupjax.policies.advised.make_advised`, with the page's
    search (at ``search``, default the page's budget) where ``base`` ends in ``:search``."""
    with_search = parse_arg(base)[2]
    return make_advised(env, base, search_values=make_search_values(env, search) if with_search else None, **kwargs)
