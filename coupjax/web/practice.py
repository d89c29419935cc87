"""A practice match: the player against policies, advice on request.

An opponent is a registered policy by its name (`coupjax.policies.registry`) or an
exported checkpoint by its path under the folder the server's owner chose at start
(``coupjax serve --policies-dir DIR``): `opponent_policy`.  Nothing else -- no
``module:function`` (the client would choose code to import and call), no path
outside that folder (the answers would tell which folders exist) -- whether the
name comes from a request or from a saved game's file.

The match is a `coupjax.match.Match` (a random deal from the seed), saved whole after
every step, so it resumes exactly and replays with the true hands.  The bots move as
soon as it is their turn; each bot's action is drawn from its policy's logits with a
key folded from the seed and the step, so a resumed match plays on as it would have.
What the page shows the player is what the player's seat sees: other seats' private
choices are shown as their public view.
"""
from __future__ import annotations

import functools
import os
import time
from pathlib import Path

import jax
import numpy as np

from coupjax.inference import load_policy
from coupjax.match import Match
from coupjax.policies.registry import make_policy, policy_names
from coupjax.tracker import seat_report
from coupjax.tracker import public_view, seat_event
from coupjax import rules
from coupjax.web import advice_text
from coupjax.web import words
from coupjax.web.store import GameStore
from coupjax.web.table import BadRequest, seat_names

BOT_NAMES = ("Bea", "Cal", "Dan", "Eve", "Fay")  # the bots' names unless the player names them
MAX_BOT_STEPS = 2000  # a turn cap ends every match long before this


MAX_CHECKPOINTS = 200  # listed on the page
MAX_DEPTH = 4  # folders deep under --policies-dir that are searched for exports
EXPORT_FILE = "policy.json"  # what marks an export (`coupjax.inference`)


class UnknownOpponent(ValueError):
    """An opponent that is neither a registered name nor a checkpoint under the policies folder."""


def checkpoint_path(name: str, policies_dir) -> Path | None:
    """The export ``name`` names under ``policies_dir`` (a relative path of plain parts,
    resolved inside the folder, links included), else None."""
    if policies_dir is None or not isinstance(name, str) or not name or len(name) > 300 or "\0" in name:
        return None
    parts = Path(name).parts
    if Path(name).is_absolute() or any(p in ("..", ".", "") or p.startswith(".") for p in parts):
        return None
    root = Path(policies_dir).resolve()
    path = (root / name).resolve()
    if root not in path.parents:
        return None
    if (path / EXPORT_FILE).is_file() or (path / "export" / EXPORT_FILE).is_file():
        return path
    return None


