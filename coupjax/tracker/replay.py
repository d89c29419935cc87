"""`coupjax replay FILE`: every step of a saved game for one seat, with its beliefs and advice.

A file is a full match (`coupjax.match.Match.save`) or a seat record
(`coupjax.tracker.Tracker.save`), told apart by its first line.  `load_game` replays
the valid lines (and keeps the `ReplayError` of the first bad one); `frame` is one
step as the shown seat saw it: the table before the step, the beliefs, the advice
when the seat was to decide (`coupjax.tracker.seat_report`) and the step's event;
`render` prints a frame with rich.
"""
from __future__ import annotations

import dataclasses
import json

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from coupjax import rules
from coupjax.jsonlines import ReplayError, first_line, lines_of
from coupjax.match import Match
from coupjax.tracker import seat_report
from coupjax.tracker.core import Tracker
from coupjax.tracker.entries import seat_event

MATCH_ARGS = ("num_players", "seed", "hands", "deck", "coins", "revealed", "current_player", "turn", "deck_shuffled")


@dataclasses.dataclass
class Game:
    """A replayed file: ``kind`` ("match" or "seat record"), the table size, the recording
    seat (seat records), the state before each step and after the last, each step's
    event (a full match's private event dicts, or a seat record's seat events), and the
    error of the first bad line (None if every line is good)."""

    kind: str
    num_players: int
    seat: int | None
    states: list
    events: list
    error: ReplayError | None


def _first_line(path):
    try:
        return first_line(path)
    except ReplayError:
        return None  # Match.load says why, with the line


def load_game(path) -> Game:
    """Replay ``path`` as far as its lines are valid (module doc)."""
    head = _first_line(path)
    if isinstance(head, dict) and head.get("type") == "seat_record":
        tracker, error = Tracker.load_prefix(path)
        if tracker is None:
            return Game("seat record", 0, None, [], [], error)
        states = [tracker.state(k) for k in range(tracker.num_steps + 1)]
        return Game("seat record", tracker.num_players, tracker.seat, states, list(tracker.events), error)
    try:
        Match.load(path)
        error, good = None, None
    except ReplayError as err:
        error, good = err, (err.line or 1) - 1  # no line: the file as a whole is wrong
    if good == 0:
        return Game("match", 0, None, [], [], error)
    lines = lines_of(path)
    lines = lines if good is None else lines[:good]
    deal = json.loads(lines[0])
    m = Match(**{k: deal[k] for k in MATCH_ARGS})
    states = [m.state]
    for line in lines[1:]:
        m.play(json.loads(line)["action"])
        states.append(m.state)
    return Game("match", m.num_players, None, states, list(m.events), error)


def frame(game: Game, step: int, seat: int, use_search: bool = True) -> dict:
    """Step ``step`` of ``game`` as ``seat`` saw it (JSON-able): the table before the step,
    the beliefs, the advice if ``seat`` was to decide, and the step's event (None after
    the last step)."""
    state = game.states[step]
    event = game.events[step] if step < len(game.events) else None
    if event is not None and game.kind == "match":
        ch = event["challenge"]
        own_redraw = ch is not None and ch["seat"] == seat and not ch["bluff_caught"]
        own_draw = bool(event["exchange_drawn"]) and event["actor"] == seat
        event = seat_event(event, seat, rules.role_index(event["redraw"]) if own_redraw else None,
                           [rules.role_index(x) for x in event["exchange_drawn"]] if own_draw else ())
    return {"step": step, "table": seat_report.table(state, seat), "beliefs": seat_report.beliefs(state, seat),
            "advice": seat_report.advice(state, seat, use_search), "event": event}


def describe(event: dict, seat: int) -> str:
    """One step in words, as ``seat`` saw it."""
    who = lambda s: "you" if s == seat else f"seat {s}"  # noqa: E731
    parts = [f"{who(event['seat'])}: {event['action']}" + (" (forfeit: outside the legal set)" if event["forfeit"] else "")]
    ch = event["challenge"]
    if ch is not None:
        parts.append(f"{who(ch['seat'])} {'bluffed' if ch['bluff_caught'] else 'held'} {ch['role']}")
    if event["redraw"]:
        parts.append(f"you draw {event['redraw']} in its place")
    for x in event["reveals"]:
        parts.append(f"{who(x['seat'])} reveal{'' if x['seat'] == seat else 's'} {x['role']}")
    if event["exchange_drawn"]:
        parts.append(f"you draw {', '.join(event['exchange_drawn'])}")
    for s in event["eliminated"]:
        parts.append(f"{who(s)} {'are' if s == seat else 'is'} out")
    if event["game_over"]:
        parts.append("the game is over")
    return "; ".join(parts)


def render(fr: dict, console: Console) -> None:
    """One frame for a person: the decision, a table of seats with their beliefs, the advice, the step."""
    t, seat = fr["table"], fr["table"]["seat"]
    n = len(t["coins"])
    if t["done"]:
        title = f"step {fr['step']} · turn {t['turn']} · game over: seat {t['winner']} wins"
    else:
        what = t["main_action"] and f" (seat {t['actor']}'s {t['main_action']}" + (
            f" on seat {t['target']}" if t["target"] is not None else "") + (
            f", blocked by seat {t['blocker']} with {t['block_role']}" if t["blocker"] is not None else "") + ")"
        title = f"step {fr['step']} · turn {t['turn']} · seat {t['current_player']} to {t['phase']}{what or ''}"
    table = Table(title=title, title_justify="left")
    for col in ("seat", "coins", "cards", "revealed", "ruled out", "P(holds): exact (CoupVisor)"):
        table.add_column(col)
    beliefs = {b["seat"]: b for b in fr["beliefs"]}

    def top(b):
        best = sorted(rules.ROLES, key=lambda r: -b["exact"][r])[:2]
        return ", ".join(f"{r} {b['exact'][r]:.2f} ({b['coupvisor'][r]:.2f})" for r in best)

    for s in range(n):
        cards = ", ".join(t["hand"] + [f"+{x}" for x in t["drawn"]]) if s == seat else str(t["hidden"][s])
        b = beliefs.get(s)
        table.add_row(f"{s}{' (you)' if s == seat else ''}", str(t["coins"][s]), cards, ", ".join(t["revealed"][s]),
                      ", ".join(t["disproven"][s]), top(b) if b else "")
    console.print(table)
    adv = fr["advice"]
    if adv:
        rec = adv.get("recommendation")
        if rec is not None:
            close = " (close call)" if rec["close_call"] else ""
            console.print(f"[bold]recommended:[/bold] {rec['action']}{close} · {rec['source']}. "
                          f"{escape(' '.join(rec['reasons']))}")
        if "challenge" in adv:
            console.print(f"[bold]the claim:[/bold] {escape(adv['challenge']['explanation'])}")
        if "action" in adv:
            console.print(f"[bold]action EV:[/bold] {escape(adv['action']['explanation'])}")
        if "search" in adv:  # the values only: the search's own pick is not a second recommendation
            values = ", ".join(f"{r['action']} {r['value']:+.2f} ± {r['se']:.2f}" for r in adv["search"]["actions"]
                               if r["value"] is not None)
            console.print(f"[bold]search values:[/bold] {escape(values or 'nothing to search')}")
    if fr["event"] is not None:
        console.print(f"-> {escape(describe(fr['event'], seat))}")
