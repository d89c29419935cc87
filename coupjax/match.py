"""`Match`: a thin stateful wrapper over the jitted engine, by protocol names.

For people and programs that play, save and replay one match.  It runs the same
`Env.step` as everything else (compiled once per table size and shared by every
Match).  Saved matches are JSON lines: a deal line, then one event per step.

The deal line holds everything the start state depends on, including whether the
deck counts as shuffled (a random deal's does: its draws take a uniform card, see
docs/rules.md "Deck order"), so every match, seeded or explicit, replays exactly.
`Match.load` is strict: each line is checked against its schema (`coupjax.events`'
validator) and replayed; any deviation raises a `ReplayError` naming the file, the
line and the field.  Nothing is coerced, truncated or skipped, and the file is read
under `coupjax.jsonlines`' bounds (a regular file, bounded lines, numbers and nesting).
"""
from __future__ import annotations

import functools
import json
import operator
from pathlib import Path

import jax
import numpy as np

from coupjax.game import board
from coupjax.game import deal
from coupjax import rules
from coupjax.env import Env
from coupjax.events import (EVENT_KEYS, FieldError, boolean, check_names, const, event_fields, event_to_dict,
                            integer, last_event, list_of, one_of, record)
from coupjax.jsonlines import ReplayError, json_line, lines_of  # noqa: F401 - ReplayError is public here too
from coupjax.state import State

FORMAT_VERSION = 2  # 2: the deal line records "deck_shuffled"
SEED_MAX = 2 ** 32 - 1  # jax.random.PRNGKey folds larger seeds onto these (without x64)
COIN_MAX = (1 << 19) - 1  # the result ranks coins exactly up to here (board.rank_score)


@functools.lru_cache(maxsize=None)
def compiled(num_players: int):
    """(env, jitted init, step, make_position) for a table size, shared process-wide."""
    env = Env(num_players)
    return (env, jax.jit(env.init), jax.jit(env.step),
            jax.jit(functools.partial(deal.make_position, num_players)))


def _int(field: str, v, lo: int, hi: int) -> int:
    """An int-like (not a bool, not a float) in lo..hi, else `FieldError`."""
    try:
        if isinstance(v, (bool, np.bool_)):
            raise TypeError
        v = operator.index(v)
    except TypeError:
        raise FieldError(field, f"expected an integer in {lo}..{hi}, got {v!r}") from None
    if not lo <= v <= hi:
        raise FieldError(field, f"{v} is out of range {lo}..{hi}")
    return v


def _roles(names, field: str) -> list[int]:
    if isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple)):
        raise FieldError(field, f"expected a list of role names, got {names!r}")
    out = []
    for i, x in enumerate(names):
        try:
            out.append(rules.role_index(x))
        except ValueError as err:
            raise FieldError(f"{field}[{i}]", str(err)) from None
    return out


def _per_seat(rows, field: str, n: int) -> list[list[int]]:
    if isinstance(rows, (str, bytes)) or not isinstance(rows, (list, tuple)) or len(rows) != n:
        raise FieldError(field, f"expected a list of {n} seats' role lists, got {rows!r}")
    return [_roles(r, f"{field}[{s}]") for s, r in enumerate(rows)]


