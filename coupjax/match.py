"""`Match`: a thin stateful wrapper over the jitted engine, by protocol names.

For people and programs that play, save and replay one match.  It runs the same
`Env.step` as everything else (compiled once per table size and shared by every
Match).  Saved matches are JSON lines: a deal line, then one event per step.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

import jax
import numpy as np

from coupjax.game import board
from coupjax.game import deal as P
from coupjax import rules as R
from coupjax.env import Env
from coupjax.events import event_from_dict, event_to_dict, last_event
from coupjax.state import State

FORMAT_VERSION = 1


@functools.lru_cache(maxsize=None)
def compiled(num_players: int):
    """(env, jitted init, step, make_position) for a table size, shared process-wide."""
    env = Env(num_players)
    return (env, jax.jit(env.init), jax.jit(env.step),
            jax.jit(functools.partial(P.make_position, num_players)))


def _roles(names, what: str) -> list[int]:
    if isinstance(names, str):
        raise ValueError(f"{what} must be a list of role names, got the string {names!r}")
    return [R.role_index(x) for x in names]


class Match:
    """One match, played by protocol names with absolute seats.

    ``Match(num_players=4, seed=0)`` deals from the seed; or give an explicit deal:
    ``hands=[["duke", "captain"], ...]``, ``deck=[...]`` (draw order, next first;
    default: the remaining cards shuffled by ``seed``), ``coins``, ``revealed``,
    ``current_player`` (seat to act) and ``turn`` (turns already played).  Reshuffle
    draws come from ``seed``, so a saved match replays exactly.
    """

    def __init__(self, num_players: int = 4, seed: int = 0, hands=None, deck=None, coins=None, revealed=None,
                 current_player: int = 0, turn: int = 0):
        n = R.check_num_players(num_players)
        self.num_players, self.seed = n, int(seed)
        self.env, init, self._step, position = compiled(n)
        self._key = jax.random.PRNGKey(self.seed)
        if hands is None:
            if deck is not None or revealed is not None:
                raise ValueError("deck and revealed may only be given together with hands")
            state = init(jax.random.fold_in(self._key, 0))
            if coins is not None or current_player or turn:
                raise ValueError("coins, current_player and turn need an explicit deal (hands=...)")
        else:
            state = position(*self._explicit(hands, deck, coins, revealed, current_player, turn))
        self.state: State = state
        self.events: list[dict] = []
        self._deal = self._deal_record(current_player, turn)

    # ------------------------------------------------------------------ set-up
    def _explicit(self, hands, deck, coins, revealed, current_player, turn):
        n = self.num_players
        if len(hands) != n:
            raise ValueError(f"hands must list {n} seats, got {len(hands)}")
        hand_ids = [_roles(h, f"hands[{s}]") for s, h in enumerate(hands)]
        revealed_ids = [[] for _ in range(n)] if revealed is None else [_roles(r, f"revealed[{s}]") for s, r in enumerate(revealed)]
        if len(revealed_ids) != n:
            raise ValueError(f"revealed must list {n} seats, got {len(revealed_ids)}")
        for s in range(n):
            if len(hand_ids[s]) + len(revealed_ids[s]) != R.HAND_SIZE:
                raise ValueError(f"seat {s} must have 2 cards in hand and revealed together")
        if deck is None:
            rest = np.bincount([c for h in hand_ids + revealed_ids for c in h], minlength=R.NUM_ROLES)
            deck_ids = [r for r in range(R.NUM_ROLES) for _ in range(max(0, R.COPIES_PER_ROLE - rest[r]))]
            np.random.default_rng(self.seed).shuffle(deck_ids)
        else:
            deck_ids = _roles(deck, "deck")
        P.check_cards(hand_ids, deck_ids, revealed_ids)
        coins = [R.START_COINS] * n if coins is None else [int(c) for c in coins]
        if len(coins) != n or min(coins) < 0:
            raise ValueError(f"coins must be {n} non-negative ints")
        if not 0 <= int(current_player) < n or not hand_ids[int(current_player)]:
            raise ValueError(f"current_player must be a seat with hidden cards, got {current_player!r}")
        if not 0 <= int(turn) < R.TURN_CAP:
            raise ValueError(f"turn must be 0..{R.TURN_CAP - 1}")
        return (P.hand_arrays(hand_ids, n), P.deck_array(deck_ids), np.asarray(coins, np.int32),
                P.hand_arrays(revealed_ids, n), int(current_player), int(turn))

    def _deal_record(self, current_player, turn) -> dict:
        return {"type": "deal", "version": FORMAT_VERSION, "num_players": self.num_players, "seed": self.seed,
                "hands": self.hands, "deck": self.deck, "coins": P.coins(self.state),
                "revealed": self.revealed, "current_player": int(current_player), "turn": int(turn)}

    # ------------------------------------------------------------------ reading
    @property
    def done(self) -> bool:
        return bool(self.state.terminated)

    @property
    def current_player(self):
        return None if self.done else int(self.state.current_player)

    @property
    def hands(self) -> list[list[str]]:
        return [[R.ROLES[c] for c in row] for row in P.hands(self.state)]

    @property
    def deck(self) -> list[str]:
        return [R.ROLES[c] for c in P.deck_order(self.state)]

    @property
    def drawn(self) -> list[str]:
        return [R.ROLES[c] for c in P.drawn(self.state)]

    @property
    def revealed(self) -> list[list[str]]:
        return [[R.ROLES[c] for c in row] for row in P.revealed(self.state)]

    def legal_actions(self) -> list[str]:
        """Protocol names of the legal actions (absolute seats); empty once done."""
        if self.done:
            return []
        seat = int(self.state.current_player)
        ids = np.flatnonzero(np.asarray(self.state.legal_action_mask))
        return [R.action_name(int(a), seat, self.num_players) for a in ids]

    def placements(self):
        return [int(s) for s in np.asarray(board.placements(self.state))] if self.done else None

    def view(self) -> dict:
        """A JSON-able public summary of the table."""
        s = self.state
        hidden = [len(h) for h in P.hands(s)]
        placements = self.placements()
        role = lambda r: R.ROLES[int(r)] if r >= 0 else None  # noqa: E731
        return {
            "turn": int(board.turn(s)), "current_player": self.current_player,
            "phase": "done" if self.done else R.PHASES[int(board.phase(s))],
            "coins": P.coins(s), "hidden": hidden, "revealed": self.revealed,
            "alive": [h > 0 for h in hidden], "done": self.done,
            "winner": placements[0] if placements else None, "placements": placements,
            "actor": int(board.actor(s)),
            "main_action": R.MAIN_ACTIONS[int(board.main_action(s))] if board.main_action(s) >= 0 else None,
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
            action = R.action_id(name, seat, self.num_players)
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
        """Replay a saved match exactly; a malformed or inconsistent line names its number."""
        path = Path(path)
        lines = path.read_text().splitlines()
        if not lines:
            raise ValueError(f"{path}: empty file, expected a deal line")

        def fail(lineno, msg):
            raise ValueError(f"{path}:{lineno}: {msg}")

        try:
            deal = json.loads(lines[0])
        except json.JSONDecodeError as err:
            fail(1, f"not JSON ({err.msg})")
        if not isinstance(deal, dict) or deal.get("type") != "deal":
            fail(1, 'the first line must be the deal ({"type": "deal", ...})')
        try:
            match = cls(num_players=deal["num_players"], seed=deal["seed"], hands=deal["hands"], deck=deal["deck"],
                        coins=deal["coins"], revealed=deal["revealed"], current_player=deal["current_player"],
                        turn=deal["turn"])
        except (KeyError, TypeError, ValueError) as err:
            fail(1, f"bad deal: {err!r}")
        for lineno, line in enumerate(lines[1:], start=2):
            if not line.strip():
                continue
            try:
                logged = json.loads(line)
            except json.JSONDecodeError as err:
                fail(lineno, f"not JSON ({err.msg})")
            if not isinstance(logged, dict) or logged.get("type") != "event" or "action" not in logged:
                fail(lineno, 'expected an event line ({"type": "event", "action": ...})')
            if match.done:
                fail(lineno, "event after the end of the match")
            if logged.get("seat") != match.current_player:
                fail(lineno, f"seat {logged.get('seat')!r} is not the current player {match.current_player}")
            try:
                event = match.play(logged["action"])
            except ValueError as err:
                fail(lineno, str(err))
            logged = {k: v for k, v in logged.items() if k != "type"}
            try:
                event_from_dict(logged, match.num_players)
            except (KeyError, TypeError, ValueError, IndexError) as err:
                fail(lineno, f"malformed event: {err!r}")
            if logged != event:
                diff = sorted(k for k in set(event) | set(logged) if event.get(k) != logged.get(k))
                fail(lineno, f"replay differs from the log in {', '.join(diff)}")
        return match
