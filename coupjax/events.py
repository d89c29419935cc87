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

Strict checks of JSON data (a saved match's deal and event lines, see
`coupjax.match`) are declared with the small validator at the end of this module
(`record`, `integer`, ...): one place, so every line is checked the same way, and a
failure is a `FieldError` that names the field.
"""
from __future__ import annotations

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rules
from coupjax.state import MAX_REVEALS, Event

PRIVATE_ACTION_PHASES = (rules.PH_LOSE, rules.PH_EXCHANGE)


def last_event(state) -> Event:
    """The event of the step that produced ``state`` (with its private fields)."""
    return state._event


def public_event(event: Event) -> Event:
    """The event as every seat sees it: private fields set to -1.  Jittable, batchable."""
    hide_action = (event.phase == rules.PH_LOSE) | (event.phase == rules.PH_EXCHANGE)
    return event.replace(
        action=jnp.where(hide_action, -1, event.action),
        redraw_role=jnp.full_like(event.redraw_role, -1),
        exchange_drawn=jnp.full_like(event.exchange_drawn, -1),
        reveal_index=jnp.full_like(event.reveal_index, -1),
    )


def _role(r):
    return rules.ROLES[int(r)] if r >= 0 else None


def event_to_dict(event: Event, num_players: int, public: bool = False) -> dict:
    """One unbatched Event -> JSON-able dict (absolute seats, protocol names)."""
    e = jax.tree.map(np.asarray, event)
    phase = int(e.phase)
    seat = int(e.seat)
    private_action = phase in PRIVATE_ACTION_PHASES
    if public and private_action:
        action = "reveal" if phase == rules.PH_LOSE else "keep"
    else:
        action = rules.action_name(int(e.action), seat, num_players) if 0 <= int(e.action) < rules.num_actions(num_players) else int(e.action)
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
        "step": int(e.step), "turn": int(e.turn), "seat": seat, "phase": rules.PHASES[phase], "action": action,
        "forfeit": bool(e.forfeit), "actor": int(e.actor),
        "main_action": rules.MAIN_ACTIONS[int(e.main_action)] if e.main_action >= 0 else None,
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
    role = lambda x: -1 if x is None else rules.role_index(x)  # noqa: E731
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
    if d["phase"] not in rules.PHASES:
        raise ValueError(f"unknown phase {d['phase']!r}")
    if d["main_action"] is not None and d["main_action"] not in rules.MAIN_ACTIONS:
        raise ValueError(f"unknown main action {d['main_action']!r}")
    i32 = lambda v: np.asarray(v, np.int32)  # noqa: E731
    return Event(
        step=i32(d["step"]), turn=i32(d["turn"]), seat=i32(seat), phase=i32(rules.PHASES.index(d["phase"])),
        action=i32(rules.action_id(d["action"], seat, num_players) if isinstance(d["action"], str) else d["action"]),
        forfeit=np.asarray(bool(d["forfeit"])), actor=i32(d["actor"]),
        main_action=i32(-1 if d["main_action"] is None else rules.MAIN_ACTIONS.index(d["main_action"])),
        target=i32(-1 if d["target"] is None else d["target"]), claim_role=i32(role(d["claim"])),
        challenged_seat=i32(ch.get("seat", -1)), challenged_role=i32(role(ch.get("role"))),
        bluff_caught=np.asarray(bool(ch.get("bluff_caught", False))), redraw_role=i32(role(d["redraw"])),
        exchange_drawn=drawn, reveal_seat=rs, reveal_role=rr, reveal_index=ri, eliminated=elim,
        resolved=np.asarray(bool(d["resolved"])), turn_ended=np.asarray(bool(d["turn_ended"])),
        game_over=np.asarray(bool(d["game_over"])),
    )


# ------------------------------------------------------------------ the validator
class FieldError(ValueError):
    """A value that breaks a schema; ``field`` names it as a path (``reveals[0].seat``)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


def _show(v) -> str:
    kind = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "a list",
            dict: "an object", type(None): "null"}.get(type(v), type(v).__name__)
    text = json.dumps(v) if isinstance(v, (bool, int, float, str, list, dict, type(None))) else repr(v)
    return f"{text if len(text) <= 40 else text[:37] + '...'} ({kind})"


def integer(lo: int, hi: int):
    """An int in lo..hi; not a bool, not a float (1.0 is refused)."""
    def check(v, field):
        if type(v) is not int:
            raise FieldError(field, f"expected an integer in {lo}..{hi}, got {_show(v)}")
        if not lo <= v <= hi:
            raise FieldError(field, f"{v} is out of range {lo}..{hi}")
    return check


