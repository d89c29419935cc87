"""A practice match: the player against policies (any `coupjax.policies.spec.resolve_policy`
spec: a registered name, a run or export directory, module:function), advice on request.

The match is a `coupjax.match.Match` (a random deal from the seed), saved whole after
every step, so it resumes exactly and replays with the true hands.  The bots move as
soon as it is their turn; each bot's action is drawn from its policy's logits with a
key folded from the seed and the step, so a resumed match plays on as it would have.
What the page shows the player is what the player's seat sees: other seats' private
choices are shown as their public view.
"""
from __future__ import annotations

import functools
import json
import time

import jax
import numpy as np

from coupjax.match import Match
from coupjax.policies.spec import PolicySpecError, resolve_policy
from coupjax.tracker import advice as ADV
from coupjax.tracker import public_view, seat_event
from coupjax import rules as R
from coupjax.web import advice as A
from coupjax.web import words as W
from coupjax.web.store import GameStore
from coupjax.web.table import BadRequest, seat_names

MAX_BOT_STEPS = 2000  # a turn cap ends every match long before this


@functools.lru_cache(maxsize=16)
def bot(spec: str, num_players: int):
    """The jitted ``(key, state) -> action id`` of a policy spec (cached per spec and table size)."""
    env = Match(num_players).env
    policy = resolve_policy(spec, env)
    return jax.jit(lambda key, state: jax.random.categorical(key, policy(key, state)).astype(np.int32))


class PracticeGame:
    """One practice match (module doc)."""

    kind = "practice"

    def __init__(self, store: GameStore, gid: str, meta: dict, match: Match):
        self.store, self.id, self.meta, self.match = store, gid, meta, match

    @classmethod
    def create(cls, store: GameStore, num_players, names, seat, opponents, seed=None, style="balanced"):
        if style not in A.STYLES:
            raise BadRequest(f"style: one of {', '.join(A.STYLES)}", "style")
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
        for spec in dict.fromkeys(opponents):
            try:
                bot(spec, n)
            except (PolicySpecError, ValueError, TypeError, OSError) as err:
                raise BadRequest(f"opponents: {err}", "opponents") from None
        seed = int(time.time() * 1000) % (2 ** 31) if seed is None else seed
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 32:
            raise BadRequest("seed: 0 to 2**32-1", "seed")
        others = iter(opponents)
        specs = [None if s == seat else next(others) for s in range(n)]
        default = [("You" if s == seat else f"{specs[s]} {s}") for s in range(n)]
        given = seat_names(names, n) if names else default
        meta = {"kind": cls.kind, "version": 1, "num_players": n, "seat": seat, "specs": specs, "seed": seed,
                "names": given, "style": style, "created": time.time(), "warnings": []}
        game = cls(store, store.new_id("practice"), meta, Match(n, seed))
        game.play_bots()
        return game

    @classmethod
    def load(cls, store: GameStore, gid: str, meta: dict) -> "PracticeGame":
        return cls(store, gid, meta, Match.load(store.record_path(gid)))

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
            a = int(bot(self.meta["specs"][p], m.num_players)(key, m.state))
            m.play(R.action_name(a, p, m.num_players))
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
        if style not in A.STYLES:
            raise BadRequest(f"style: one of {', '.join(A.STYLES)}", "style")
        self.meta["style"] = style
        self.save()

    def page(self, with_advice: bool = False, use_search: bool = True, key=None) -> dict:
        m, names, me = self.match, self.meta["names"], self.meta["seat"]
        state = m.state
        view = ADV.table(state, me)
        view.update(num_players=m.num_players)
        adv = None
        if with_advice and not m.done and m.current_player == me:
            adv = A.advice(state, me, self.meta["style"], use_search, key)
        hand = view["hand"]
        choices = []
        if not m.done and m.current_player == me:
            own = m.hands[me]  # your own cards, in the engine's order (reveal:i loses the i-th)
            choices = [{"label": f"Lose your {W.title(own[int(a[7:])])}" if a.startswith("reveal:")
                        else W.action(names, me, a, view, me), "action": a} for a in m.legal_actions()]
        log = []
        for ev in m.events:
            mine = seat_event(ev, me, R.role_index(ev["redraw"]) if ev["redraw"] and _own_redraw(ev, me) else None,
                              [R.role_index(x) for x in ev["exchange_drawn"]] if ev["actor"] == me else ())
            log.append({"step": ev["step"], "text": W.event(names, mine if ev["seat"] == me else
                                                            {**public_view(ev), "redraw": mine["redraw"],
                                                             "exchange_drawn": mine["exchange_drawn"]}, me)})
        return {"id": self.id, "kind": self.kind, "names": names, "seat": me, "num_players": m.num_players,
                "specs": self.meta["specs"], "style": self.meta["style"], "table": view, "hand": hand,
                "drawn": view["drawn"], "beliefs": ADV.beliefs(state, me) if not m.done else [],
                "advice": adv, "advice_for": "now" if adv else None,
                "advice_words": A.describe(adv, names, me, view, hand, self.meta["style"]),
                "prompt": _prompt(names, me, view, m), "choices": choices, "log": log, "done": m.done,
                "search": use_search, "true_hands": m.hands if m.done else None}


def _own_redraw(ev: dict, me: int) -> bool:
    ch = ev["challenge"]
    return ch is not None and ch["seat"] == me and not ch["bluff_caught"]


def _prompt(names, me, view, m) -> str:
    if m.done:
        return f"Game over: {W.who(names, view['winner'], me)} won."
    return "Your decision." if m.current_player == me else f"{names[m.current_player]} to play."
