"""The bot protocol's messages: JSON lines over a bot's stdin and stdout (docs/bots.md).

The arena (`coupjax.botarena.tournament`) builds each message from the engine's own
readers (the one event schema `coupjax.events.event_to_dict`, the one observation
parser `coupjax.observation.parse`, the protocol names of `coupjax.rules.action_name`) and
checks each reply here, so a mistake of a bot is a forfeit with a reason, never an
exception.  The readable observation and its text (`readable`, `table_text`) also
serve the PettingZoo and Gymnasium adapters' ``render_mode="ansi"``.
"""
from __future__ import annotations

import functools
import json

import jax
import numpy as np

from coupjax import jsonlines
from coupjax import rules
from coupjax.observation import parse

PROTOCOL_VERSION = 1
# Why a decision was forfeited (results count forfeits by these):
#   timeout   no answer within the move timeout (or the hello within HELLO_TIMEOUT)
#   crash     the bot's stdout closed (it exited or died)
#   garbage   the answer is not {"action": NAME} with a protocol name (or a bad hello)
#   illegal   a protocol name outside the legal set
#   version   the bot speaks another protocol version
REASONS = ("timeout", "crash", "garbage", "illegal", "version")
MAX_LINE = 1 << 16  # bytes of one reply line; longer is garbage
# An upper bound of every observation entry, for the adapters' spaces: one-hots are 0/1,
# coins stay below 13, and the counts (claims, blocks, challenges, renewals, turns) grow
# by at most one or two a turn over at most `rules.TURN_CAP` turns.
OBSERVATION_HIGH = float(4 * rules.TURN_CAP)


def dumps(message: dict) -> bytes:
    """One protocol line."""
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


def hello(name: str, match: int, move_timeout: float | None = None) -> dict:
    """The first message: the protocol version, the entrant's name, the match index and
    the seconds the bot has per decision (``--move-timeout``; an added field, so the
    protocol stays version 1)."""
    msg = {"type": "hello", "protocol": PROTOCOL_VERSION, "name": name, "match": match}
    if move_timeout is not None:
        msg["move_timeout"] = float(move_timeout)
    return msg


def start(match: int, seat: int, names: list[str], cards: list[str], coins: list[int]) -> dict:
    """The deal as the bot at ``seat`` sees it: its own cards, the entrants by seat."""
    return {"type": "start", "match": match, "seat": seat, "players": len(names), "names": list(names),
            "cards": list(cards), "coins": list(coins)}


def event(public: dict, private: dict, seat: int) -> dict:
    """The step's public event (`event_to_dict(..., public=True)`), with the private facts
    that belong to ``seat`` added to its own copy: its own lose or exchange choice, the
    card it redrew after proving a claim, the cards its exchange drew and the hand index
    of each card it revealed."""
    e = dict(public)
    if private["seat"] == seat:
        e["action"] = private["action"]
    challenge = private["challenge"]
    if private["redraw"] is not None and challenge and challenge["seat"] == seat:
        e["redraw"] = private["redraw"]
    if private["exchange_drawn"] and private["actor"] == seat:
        e["exchange_drawn"] = list(private["exchange_drawn"])
    e["reveals"] = [dict(mine) if mine["seat"] == seat else dict(pub)
                    for pub, mine in zip(public["reveals"], private["reveals"])]
    return {"type": "event", "event": e}


def _roles_of_counts(counts) -> list[str]:
    return [rules.ROLES[r] for r in range(rules.NUM_ROLES) for _ in range(int(counts[r]))]


def _role(r) -> str | None:
    return rules.ROLES[int(r)] if r >= 0 else None


@functools.lru_cache(maxsize=None)
def _parser(num_players: int):
    return jax.jit(functools.partial(parse, num_players=num_players))


def readable(observation, seat: int, num_players: int) -> dict:
    """``seat``'s observation (float32[obs]) in readable form (`readable_observation`)."""
    return readable_observation(jax.device_get(_parser(num_players)(observation)), seat)


def readable_observation(view, seat: int) -> dict:
    """An `coupjax.observation.ObsView` of ``seat`` (host arrays) in absolute seats and names.

    Per-seat entries are lists indexed by the absolute seat; ``cards`` are the seat's
    hidden cards by hand index (``reveal:i`` loses ``cards[i]``), ``drawn`` the two
    cards of its own exchange (else empty); ``claims`` / ``blocks`` count each role a
    seat claimed since its hand was last renewed.
    """
    v = {k: np.asarray(x) for k, x in vars(view).items()} if not isinstance(view, dict) else view
    n = int(v["coins"].shape[-1])
    absolute = lambda rel: [np.asarray(rel)[(s - seat) % n] for s in range(n)]  # noqa: E731
    to_abs = lambda rel: (int(rel) + seat) % n if rel >= 0 else None  # noqa: E731
    counts = lambda rows: [{rules.ROLES[r]: int(row[r]) for r in range(rules.NUM_ROLES) if row[r]}  # noqa: E731
                           for row in absolute(rows)]
    phase, main = int(v["phase"]), int(v["main_action"])
    return {
        "seat": seat, "turn": int(v["turn"]), "phase": rules.PHASES[phase] if phase >= 0 else None,
        "cards": [rules.ROLES[int(c)] for c in v["own_cards"] if c >= 0],
        "drawn": _roles_of_counts(v["drawn"]),
        "coins": [int(x) for x in absolute(v["coins"])], "hidden": [int(x) for x in absolute(v["hidden"])],
        "alive": [bool(x) for x in absolute(v["alive"])],
        "revealed": [_roles_of_counts(row) for row in absolute(v["revealed"])],
        "claims": counts(v["claims"]), "blocks": counts(v["blocks"]),
        "challenges_won": [int(x) for x in absolute(v["challenges_won"])],
        "challenges_lost": [int(x) for x in absolute(v["challenges_lost"])],
        "renewals": [int(x) for x in absolute(v["renewals"])],
        "actor": to_abs(v["actor"]), "main_action": rules.MAIN_ACTIONS[main] if main >= 0 else None,
        "target": to_abs(v["target"]), "claim": _role(v["claim"]), "blocker": to_abs(v["blocker"]),
        "block_role": _role(v["block_role"]), "deck_size": int(v["deck_size"]),
    }


