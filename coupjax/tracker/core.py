"""`Tracker`: one seat's record of a real game, turned into an engine state.

The tracker keeps an engine `State` of the game and steps it with `Env.step` for
every entry, so the public side (coins, phases, claims, caught bluffs, the
observation) is the engine's own.  The hidden side is a *world* (`worlds.World`):
opponents' hands, their redraws and their exchange choices, chosen to fit the
whole record.  Before a step that touches cards the state's hidden cards are set
to the world's (`coupjax.game.deal.replace_hidden`), so the engine's challenge
results and reveals are the recorded ones, and after it to the world's cards after
the step (the engine's own random draws are replaced).  A new entry that the world
contradicts makes the tracker search for a new world (`worlds.find_world`); the
public side does not depend on the world, so nothing is replayed.  An entry no
world fits, or that the rules forbid, is refused with the rule it breaks
(`TrackerError`) and the record stays as it was.

The state the tracker reports counts its deck as shuffled, as a physical deck is,
so a search from it behaves as from the engine state of the same game.
"""
from __future__ import annotations

import dataclasses
import functools
from types import SimpleNamespace

import jax
import numpy as np

from coupjax import rules
from coupjax.events import event_to_dict, last_event
from coupjax.game import board
from coupjax.game import deal
from coupjax.match import compiled
from coupjax.jsonlines import ReplayError, lines_of
from coupjax.tracker import seat_report
from coupjax.tracker import record
from coupjax.tracker.entries import ALL_PASSED, Entry, TrackerError, entry_from_event, public_view, seat_event
from coupjax.tracker.rulebook import Known, check_card_ops, describe_op, why_illegal
from coupjax.tracker.card_timeline import CardRecord, SearchLimit, find_world, layout

PHASE_TEXT = {"action": "choose a main action", "react": "react", "answer_block": "answer the block",
              "lose": "choose a card to lose", "exchange": "choose the cards to keep"}
KEY = jax.random.PRNGKey(0)  # the engine's own draws are overwritten: any key will do


@functools.lru_cache(maxsize=None)
def functions(num_players: int) -> SimpleNamespace:
    """The jitted engine functions of a table size (shared with `coupjax.match`)."""
    env, _, step, position = compiled(num_players)
    return SimpleNamespace(env=env, step=step, position=position, patch=jax.jit(deal.replace_hidden),
                           observe=jax.jit(env.observe))


def _arrays(hands, drawn, deck, n):
    out = np.full(2, -1, np.int32)
    out[: len(drawn)] = drawn
    return deal.hand_arrays(hands, n), deal.deck_array(deck), out


def _role_ids(cards, field: str) -> tuple:
    if isinstance(cards, (str, bytes)) or not isinstance(cards, (list, tuple)) or len(cards) != rules.HAND_SIZE:
        raise TrackerError(f"expected your {rules.HAND_SIZE} cards (role names), got {cards!r}", field)
    out = []
    for i, c in enumerate(cards):
        try:
            out.append(c if isinstance(c, int) and not isinstance(c, bool) and 0 <= c < rules.NUM_ROLES
                       else rules.role_index(c))
        except (ValueError, TypeError):
            raise TrackerError(f"unknown role {c!r}; roles are {', '.join(rules.ROLES)}", f"{field}[{i}]") from None
    return tuple(out)


