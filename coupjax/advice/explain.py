"""Explanations for a person: the challenge advice and the main-action values as text,
and `challenge_advice`, the jitted advice with its explanation for one observation."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import compile_cache, rules
from coupjax.advice.action_ev import REJECTED_BLUFF_PENALTY
from coupjax.advice.challenge import (CONTEXT_TEXT, CONTEXTS, KINDS, STEAL_CONTEXTS, STYLES, AdvisorParams,
                                      advise_challenge)


def _plural(role: str, k: int) -> str:
    return role if k == 1 else role + "s"


def _seat(rel: int, observer_seat) -> str:
    if rel == 0:
        return "you"
    if observer_seat is None:
        return f"seat +{rel}"
    return f"seat {observer_seat + rel}"  # caller passes (observer, n) via explain


def explain_challenge(advice: dict, num_players: int, belief: str = "exact", style: str = "balanced",
                      observer_seat: int | None = None, calibrated: bool = True) -> str:
    """A human-readable explanation of one (unbatched) `advise_challenge` result."""
    a = {k: np.asarray(v) for k, v in advice.items()}
    n = num_players
    seat = (lambda rel: _seat(rel, None)) if observer_seat is None else (
        lambda rel: "you" if rel == 0 else f"seat {(observer_seat + rel) % n}")
    if not bool(a["decision"]):
        return "No challenge decision: the observer is not facing a claim it may challenge."
    kind, ctx = KINDS[int(a["kind"])], CONTEXTS[int(a["context"])]
    role = rules.ROLES[int(a["role"])]
    who = seat(int(a["claimant"]))
    what = (f"{who} blocks with a {role} claim ({kind})" if bool(a["answer"])
            else f"{who} claims {role} ({kind}"
            + (f" targeting {seat(int(a['target']))}" if int(a["target"]) >= 0 else "") + ")")
    vis, rev, own = int(a["visible"]), int(a["revealed_role"]), int(a["own_role"])
    hidden = ", ".join(f"{seat(k)} {int(a['hidden'][k])}" for k in range(n) if int(a["hidden"][k]) > 0)
    evidence = (f"evidence: {who} made {int(a['role_claims'])} {role} claim(s) and {int(a['role_blocks'])} {role} "
                f"block(s) since its hand was last renewed ({int(a['claims_total'])} claims, "
                f"{int(a['blocks_total'])} blocks in all; {int(a['renewals'])} renewals); {vis} of 3 "
                f"{_plural(role, 3)} visible to you ({rev} revealed, {own} in your hand); hand sizes: {hidden}; "
                f"deck {int(a['deck'])} cards")
    if bool(a["disproven"]):
        return (f"{what}. impossible: {who} was caught bluffing {role} since its hand last changed (a lost "
                f"challenge proved it held no {role}) -> challenge. ({evidence}.)")
    if bool(a["impossible"]):
        return (f"{what}. impossible: all 3 {_plural(role, 3)} are accounted for ({rev} revealed, {own} in your "
                f"hand or drawn cards) -> challenge. ({evidence}.)")
    pt, theta, band = float(a["p_truth"]), float(a["theta"]), float(a["band"])
    src = "exact posterior" if belief == "exact" else "CoupVisor belief"
    cal = f", calibrated; {float(a['p_raw']):.4f} before calibration" if calibrated else ", uncalibrated"
    flags = [
        ("you have one influence left" if int(a["me_hidden"]) == 1 else "you have 2 influence", "adj_observer"),
        (f"{who} has one influence left" if int(a["claimant_hidden"]) == 1 else f"{who} has 2 influence",
         "adj_claimant"),
        ((f"coin threat: {int(a['claimant_coins'])} + {int(a['gain'])} coins reaches 7" if bool(a["threat"])
          else "no coin threat"), "adj_threat"),
    ]
    parts = " ".join(f"{float(a[key]):+.4f} ({text})" for text, key in flags)
    thr = (f"threshold {theta:.4f} = base {float(a['base']):.4f} ({CONTEXT_TEXT[ctx]}"
           + (f", {int(a['stake'])} coins at stake" if ctx in STEAL_CONTEXTS else "")
           + f") {parts} {float(a['style']):+.4f} (style {style})")
    if bool(a["challenge"]):
        verdict = f"p_truth {pt:.4f} < threshold - band {theta - band:.4f} -> challenge"
    elif bool(a["close_call"]):
        verdict = f"p_truth {pt:.4f} is within the band +/-{band:.4f} of the threshold -> close call: don't challenge"
    else:
        verdict = f"p_truth {pt:.4f} >= threshold - band {theta - band:.4f} -> don't challenge"
    return f"{what}. p_truth {pt:.4f} ({src}{cal}); {thr}; {verdict}. ({evidence}.)"


_JIT_ADVISE = {}


def challenge_advice(obs, num_players: int, belief: str = "exact", params: AdvisorParams = AdvisorParams(),
                     style: str = "balanced", observer_seat: int | None = None, calibrated: bool = True) -> dict:
    """Convenience (not jittable): `advise_challenge` run jitted, as Python values, plus
    ``explanation``, ``kind_name``, ``role_name`` and ``recommendation`` ("challenge" |
    "don't challenge" | "close call: don't challenge" | "no decision")."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {tuple(STYLES)}, got {style!r}")
    key = (num_players, belief, calibrated)  # the style delta is an argument: one compilation for all styles
    if key not in _JIT_ADVISE:
        _JIT_ADVISE[key] = compile_cache.traced_once(  # traced once for all processes
            lambda o, prm, d: advise_challenge(o, num_players, belief, prm, d, calibrated), "challenge-advice", key)
    adv = jax.tree.map(np.asarray, _JIT_ADVISE[key](jnp.asarray(obs, jnp.float32), params, jnp.float32(STYLES[style])))
    out = {k: (v.tolist() if v.ndim else v.item()) for k, v in adv.items()}
    out["explanation"] = explain_challenge(adv, num_players, belief, style, observer_seat, calibrated)
    out["kind_name"] = KINDS[out["kind"]] if out["kind"] >= 0 else None
    out["role_name"] = rules.ROLES[out["role"]] if out["decision"] else None
    out["recommendation"] = ("no decision" if not out["decision"] else "challenge" if out["challenge"]
                             else "close call: don't challenge" if out["close_call"] else "don't challenge")
    return out