class Match:
    """One match, played by protocol names with absolute seats.

    ``Match(num_players=4, seed=0)`` deals from the seed; or give an explicit deal:
    ``hands=[["duke", "captain"], ...]``, ``deck=[...]`` (draw order, next first;
    default: the remaining cards shuffled by ``seed``), ``coins``, ``revealed``,
    ``current_player`` (seat to act), ``turn`` (turns already played) and
    ``deck_shuffled`` (default False: draws follow ``deck`` until the first reshuffle;
    True: every draw takes a uniform card, as after a random deal).  Random draws come
    from ``seed`` (0..2**32-1), so a saved match replays exactly.  A bad argument
    raises `coupjax.events.FieldError` (a ValueError) naming it.
    """

    def __init__(self, num_players: int = 4, seed: int = 0, hands=None, deck=None, coins=None, revealed=None,
                 current_player: int = 0, turn: int = 0, deck_shuffled: bool | None = None):
        try:
            n = rules.check_num_players(num_players)
        except ValueError as err:
            raise FieldError("num_players", str(err)) from None
        self.num_players, self.seed = n, _int("seed", seed, 0, SEED_MAX)
        self.env, init, self._step, position = compiled(n)
        self._key = jax.random.PRNGKey(self.seed)
        if hands is None:
            for field, v in (("deck", deck), ("revealed", revealed), ("coins", coins)):
                if v is not None:
                    raise FieldError(field, "may only be given with an explicit deal (hands=...)")
            for field, v in (("current_player", current_player), ("turn", turn)):
                if v != 0:
                    raise FieldError(field, "may only be given with an explicit deal (hands=...)")
            if deck_shuffled not in (None, True):
                raise FieldError("deck_shuffled", "a random deal's deck counts as shuffled")
            state = init(jax.random.fold_in(self._key, 0))
        else:
            if deck_shuffled is not None and not isinstance(deck_shuffled, (bool, np.bool_)):
                raise FieldError("deck_shuffled", f"expected True or False, got {deck_shuffled!r}")
            state = position(*self._explicit(hands, deck, coins, revealed, current_player, turn),
                             bool(deck_shuffled))
        self.state: State = state
        self.events: list[dict] = []
        self._deal = self._deal_record()

    # ------------------------------------------------------------------ set-up
    def _explicit(self, hands, deck, coins, revealed, current_player, turn):
        n = self.num_players
        hand_ids = _per_seat(hands, "hands", n)
        revealed_ids = [[] for _ in range(n)] if revealed is None else _per_seat(revealed, "revealed", n)
        for s in range(n):
            if len(hand_ids[s]) + len(revealed_ids[s]) != rules.HAND_SIZE:
                raise FieldError(f"hands[{s}]", f"seat {s} must have 2 cards in hand and revealed together")
        if deck is None:
            rest = np.bincount([c for h in hand_ids + revealed_ids for c in h], minlength=rules.NUM_ROLES)
            deck_ids = [r for r in range(rules.NUM_ROLES) for _ in range(max(0, rules.COPIES_PER_ROLE - rest[r]))]
            np.random.default_rng(self.seed).shuffle(deck_ids)
        else:
            deck_ids = _roles(deck, "deck")
        try:
            deal.check_cards(hand_ids, deck_ids, revealed_ids)
        except ValueError as err:
            raise FieldError("hands/deck/revealed", str(err)) from None
        if coins is None:
            coins = [rules.START_COINS] * n
        elif isinstance(coins, (str, bytes)) or not isinstance(coins, (list, tuple, np.ndarray)) or len(coins) != n:
            raise FieldError("coins", f"expected {n} coin counts, got {coins!r}")
        coins = [_int(f"coins[{s}]", c, 0, COIN_MAX) for s, c in enumerate(coins)]
        current_player = _int("current_player", current_player, 0, n - 1)
        if not hand_ids[current_player]:
            raise FieldError("current_player", f"seat {current_player} has no hidden cards")
        turn = _int("turn", turn, 0, rules.TURN_CAP - 1)
        return (deal.hand_arrays(hand_ids, n), deal.deck_array(deck_ids), np.asarray(coins, np.int32),
                deal.hand_arrays(revealed_ids, n), current_player, turn)

    def _deal_record(self) -> dict:
        s = self.state
        return {"type": "deal", "version": FORMAT_VERSION, "num_players": self.num_players, "seed": self.seed,
                "hands": self.hands, "deck": self.deck, "deck_shuffled": deal.deck_shuffled(s), "coins": deal.coins(s),
                "revealed": self.revealed, "current_player": int(s.current_player), "turn": int(board.turn(s))}

    # ------------------------------------------------------------------ reading
    @property
    def done(self) -> bool:
        return bool(self.state.terminated)

    @property
    def current_player(self):
        return None if self.done else int(self.state.current_player)

    @property
    def hands(self) -> list[list[str]]:
        return [[rules.ROLES[c] for c in row] for row in deal.hands(self.state)]

    @property
    def deck(self) -> list[str]:
        return [rules.ROLES[c] for c in deal.deck_order(self.state)]

    @property
    def drawn(self) -> list[str]:
        return [rules.ROLES[c] for c in deal.drawn(self.state)]

    @property
    def revealed(self) -> list[list[str]]:
        return [[rules.ROLES[c] for c in row] for row in deal.revealed(self.state)]

    def legal_actions(self) -> list[str]:
        """Protocol names of the legal actions (absolute seats); empty once done."""
        if self.done:
            return []
        seat = int(self.state.current_player)
        ids = np.flatnonzero(np.asarray(self.state.legal_action_mask))
        return [rules.action_name(int(a), seat, self.num_players) for a in ids]

    def placements(self):
        return [int(s) for s in np.asarray(board.placements(self.state))] if self.done else None

    def view(self) -> dict:
        """A JSON-able public summary of the table."""
        s = self.state
        hidden = [len(h) for h in deal.hands(s)]
        placements = self.placements()
        role = lambda r: rules.ROLES[int(r)] if r >= 0 else None  # noqa: E731
        return {
            "turn": int(board.turn(s)), "current_player": self.current_player,
            "phase": "done" if self.done else rules.PHASES[int(board.phase(s))],
            "coins": deal.coins(s), "hidden": hidden, "revealed": self.revealed,
            "alive": [h > 0 for h in hidden], "done": self.done,
            "winner": placements[0] if placements else None, "placements": placements,
            "actor": int(board.actor(s)),
            "main_action": rules.MAIN_ACTIONS[int(board.main_action(s))] if board.main_action(s) >= 0 else None,
            "target": int(board.target(s)) if board.target(s) >= 0 else None,
            "blocker": int(board.blocker(s)) if board.blocker(s) >= 0 else None,
            "block_role": role(board.block_role(s)),
            "deck_size": int(board.deck_size(s)), "legal_actions": self.legal_actions(),
        }

    # ------------------------------------------------------------------ playing
    def play(self, name: str) -> dict:
        """Play ``name`` for the current player and return the step's event.

        A protocol name outside the legal set forfeits (as the rules say); a string
        that is no protocol name raises ValueError listing the legal ones.
        """
        if self.done:
            raise RuntimeError("the match is over")
        seat = int(self.state.current_player)
        try:
            action = rules.action_id(name, seat, self.num_players)
        except ValueError as err:
            raise ValueError(f"{err}; legal actions: {', '.join(self.legal_actions())}") from None
        key = jax.random.fold_in(self._key, len(self.events) + 1)
        self.state = self._step(self.state, np.int32(action), key)
        event = event_to_dict(last_event(self.state), self.num_players)
        self.events.append(event)
        return event

    # ------------------------------------------------------------------ files
    def save(self, path) -> None:
        """Write the deal and every event as JSON lines."""
        with open(path, "w") as f:
            f.write(json.dumps(self._deal) + "\n")
            for e in self.events:
                f.write(json.dumps({"type": "event", **e}) + "\n")

    @classmethod
    def load(cls, path) -> "Match":
        """Replay a saved match exactly, checking every line (`ReplayError` otherwise).

        A file cut after any complete line is a valid partial match; an error on any
        line fails the whole load (the valid lines before it are not returned).
        """
        path = Path(path)
        lines = lines_of(path, first="a deal line")
        deal = json_line(path, 1, lines[0])
        try:
            check_deal(deal)
            match = cls(**{k: deal[k] for k in _MATCH_ARGS})
        except FieldError as err:
            raise ReplayError(path, 1, err.field, err.message) from None
        check = _event_line_check(match.num_players)
        for lineno, line in enumerate(lines[1:], start=2):
            logged = json_line(path, lineno, line)
            try:
                check(logged)
            except FieldError as err:
                raise ReplayError(path, lineno, err.field, err.message) from None
            if match.done:
                raise ReplayError(path, lineno, "step", f"an event after the end of the match (at step "
                                  f"{len(match.events) - 1})")
            if logged["seat"] != match.current_player:
                raise ReplayError(path, lineno, "seat", f"{logged['seat']} is not the seat to act "
                                  f"({match.current_player})")
            event = match.play(logged["action"])  # a protocol name (checked): play cannot refuse it
            diff = [k for k in EVENT_KEYS if event[k] != logged[k]]
            if diff:
                k = diff[0]
                more = f" (also differs in {', '.join(diff[1:])})" if diff[1:] else ""
                raise ReplayError(path, lineno, k, f"the replay gives {json.dumps(event[k])}, the log "
                                  f"{json.dumps(logged[k])}{more}")
        return match


