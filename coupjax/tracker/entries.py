"""What a seat enters, and the events it keeps: the entry schema and the seat's view of an event.

An *entry* is one thing that happened at the table, as the recording seat saw it
(`Entry`; a page builds it from taps, as a dict)::

    {"seat": 1, "action": "steal:2"}                      a main action (protocol names,
                                                            absolute seats: coupjax.rules)
    {"seat": 3, "action": "challenge", "bluff_caught": false, "reveals": ["contessa"]}
    {"seat": 2, "action": "block:captain"}                 seats before it in the reaction
                                                            order passed (implied)
    {"action": "all_passed"}                               every remaining responder passed
    {"seat": 3, "action": "reveal", "reveals": ["duke"]}   a chosen loss of influence
    {"seat": 0, "action": "keep"}                          another seat's exchange choice
    {"seat": 2, "action": "keep:captain+duke"}             the recording seat's own choice
    {"seat": 2, "action": "tax", "forfeit": true, "reveals": ["duke", "captain"]}

Fields: ``seat`` (optional: the seat to act, or a later responder); ``action``;
``bluff_caught`` (a challenge's result: the challenged seat did not hold the role);
``reveals`` (every card shown by a loss of influence in this step, in order: role
names, or ``{"seat": s, "role": r}`` to name the seat too); ``forfeit`` (the action was
outside the legal set); and the recording seat's own private cards: ``redraw`` (the
card it drew after its claim was proven) and ``drawn`` (the two cards its exchange
drew).  An entry's facts belong to its last step (the one that resolves "all passed").

The tracker keeps one *seat event* per engine step: the event dict of
`coupjax.events` as the recording seat saw it -- public, plus its own private parts
(its reveal and keep choices, reveal indices, redraw and exchange draw).
"""
from __future__ import annotations

import dataclasses
import functools

from coupjax import rules
from coupjax.events import FieldError, boolean, event_fields, integer, list_of, nullable, one_of, record

ALL_PASSED = "all_passed"
PRIVATE_PHASES = ("lose", "exchange")


