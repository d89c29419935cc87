"""The advice the page shows: the tracker's advice (`coupjax.tracker.seat_report.advice`) as it
is, with the style applied to the challenge threshold, and a few sentences for people.

The page's ``advice`` for a record and key is the tracker's for the same record and key
in the balanced style (the default): nothing is recomputed differently.  The cautious
and aggressive styles move the challenge threshold (`coupjax.advice.challenge.STYLES`:
cautious is its "conservative"); the tracker's advice takes the style, so the one
recommendation (`coupjax.advice.recommend`) is the same function's in every style.

At a reaction where earlier responders have not answered yet, the page gives the
advice for the state in which they all pass (`if_passed`): passing touches no card, so
the engine steps the tracker's state with passes and the advice reads that state.
"""
from __future__ import annotations

import functools

import numpy as np

from coupjax import rules
from coupjax.advice.statements import shown
from coupjax.game import board
from coupjax.game import deal
from coupjax.match import compiled
from coupjax.tracker import seat_report
from coupjax.web import words

STYLES = {"cautious": "conservative", "balanced": "balanced", "aggressive": "aggressive"}


def advice(state, seat: int, style: str = "balanced", use_search: bool = True, key=None) -> dict | None:
    """The tracker's advice for ``seat`` at ``state`` in the style (module doc)."""
    return seat_report.advice(state, seat, use_search, key, style=STYLES[style])


@functools.lru_cache(maxsize=None)
def _step(num_players: int):
    return compiled(num_players)[2]


def responders(state) -> list[int]:
    """The live seats still to react at a reaction, from the one to answer now, in order
    (clockwise from the actor: the tracker's ``expects()["responders"]``)."""
    n = int(np.shape(state.rewards)[-1])
    actor, p = int(board.actor(state)), int(state.current_player)
    alive = [len(h) > 0 for h in deal.hands(state)]
    pos = (p - actor) % n
    return [(actor + k) % n for k in range(1, n) if alive[(actor + k) % n] and k >= pos]


def after_passes(state, seat: int, responders: list[int]):
    """The state after every responder before ``seat`` passes (None if ``seat`` does not react)."""
    if seat not in responders or bool(state.terminated):
        return None
    n = int(np.shape(state.rewards)[-1])
    step = _step(n)
    import jax

    for r in responders[: responders.index(seat)]:
        state = step(state, np.int32(rules.action_id("pass", r, n)), jax.random.PRNGKey(0))
    return state if int(state.current_player) == seat and int(board.phase(state)) == rules.PH_REACT else None


def describe(adv: dict | None, names, me: int, table: dict, hand: list[str], style: str,
             choices: list | None = None) -> dict | None:
    """The advice in sentences: ``recommended`` (the one recommendation: its action, source,
    reasons, close call and value), ``challenge`` (the claim's evidence, when there is a
    claim to challenge; no call of its own) and ``values`` (the search's, in words).
    With the page's ``choices``, the recommendation is named by its button's label."""
    if adv is None:
        return None
    say = lambda name: words.action(names, me, name, table, me, hand)  # noqa: E731
    out = {"style": style}
    rec = adv.get("recommendation")
    if rec is not None:
        row = next((a for a in rec["alternatives"] if a["id"] == rec["action_id"]), {})
        text = words.button(choices, rec["action"], me) or say(rec["action"])
        out["recommended"] = {"action": rec["action"], "text": text, "source": rec["source"],
                              "value": row.get("value"), "se": row.get("se"), "close_call": rec["close_call"],
                              "settled": rec["settled"],
                              "reasons": ([words.statement(st, names, me, hand) for st in rec["statements"]]
                                          if "statements" in rec else
                                          [words.reason(x, names, me, hand) for x in rec["reasons"]])}
    if "search" in adv:
        out["values"] = [{"action": a["action"], "text": words.short(names, a["action"], me, hand), "value": a["value"], "se": a["se"],
                          "best_share": a["best_share"]} for a in adv["search"]["actions"]]
    ch = adv.get("challenge")
    if ch:
        claimant = table["blocker"] if table["phase"] == "answer_block" else table["actor"]
        role = words.title(ch["role_name"])
        if ch["impossible"]:
            why = f"{words.Who(names, claimant, me)} cannot hold {words.a_role(role)}: every {role} is accounted for or ruled out"
        else:
            side = "below" if ch["p_truth"] < ch["theta"] else "above"
            why = (f"{words.whose(names, claimant, me).capitalize() if claimant == me else words.whose(names, claimant, me)} "
                   f"{role} claim is true with probability {shown(ch['p_truth']):.2f}, "
                   f"{side} the {shown(ch['theta']):.2f} at which a challenge pays ({style} style)")
        # the figures as the beliefs panel keeps them (4 places), so that the page shows the reasons' 2
        out["challenge"] = {"p_truth": round(ch["p_truth"], 4), "theta": round(ch["theta"], 4),
                            "impossible": ch["impossible"],
                            "sentence": why + ".", "explanation": words.why_in_full(ch, names, me, claimant, style)}
    return out