_MATCH_ARGS = ("num_players", "seed", "hands", "deck", "coins", "revealed", "current_player", "turn",
               "deck_shuffled")


@functools.lru_cache(maxsize=None)
def _deal_check(num_players: int):
    n = num_players
    roles = list_of(one_of(rules.ROLES, "a role:"), range(rules.HAND_SIZE + 1))
    return record({
        "type": const("deal"), "version": const(FORMAT_VERSION), "num_players": const(n),
        "seed": integer(0, SEED_MAX), "hands": list_of(roles, (n,)),
        "deck": list_of(one_of(rules.ROLES, "a role:"), range(rules.DECK_SIZE + 1)), "deck_shuffled": boolean,
        "coins": list_of(integer(0, COIN_MAX), (n,)), "revealed": list_of(roles, (n,)),
        "current_player": integer(0, n - 1), "turn": integer(0, rules.TURN_CAP - 1),
    })


def check_deal(d) -> None:
    """The deal line's schema; the type, the version and the table size come first, as
    the rest depends on them.  Optional: ``names``, the players' names (a download from
    the page keeps them)."""
    if type(d) is not dict or "type" not in d:
        raise FieldError("type", 'the first line must be the deal ({"type": "deal", ...})')
    if d["type"] == "seat_record":
        raise FieldError("type", f"this is a seat record of seat {d.get('seat')}, not a full match: open it with "
                         f"coupjax replay or coupjax.tracker")
    const("deal", 'the first line must be the deal ({"type": "deal", ...})')(d["type"], "type")
    if "version" not in d:
        raise FieldError("version", f"missing (this reader reads format version {FORMAT_VERSION})")
    if type(d["version"]) is not int or d["version"] != FORMAT_VERSION:
        raise FieldError("version", f"format version {json.dumps(d['version'])} is not supported; this reader "
                         f"reads version {FORMAT_VERSION} only")
    if "num_players" not in d:
        raise FieldError("num_players", "missing")
    integer(rules.MIN_PLAYERS, rules.MAX_PLAYERS)(d["num_players"], "num_players")
    if "names" in d:
        check_names(d["names"], d["num_players"])
        d = {k: v for k, v in d.items() if k != "names"}
    _deal_check(d["num_players"])(d)


@functools.lru_cache(maxsize=None)
def _event_line_check(num_players: int):
    return record({"type": const("event", 'expected an event line ({"type": "event", ...})'),
                   **event_fields(num_players)})
