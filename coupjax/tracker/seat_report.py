"""The table, the beliefs and the advice for one seat of an engine state, as JSON-able dicts.

The same functions serve a tracker's state and a full match's, so the advice for a
seat record is the advice for the engine state of the same game: the beliefs and the
advisor read the seat's observation only, and the search samples every card the seat
cannot see from the exact posterior (`coupjax.search.advise`).
"""
from __future__ import annotations

import functools
import typing

import jax
import numpy as np

from coupjax import rules
from coupjax import search
from coupjax.advice.action_ev import recommend_action
from coupjax.advice.challenge import AdvisorParams
from coupjax.advice.explain import challenge_advice, explain_action
from coupjax.advice.recommend import advice_params, recommend
from coupjax.beliefs import coupvisor
from coupjax.beliefs import posterior
from coupjax.game import board
from coupjax.game import deal
from coupjax.game.views import observe
from coupjax.observation import parse

# the advisor's evidence at a claim; its call is folded into the one ``recommendation``
CHALLENGE_KEYS = ("challenge", "close_call", "impossible", "p_truth", "p_raw", "theta",
                  "kind_name", "role_name", "explanation")


class _Compiled(typing.NamedTuple):
    """A table size's jitted pieces, by name (one compilation each, shared by every page)."""
    observe: typing.Callable
    coupvisor_truth: typing.Callable
    exact_marginals: typing.Callable
    action_values: typing.Callable
    parse: typing.Callable  # eagerly, parsing was ~100 small dispatches per page


@functools.lru_cache(maxsize=None)
def _jitted(num_players: int) -> _Compiled:
    n = num_players
    params = AdvisorParams().posterior_params()
    return _Compiled(observe=jax.jit(lambda s, seat: observe(s, seat)),
                     coupvisor_truth=jax.jit(lambda obs: coupvisor.claim_truth_probabilities(obs, n)),
                     exact_marginals=jax.jit(lambda obs: posterior.exact_posterior(obs, n, params)["role_marginals"]),
                     action_values=jax.jit(lambda obs, mask: recommend_action(obs, mask, n)),
                     parse=jax.jit(lambda obs: parse(obs, n)))


def observation(state, seat: int) -> np.ndarray:
    n = int(np.shape(state.rewards)[-1])
    return np.asarray(_jitted(n).observe(state, seat))


def table(state, seat: int) -> dict:
    """The public table and ``seat``'s own cards (absolute seats): the decision, coins,
    hidden counts, revealed cards, claims and blocks since each hand's last renewal, the
    roles a caught bluff ruled out, the deck size, and the seat's hand and drawn cards."""
    n = int(np.shape(state.rewards)[-1])
    v = jax.tree.map(np.asarray, _jitted(n).parse(observation(state, seat)))
    rows = lambda x: [x[(t - seat) % n] for t in range(n)]  # noqa: E731 (relative rows -> seats)
    roles = lambda row: {rules.ROLES[r]: int(row[r]) for r in range(rules.NUM_ROLES) if row[r]}  # noqa: E731
    opt = lambda x, names=None: None if int(x) < 0 else (names[int(x)] if names else int(x))  # noqa: E731
    done = bool(state.terminated)
    placements = [int(x) for x in np.asarray(board.placements(state))] if done else None
    own = [int(c) for c in v.own_cards if c >= 0]
    return {
        "turn": int(board.turn(state)), "phase": "done" if done else rules.PHASES[int(board.phase(state))],
        "current_player": None if done else int(state.current_player), "done": done,
        "winner": placements[0] if done else None, "placements": placements,
        "actor": int(board.actor(state)), "main_action": opt(board.main_action(state), rules.MAIN_ACTIONS),
        "target": opt(board.target(state)), "blocker": opt(board.blocker(state)),
        "block_role": opt(board.block_role(state), rules.ROLES),
        "coins": deal.coins(state), "hidden": [int(x) for x in rows(v.hidden)],
        "revealed": [[rules.ROLES[c] for c in row] for row in deal.revealed(state)],
        "claims": [roles(x) for x in rows(v.claims)], "blocks": [roles(x) for x in rows(v.blocks)],
        "disproven": [[rules.ROLES[r] for r in range(rules.NUM_ROLES) if x[r]] for x in rows(v.disproven)],
        "deck_size": int(board.deck_size(state)), "seat": seat, "hand": [rules.ROLES[c] for c in own],
        "drawn": [rules.ROLES[r] for r in range(rules.NUM_ROLES) for _ in range(int(v.drawn[r]))],
    }