def explain_action(result: dict, num_players: int, observer_seat: int | None = None, top: int = 3) -> str:
    """The `recommend_action` result (unbatched) as text: the best actions with their EV."""
    r = {k: np.asarray(v) for k, v in result.items()}
    n = num_players
    if int(r["best"]) < 0:
        return "No main-action decision."
    seat = 0 if observer_seat is None else observer_seat
    ev = r["ev"]
    order = [a for a in np.argsort(-ev) if np.isfinite(ev[a])][:top]
    parts = []
    for a in order:
        name = rules.action_name(int(a), seat, n)
        if observer_seat is None and ":" in name:
            k = (int(name.split(":")[1]) - seat) % n
            name = f"{name.split(':')[0]}:+{k}"
        rejected = bool(r["rejected_bluff"][a])
        shown = ev[a] + (REJECTED_BLUFF_PENALTY if rejected else 0.0)
        extra = f", bluff: challenged with p {float(r['p_challenge']):.2f}" if r["bluff"][a] else ""
        if rejected:
            extra += " (a bluff not worth its risk)"
        if r["p_block"][a] > 0:
            extra += f", blocked with p {float(r['p_block'][a]):.2f}"
        parts.append(f"{name} EV {shown:+.2f} coins (if not challenged {float(r['gain'][a]):+.2f}{extra})")
    best = rules.action_name(int(r["best"]), seat, n)
    if observer_seat is None and ":" in best:
        best = f"{best.split(':')[0]}:+{(int(best.split(':')[1]) - seat) % n}"
    return f"best: {best}; " + "; ".join(parts)
