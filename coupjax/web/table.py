"""A game at a real table, entered by taps: the tracker, the taps it allows, warnings, undo.

`TableGame` wraps a `coupjax.tracker.Tracker` of the player's seat.  `choices` turns
what the tracker expects next into taps in words; each tap is an entry
(`coupjax.tracker.entries`) and may carry questions (was it a bluff, which card was
shown).  `enter` hands the entry to the tracker: accepted, it is saved at once; when
the tracker says the step needs more facts (the card a seat revealed, the card you
drew), the page asks for them (`needs`); refused for a rule it breaks, the entry is
kept as a warning with that rule, to be corrected or dismissed, and the record stays
as it was.  Undo drops the last accepted entry and replays the others.

`needs` reads the tracker's refusal of an entry that lacks a fact (its field and, for
reveals, the count and seats its message names): the tracker has no call that lists
the facts a step needs, so this adapter asks it by trying.
"""
from __future__ import annotations

import copy
import json
import re
import time

from coupjax import rules
from coupjax.tracker import Entry, Tracker, TrackerError
from coupjax.tracker.record import header
from coupjax.web import advice_text
from coupjax.web import words
from coupjax.web.store import GameStore

ROLE_OPTIONS = [{"label": words.title(r), "value": r} for r in rules.ROLES]


MAX_WARNINGS = 50  # refused entries kept per game: the oldest settled ones go first, then the oldest