def boolean(v, field):
    if type(v) is not bool:
        raise FieldError(field, f"expected true or false, got {_show(v)}")


def one_of(choices, what: str = "one of"):
    """A string among ``choices``."""
    choices = tuple(choices)

    def check(v, field):
        if type(v) is not str:
            raise FieldError(field, f"expected a string ({what}), got {_show(v)}")
        if v not in choices:
            shown = ", ".join(choices) if len(choices) <= 8 else f"{', '.join(choices[:8])}, ..."
            raise FieldError(field, f"{v!r} is not {what} {shown}")
    return check


def nullable(inner):
    def check(v, field):
        if v is not None:
            inner(v, field)
    return check


def list_of(item, lengths):
    """A list whose length is in ``lengths`` (a range or a tuple) and whose items pass ``item``."""
    lengths = tuple(lengths)

    def check(v, field):
        if type(v) is not list:
            raise FieldError(field, f"expected a list, got {_show(v)}")
        if len(v) not in lengths:
            span = len(lengths) > 2 and lengths == tuple(range(lengths[0], lengths[-1] + 1))
            want = f"{lengths[0]}..{lengths[-1]}" if span else " or ".join(map(str, lengths))
            raise FieldError(field, f"expected {want} items, got {len(v)}")
        for i, x in enumerate(v):
            item(x, f"{field}[{i}]")
    return check


def record(fields: dict):
    """An object with exactly these keys (none missing, none extra), each checked in order."""
    def check(v, field=""):
        at = f"{field}." if field else ""
        if type(v) is not dict:
            raise FieldError(field or "(line)", f"expected an object, got {_show(v)}")
        for key in fields:
            if key not in v:
                raise FieldError(at + key, "missing")
        for key in v:
            if key not in fields:
                raise FieldError(at + str(key), "unexpected key")
        for key, inner in fields.items():
            inner(v[key], at + key)
    return check


MAX_NAME = 24  # characters of a player's name in a saved file's optional ``names`` (the page's limit)


def check_names(names, num_players: int, field: str = "names") -> None:
    """A saved file's optional ``names``: one per seat, 1 to `MAX_NAME` printable characters
    each (a seat record's header and a full match's deal line both may carry them)."""
    if (type(names) is not list or len(names) != num_players
            or not all(type(x) is str and 0 < len(x) <= MAX_NAME and x.isprintable() for x in names)):
        raise FieldError(field, f"expected {num_players} names of 1 to {MAX_NAME} printable characters")


def const(value, message: str | None = None):
    def check(v, field):
        if type(v) is not type(value) or v != value:
            raise FieldError(field, message or f"expected {json.dumps(value)}, got {_show(v)}")
    return check


INT32_MAX = 2 ** 31 - 1


@functools.lru_cache(maxsize=None)
def event_fields(num_players: int) -> dict:
    """The checks of a private event dict (`event_to_dict`) at a table of ``num_players``:
    the key set is exactly `EVENT_KEYS`; ``action`` is a protocol name."""
    n = rules.check_num_players(num_players)
    seat, role = integer(0, n - 1), one_of(rules.ROLES, "a role:")
    fields = {
        "step": integer(0, INT32_MAX), "turn": integer(0, rules.TURN_CAP - 1), "seat": seat,
        "phase": one_of(rules.PHASES, "a phase:"), "action": one_of(rules.all_protocol_names(n), "a protocol name:"),
        "forfeit": boolean, "actor": seat, "main_action": nullable(one_of(rules.MAIN_ACTIONS, "a main action:")),
        "target": nullable(seat), "claim": nullable(role),
        "challenge": nullable(record({"seat": seat, "role": role, "bluff_caught": boolean})),
        "redraw": nullable(role), "exchange_drawn": list_of(role, (0, 2)),
        "reveals": list_of(record({"seat": seat, "role": role, "index": integer(0, rules.HAND_SIZE - 1)}),
                           range(MAX_REVEALS + 1)),
        "eliminated": list_of(seat, range(n + 1)),
        "resolved": boolean, "turn_ended": boolean, "game_over": boolean,
    }
    return fields


@functools.lru_cache(maxsize=None)
def _event_check(num_players: int):
    return record(event_fields(num_players))


def check_event(d, num_players: int) -> None:
    """Raise `FieldError` unless ``d`` is a well-formed private event dict."""
    _event_check(num_players)(d)