def beliefs(state, seat: int) -> list[dict]:
    """Per opponent with cards: P(their hand holds each role) from CoupVisor (Appendix A's
    claim probability) and from the exact posterior (the advisor's claim likelihoods);
    for the seat whose claim ``seat`` may challenge now, ``claim``: the role and the
    probability that the claim is true, calibrated as the advice reads it (the figure
    its reasons quote; the exact bar is the same belief before that correction)."""
    n = int(np.shape(state.rewards)[-1])
    fns, obs = _jitted(n), observation(state, seat)
    p_cv, p_ex = np.asarray(fns.coupvisor_truth(obs)), np.asarray(fns.exact_marginals(obs))
    hidden = np.asarray(board.hidden_counts(state))
    out = []
    for rel in range(1, n):
        s = (seat + rel) % n
        if hidden[s]:
            out.append({"seat": s, "hidden": int(hidden[s]),
                        "coupvisor": {rules.ROLES[r]: round(float(p_cv[rel, r]), 4) for r in range(rules.NUM_ROLES)},
                        "exact": {rules.ROLES[r]: round(float(p_ex[rel, r]), 4) for r in range(rules.NUM_ROLES)}})
    if not bool(state.terminated) and int(state.current_player) == seat:
        ch = challenge_advice(obs, n, params=advice_params(), observer_seat=seat)
        if ch["decision"]:
            claimant = (seat + ch["claimant"]) % n
            for b in out:
                if b["seat"] == claimant:
                    b["claim"] = {"role": ch["role_name"], "p_truth": round(float(ch["p_truth"]), 4)}
    return sorted(out, key=lambda b: b["seat"])


def advice(state, seat: int, use_search: bool = True, key=None, mode: str = "expected", budget=None,
           style: str = "balanced") -> dict | None:
    """The advice for ``seat`` when it is to decide in ``state`` (None otherwise):
    ``recommendation`` (the one action to play, with its reasons and the alternatives'
    values: `coupjax.advice.recommend.recommend`), and the evidence under it:
    ``challenge`` (at a claim it may challenge: `challenge_advice`, exact belief and the
    recommendation's constants `advice_params`, with its explanation), ``action`` (at its
    main action: one-step EVs and `explain_action`) and
    ``search`` (`coupjax.search.advise` at the default budget, key ``PRNGKey(0)`` unless
    given; its values, its own pick under ``search.action`` is what the search policy
    would play, not the advice)."""
    if bool(state.terminated) or int(state.current_player) != seat:
        return None
    n = int(np.shape(state.rewards)[-1])
    obs = observation(state, seat)
    mask = np.asarray(state.legal_action_mask)
    out = {"seat": seat, "phase": rules.PHASES[int(board.phase(state))],
           "legal": [rules.action_name(int(a), seat, n) for a in np.flatnonzero(mask)]}
    ch = challenge_advice(obs, n, params=advice_params(), style=style, observer_seat=seat)  # the recommendation's
    if ch["decision"]:
        out["challenge"] = {k: ch[k] for k in CHALLENGE_KEYS}
    if int(board.phase(state)) == rules.PH_ACTION:
        res = jax.tree.map(np.asarray, _jitted(n).action_values(obs, mask))
        ev = res["ev"]
        out["action"] = {"best": rules.action_name(int(res["best"]), seat, n),
                         "values": {rules.action_name(int(a), seat, n): round(float(ev[a]), 4)
                                    for a in np.flatnonzero(np.isfinite(ev))},
                         "explanation": explain_action(res, n, observer_seat=seat)}
    if use_search:
        out["search"] = search.advise(state, key=jax.random.PRNGKey(0) if key is None else key, mode=mode,
                                      budget=budget)
    out["recommendation"] = recommend(obs, mask, n, seat, out.get("search"), style)
    return out