def table_text(obs: dict, to_move: int | None = None, names=None, own_cards: bool = False) -> str:
    """A readable observation as a few lines of text: every seat's coins, cards and
    claims, the pending decision (and the observer's own cards with ``own_cards``)."""
    n = len(obs["coins"])
    names = names or [f"seat {s}" for s in range(n)]
    width = max(len(x) for x in names)
    lines = [f"turn {obs['turn']}, phase {obs['phase']}" + ("" if to_move is None else f", {names[to_move]} to move")]
    if obs["main_action"]:
        pending = f"{names[obs['actor']]}: {obs['main_action']}"
        pending += f" on {names[obs['target']]}" if obs["target"] is not None else ""
        pending += f" (claims {obs['claim']})" if obs["claim"] else ""
        if obs["blocker"] is not None:
            pending += f", blocked by {names[obs['blocker']]} as {obs['block_role']}"
        lines.append("pending: " + pending)
    for s in range(n):
        cards = "out" if not obs["alive"][s] else f"{obs['hidden'][s]} hidden"
        claims = ", ".join(f"{r} x{c}" for r, c in obs["claims"][s].items())
        lines.append(f"  {names[s]:<{width}}  {obs['coins'][s]:>2} coins  {cards:<8}  "
                     f"revealed: {', '.join(obs['revealed'][s]) or '-'}" + (f"  claims: {claims}" if claims else ""))
    if own_cards:
        lines.append(f"{names[obs['seat']]} holds: {', '.join(obs['cards']) or '-'}"
                     + (f"; drew {', '.join(obs['drawn'])}" if obs["drawn"] else ""))
    lines.append(f"deck: {obs['deck_size']} cards")
    return "\n".join(lines)


def decide(step: int, observation: dict, legal: list[str]) -> dict:
    return {"type": "decide", "step": step, "observation": observation, "legal": list(legal)}


def end(placements: list[int], seat: int) -> dict:
    """The result: seats in finishing order (`coupjax.game.board.placements`)."""
    return {"type": "end", "placements": list(placements), "winner": placements[0],
            "placement": placements.index(seat) + 1}


def check_hello(line: bytes | None) -> tuple[str | None, str]:
    """(None, "") for a good hello reply, else (reason, detail)."""
    if not line:
        return "crash", "closed its stdout before the hello"
    msg, why = _parse(line)
    if why:
        return "garbage", f"hello reply is not JSON we read ({why}): {_clip(line)}"
    if not isinstance(msg, dict) or msg.get("type") != "hello":
        return "garbage", f'hello reply is not {{"type": "hello", ...}}: {_clip(line)}'
    if msg.get("protocol") != PROTOCOL_VERSION:
        return "version", f"speaks protocol {msg.get('protocol')!r}, the arena speaks {PROTOCOL_VERSION}"
    return None, ""


def check_reply(line: bytes | None, legal: list[str], num_players: int) -> tuple[str | None, str | None, str]:
    """(action name to play, forfeit reason or None, detail) for a reply to ``decide``.

    A protocol name outside ``legal`` is played as sent (the engine forfeits it); any
    other mistake returns no name and the caller plays a forfeit for the bot.
    """
    if not line:
        return None, "crash", "closed its stdout"
    msg, why = _parse(line)
    if why:
        return None, "garbage", f"not JSON we read ({why}): {_clip(line)}"
    name = msg.get("action") if isinstance(msg, dict) else None
    if not isinstance(name, str):
        return None, "garbage", f'not {{"action": NAME}}: {_clip(line)}'
    if name in legal:
        return name, None, ""
    try:
        rules.action_id(name, 0, num_players)
    except ValueError:
        return None, "garbage", f"{name[:80]!r} is no protocol name"
    return name, "illegal", f"{name!r} is not legal now (legal: {', '.join(legal)})"


def _parse(line) -> tuple[object, str | None]:
    """(the reply as JSON, None), or (None, why not) for whatever the reply is: not UTF-8,
    not JSON, over the bounds of `coupjax.jsonlines` (a huge number, deep nesting) --
    a bot's reply never raises."""
    if len(line) > MAX_LINE:
        return None, f"a line over {MAX_LINE} bytes"
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else str(line)
        return jsonlines.loads(text, "reply", None), None
    except UnicodeDecodeError:
        return None, "not UTF-8"
    except jsonlines.ReplayError as err:
        return None, err.message
    except Exception as err:  # noqa: BLE001 - whatever a parser may raise on a hostile line
        return None, type(err).__name__


def _clip(line) -> str:
    text = line.decode(errors="replace") if isinstance(line, bytes) else str(line)
    text = text.strip()
    return repr(text if len(text) <= 80 else text[:77] + "...")