def _seat_arg(v, n: int, field: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < n:
        raise TrackerError(f"expected a seat 0..{n - 1}, got {v!r}", field)
    return int(v)


class Tracker:
    """The record of one game as ``seat`` sees it (module doc).

    ``Tracker(num_players, seat, hand, first=0)``: the table size (2-6), the recording
    seat, its two cards (role names, in the order it holds them: ``reveal:0`` is the
    first) and the seat that starts.  Feed it `add` (entries, `coupjax.tracker.entries`)
    or `add_event` (event dicts); read `view`, `observation`, `state`, `expects`, and
    `coupjax.tracker.seat_report` for beliefs and advice.
    """

    def __init__(self, num_players: int = 4, seat: int = 0, hand=("duke", "captain"), first: int = 0):
        try:
            n = rules.check_num_players(num_players)
        except ValueError as err:
            raise TrackerError(str(err), "num_players") from None
        self.num_players, self.seat = n, _seat_arg(seat, n, "seat")
        self.first = _seat_arg(first, n, "first")
        self.hand = _role_ids(hand, "hand")
        self._fn = functions(n)
        self._cards = CardRecord(n, self.seat, self.hand)
        self._world = find_world(self._cards)
        hands, drawn, deck = layout(self._cards, self._world)
        start = np.full(n, rules.START_COINS, np.int32)
        self._state = self._fn.position(deal.hand_arrays(hands, n), deal.deck_array(deck), start,
                                        np.full((n, 2), -1, np.int32), self.first, 0, True)
        self._states = [self._state]  # after each step (0: the start)
        self._marks = [0]  # card operations after each step
        self.events: list[dict] = []  # one seat event per step
        self.entries: list[dict] = []  # the accepted entries, as dicts

    # ------------------------------------------------------------------ reading
    @property
    def done(self) -> bool:
        return bool(self._state.terminated)

    @property
    def current_player(self):
        return None if self.done else int(self._state.current_player)

    @property
    def phase(self) -> str:
        return "done" if self.done else rules.PHASES[int(board.phase(self._state))]

    @property
    def num_steps(self) -> int:
        return len(self.events)

    def state(self, step: int | None = None):
        """The engine state after ``step`` steps (default: all), its hidden cards one world
        that fits the whole record, its deck shuffled."""
        if step is None or step == self.num_steps:
            return self._state
        hands, drawn, deck = layout(self._cards, self._world, self._marks[step])
        return self._fn.patch(self._states[step], *_arrays(hands, drawn, deck, self.num_players))

    def observation(self, step: int | None = None) -> np.ndarray:
        """The recording seat's observation (`coupjax.game.views.observe`)."""
        return np.asarray(self._fn.observe(self.state(step), self.seat))

    def own_hand(self) -> list[str]:
        return [rules.ROLES[c] for c in Known(self._cards).hand]

    def own_drawn(self) -> list[str]:
        return [rules.ROLES[c] for c in Known(self._cards).drawn]

    def world(self) -> dict:
        """The current world's hidden cards now (JSON-able; one of many that fit)."""
        hands, drawn, deck = layout(self._cards, self._world)
        name = lambda cs: [rules.ROLES[c] for c in cs]  # noqa: E731
        return {"hands": [name(h) for h in hands], "drawn": name(drawn), "deck": name(deck)}

    def legal_actions(self) -> list[str]:
        """The protocol names the seat to act may play (another seat's exchange: ``keep``)."""
        if self.done:
            return []
        p = int(self._state.current_player)
        if p != self.seat and board.phase(self._state) == rules.PH_EXCHANGE:
            return ["keep"]
        if p != self.seat and board.phase(self._state) == rules.PH_LOSE:
            return ["reveal"]
        ids = np.flatnonzero(np.asarray(self._state.legal_action_mask))
        return [rules.action_name(int(a), p, self.num_players) for a in ids]

    def expects(self) -> dict | None:
        """What the next entry is about: the seat to act, the phase and the choices (a page's taps)."""
        if self.done:
            return None
        phase = self.phase
        out = {"seat": self.current_player, "phase": phase, "actions": self.legal_actions()}
        if phase in ("react", "answer_block"):
            out["actions"].append(ALL_PASSED)
            out["responders"] = self._responders(include_current=True)
        return out

    def view(self) -> dict:
        """The table as the recording seat sees it now (JSON-able, absolute seats;
        `coupjax.tracker.seat_report.table`), with what the next entry is about."""
        out = seat_report.table(self._state, self.seat)
        out.update(num_players=self.num_players, first=self.first, steps=self.num_steps, expects=self.expects())
        return out

    def beliefs(self) -> list[dict]:
        """Per opponent with cards: CoupVisor's and the exact posterior's P(holds role)."""
        return seat_report.beliefs(self._state, self.seat)

    def advice(self, use_search: bool = True, key=None, mode: str = "expected", budget=None) -> dict | None:
        """The advice at the recording seat's decision (`coupjax.tracker.seat_report.advice`), else None."""
        return seat_report.advice(self._state, self.seat, use_search, key, mode, budget)

    # ------------------------------------------------------------------ files
    def save(self, path) -> None:
        """Write the seat record: the header (what this seat knew at the start) and every seat event."""
        record.write(path, record.header(self.num_players, self.seat, self.hand, self.first), self.events)

    @classmethod
    def load(cls, path) -> "Tracker":
        """Replay a seat record, checking every line (`coupjax.match.ReplayError` otherwise)."""
        tracker, error = cls.load_prefix(path)
        if error is not None:
            raise error
        return tracker

    @classmethod
    def load_prefix(cls, path):
        """(the tracker of the valid lines, the `ReplayError` of the first bad line or None);
        the tracker is None when the header itself is bad."""
        try:
            lines = lines_of(path)
            head = record.read_header(path, lines)
        except ReplayError as err:
            return None, err
        tracker = cls(head["num_players"], head["seat"], head["hand"], head["first"])
        try:
            for lineno, event in record.events(path, lines, tracker.num_players):
                try:
                    tracker.add_event(event, exact=True)
                except TrackerError as err:
                    raise ReplayError(path, lineno, err.field, err.message) from None
        except ReplayError as err:
            return tracker, err
        return tracker, None

    # ------------------------------------------------------------------ entering
    def add(self, entry) -> list[dict]:
        """Apply one entry (an `Entry` or its dict) and return the seat events of the steps it
        made; raise `TrackerError` (the rule it breaks) and keep the record as it was."""
        e = Entry.parse(entry, self.num_players)
        snap = self._snapshot()
        try:
            out = self._apply(e)
        except BaseException:
            self._restore(snap)
            raise
        self.entries.append(e.to_dict())
        return out

    def add_event(self, event: dict, keep: str | None = None, redraw: str | None = None, drawn=None,
                  exact: bool = False) -> dict:
        """Apply one step given as an event dict (public, `coupjax.events.event_to_dict(...,
        public=True)`, or a seat event) plus the recording seat's private cards where the
        dict lacks them (``keep``: its keep name; ``redraw``, ``drawn``: role names).  The
        step must give back the same event -- its public view, or with ``exact`` the whole
        seat event -- else `TrackerError` names the first field that differs."""
        e = entry_from_event(event, self.num_players, self.seat, keep, redraw, drawn)
        snap = self._snapshot()
        try:
            if self.done:
                raise TrackerError("the game is over")
            if e.seat != self.current_player:
                raise TrackerError(f"{e.seat} is not the seat to act ({self.current_player})", "seat")
            got = self._step(e.action, e)
            mine, theirs = (got, event) if exact else (public_view(got), public_view(event))
            diff = [k for k in theirs if k != "type" and mine.get(k) != theirs[k]]
            if diff:
                k = diff[0]
                raise TrackerError(f"the replay gives {mine.get(k)!r}, the event {theirs[k]!r}", k)
        except BaseException:
            self._restore(snap)
            raise
        self.entries.append(e.to_dict())
        return got

    def _snapshot(self):
        return (len(self._cards.ops), self._world, self._state, len(self._states), len(self.events))

    def _restore(self, snap) -> None:
        nops, self._world, self._state, nstates, nevents = snap
        del self._cards.ops[nops:], self._states[nstates:], self._marks[nstates:], self.events[nevents:]

    def _responders(self, include_current: bool = False) -> list[int]:
        """The live seats still to react, in order (after the seat to act, or from it)."""
        s, n = self._state, self.num_players
        actor, p = int(board.actor(s)), int(s.current_player)
        alive = [len(h) > 0 for h in deal.hands(s)]
        pos = (p - actor) % n
        return [(actor + k) % n for k in range(1, n) if alive[(actor + k) % n]
                and (k > pos or (include_current and k == pos))]

    def _apply(self, e: Entry) -> list[dict]:
        if self.done:
            raise TrackerError("the game is over")
        p, phase = self.current_player, int(board.phase(self._state))
        blank = Entry(action="pass")
        if e.action == ALL_PASSED:
            if phase not in (rules.PH_REACT, rules.PH_ANSWER_BLOCK):
                raise TrackerError(f"nobody is reacting now: seat {p} is to {PHASE_TEXT[rules.PHASES[phase]]}", "action")
            if e.seat is not None:
                raise TrackerError("all_passed names no seat", "seat")
            out = []
            while True:
                last = phase == rules.PH_ANSWER_BLOCK or not self._responders()
                out.append(self._step("pass", e if last else blank))
                if last:
                    return out
        seat = p if e.seat is None else e.seat
        out = []
        if seat != p:
            later = self._responders() if phase == rules.PH_REACT else []
            if seat not in later or e.action not in rules.REACTION_NAMES:
                raise TrackerError(f"seat {p} is to {PHASE_TEXT[rules.PHASES[phase]]} now, not seat {seat}", "seat")
            for _ in range(1 + later.index(seat)):  # the seat to react, then those before the named one
                out.append(self._step("pass", blank))
        out.append(self._step(e.action, e))
        return out

    # ------------------------------------------------------------------ one step
    def _action_id(self, name: str, f: Entry, hand: list) -> int:
        """The action id to send for ``name`` (a trial choice for another seat's private one)."""
        n, me, s = self.num_players, self.seat, self._state
        p, phase = int(s.current_player), int(board.phase(s))
        lay = rules.ActionLayout(n)
        mask = np.asarray(s.legal_action_mask)
        private = {"reveal": rules.PH_LOSE, "keep": rules.PH_EXCHANGE}
        if name in private and phase != private[name]:
            raise TrackerError(f"seat {p} is to {PHASE_TEXT[rules.PHASES[phase]]}, not to {name}", "action")
        if f.forfeit and name in private:
            return 0  # income: outside the legal set in both phases
        if name == "reveal":
            if not f.reveals:
                raise TrackerError("give the revealed card", "reveals")
            if p != me:
                return lay.reveal
            role = f.reveals[0][1]
            if role not in hand:
                raise TrackerError(f"you hold no {rules.ROLES[role]} to reveal (your hand: "
                                   f"{', '.join(rules.ROLES[c] for c in hand)})", "reveals")
            return lay.reveal + hand.index(role)
        if name == "keep":
            if p == me:
                raise TrackerError("give the cards you keep (keep:<role>+<role>)", "action")
            return lay.keep + int(np.flatnonzero(mask[lay.keep:])[0])
        if p != me and phase in private.values() and name.startswith(("keep:", "reveal:")):
            raise TrackerError(f"seat {p}'s choice is hidden from you: enter {name.split(':')[0]}", "action")
        a = rules.action_id(name, p, n)
        if f.forfeit and mask[a]:
            raise TrackerError(f"{name} is legal here: it does not forfeit", "forfeit")
        if not f.forfeit and not mask[a]:
            raise TrackerError(why_illegal(s, name, n), "action")
        return a

    def _step(self, name: str, f: Entry) -> dict:
        """One engine step of the seat to act (module doc); returns its seat event."""
        n, me, fn = self.num_players, self.seat, self._fn
        S = self._state
        p, phase = int(S.current_player), int(board.phase(S))
        known = Known(self._cards)
        if name.startswith("reveal:") and p == me and phase == rules.PH_LOSE and not f.forfeit:  # own card by index
            i = int(name.split(":")[1])
            if i >= len(known.hand):
                raise TrackerError(f"you hold {len(known.hand)} card(s): no reveal:{i}", "action")
            if not f.reveals:
                f = dataclasses.replace(f, reveals=((me, known.hand[i]),))
            elif f.reveals[0][1] != known.hand[i]:  # the index and the role name two different cards
                raise TrackerError(f"reveal:{i} is your {rules.ROLES[known.hand[i]]}, but the entry reports "
                                   f"{rules.ROLES[f.reveals[0][1]]}", "reveals")
            name = "reveal"
        aid = self._action_id(name, f, known.hand)
        challenge = name == "challenge" and not f.forfeit
        if challenge and f.bluff_caught is None:
            raise TrackerError("a challenge needs its result: bluff_caught true (the claim was a bluff) or false",
                               "bluff_caught")
        if not challenge and f.bluff_caught is not None:
            raise TrackerError("bluff_caught is the result of a challenge; this step has none", "bluff_caught")

        # a trial step: the flow (who loses, who draws) depends only on the challenge result
        hands, drawn, deck = layout(self._cards, self._world)
        if challenge:
            c = int(board.blocker(S)) if phase == rules.PH_ANSWER_BLOCK else int(board.actor(S))
            role = int(board.block_role(S)) if phase == rules.PH_ANSWER_BLOCK else int(rules.ACTION_CLAIM[board.main_action(S)])
            if c == me and (role in hands[c]) == f.bluff_caught:
                raise TrackerError(f"you hold {'a' if role in hands[c] else 'no'} {rules.ROLES[role]}: the challenge "
                                   f"{'cannot catch' if role in hands[c] else 'caught'} a bluff", "bluff_caught")
            if c != me and f.bluff_caught:
                hands[c] = [(x + 1) % rules.NUM_ROLES if x == role else x for x in hands[c]]
            elif c != me and role not in hands[c]:
                hands[c][0] = role
            S1 = fn.step(fn.patch(S, *_arrays(hands, drawn, deck, n)), aid, KEY)
        else:
            S1 = fn.step(S, aid, KEY)
        ev = event_to_dict(last_event(S1), n)
        ops = self._card_ops(ev, name, f, phase)
        if not ops:
            return self._commit(S1, ev, [], self._world, f)

        check_card_ops(self._cards, ops)
        rec = CardRecord(n, me, self.hand, self._cards.ops + ops)
        world = self._solve(rec, ops)
        order = {p: [r for _, r in f.reveals]} if f.forfeit and p != me else None
        pre = layout(rec, world, len(self._cards.ops), order)
        if name == "reveal" and p != me and not f.forfeit:
            aid = rules.ActionLayout(n).reveal + pre[0][p].index(f.reveals[0][1])
        if name == "keep" and p != me and not f.forfeit:
            aid = rules.ActionLayout(n).keep + rules.KEEPS.index(tuple(world.keep[len(rec.ops) - 1]))
        S2 = fn.step(fn.patch(S, *_arrays(*pre, n)), aid, KEY)
        ev2 = event_to_dict(last_event(S2), n)
        S2 = fn.patch(S2, *_arrays(*layout(rec, world), n))
        want = [r for _, r in f.reveals]
        got = [rules.role_index(x["role"]) for x in ev2["reveals"]]
        same = sorted(got) == sorted(want) if f.forfeit else got == want
        if not same or ev2["challenge"] != ev["challenge"] or len(ev2["reveals"]) != len(ev["reveals"]):
            raise AssertionError(f"tracker: the world's step gives {ev2}, the record {f}")  # a bug, never the entry
        return self._commit(S2, ev2, ops, world, f)

    def _card_ops(self, ev: dict, name: str, f: Entry, phase: int) -> list:
        """The step's card operations, with the entry's roles; checks the entry gives
        exactly the facts the step has (its reveals, the seat's own redraw and draw)."""
        me = self.seat
        ops = []
        ch = ev["challenge"]
        own_redraw = ch is not None and not ch["bluff_caught"] and ch["seat"] == me
        if own_redraw and f.redraw is None:
            raise TrackerError("your claim was proven: give the card you drew to replace it", "redraw")
        if not own_redraw and f.redraw is not None:
            raise TrackerError("you redraw only when a challenge proves your claim", "redraw")
        if ch is not None:
            c, role = ch["seat"], rules.role_index(ch["role"])
            if ch["bluff_caught"]:
                ops.append(("exclude", c, role, None))
            else:
                ops += [("need", c, role, None), ("redraw", c, role, (f.redraw,) if c == me else None)]
        seats = [x["seat"] for x in ev["reveals"]]
        if len(f.reveals) != len(seats):
            who = ", ".join(f"seat {s}" for s in seats)
            raise TrackerError(f"this step reveals {len(seats)} card(s)" + (f" ({who}, in order)" if seats else "")
                               + f", the entry gives {len(f.reveals)}", "reveals")
        for k, ((given, role), s) in enumerate(zip(f.reveals, seats)):
            if given is not None and given != s:
                raise TrackerError(f"the card revealed here is seat {s}'s, not seat {given}'s", f"reveals[{k}]")
            ops.append(("reveal", s, role, None))
        own_draw = bool(ev["exchange_drawn"]) and ev["actor"] == me
        if own_draw and len(f.drawn) != 2:
            raise TrackerError("your exchange draws 2 cards here: give them (drawn)", "drawn")
        if not own_draw and f.drawn:
            raise TrackerError("no exchange of yours draws cards in this step", "drawn")
        if ev["exchange_drawn"]:
            ops.append(("draw", ev["actor"], None, tuple(sorted(f.drawn)) if own_draw else None))
        if phase == rules.PH_EXCHANGE:
            kept = rules.KEEPS[rules.KEEP_NAMES.index(name)] if ev["seat"] == me and not f.forfeit else None
            ops.append(("return", ev["seat"], None, None) if f.forfeit else ("keep", ev["seat"], None, kept))
        return ops

    def _solve(self, rec: CardRecord, ops: list):
        try:
            world = find_world(rec, hint=self._world)
            if world is not None:
                return world
            base = len(rec.ops) - len(ops)
            for k in range(len(ops)):  # name the first operation no world allows
                if find_world(CardRecord(rec.num_players, rec.seat, rec.hand, rec.ops[: base + k + 1])) is None:
                    break
        except SearchLimit as err:
            raise TrackerError(f"{err}: the tracker cannot tell whether this entry fits the record") from None
        field = {"reveal": "reveals", "need": "bluff_caught", "exclude": "bluff_caught", "redraw": "redraw",
                 "draw": "drawn"}.get(ops[k][0], "action")
        raise TrackerError(f"{describe_op(ops[k], self.seat)}: no arrangement of the cards you have not seen fits "
                           f"the whole record (3 of each role; a hand changes only by losses, redraws and exchanges)",
                           field)

    def _commit(self, state, ev: dict, ops: list, world, f: Entry) -> dict:
        self._cards.ops.extend(ops)
        self._world, self._state = world, state
        self._states.append(state)
        self._marks.append(len(self._cards.ops))
        own_draw = bool(ev["exchange_drawn"]) and ev["actor"] == self.seat
        own_redraw = ev["challenge"] is not None and ev["challenge"]["seat"] == self.seat and not ev["challenge"]["bluff_caught"]
        out = seat_event(ev, self.seat, f.redraw if own_redraw else None, f.drawn if own_draw else ())
        self.events.append(out)
        return out
