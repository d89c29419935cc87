"""Seat records on disk: JSON lines, a header that holds only what the recording seat
knew, then one seat event per step (`coupjax.events`' schema and validators, with the
seat's own private parts only).

    {"type": "seat_record", "version": 1, "num_players": 4, "seat": 2,
     "hand": ["duke", "captain"], "first": 0}          (optional: "names", one per seat)
    {"type": "event", "step": 0, "seat": 0, "action": "tax", ...}

`read` checks every line's schema strictly (nothing coerced or skipped) and hands the
events to the caller, which replays them (`coupjax.tracker.Tracker.load`); every
failure is a `coupjax.jsonlines.ReplayError` (also `coupjax.match.ReplayError`) naming the file, the line and the field.
A full match (a deal line) is refused with a pointer to `Match.load`, as
`Match.load` refuses a seat record.
"""
from __future__ import annotations

import functools
import json

from coupjax import rules
from coupjax.events import MAX_NAME, FieldError, check_names, const, integer, list_of, one_of, record
from coupjax.jsonlines import ReplayError, json_line, loads
from coupjax.match import check_deal
from coupjax.tracker.entries import seat_event_fields

SEAT_RECORD = "seat_record"
VERSION = 1


def header(num_players: int, seat: int, hand, first: int) -> dict:
    return {"type": SEAT_RECORD, "version": VERSION, "num_players": num_players, "seat": seat,
            "hand": [rules.ROLES[c] for c in hand], "first": first}


def write(path, head: dict, events: list[dict]) -> None:
    with open(path, "w") as f:
        f.write(json.dumps(head) + "\n")
        for e in events:
            f.write(json.dumps({"type": "event", **e}) + "\n")


@functools.lru_cache(maxsize=None)
def _header_check(num_players: int):
    n = num_players
    return record({"type": const(SEAT_RECORD), "version": const(VERSION), "num_players": const(n),
                   "seat": integer(0, n - 1), "hand": list_of(one_of(rules.ROLES, "a role:"), (rules.HAND_SIZE,)),
                   "first": integer(0, n - 1)})


@functools.lru_cache(maxsize=None)
def _event_check(num_players: int):
    return record({"type": const("event", 'expected an event line ({"type": "event", ...})'),
                   **seat_event_fields(num_players)})


def check_header(d) -> None:
    """The header's schema (`FieldError` naming the field); a deal line is a full match."""
    if type(d) is not dict or "type" not in d:
        raise FieldError("type", f'the first line must be the header ({{"type": "{SEAT_RECORD}", ...}})')
    if d["type"] == "deal":
        raise FieldError("type", "this is a full match (a deal line), not a seat record: open it with "
                         "coupjax.match.Match.load or coupjax replay")
    const(SEAT_RECORD, f'the first line must be the header ({{"type": "{SEAT_RECORD}", ...}})')(d["type"], "type")
    if "version" not in d:
        raise FieldError("version", f"missing (this reader reads seat record version {VERSION})")
    if type(d["version"]) is not int or d["version"] != VERSION:
        raise FieldError("version", f"version {json.dumps(d['version'])} is not supported; this reader reads "
                         f"version {VERSION} only")
    if "num_players" not in d:
        raise FieldError("num_players", "missing")
    integer(rules.MIN_PLAYERS, rules.MAX_PLAYERS)(d["num_players"], "num_players")
    if "names" in d:  # optional: the players' names, as a page that saved the game knew them
        check_names(d["names"], d["num_players"])
        d = {k: v for k, v in d.items() if k != "names"}
    _header_check(d["num_players"])(d)


def read_header(path, lines: list[str]) -> dict:
    head = json_line(path, 1, lines[0])
    try:
        check_header(head)
    except FieldError as err:
        raise ReplayError(path, 1, err.field, err.message) from None
    return head


def events(path, lines: list[str], num_players: int):
    """Yield (line number, event dict) for the event lines, each checked against the schema."""
    check = _event_check(num_players)
    for lineno, line in enumerate(lines[1:], start=2):
        d = json_line(path, lineno, line)
        try:
            check(d)
        except FieldError as err:
            raise ReplayError(path, lineno, err.field, err.message) from None
        d.pop("type")
        yield lineno, d


def _check_first_line(head) -> None:
    """A seat record's header or a full match's deal line, by its type (FieldError otherwise)."""
    if type(head) is dict and head.get("type") == "deal":
        check_deal(head)
    else:
        check_header(head)


def with_names(data: bytes, names) -> bytes:
    """A seat record's or a full match's bytes with the players' ``names`` in its first
    line (a download that keeps them); anything else (a file that does not parse, a
    first line that has names) as it was."""
    first, sep, rest = data.partition(b"\n")
    try:  # the bounded parser: a saved file may be anything (60,000 '[' overflowed json.loads)
        head = loads(first.decode("utf-8"), "record", 1)
    except ValueError:
        return data
    if type(head) is not dict or head.get("type") not in (SEAT_RECORD, "deal") or "names" in head or not names:
        return data
    head["names"] = [str(x)[:MAX_NAME] for x in names]
    try:
        _check_first_line(head)
    except FieldError:
        return data
    return json.dumps(head).encode() + sep + rest


def names_of(data: bytes) -> list[str] | None:
    """The ``names`` of a seat record's header or a full match's deal line, if valid."""
    first = data.partition(b"\n")[0]
    try:
        head = loads(first.decode("utf-8"), "record", 1)
        _check_first_line(head)
    except (ValueError, FieldError):
        return None
    return head.get("names") if type(head) is dict else None
