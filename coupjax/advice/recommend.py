"""One recommendation per decision: the advisor's call, the one-step values and the
search's values, reconciled into a single action with its reasons.

Before this module the page could show a bold "Recommended: pass" from the search
beside "Challenge call: challenge" from the threshold advisor.  A player can act on
one answer only, so every consumer (the tracker's advice, ``coupjax replay``, the page,
the ``advised:BASE`` policy) asks `decide` (jittable) or `recommend` (its words) here.

The order of authority, and why:

1. A *public fact that settles the question* wins outright: a claim the claimant
   provably cannot hold (all copies accounted for, or it was caught bluffing the role
   since its hand last changed) is challenged; a claim it provably holds is not.  A
   search value is an average of noisy rollouts; a fact is certain, so no rollout
   noise may outvote it (the search's samples sometimes tie pass and challenge there,
   which used to let the list order decide).
2. With search values, the search's best action, unless another action is *tied* with
   it (its value within two standard errors of the difference, the same test the
   search's explanation uses for "the lead is clear"): among tied actions the one the
   advisor or the one-step values pick wins, because that reason reads calibrated
   probabilities and the public record rather than a few hundred rollouts.  Ties are
   never broken by the order of the action list.  Such a decision is a "close call".
3. Without search values, the advisor alone: at a claim, challenge when the calibrated
   probability that it is true is below the expected-value threshold (an honest block
   in hand is preferred to a challenge, as belief_ev does); at a block decision, block
   when the hand holds the role; at a main action, the best one-step expected value.
   Losing a card and keeping cards in an exchange have no advice without the search
   (``action`` -1): the advised policy plays its base there.

The advisor's constants here are `advice_params`: the F1-fitted `AdvisorParams` with
`ADVICE_OVERRIDES`, the value constants fitted for the games won by a player who follows
the advice (``python -m evals.advice_fit``, tuning seed 1001).  F1 rewards catching
bluffs more than the value of a card does, so the F1 fit's alpha 1.0 challenges too
eagerly: ``advised:honest`` with it lost to plain ``honest``.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import compile_cache, rules
from coupjax.advice import statements
from coupjax.advice.action_ev import EVParams, challenge_probs, recommend_action
from coupjax.advice.challenge import STYLES, AdvisorParams, advise_challenge
from coupjax.beliefs.posterior import exact_posterior
from coupjax.game.tables import tables
from coupjax.observation import parse

SOURCES = ("none", "public fact", "challenge advisor", "block rule", "one-step expected value", "search",
           "search, tie broken by the advice", "only legal action")
(NONE, FACT, ADVISOR, BLOCK_RULE, ONE_STEP, SEARCH, SEARCH_TIE, ONLY_LEGAL) = range(len(SOURCES))
TIE_SIGMAS = statements.TIE_SIGMAS  # values closer than this many standard errors of their difference are tied
# Fitted for games won: `python -m evals.advice_fit --seed 1001 --games 300` (advised:honest minus honest, paired,
# mean over the two opponent conditions): alpha 0.1 +0.052 (aggressive_heavy +0.083 [+0.040, +0.130], honest_heavy
# +0.020 [-0.007, +0.047]); 0.05 +0.050; 0.2 +0.047; 0.35 +0.030; the F1 fit's 1.0 -0.065.  v_last 2.0 did no better.
ADVICE_OVERRIDES = {"alpha": 0.1, "v_last": 1.25}


def advice_params(params: AdvisorParams | None = None) -> AdvisorParams:
    """The advisor constants the recommendation uses: ``params`` (default the F1-fitted
    `AdvisorParams`) with `ADVICE_OVERRIDES` (module doc)."""
    return (AdvisorParams() if params is None else params).replace(**ADVICE_OVERRIDES)


def advisor_action(obs, mask, num_players: int, params: AdvisorParams | None = None, style="balanced",
                   posterior: dict | None = None) -> dict:
    """The advice layer's own action without search (rule 3 of the module doc), jittable.

    Returns ``action`` i32 (-1: no advice in this phase), ``source`` i32 (`SOURCES`),
    ``settled`` bool (a public fact decides: ``action`` is that fact's answer),
    ``challenge`` (the `advise_challenge` dict), ``values`` (the `recommend_action` dict)
    and ``view`` (the seat's own facts the reasons state: its cards, hand sizes, coins,
    the decision, and each seat's estimated chance of challenging a claim of its)."""
    n = num_players
    T = tables(n)
    params = advice_params() if params is None else params
    post = exact_posterior(obs, n, params.posterior_params()) if posterior is None else posterior
    adv = advise_challenge(obs, n, "exact", params, style, posterior=post)
    vals = recommend_action(obs, mask, n, params, posterior=post)
    v = parse(obs, n)
    block_role = jnp.asarray(T.action_block_role)
    can_chal = mask[T.challenge_id] & adv["decision"]
    true_blocks = mask & (block_role >= 0) & (v.own_counts[jnp.clip(block_role, 0)] > 0)
    first_true_block = jnp.argmax(true_blocks).astype(jnp.int32)
    certain = can_chal & (adv["p_raw"] >= 1.0 - 1e-6) & ~adv["impossible"]
    fact_chal = can_chal & adv["impossible"]
    chal_now = can_chal & adv["challenge"] & ~true_blocks.any()
    reacting = (v.phase == rules.PH_REACT) | (v.phase == rules.PH_ANSWER_BLOCK)
    react_action = jnp.select([fact_chal, chal_now, true_blocks.any()],
                              [T.challenge_id, T.challenge_id, first_true_block], T.pass_id)
    react_source = jnp.select([fact_chal | certain, can_chal], [FACT, ADVISOR], BLOCK_RULE)
    main = v.phase == rules.PH_ACTION
    action = jnp.select([reacting & mask[T.pass_id], main], [react_action, vals["best"]], -1)
    action = jnp.where((action >= 0) & mask[jnp.clip(action, 0)], action, -1)
    source = jnp.select([action < 0, reacting], [NONE, react_source], ONE_STEP)
    only = mask.sum() == 1
    action = jnp.where(only, jnp.argmax(mask), action).astype(jnp.int32)
    source = jnp.where(only, ONLY_LEGAL, source).astype(jnp.int32)
    view = dict(own_counts=v.own_counts, own_cards=v.own_cards, drawn=v.drawn, hidden=v.hidden, coins=v.coins,
                phase=v.phase, actor=v.actor, p_challenge=challenge_probs(v, n, EVParams()),
                marginals=post["role_marginals"])
    return dict(action=action, source=source, settled=reacting & (fact_chal | certain), challenge=adv, values=vals,
                view=view)


def decide(obs, mask, num_players: int, params: AdvisorParams | None = None, style="balanced",
           q=None, se=None, searched=None) -> dict:
    """The one recommendation (module doc), jittable; ``num_players`` static.

    ``q``/``se`` f32[A] and ``searched`` bool[A]: the search's value and standard error of
    each action it searched (all three or none).  Returns `advisor_action`'s dict with
    ``action``/``source`` replaced by the final ones, plus ``advised`` (the advice layer's
    own action), ``tied`` bool[A] (searched actions tied with the search's best) and
    ``close_call`` bool."""
    base = advisor_action(obs, mask, num_players, params, style)
    own, settled = base["action"], base["settled"]
    adv = base["challenge"]
    if q is None:
        close = adv["close_call"] & (base["source"] == ADVISOR)
        return dict(base, advised=own, tied=jnp.zeros_like(mask), close_call=close)
    q = jnp.asarray(q, jnp.float32)
    se = jnp.asarray(se, jnp.float32)
    ok = jnp.asarray(searched, bool) & mask
    best = jnp.argmax(jnp.where(ok, q - 1e-6 * se, -jnp.inf)).astype(jnp.int32)  # a certain value first
    noise = jnp.sqrt(se ** 2 + se[best] ** 2)
    # a certain value (no noise: a coup that ends the game) ties only with an equal certain one
    certain = se[best] <= 0.0
    tied = ok & jnp.where(certain, (q == q[best]) & (se <= 0.0),
                          (q[best] - q <= TIE_SIGMAS * noise) & ((se > 0.0) | (jnp.arange(q.shape[0]) == best)))
    own_tied = (own >= 0) & tied[jnp.clip(own, 0)]
    use_search = ok.any() & ~settled & (mask.sum() > 1)
    pick_own = own_tied & (tied.sum() > 1)
    action = jnp.where(use_search, jnp.where(own_tied, own, best), own).astype(jnp.int32)
    source = jnp.where(use_search, jnp.where(pick_own, SEARCH_TIE, SEARCH), base["source"]).astype(jnp.int32)
    close = jnp.where(use_search, (tied.sum() > 1) & ~certain, adv["close_call"] & (base["source"] == ADVISOR))
    return dict(base, action=action, source=source, advised=own, tied=tied, close_call=close)


# ---------------------------------------------------------------- words
@functools.lru_cache(maxsize=None)
def _jitted(num_players: int, with_search: bool):
    """`decide` jitted, traced once for all processes (`compile_cache.traced_once`): the
    page's first advice on a warm start loads it instead of tracing it."""
    if with_search:
        return compile_cache.traced_once(
            lambda o, m, prm, d, q, se, ok: decide(o, m, num_players, prm, d, q, se, ok),
            f"recommend-{num_players}-search")
    return compile_cache.traced_once(lambda o, m, prm, d: decide(o, m, num_players, prm, d),
                                     f"recommend-{num_players}")


def _search_arrays(search: dict, num_actions: int):
    q = np.zeros(num_actions, np.float32)
    se = np.zeros(num_actions, np.float32)
    ok = np.zeros(num_actions, bool)
    for row in search["actions"]:
        if row["value"] is not None:
            q[row["id"]], se[row["id"]], ok[row["id"]] = row["value"], row["se"], True
    return q, se, ok


def recommend(obs, mask, num_players: int, seat: int, search: dict | None = None, style: str = "balanced",
              params: AdvisorParams | None = None) -> dict | None:
    """The one recommendation for ``seat`` (absolute) from its observation and legal mask,
    with ``search`` the dict of `coupjax.search.advise` if the search ran.  JSON-able:

    ``action`` (protocol name, absolute seats) and ``action_id``; ``source`` (`SOURCES`);
    ``settled`` (a public fact decided it); ``close_call``; ``reasons`` (sentences for a
    player: the fact, the probability that matters, what each choice risks, the values);
    ``alternatives`` (each legal action with its search value and standard error, or its
    one-step value in coins, and ``tied``).  None when there is nothing to advise (a
    phase the advice does not cover and no search)."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {tuple(STYLES)}, got {style!r}")
    n = num_players
    params = advice_params() if params is None else params
    obs = jnp.asarray(obs, jnp.float32)
    mask = jnp.asarray(mask, bool)
    args = (obs, mask, params, jnp.float32(STYLES[style]))
    if search is not None and search.get("searched"):
        res = _jitted(n, True)(*args, *map(jnp.asarray, _search_arrays(search, int(mask.shape[0]))))
    else:
        search = None
        res = _jitted(n, False)(*args)
    res = jax.tree.map(np.asarray, res)
    a = int(res["action"])
    if a < 0:
        return None
    name = lambda x: rules.action_name(int(x), seat, n)  # noqa: E731
    out = {"action": name(a), "action_id": a, "source": SOURCES[int(res["source"])], "settled": bool(res["settled"]),
           "close_call": bool(res["close_call"]), "style": style}
    facts = statements.build(res, search, seat, n, np.asarray(mask), out["source"])
    out["statements"] = [st for st in facts if statements.check(st, res, search, seat, n)]
    out["reasons"] = [statements.say(st, lambda s: _seat((s - seat) % n, seat, n),
                                     lambda s: "your" if s == seat else f"seat {s}'s", str)
                      for st in out["statements"]]
    out["alternatives"] = _alternatives(res, search, np.asarray(mask), seat, n)
    return out


def _seat(rel: int, seat: int, n: int) -> str:
    return "you" if rel == 0 else f"seat {(seat + rel) % n}"


def _alternatives(res: dict, search, mask, seat: int, n: int) -> list:
    ev = res["values"]["ev"]
    rows = {r["id"]: r for r in search["actions"]} if search is not None else {}
    out = []
    for a in np.flatnonzero(mask):
        r = rows.get(int(a))
        row = {"action": rules.action_name(int(a), seat, n), "id": int(a), "tied": bool(res["tied"][a])}
        if r is not None and r["value"] is not None:
            row.update(value=r["value"], se=r["se"])
        elif np.isfinite(ev[a]) and ev[a] > -500:
            row.update(ev_coins=round(float(ev[a]), 4))
        out.append(row)
    key = lambda r: -r.get("value", r.get("ev_coins", -np.inf))  # noqa: E731
    return sorted(out, key=lambda r: (key(r), r["id"]))
