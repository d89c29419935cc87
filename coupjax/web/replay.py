"""Replay of a saved game on the page: the frames of `coupjax.tracker.replay`, in words.

A file is replayed once (`load_game`, kept while the file is unchanged) and each step
is one frame as the shown seat saw it -- the table before the step, the beliefs, the
advice when that seat was to decide -- plus the step in words and, for a full match,
the true hands (a seat record holds only what its seat knew).  A file with a bad line
replays up to it and says which line and why.
"""
from __future__ import annotations

import threading

from coupjax import rules
from coupjax.game import deal
from coupjax.jsonlines import ReplayError
from coupjax.tracker import record
from coupjax.tracker.replay import frame, load_game
from coupjax.web import advice_text
from coupjax.web import words
from coupjax.web.store import GameStore, UnknownGame
from coupjax.web.table import BadRequest

_CACHE: dict = {}
_LOCK = threading.Lock()


def public_error(err, name: str | None = None) -> str:
    """An unreadable file's reason in one line, naming the file by ``name`` (or not at all),
    never by its path on the server."""
    if isinstance(err, ReplayError):
        where = "; ".join(x for x in (name, f"line {err.line}" if err.line is not None else None) if x)
        text = f"{where}: " if where else ""
        text += f"{err.field}: {err.message}" if err.field else str(err.message)
    else:
        text = str(err)
    return " ".join(text.split())[:300]


def game_of(store: GameStore, gid: str):
    path = store.record_path(store.check_id(gid))
    stamp = path.stat().st_mtime_ns
    with _LOCK:
        hit = _CACHE.get(path)
        if hit and hit[0] == stamp:
            return hit[1]
    game = load_game(path)
    with _LOCK:
        _CACHE[path] = (stamp, game)
    return game


def record_names(store: GameStore, gid: str) -> list[str] | None:
    """The players' names a downloaded seat record carries (an upload of one)."""
    try:
        return record.names_of(store.read_record(gid))
    except (OSError, ValueError, UnknownGame):
        return None


def replay_frame(store: GameStore, gid: str, step: int, seat: int | None, use_search: bool = True,
                 style: str = "balanced") -> dict:
    meta = store.read_meta(gid) or {}
    game = game_of(store, gid)
    total = len(game.states)
    if total == 0:
        return {"id": gid, "kind": game.kind, "steps": 0, "error": public_error(game.error, gid) if game.error else None}
    n = game.num_players
    if game.seat is not None and seat is not None and seat != game.seat:
        raise BadRequest(f"seat: this seat record shows seat {game.seat} only", "seat")
    if seat is None:
        seat = game.seat if game.seat is not None else meta.get("seat", 0)
    if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat < n:
        raise BadRequest(f"seat: 0 to {n - 1}", "seat")
    if not isinstance(step, int) or not 0 <= step < total:
        raise BadRequest(f"step: 0 to {total - 1}", "step")
    names = meta.get("names") or record_names(store, gid) or [f"Seat {s}" for s in range(n)]
    fr = frame(game, step, seat, use_search)
    advice_for = "now" if fr["advice"] is not None else None
    state = game.states[step]
    if style != "balanced" and fr["advice"] is not None:
        fr["advice"] = advice_text.advice(state, seat, style, use_search)
    if fr["advice"] is None and fr["table"]["phase"] == "react":  # as the live page: if those before pass
        later = advice_text.after_passes(state, seat, advice_text.responders(state))
        if later is not None:
            fr["advice"], advice_for = advice_text.advice(later, seat, style, use_search), "if_passed"
    table = dict(fr["table"], num_players=n)
    true_hands = None
    if game.kind == "match":
        true_hands = [[rules.ROLES[c] for c in h] for h in deal.hands(game.states[step])]
    return {
        "id": gid, "kind": game.kind, "names": names, "seat": seat, "num_players": n, "step": step,
        "steps": total, "last_step": total - 1, "table": table, "beliefs": fr["beliefs"],
        "advice": fr["advice"], "advice_for": advice_for,
        "advice_words": advice_text.describe(fr["advice"], names, seat, table, table["hand"], style),
        "event": fr["event"], "event_text": words.event(names, fr["event"], seat) if fr["event"] else None,
        "true_hands": true_hands, "seats": [game.seat] if game.seat is not None else list(range(n)),
        "error": public_error(game.error, gid) if game.error else None,
        "log": [{"step": k, "text": words.event(names, e, seat if game.kind != "match" else None)}
                for k, e in enumerate(game.events)] if step == 0 else None,
    }