class TrackerError(ValueError):
    """An entry the tracker refuses: ``message`` says which rule it breaks, ``field`` names
    the entry's field at fault (None: the entry as a whole); the record is unchanged."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(f"{field}: {message}" if field else message)
        self.message, self.field = message, field


@dataclasses.dataclass(frozen=True)
class Entry:
    """One entry (module doc).  Roles are role ids; ``reveals`` holds (seat or None, role)."""

    action: str
    seat: int | None = None
    bluff_caught: bool | None = None
    reveals: tuple = ()
    forfeit: bool = False
    redraw: int | None = None
    drawn: tuple = ()

    @classmethod
    def parse(cls, data, num_players: int) -> "Entry":
        """An `Entry` from a dict (strict: an unknown key, a wrong type or an unknown
        name raises `TrackerError` naming the field), or an `Entry` as it is."""
        if isinstance(data, Entry):
            return data
        if not isinstance(data, dict):
            raise TrackerError(f"an entry is an object, got {type(data).__name__}")
        unknown = [k for k in data if k not in ENTRY_KEYS]
        if unknown:
            raise TrackerError(f"unexpected key (an entry has {', '.join(ENTRY_KEYS)})", str(unknown[0]))
        n = num_players
        names = tuple(rules.all_protocol_names(n)) + ("reveal", "keep", ALL_PASSED)
        role = one_of(rules.ROLES, "a role:")
        try:
            if "action" not in data:
                raise FieldError("action", "missing")
            one_of(names, "a protocol name, reveal, keep or all_passed:")(data["action"], "action")
            nullable(integer(0, n - 1))(data.get("seat"), "seat")
            nullable(boolean)(data.get("bluff_caught"), "bluff_caught")
            boolean(data.get("forfeit", False), "forfeit")
            nullable(role)(data.get("redraw"), "redraw")
            list_of(role, (0, 2))(data.get("drawn", []), "drawn")
            items = data.get("reveals", [])
            list_of(_reveal_item(n), range(5))(items, "reveals")
        except FieldError as err:
            raise TrackerError(err.message, err.field) from None
        reveals = tuple((None, rules.role_index(x)) if isinstance(x, str) else (x["seat"], rules.role_index(x["role"]))
                        for x in items)
        return cls(action=data["action"], seat=data.get("seat"), bluff_caught=data.get("bluff_caught"),
                   reveals=reveals, forfeit=data.get("forfeit", False),
                   redraw=None if data.get("redraw") is None else rules.role_index(data["redraw"]),
                   drawn=tuple(rules.role_index(x) for x in data.get("drawn", [])))

    def to_dict(self) -> dict:
        """The entry as a JSON-able dict (only the fields it sets)."""
        out = {"action": self.action}
        if self.seat is not None:
            out["seat"] = self.seat
        if self.bluff_caught is not None:
            out["bluff_caught"] = self.bluff_caught
        if self.reveals:
            out["reveals"] = [rules.ROLES[r] if s is None else {"seat": s, "role": rules.ROLES[r]} for s, r in self.reveals]
        if self.forfeit:
            out["forfeit"] = True
        if self.redraw is not None:
            out["redraw"] = rules.ROLES[self.redraw]
        if self.drawn:
            out["drawn"] = [rules.ROLES[r] for r in self.drawn]
        return out


ENTRY_KEYS = ("seat", "action", "bluff_caught", "reveals", "forfeit", "redraw", "drawn")


def _reveal_item(n: int):
    role = one_of(rules.ROLES, "a role:")
    full = record({"seat": integer(0, n - 1), "role": role})

    def check(v, field):
        if isinstance(v, str):
            role(v, field)
        else:
            full(v, field)
    return check


def entry_from_event(event: dict, num_players: int, seat: int, keep: str | None = None,
                     redraw: str | None = None, drawn=None) -> Entry:
    """The one-step entry of an event dict (public, or a seat event of ``seat``).

    For the recording seat's own steps a public dict lacks its private cards: give its
    ``keep`` (a keep name), ``redraw`` and ``drawn`` (role names) where they apply.
    """
    action = event["action"]
    mine = event["seat"] == seat
    if mine and action.startswith("reveal:") and event["phase"] == "lose":
        action = "reveal"
    if mine and action == "keep" and keep is not None:
        action = keep
    ch = event["challenge"]
    redraw = event.get("redraw") or redraw
    drawn = event.get("exchange_drawn") or drawn or []
    return Entry(action=action, seat=event["seat"], bluff_caught=None if ch is None else ch["bluff_caught"],
                 reveals=tuple((x["seat"], rules.role_index(x["role"])) for x in event["reveals"]),
                 forfeit=event["forfeit"], redraw=None if redraw is None else rules.role_index(redraw),
                 drawn=tuple(rules.role_index(x) for x in drawn))


def seat_event(event: dict, seat: int, redraw=None, drawn=()) -> dict:
    """An engine event dict (private) as ``seat`` saw it: public, plus its own reveal or
    keep choice, its own reveal indices, and its own ``redraw`` / exchange ``drawn``
    (role ids, from the seat's entry: an engine replay of a seat record draws others)."""
    out = dict(event)
    mine = event["seat"] == seat
    if event["phase"] in PRIVATE_PHASES and not mine:
        out["action"] = "reveal" if event["phase"] == "lose" else "keep"
    elif event["phase"] in PRIVATE_PHASES and event["forfeit"]:
        out["action"] = "reveal" if event["phase"] == "lose" else "keep"
    out["redraw"] = rules.ROLES[redraw] if redraw is not None else None
    out["exchange_drawn"] = [rules.ROLES[r] for r in drawn]
    out["reveals"] = [x if x["seat"] == seat else {"seat": x["seat"], "role": x["role"]} for x in event["reveals"]]
    return out


def public_view(event: dict) -> dict:
    """A seat event (or an engine event dict) with every private part dropped, as
    `coupjax.events.event_to_dict(..., public=True)` gives it."""
    out = dict(event)
    if event["phase"] in PRIVATE_PHASES:
        out["action"] = "reveal" if event["phase"] == "lose" else "keep"
    out["redraw"], out["exchange_drawn"] = None, []
    out["reveals"] = [{"seat": x["seat"], "role": x["role"]} for x in event["reveals"]]
    return out


@functools.lru_cache(maxsize=None)
def seat_event_fields(num_players: int) -> dict:
    """The checks of a seat event line: the event schema of `coupjax.events`, with
    ``reveal`` / ``keep`` for another seat's private choice and reveals whose ``index``
    is present only for the recording seat's own cards (checked when applied)."""
    n = rules.check_num_players(num_players)
    fields = dict(event_fields(n))
    fields["action"] = one_of(tuple(rules.all_protocol_names(n)) + ("reveal", "keep"), "a protocol name, reveal or keep:")
    seat, role = integer(0, n - 1), one_of(rules.ROLES, "a role:")
    short = record({"seat": seat, "role": role})
    full = record({"seat": seat, "role": role, "index": integer(0, rules.HAND_SIZE - 1)})

    def item(v, field):
        (full if isinstance(v, dict) and "index" in v else short)(v, field)
    fields["reveals"] = list_of(item, range(5))
    return fields