class BadRequest(ValueError):
    """A request the page never sends (a malformed entry, a bad set-up): 4xx, nothing changes."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message, self.field = message, field


def seat_names(names, n: int) -> list[str]:
    if names is None:
        names = []
    if not isinstance(names, list) or len(names) > n or not all(isinstance(x, str) for x in names):
        raise BadRequest(f"names: expected up to {n} strings", "names")
    out = [words.cut_name(x) or f"Seat {i}" for i, x in enumerate(names)]
    return out + [f"Seat {i}" for i in range(len(out), n)]


class TableGame:
    """One game at a real table (module doc)."""

    kind = "table"

    def __init__(self, store: GameStore, gid: str, meta: dict, tracker: Tracker):
        self.store, self.id, self.meta, self.tracker = store, gid, meta, tracker

    # ------------------------------------------------------------------ making
    @classmethod
    def create(cls, store: GameStore, num_players, names, seat, hand, first, style="balanced") -> "TableGame":
        if style not in advice_text.STYLES:
            raise BadRequest(f"style: one of {', '.join(advice_text.STYLES)}", "style")
        try:
            tracker = Tracker(num_players, seat, hand, first)
        except TrackerError as err:
            raise BadRequest(str(err), err.field) from None
        meta = {"kind": cls.kind, "version": 1, "num_players": tracker.num_players, "seat": tracker.seat,
                "hand": list(hand), "first": tracker.first, "names": seat_names(names, tracker.num_players),
                "style": style, "entries": [], "warnings": [], "created": time.time()}
        game = cls(store, store.new_id("table"), meta, tracker)
        game.save()
        return game

    @classmethod
    def load(cls, store: GameStore, gid: str, meta: dict) -> "TableGame":
        """Replay the saved entries (the record on disk is rewritten from them)."""
        tracker = Tracker(meta["num_players"], meta["seat"], meta["hand"], meta["first"])
        for e in meta["entries"]:
            tracker.add(e)
        return cls(store, gid, meta, tracker)

    def save(self) -> None:
        t = self.tracker
        self.meta.update(steps=t.num_steps, done=t.done)
        head = header(t.num_players, t.seat, t.hand, t.first)
        lines = [json.dumps(head)] + [json.dumps({"type": "event", **e}) for e in t.events]
        self.store.write(self.id, self.meta, lines)

    # ------------------------------------------------------------------ entering
    def enter(self, entry: dict, fixes: int | None = None) -> dict:
        """Apply one entry (module doc): {"status": "accepted" | "need" | "warning", ...}."""
        t = self.tracker
        try:
            Entry.parse(entry, t.num_players)
        except TrackerError as err:
            raise BadRequest(str(err), err.field) from None
        if fixes is not None and not any(w["id"] == fixes for w in self.meta["warnings"]):
            raise BadRequest(f"no warning {fixes} to fix", "fixes")
        try:
            t.add(entry)
        except TrackerError as err:
            asks = self.needs(entry, err)
            if asks:
                return {"status": "need", "entry": entry, "asks": asks, "fixes": fixes}
            return {"status": "warning", "warning": self._warn(entry, err, fixes)}
        self.meta["entries"].append(entry)
        for w in self.meta["warnings"]:
            if w["id"] == fixes:
                w["status"] = "corrected"
        self.save()
        return {"status": "accepted"}

    def _warn(self, entry: dict, err: TrackerError, fixes: int | None) -> dict:
        ws = self.meta["warnings"]
        if fixes is not None:  # a correction that breaks a rule too: the warning stays, with the new attempt
            w = next(w for w in ws if w["id"] == fixes)
            w.update(entry=entry, rule=err.message, field=err.field, text=self._entry_words(entry),
                     rule_text=self._named(err.message))
            w.setdefault("attempts", 1)
            w["attempts"] += 1
        else:
            w = {"id": 1 + max((x["id"] for x in ws), default=0), "entry": entry, "text": self._entry_words(entry),
                 "rule": err.message, "rule_text": self._named(err.message), "field": err.field,
                 "step": self.tracker.num_steps, "status": "open",
                 "time": time.time()}
            ws.append(w)
            bound_warnings(self.meta)
        self.save()
        return w

    def _named(self, message: str) -> str:
        """The tracker's message with seats named ("seat 2" -> "Cal")."""
        names = self.meta["names"]
        text = re.sub(r"\bseat (\d+)", lambda m: names[int(m.group(1))] if int(m.group(1)) < len(names)
                      else m.group(0), message)
        return re.sub(r"\b(a |an )?(duke|assassin|captain|ambassador|contessa)(s?)\b",
                      lambda m: (words.a_role(m.group(2)) if m.group(1) else words.title(m.group(2))) + m.group(3), text)

    def dismiss(self, wid: int) -> None:
        for w in self.meta["warnings"]:
            if w["id"] == wid:
                w["status"] = "dismissed"
                self.save()
                return
        raise BadRequest(f"no warning {wid}", "warning")

    def undo(self) -> dict:
        if not self.meta["entries"]:
            raise BadRequest("nothing to undo", "undo")
        entries = self.meta["entries"][:-1]
        t = self.tracker
        fresh = Tracker(t.num_players, t.seat, self.meta["hand"], t.first)
        for e in entries:
            fresh.add(e)
        undone = self.meta["entries"][-1]
        self.meta.setdefault("undone", []).append({"entry": undone, "step": t.num_steps, "time": time.time()})
        self.meta["entries"], self.tracker = entries, fresh
        self.save()
        return undone

    def set_style(self, style: str) -> None:
        if style not in advice_text.STYLES:
            raise BadRequest(f"style: one of {', '.join(advice_text.STYLES)}", "style")
        self.meta["style"] = style
        self.save()

    # ------------------------------------------------------------------ what to ask
    def needs(self, entry: dict, err: TrackerError) -> list[dict]:
        """The questions that complete an entry the tracker refused for a missing fact (module doc)."""
        names, me, t = self.meta["names"], self.tracker.seat, self.tracker
        f, msg = err.field, err.message
        if f == "reveals" and msg.startswith("this step reveals"):
            m = re.match(r"this step reveals (\d+) card", msg)
            seats = [int(s) for s in re.findall(r"seat (\d+)", msg.split("the entry gives")[0])]
            given = len(entry.get("reveals", []))
            if not m or given >= int(m.group(1)):
                return []
            seats = seats + [None] * (int(m.group(1)) - len(seats))
            return [self._reveal_ask(s, self._caught(entry, s)) for s in seats[given:]]
        if f == "reveals" and not entry.get("reveals") and msg.startswith("give the revealed card"):
            s = entry.get("seat", t.current_player)
            return [self._reveal_ask(s, self._caught(entry, s))]
        if f == "redraw" and entry.get("redraw") is None and "give the card" in msg:
            return [{"field": "redraw", "question": "Your claim was proven: which card did you draw in its place?",
                     "options": ROLE_OPTIONS}]
        if f == "drawn" and not entry.get("drawn") and "give them" in msg:
            return [{"field": "drawn", "question": f"Your exchange: which card did you draw ({k} of 2)?",
                     "options": ROLE_OPTIONS} for k in (1, 2)]
        if f == "bluff_caught" and entry.get("bluff_caught") is None and "needs its result" in msg:
            return [self._bluff_ask(names, me)]
        return []

    def _caught(self, entry: dict, s) -> set:
        """The roles seat ``s`` cannot reveal: those they were caught bluffing (before this
        entry, or by this entry's challenge)."""
        v = self.tracker.view()
        out = set(v["disproven"][s]) if s is not None else set()
        if entry.get("action") == "challenge" and entry.get("bluff_caught"):
            claimant = v["blocker"] if v["phase"] == "answer_block" else v["actor"]
            role = v["block_role"] if v["phase"] == "answer_block" else words.ROLE_OF.get(v["main_action"] or "")
            if claimant == s and role:
                out.add(role)
        return out

    def _reveal_ask(self, s, cannot=()) -> dict:
        names, me = self.meta["names"], self.tracker.seat
        if s == me:
            hand = self.tracker.own_hand()
            return {"field": "reveals", "seat": s, "question": "Which of your cards did you lose?",
                    "options": [{"label": words.title(r), "value": r} for r in dict.fromkeys(hand)] or ROLE_OPTIONS}
        q = f"Which card did {names[s]} reveal?" if s is not None else "Which card was revealed?"
        return {"field": "reveals", "seat": s, "question": q,
                "options": [o for o in ROLE_OPTIONS if o["value"] not in cannot] or ROLE_OPTIONS}

    def _bluff_ask(self, names, me, claimant=None, role=None) -> dict:
        v = self.tracker.view()
        if claimant is None:
            claimant = v["blocker"] if v["phase"] == "answer_block" else v["actor"]
            role = v["block_role"] if v["phase"] == "answer_block" else words.ROLE_OF.get(v["main_action"] or "", "")
        c = words.who(names, claimant, me)
        return {"field": "bluff_caught", "question": f"Did {c} show {words.a_role(role)}?",
                "options": [{"label": f"Yes: {c} showed {words.title(role)} (the challenger loses a card)", "value": False},
                            {"label": f"No: {c} was bluffing (and loses a card)", "value": True}]}

    def choices(self) -> list[dict]:
        """The taps the rules allow now, in words, with their questions (module doc)."""
        t = self.tracker
        ex = t.expects()
        if ex is None:
            return []
        names, me, v = self.meta["names"], t.seat, t.view()
        p, phase = ex["seat"], ex["phase"]
        out = []
        add = lambda label, entry, asks=(), kind="other": out.append(  # noqa: E731
            {"label": label, "entry": entry, "asks": list(asks), "kind": kind})
        if phase == "action":
            for a in ex["actions"]:
                add(words.main_action(names, p, a, me), {"seat": p, "action": a}, kind="action")
        elif phase in ("react", "answer_block"):
            main = rules.MAIN_ACTIONS.index(v["main_action"])
            hand = t.own_hand()
            if phase == "react":
                claim = int(rules.ACTION_CLAIM[main])
                for r in ex["responders"]:
                    if claim >= 0:
                        e = {"seat": r, "action": "challenge"}
                        asks = [self._bluff_ask(names, me)]
                        if v["actor"] == me:
                            e["bluff_caught"], asks = rules.ROLES[claim] not in hand, []
                        add(words.reaction(names, r, "challenge", v, me), e, asks, "challenge")
                    for role in rules.BLOCK_ROLES:
                        if rules.ACTION_BLOCKERS[main, role] and (not rules.BLOCK_BY_TARGET_ONLY[main] or r == v["target"]):
                            add(words.reaction(names, r, f"block:{rules.ROLES[role]}", v, me),
                                {"seat": r, "action": f"block:{rules.ROLES[role]}"}, kind="block")
                if len(ex["responders"]) > 1:
                    add(words.reaction(names, p, "pass", v, me), {"seat": p, "action": "pass"}, kind="pass")
            else:
                e = {"seat": p, "action": "challenge"}
                asks = [self._bluff_ask(names, me)]
                if v["blocker"] == me:
                    e["bluff_caught"], asks = v["block_role"] not in hand, []
                add(words.reaction(names, p, "challenge", v, me), e, asks, "challenge")
            add(words.all_passed(names, v, me), {"action": "all_passed"}, kind="all_passed")
        elif phase == "lose":
            if p == me:
                for i, role in enumerate(t.own_hand()):
                    add(f"Lose your {words.title(role)}", {"seat": me, "action": f"reveal:{i}"}, kind="reveal")
            else:  # one tap: the card they reveal (not one they were caught bluffing)
                for o in self._reveal_ask(p, set(v["disproven"][p]))["options"]:
                    add(f"{names[p]} reveals {o['label']}",
                        {"seat": p, "action": "reveal", "reveals": [{"seat": p, "role": o["value"]}]}, kind="reveal")
        elif phase == "exchange":
            if p == me:
                for a in ex["actions"]:
                    add(words.keep(a), {"seat": me, "action": a}, kind="keep")
            else:
                add(f"{names[p]} finishes the exchange", {"seat": p, "action": "keep"}, kind="keep")
        return out

    def _entry_words(self, entry: dict) -> str:
        names, me = self.meta["names"], self.tracker.seat
        v = self.tracker.view()
        a = entry.get("action", "?")
        s = entry.get("seat", v["current_player"])
        if a == "all_passed":
            text = words.all_passed(names, v, me)
        elif s is None:
            text = a
        else:
            text = words.action(names, s, a, v, me)
        if entry.get("bluff_caught") is not None:
            text += "; bluff caught" if entry["bluff_caught"] else "; the claim was true"
        for x in entry.get("reveals", []):
            role = x if isinstance(x, str) else x.get("role")
            seat = None if isinstance(x, str) else x.get("seat")
            text += f"; {'a card' if seat is None else words.who(names, seat, me)} revealed {words.title(str(role))}"
        if entry.get("redraw"):
            text += f"; you drew {words.title(entry['redraw'])}"
        if entry.get("drawn"):
            text += "; you drew " + " + ".join(words.title(r) for r in entry["drawn"])
        return text

    # ------------------------------------------------------------------ the page
    def page(self, use_search: bool = True, key=None, with_advice: bool = True) -> dict:
        """Everything the table screen shows (JSON-able); without ``with_advice`` the table
        alone, at once (the advice is still compiling: `coupjax.web.readiness`)."""
        t, names, me = self.tracker, self.meta["names"], self.tracker.seat
        view = t.view()
        style = self.meta["style"]
        hand = t.own_hand()
        adv, advice_for = None, None
        if with_advice and not t.done:
            state = t.state()
            if t.current_player == me:
                adv, advice_for = advice_text.advice(state, me, style, use_search, key), "now"
            elif view["expects"]["phase"] == "react":
                later = advice_text.after_passes(state, me, view["expects"]["responders"])
                if later is not None:
                    adv, advice_for = advice_text.advice(later, me, style, use_search, key), "if_passed"
        choices = self.choices()
        return {
            "id": self.id, "kind": self.kind, "names": names, "seat": me, "num_players": t.num_players,
            "style": style, "table": view, "hand": hand, "drawn": t.own_drawn(),
            "beliefs": t.beliefs() if with_advice else None,
            "advice": adv, "advice_for": advice_for,
            "advice_words": advice_text.describe(adv, names, me, view, hand, style,
                                                 choices if advice_for == "now" else None),
            "prompt": self._prompt(view), "choices": choices,
            "log": [{"step": k, "text": words.event(names, e, me)} for k, e in enumerate(t.events)],
            "warnings": copy.deepcopy(self.meta["warnings"]), "can_undo": bool(self.meta["entries"]),
            "done": t.done, "search": use_search,
        }

    def _prompt(self, v: dict) -> str:
        """What the table waits for; before a card loss, what led to it (the card a
        challenge showed), so the question does not come out of nowhere."""
        names, me, t = self.meta["names"], self.tracker.seat, self.tracker
        text = words.prompt(names, v, me)
        if v["phase"] == "lose" and t.events:
            last = words.event(names, t.events[-1], me)
            text = f"{last[0].upper() + last[1:]}. {text}"
        return text


def bound_warnings(meta: dict) -> None:
    """Keep at most `MAX_WARNINGS` warnings (a client refused again and again must not grow
    the game without end); how many were dropped is counted in ``warnings_dropped``."""
    ws = meta["warnings"]
    while len(ws) > MAX_WARNINGS:
        settled = [k for k, w in enumerate(ws) if w["status"] != "open"]
        ws.pop(settled[0] if settled else 0)
        meta["warnings_dropped"] = meta.get("warnings_dropped", 0) + 1
