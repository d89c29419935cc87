"""Search advice for a person: `advise` runs the search for one state and returns the
chosen action, every legal action's value with its standard error, and an explanation."""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import compile_cache, rules
from coupjax.env import Env
from coupjax.search.config import MODES, SearchConfig, default_config
from coupjax.search.policy import make_batched_decider
from coupjax.search.sampled_worlds import raw_key


@functools.lru_cache(maxsize=None)
def _env(num_players: int) -> Env:
    return Env(num_players)


@functools.lru_cache(maxsize=32)
def advice_function(num_players: int, config: SearchConfig):
    """jitted ``(key, state) -> (logits {mode: f32[A]}, SearchResult row, picks {mode: id})``
    for one state: one search, every mode (compiled once per table size and budget)."""
    env = _env(num_players)
    decide = make_batched_decider(env, None, config)

    def search_advice(key, state):
        key = raw_key(key)
        k_search, k_pick = jax.random.split(key)
        logits, res = decide(k_search[None], jax.tree.map(lambda x: x[None], state))
        logits = {m: v[0] for m, v in logits.items()}
        picks = {m: (jnp.argmax(v) if m == "expected" else jax.random.categorical(k_pick, v)).astype(jnp.int32)
                 for m, v in logits.items()}
        return logits, jax.tree.map(lambda x: x[0] if x.ndim else x, res), picks

    # traced once for all processes: on a warm start the page's first advice loads it
    return compile_cache.traced_once(search_advice, f"search-advice-{num_players}", config)


def _budget(budget, mode: str) -> SearchConfig:
    if budget is None:
        return default_config(mode)
    if isinstance(budget, SearchConfig):
        return budget
    if isinstance(budget, dict):
        return dataclasses.replace(default_config(mode), **budget)
    raise TypeError("budget must be None, a SearchConfig or a dict of SearchConfig fields")


def advise(state, seat=None, mode: str = "expected", budget=None, key=None) -> dict:
    """Search advice for the seat to move in ``state`` (one unbatched `State`).

    ``seat``: None or ``state.current_player`` (only the seat to move can act);
    ``mode``: thompson | expected | regularized; ``budget``: a `SearchConfig`, a dict of
    its fields (over the mode's default), or None (`default_config(mode)`); ``key``: the PRNG key (default
    ``PRNGKey(0)``; the same key gives the same advice).

    Returns a dict: ``seat``, ``mode``, ``action`` (protocol name, absolute seats) and
    ``action_id``: what the mode plays (expected: the best action; thompson /
    regularized: a draw from the policy with the key) -- the search policy's move, not
    the advice: the one recommendation, which also weighs the public facts and the
    advisor, is `coupjax.advice.recommend.recommend` of these values (the tracker's
    ``recommendation``); ``actions``: one entry per legal
    action, best value first, with ``action``, ``id``, ``value``, ``se``, ``rollouts``,
    ``best_share`` and ``prob`` (the mode's probability); ``values`` / ``se``: name ->
    float; ``searched``; ``budget``; ``rollout_steps``; ``explanation`` (text).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    n = int(np.shape(state.rewards)[-1])
    if np.ndim(state.current_player) != 0:
        raise ValueError("advise takes one (unbatched) state")
    if bool(state.terminated):
        raise ValueError("the game is over: nothing to advise")
    me = int(state.current_player)
    if seat is not None and int(seat) != me:
        raise ValueError(f"seat {seat} is not to move (seat {me} is): only the seat to move can be advised")
    config = _budget(budget, mode)
    key = jax.random.PRNGKey(0) if key is None else key
    logits, res, picks = advice_function(n, config)(key, state)
    logits, pick = np.asarray(logits[mode]), picks[mode]
    probs = np.exp(logits - logits.max())
    probs = probs / probs.sum()
    ids, valid = np.asarray(res.action_ids), np.asarray(res.valid)
    q, se = np.asarray(res.q), np.asarray(res.se)
    share, nroll = np.asarray(res.best_share), np.asarray(res.rollouts)
    mask = np.asarray(state.legal_action_mask)
    rows = []
    slot = {int(a): i for i, a in enumerate(ids) if valid[i]}
    for a in np.flatnonzero(mask):
        i = slot.get(int(a))
        rows.append({
            "action": rules.action_name(int(a), me, n), "id": int(a),
            "value": float(q[i]) if i is not None else None, "se": float(se[i]) if i is not None else None,
            "rollouts": int(nroll[i]) if i is not None else 0,
            "best_share": float(share[i]) if i is not None else None, "prob": float(probs[a]),
        })
    rows.sort(key=lambda r: (-(r["value"] if r["value"] is not None else -np.inf), r["id"]))
    pick = int(pick)
    out = {
        "seat": me, "mode": mode, "action": rules.action_name(pick, me, n), "action_id": pick,
        "actions": rows, "values": {r["action"]: r["value"] for r in rows},
        "se": {r["action"]: r["se"] for r in rows}, "searched": bool(valid.any()),
        "budget": config.describe(), "rollout_steps": int(res.rollout_steps),
    }
    out["explanation"] = explain(out)
    return out


def explain(advice: dict, top: int = 3) -> str:
    """A few sentences for a person from `advise`'s dict."""
    b = advice["budget"]
    rows = advice["actions"]
    if not advice["searched"]:
        return f"Only {rows[0]['action']} is legal here: nothing to search."
    cap = "to the end of the game" if b["max_rollout_steps"] is None else \
        f"for up to {b['max_rollout_steps']} decisions (then a coins/cards heuristic scores the position)"
    parts = [f"Sampled {b['num_worlds']} hidden worlds from what seat {advice['seat']} has seen and played each of "
             f"the {len(rows)} legal actions {b['rollouts_per_world']} time(s) per world with {b['rollout_policy']} "
             f"play {cap}; values are the expected reward (+1 win, below 0 a loss) with standard errors."]
    ranked = ", ".join(f"{r['action']} {r['value']:+.2f} ± {r['se']:.2f} (best in {100 * r['best_share']:.0f}% of "
                       f"worlds)" for r in rows[:top])
    parts.append(f"Best: {ranked}.")
    if len(rows) > 1 and rows[0]["se"] is not None:
        gap = rows[0]["value"] - rows[1]["value"]
        noise = float(np.hypot(rows[0]["se"], rows[1]["se"]))
        parts.append("The lead is clear." if gap > 2 * noise else
                     "The top actions are within noise of each other; a bigger budget would separate them.")
    chosen = next(r for r in rows if r["action"] == advice["action"])
    how = {"expected": "plays the action with the highest average value",
           "thompson": "plays each action with the share of worlds in which it is best (a Thompson draw"
                       + ("; each world judged with the rollout noise shrunk out)" if b.get("denoise_worlds") else ")"),
           "regularized": f"mixes the prior policy ({b['prior_policy'] or b['rollout_policy']}) with the values "
                          f"(pi ∝ pi_prior·exp(Q/{b['tau']}))",
           }[advice["mode"]]
    parts.append(f"Mode {advice['mode']} {how}: {advice['action']} (probability {chosen['prob']:.2f}).")
    return " ".join(parts)
