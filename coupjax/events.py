"""The event schema: one fixed-shape `Event` per step, its public view, and JSON dicts.

Every consumer (replay, beliefs, the advisor, training logs) reads this one schema.
A dict looks like::

    {"step": 12, "turn": 3, "seat": 2, "phase": "react", "action": "challenge",
     "forfeit": false, "actor": 1, "main_action": "steal", "target": 2,
     "claim": null, "challenge": {"seat": 1, "role": "captain", "bluff_caught": true},
     "redraw": null, "exchange_drawn": [], "reveals": [{"seat": 1, "role": "duke", "index": 0}],
     "eliminated": [], "resolved": false, "turn_ended": true, "game_over": false}

Private parts: ``action`` in the lose and exchange phases (the public dict says
``"reveal"`` / ``"keep"``), ``redraw``, ``exchange_drawn`` and each reveal's ``index``.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rules as R
from coupjax.state import MAX_REVEALS, Event

PRIVATE_ACTION_PHASES = (R.PH_LOSE, R.PH_EXCHANGE)


def last_event(state) -> Event:
    """The event of the step that produced ``state`` (with its private fields)."""
    return state._event


def public_event(event: Event) -> Event:
    """The event as every seat sees it: private fields set to -1.  Jittable, batchable."""
    hide_action = (event.phase == R.PH_LOSE) | (event.phase == R.PH_EXCHANGE)
    return event.replace(
        action=jnp.where(hide_action, -1, event.action),
        redraw_role=jnp.full_like(event.redraw_role, -1),
        exchange_drawn=jnp.full_like(event.exchange_drawn, -1),
        reveal_index=jnp.full_like(event.reveal_index, -1),
    )


def _role(r):
    return R.ROLES[int(r)] if r >= 0 else None


def event_to_dict(event: Event, num_players: int, public: bool = False) -> dict:
    """One unbatched Event -> JSON-able dict (absolute seats, protocol names)."""
    e = jax.tree.map(np.asarray, event)
    phase = int(e.phase)
    seat = int(e.seat)
    private_action = phase in PRIVATE_ACTION_PHASES
    if public and private_action:
        action = "reveal" if phase == R.PH_LOSE else "keep"
    else:
        action = R.action_name(int(e.action), seat, num_players) if 0 <= int(e.action) < R.num_actions(num_players) else int(e.action)
    reveals = []
    for k in range(MAX_REVEALS):
        if e.reveal_seat[k] >= 0:
            item = {"seat": int(e.reveal_seat[k]), "role": _role(e.reveal_role[k])}
            if not public:
                item["index"] = int(e.reveal_index[k])
            reveals.append(item)
    challenge = None
    if e.challenged_seat >= 0:
        challenge = {"seat": int(e.challenged_seat), "role": _role(e.challenged_role), "bluff_caught": bool(e.bluff_caught)}
    return {
        "step": int(e.step), "turn": int(e.turn), "seat": seat, "phase": R.PHASES[phase], "action": action,
        "forfeit": bool(e.forfeit), "actor": int(e.actor),
        "main_action": R.MAIN_ACTIONS[int(e.main_action)] if e.main_action >= 0 else None,
        "target": int(e.target) if e.target >= 0 else None, "claim": _role(e.claim_role),
        "challenge": challenge,
        "redraw": None if public else _role(e.redraw_role),
        "exchange_drawn": [] if public else [_role(c) for c in e.exchange_drawn if c >= 0],
        "reveals": reveals, "eliminated": [int(i) for i in np.flatnonzero(e.eliminated)],
        "resolved": bool(e.resolved), "turn_ended": bool(e.turn_ended), "game_over": bool(e.game_over),
    }


EVENT_KEYS = ("step", "turn", "seat", "phase", "action", "forfeit", "actor", "main_action", "target", "claim",
              "challenge", "redraw", "exchange_drawn", "reveals", "eliminated", "resolved", "turn_ended", "game_over")


def event_from_dict(d: dict, num_players: int) -> Event:
    """Inverse of `event_to_dict` for a private (full) dict; raises ValueError on bad input."""
    missing = [k for k in EVENT_KEYS if k not in d]
    if missing:
        raise ValueError(f"event is missing keys: {', '.join(missing)}")
    role = lambda x: -1 if x is None else R.role_index(x)  # noqa: E731
    seat = int(d["seat"])
    reveals = d["reveals"]
    if len(reveals) > MAX_REVEALS:
        raise ValueError(f"at most {MAX_REVEALS} reveals per event")
    rs = np.full(MAX_REVEALS, -1, np.int32)
    rr, ri = rs.copy(), rs.copy()
    for k, item in enumerate(reveals):
        rs[k], rr[k], ri[k] = item["seat"], role(item["role"]), item.get("index", -1)
    drawn = np.full(2, -1, np.int32)
    for k, c in enumerate(d["exchange_drawn"]):
        drawn[k] = role(c)
    elim = np.zeros(num_players, bool)
    elim[list(d["eliminated"])] = True
    ch = d["challenge"] or {}
    if d["phase"] not in R.PHASES:
        raise ValueError(f"unknown phase {d['phase']!r}")
    if d["main_action"] is not None and d["main_action"] not in R.MAIN_ACTIONS:
        raise ValueError(f"unknown main action {d['main_action']!r}")
    i32 = lambda v: np.asarray(v, np.int32)  # noqa: E731
    return Event(
        step=i32(d["step"]), turn=i32(d["turn"]), seat=i32(seat), phase=i32(R.PHASES.index(d["phase"])),
        action=i32(R.action_id(d["action"], seat, num_players) if isinstance(d["action"], str) else d["action"]),
        forfeit=np.asarray(bool(d["forfeit"])), actor=i32(d["actor"]),
        main_action=i32(-1 if d["main_action"] is None else R.MAIN_ACTIONS.index(d["main_action"])),
        target=i32(-1 if d["target"] is None else d["target"]), claim_role=i32(role(d["claim"])),
        challenged_seat=i32(ch.get("seat", -1)), challenged_role=i32(role(ch.get("role"))),
        bluff_caught=np.asarray(bool(ch.get("bluff_caught", False))), redraw_role=i32(role(d["redraw"])),
        exchange_drawn=drawn, reveal_seat=rs, reveal_role=rr, reveal_index=ri, eliminated=elim,
        resolved=np.asarray(bool(d["resolved"])), turn_ended=np.asarray(bool(d["turn_ended"])),
        game_over=np.asarray(bool(d["game_over"])),
    )