def checkpoints(policies_dir) -> list[str]:
    """The exports under ``policies_dir`` by their names there (at most `MAX_CHECKPOINTS`)."""
    if policies_dir is None:
        return []
    root, out = Path(policies_dir), []
    for here, dirs, files in os.walk(root):
        deep = len(Path(here).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if deep < MAX_DEPTH else []
        if EXPORT_FILE in files:
            rel = Path(here).relative_to(root)
            name = str(rel.parent if rel.name == "export" and rel.parent != Path(".") else rel)
            if name != "." and name not in out:
                out.append(name)
            if len(out) >= MAX_CHECKPOINTS:
                break
    return out


def opponent_policy(spec: str, num_players: int, policies_dir=None):
    """The policy an opponent ``spec`` names (module doc); `UnknownOpponent` otherwise,
    with one message whatever was tried, so it tells nothing about the server's disk."""
    env = Match(num_players).env
    if isinstance(spec, str) and spec in policy_names():
        try:
            return make_policy(spec, env)
        except TypeError:  # a registered factory that needs an argument (selfplay_search:DIR)
            pass
    path = checkpoint_path(spec, policies_dir)
    if path is not None:
        return load_policy(path, num_players=num_players)
    where = " or a checkpoint under the server's --policies-dir" if policies_dir is not None else \
        " (the server was started without --policies-dir, so no checkpoint)"
    raise UnknownOpponent(f"{str(spec)[:100]!r} is not an opponent: give a registered policy "
                          f"({', '.join(policy_names())}){where}")


@functools.lru_cache(maxsize=16)
def bot(spec: str, num_players: int, policies_dir=None):
    """The jitted ``(key, state) -> action id`` of an opponent (cached per spec, table size and folder)."""
    policy = opponent_policy(spec, num_players, policies_dir)
    return jax.jit(lambda key, state: jax.random.categorical(key, policy(key, state)).astype(np.int32))


class PracticeGame:
    """One practice match (module doc)."""

    kind = "practice"

    def __init__(self, store: GameStore, gid: str, meta: dict, match: Match, policies_dir=None):
        self.store, self.id, self.meta, self.match = store, gid, meta, match
        self.policies_dir = None if policies_dir is None else str(policies_dir)

    @classmethod
    def create(cls, store: GameStore, num_players, names, seat, opponents, seed=None, style="balanced",
               policies_dir=None):
        if style not in advice_text.STYLES:
            raise BadRequest(f"style: one of {', '.join(advice_text.STYLES)}", "style")
        if isinstance(num_players, bool) or not isinstance(num_players, int) or not 2 <= num_players <= 6:
            raise BadRequest("num_players: 2 to 6", "num_players")
        n = num_players
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < n:
            raise BadRequest(f"seat: 0 to {n - 1}", "seat")
        if isinstance(opponents, str):
            opponents = [opponents] * (n - 1)
        if not isinstance(opponents, list) or len(opponents) != n - 1 or not all(isinstance(x, str) and x
                                                                                   for x in opponents):
            raise BadRequest(f"opponents: one policy spec, or {n - 1} (one per other seat)", "opponents")
        folder = None if policies_dir is None else str(policies_dir)
        for spec in dict.fromkeys(opponents):
            try:
                bot(spec, n, folder)
            except (ValueError, TypeError, OSError) as err:  # unknown, or a broken export
                raise BadRequest(f"opponents: {' '.join(str(err).split())[:600]}", "opponents") from None
        seed = int(time.time() * 1000) % (2 ** 31) if seed is None else seed
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 32:
            raise BadRequest("seed: 0 to 2**32-1", "seed")
        others = iter(opponents)
        specs = [None if s == seat else next(others) for s in range(n)]
        people = iter(BOT_NAMES)
        default = [("You" if s == seat else next(people)) for s in range(n)]
        given = [d if not x.strip() or x.startswith("Seat ") else x
                 for x, d in zip(seat_names(names, n), default)] if names else default
        meta = {"kind": cls.kind, "version": 1, "num_players": n, "seat": seat, "specs": specs, "seed": seed,
                "names": given, "style": style, "created": time.time(), "warnings": []}
        game = cls(store, store.new_id("practice"), meta, Match(n, seed), folder)
        game.play_bots()
        return game

    @classmethod
    def load(cls, store: GameStore, gid: str, meta: dict, policies_dir=None) -> "PracticeGame":
        return cls(store, gid, meta, Match.load(store.record_path(gid)), policies_dir)

    def save(self) -> None:
        m = self.match
        self.meta.update(steps=len(m.events), done=m.done)
        self.store.write(self.id, self.meta, m.save)

    def play_bots(self) -> None:
        """Let the bots play until it is the player's decision or the match is over; save."""
        m, me = self.match, self.meta["seat"]
        for _ in range(MAX_BOT_STEPS):
            if m.done or m.current_player == me:
                break
            p = m.current_player
            key = jax.random.fold_in(jax.random.PRNGKey(self.meta["seed"]), 1_000_003 + len(m.events))
            try:
                choose = bot(self.meta["specs"][p], m.num_players, self.policies_dir)
            except (ValueError, TypeError, OSError) as err:  # a saved game naming what this server does not offer
                raise BadRequest(f"opponents: {' '.join(str(err).split())[:600]}", "opponents") from None
            a = int(choose(key, m.state))
            m.play(rules.action_name(a, p, m.num_players))
        self.save()

    def act(self, action: str) -> None:
        m = self.match
        if m.done:
            raise BadRequest("the match is over", "action")
        if action not in m.legal_actions():
            raise BadRequest(f"action: {action!r} is not legal now; legal: {', '.join(m.legal_actions())}", "action")
        m.play(action)
        self.play_bots()

    def set_style(self, style: str) -> None:
        if style not in advice_text.STYLES:
            raise BadRequest(f"style: one of {', '.join(advice_text.STYLES)}", "style")
        self.meta["style"] = style
        self.save()

    def page(self, with_advice: bool = False, use_search: bool = True, key=None) -> dict:
        m, names, me = self.match, self.meta["names"], self.meta["seat"]
        state = m.state
        view = seat_report.table(state, me)
        view.update(num_players=m.num_players)
        adv = None
        if with_advice and not m.done and m.current_player == me:
            adv = advice_text.advice(state, me, self.meta["style"], use_search, key)
        hand = view["hand"]
        own = list(m.hands[me])  # your own cards, in the engine's order (reveal:i loses the i-th)
        choices = []
        if not m.done and m.current_player == me:
            choices = [{"label": words.action(names, me, a, view, me, own), "action": a} for a in m.legal_actions()]
        seen = [_seen_event(ev, me) for ev in m.events]
        log = [{"step": ev["step"], "text": words.event(names, x, me)} for ev, x in zip(m.events, seen)]
        mine = [k for k, ev in enumerate(m.events) if ev["seat"] == me]
        since = mine[-1] + 1 if mine else 0
        if m.done and since >= len(seen):  # your own move ended it: say that move
            since = max(0, len(seen) - 1)
        narration = words.narrate(names, seen[since:], me)
        return {"id": self.id, "kind": self.kind, "names": names, "seat": me, "num_players": m.num_players,
                "specs": self.meta["specs"], "style": self.meta["style"], "table": view, "hand": hand,
                "drawn": view["drawn"], "beliefs": seat_report.beliefs(state, me) if not m.done else [],
                "advice": adv, "advice_for": "now" if adv else None,
                "advice_words": advice_text.describe(adv, names, me, view, own, self.meta["style"]),
                "prompt": _prompt(names, me, view, m), "narration": narration,
                "bots": [None if x is None else words.policy_name(x) for x in self.meta["specs"]],
                "choices": choices, "log": log, "done": m.done,
                "search": use_search, "true_hands": m.hands if m.done else None}


def _seen_event(ev: dict, me: int) -> dict:
    """A step as the player's seat saw it (others' private choices as their public view)."""
    mine = seat_event(ev, me, rules.role_index(ev["redraw"]) if ev["redraw"] and _own_redraw(ev, me) else None,
                      [rules.role_index(x) for x in ev["exchange_drawn"]] if ev["actor"] == me else ())
    return mine if ev["seat"] == me else {**public_view(ev), "redraw": mine["redraw"],
                                          "exchange_drawn": mine["exchange_drawn"]}


def _own_redraw(ev: dict, me: int) -> bool:
    ch = ev["challenge"]
    return ch is not None and ch["seat"] == me and not ch["bluff_caught"]


def _prompt(names, me, view, m) -> str:
    if m.done:
        return f"Game over: {words.who(names, view['winner'], me)} won."
    if m.current_player != me:
        return f"{names[m.current_player]} to play."
    return {"action": "Your turn: choose an action.", "react": "Your decision: challenge, block or pass?",
            "answer_block": "Your action was blocked: do you challenge the block?",
            "lose": "You must lose a card: which one?",
            "exchange": "Choose the cards to keep."}.get(view["phase"], "Your decision.")
