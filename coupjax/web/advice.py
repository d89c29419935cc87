"""The advice the page shows: the tracker's advice (`coupjax.tracker.advice.advice`) as it
is, with the style applied to the challenge call and a few sentences for people.

The page's ``advice`` for a record and key is the tracker's for the same record and key
in the balanced style (the default): nothing is recomputed differently.  The cautious
and aggressive styles move the challenge threshold (`coupjax.advice.challenge.STYLES`:
cautious is its "conservative"); only the challenge call is computed again for them.

At a reaction where earlier responders have not answered yet, the page gives the
advice for the state in which they all pass (`if_passed`): passing touches no card, so
the engine steps the tracker's state with passes and the advice reads that state.
"""
from __future__ import annotations

import functools

import numpy as np

from coupjax import rules as R
from coupjax.advice.explain import challenge_advice
from coupjax.game import board
from coupjax.match import compiled
from coupjax.tracker import advice as ADV
from coupjax.web import words as W

STYLES = {"cautious": "conservative", "balanced": "balanced", "aggressive": "aggressive"}


def advice(state, seat: int, style: str = "balanced", use_search: bool = True, key=None) -> dict | None:
    """The tracker's advice for ``seat`` at ``state`` with the style's challenge call (module doc)."""
    out = ADV.advice(state, seat, use_search, key)
    if out is None or style == "balanced" or "challenge" not in out:
        return out
    n = int(np.shape(state.rewards)[-1])
    ch = challenge_advice(ADV.observation(state, seat), n, style=STYLES[style], observer_seat=seat)
    out["challenge"] = {k: ch[k] for k in ADV.CHALLENGE_KEYS}
    return out


@functools.lru_cache(maxsize=None)
def _step(num_players: int):
    return compiled(num_players)[2]


def after_passes(state, seat: int, responders: list[int]):
    """The state after every responder before ``seat`` passes (None if ``seat`` does not react)."""
    if seat not in responders or bool(state.terminated):
        return None
    n = int(np.shape(state.rewards)[-1])
    step = _step(n)
    import jax

    for r in responders[: responders.index(seat)]:
        state = step(state, np.int32(R.action_id("pass", r, n)), jax.random.PRNGKey(0))
    return state if int(state.current_player) == seat and int(board.phase(state)) == R.PH_REACT else None


def describe(adv: dict | None, names, me: int, table: dict, hand: list[str], style: str) -> dict | None:
    """The advice in sentences: ``recommended`` (with its source), ``challenge`` and ``block``
    (one sentence each, when they apply) and ``values`` (the search's, in words)."""
    if adv is None:
        return None
    legal = adv["legal"]
    say = lambda name: W.action(names, me, name, table, me)  # noqa: E731
    out = {"style": style}
    if "search" in adv:
        s = adv["search"]
        best = s["actions"][0] if s["actions"] else None
        out["recommended"] = {"action": s["action"], "text": say(s["action"]), "source": "search",
                              "value": best and best["value"], "se": best and best["se"]}
        out["values"] = [{"action": a["action"], "text": W.short(names, a["action"], me), "value": a["value"], "se": a["se"],
                          "best_share": a["best_share"]} for a in s["actions"]]
    elif "action" in adv:
        out["recommended"] = {"action": adv["action"]["best"], "text": say(adv["action"]["best"]),
                              "source": "one-step expected value"}
    ch = adv.get("challenge")
    if ch:
        claimant = table["blocker"] if table["phase"] == "answer_block" else table["actor"]
        role = W.title(ch["role_name"])
        if ch["impossible"]:
            why = f"{W.who(names, claimant, me)} cannot hold a {role}: every {role} is accounted for or ruled out"
        else:
            side = "below" if ch["p_truth"] < ch["theta"] else "above"
            why = (f"{W.who(names, claimant, me)}'s {role} claim is true with probability {ch['p_truth']:.2f}, "
                   f"{side} the threshold {ch['theta']:.2f} ({style})")
            if ch["close_call"]:
                why += ", a close call"
        out["challenge"] = {"call": "challenge" if ch["challenge"] else "don't challenge", "p_truth": ch["p_truth"],
                            "theta": ch["theta"], "sentence": why + ".", "explanation": ch["explanation"]}
        rec = out.get("recommended")
        if rec and rec["source"] == "search" and (rec["action"] == "challenge") != bool(ch["challenge"]):
            out["challenge"]["note"] = ("The search, which plays the game out in sampled worlds, and the "
                                        "challenge threshold disagree here.")
        if "recommended" not in out:
            out["recommended"] = {"action": "challenge" if ch["challenge"] else "pass",
                                  "text": "Challenge" if ch["challenge"] else "Don't challenge",
                                  "source": "challenge advisor"}
    blocks = [a for a in legal if a.startswith("block:")]
    if blocks:
        honest = [b for b in blocks if b.split(":")[1] in hand]
        if "search" in adv:
            v = adv["search"]["values"]
            b = max(blocks, key=lambda a: v.get(a, -np.inf))
            call = b if v.get(b, -np.inf) > v.get("pass", -np.inf) else "pass"
        else:
            b = honest[0] if honest else blocks[0]
            call = b if honest else "pass"
        role = W.title(b.split(":")[1])
        if call == "pass":
            sentence = (f"Don't block: the search values passing above blocking with {role}."
                        if "search" in adv else f"Don't block: you hold no {' or '.join(W.title(x.split(':')[1]) for x in blocks)}, "
                        "so a block would be a bluff.")
        else:
            sentence = (f"Block with {role}: " + ("you hold one, so the block is honest."
                                                   if b in honest else "a bluff, but the search values it above passing."))
        out["block"] = {"call": call, "sentence": sentence}
    return out
