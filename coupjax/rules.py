"""The rules of Coup as data: roles, the main-action table, phases and the action ids.

Everything here is a constant (Python or NumPy); the engine turns the tables into
`jnp` arrays.  `docs/rules.md` (the rules page) is the source of every number.

Action ids (for ``n`` players, ``num_actions(n) == 32 + 3 * n``)::

    0 income  1 foreign_aid  2 tax  3 exchange
    4 + k            coup of the seat k places clockwise from the actor (k = 0..n-1)
    4 + n + k        assassinate, same relative target
    4 + 2n + k       steal, same relative target
    4 + 3n + 0..5    pass, challenge, block:duke, block:contessa, block:captain,
                     block:ambassador (``REACTION_NAMES``)
    10 + 3n + 0..1   reveal:0, reveal:1
    12 + 3n + 0..19  the keep multisets (``KEEPS``: 5 singles, then 15 pairs)

Targets are relative to the acting seat, so one network serves every seat; offset 0
(the actor itself) is a valid id but never legal.  Protocol names use absolute
seats; `action_name` / `action_id` convert given the acting seat.
"""
from __future__ import annotations

import itertools

import numpy as np

# ---------------------------------------------------------------- roles
ROLES = ("duke", "assassin", "captain", "ambassador", "contessa")
DUKE, ASSASSIN, CAPTAIN, AMBASSADOR, CONTESSA = range(5)
NUM_ROLES = 5
COPIES_PER_ROLE = 3
DECK_SIZE = NUM_ROLES * COPIES_PER_ROLE  # 15
HAND_SIZE = 2
START_COINS = 2
FORCED_COUP_COINS = 10
TURN_CAP = 200
MIN_PLAYERS, MAX_PLAYERS = 2, 6

# ---------------------------------------------------------------- main actions
MAIN_ACTIONS = ("income", "foreign_aid", "tax", "exchange", "coup", "assassinate", "steal")
INCOME, FOREIGN_AID, TAX, EXCHANGE, COUP, ASSASSINATE, STEAL = range(7)
NUM_MAIN_ACTIONS = 7
NO_ROLE = -1
NO_SEAT = -1

#                          income fa  tax exch coup ass steal
ACTION_COST = np.array([0, 0, 0, 0, 7, 3, 0], np.int32)
ACTION_CLAIM = np.array([NO_ROLE, NO_ROLE, DUKE, AMBASSADOR, NO_ROLE, ASSASSIN, CAPTAIN], np.int32)
ACTION_TARGETED = np.array([0, 0, 0, 0, 1, 1, 1], bool)
# Roles that may block each action, and whether only the target may block.
ACTION_BLOCKERS = np.zeros((NUM_MAIN_ACTIONS, NUM_ROLES), bool)
ACTION_BLOCKERS[FOREIGN_AID, DUKE] = True
ACTION_BLOCKERS[ASSASSINATE, CONTESSA] = True
ACTION_BLOCKERS[STEAL, CAPTAIN] = True
ACTION_BLOCKERS[STEAL, AMBASSADOR] = True
BLOCK_BY_TARGET_ONLY = np.array([0, 0, 0, 0, 0, 1, 1], bool)
# Actions that open the reaction window: claimed roles, and foreign aid (blockable).
OPENS_WINDOW = (ACTION_CLAIM >= 0) | ACTION_BLOCKERS.any(axis=1)
INCOME_GAIN = {INCOME: 1, FOREIGN_AID: 2, TAX: 3}
STEAL_AMOUNT = 2

# ---------------------------------------------------------------- phases
PHASES = ("action", "react", "answer_block", "lose", "exchange")
PH_ACTION, PH_REACT, PH_ANSWER_BLOCK, PH_LOSE, PH_EXCHANGE = range(5)
NUM_PHASES = 5

# ---------------------------------------------------------------- reactions / choices
REACTION_NAMES = ("pass", "challenge", "block:duke", "block:contessa", "block:captain", "block:ambassador")
PASS, CHALLENGE = 0, 1
BLOCK_ROLES = (DUKE, CONTESSA, CAPTAIN, AMBASSADOR)  # role of block:<x> at reaction index 2 + i
REVEAL_NAMES = ("reveal:0", "reveal:1")
# Keep multisets: every multiset of 1 or 2 roles, roles in role-index order.
KEEPS = tuple((r,) for r in range(NUM_ROLES)) + tuple(itertools.combinations_with_replacement(range(NUM_ROLES), 2))
NUM_KEEPS = len(KEEPS)  # 20
KEEP_COUNTS = np.zeros((NUM_KEEPS, NUM_ROLES), np.int32)
for _k, _roles in enumerate(KEEPS):
    for _r in _roles:
        KEEP_COUNTS[_k, _r] += 1
KEEP_SIZE = KEEP_COUNTS.sum(axis=1).astype(np.int32)
KEEP_NAMES = tuple("keep:" + "+".join(ROLES[r] for r in roles) for roles in KEEPS)


class ActionLayout:
    """Offsets of each block of action ids for a given number of players."""

    def __init__(self, num_players: int):
        n = num_players
        self.num_players = n
        self.coup = 4
        self.assassinate = 4 + n
        self.steal = 4 + 2 * n
        self.reaction = 4 + 3 * n  # pass, challenge, 4 blocks
        self.block = self.reaction + 2
        self.reveal = self.reaction + 6
        self.keep = self.reveal + 2
        self.num_actions = self.keep + NUM_KEEPS
        # Per id: main-action kind (or -1) and relative target offset (or -1).
        kind = np.full(self.num_actions, -1, np.int32)
        offset = np.full(self.num_actions, -1, np.int32)
        kind[:4] = [INCOME, FOREIGN_AID, TAX, EXCHANGE]
        for base, k in ((self.coup, COUP), (self.assassinate, ASSASSINATE), (self.steal, STEAL)):
            kind[base:base + n] = k
            offset[base:base + n] = np.arange(n)
        self.main_kind = kind
        self.target_offset = offset
        self.main_action_id = np.array([0, 1, 2, 3, self.coup, self.assassinate, self.steal], np.int32)


def num_actions(num_players: int) -> int:
    return ActionLayout(num_players).num_actions


def check_num_players(num_players: int) -> int:
    if not isinstance(num_players, (int, np.integer)) or not MIN_PLAYERS <= num_players <= MAX_PLAYERS:
        raise ValueError(f"num_players must be an int from {MIN_PLAYERS} to {MAX_PLAYERS}, got {num_players!r}")
    return int(num_players)


def action_name(action: int, actor: int, num_players: int) -> str:
    """Protocol name (absolute seats) of action id ``action`` taken by seat ``actor``."""
    lay = ActionLayout(num_players)
    a = int(action)
    if not 0 <= a < lay.num_actions:
        raise ValueError(f"action id {a} out of range 0..{lay.num_actions - 1}")
    if a < 4:
        return MAIN_ACTIONS[a]
    if a < lay.reaction:
        kind = MAIN_ACTIONS[lay.main_kind[a]]
        return f"{kind}:{(actor + int(lay.target_offset[a])) % num_players}"
    if a < lay.reveal:
        return REACTION_NAMES[a - lay.reaction]
    if a < lay.keep:
        return REVEAL_NAMES[a - lay.reveal]
    return KEEP_NAMES[a - lay.keep]


def action_id(name: str, actor: int, num_players: int) -> int:
    """Action id of protocol ``name`` for seat ``actor``; ValueError if not a protocol name."""
    lay = ActionLayout(num_players)
    table = _name_table(num_players)
    if not isinstance(name, str):
        raise ValueError(f"action name must be a string, got {name!r}")
    if ":" in name and name.split(":", 1)[0] in ("coup", "assassinate", "steal"):
        kind, seat = name.split(":", 1)
        if seat.isdigit() and 0 <= int(seat) < num_players and str(int(seat)) == seat:
            base = {"coup": lay.coup, "assassinate": lay.assassinate, "steal": lay.steal}[kind]
            return base + (int(seat) - actor) % num_players
        raise ValueError(f"{name!r} is not a protocol name: seat must be 0..{num_players - 1}")
    if name in table:
        return table[name]
    raise ValueError(f"{name!r} is not a protocol name")


def _name_table(num_players: int) -> dict:
    lay = ActionLayout(num_players)
    table = {MAIN_ACTIONS[i]: i for i in range(4)}
    table.update({nm: lay.reaction + i for i, nm in enumerate(REACTION_NAMES)})
    table.update({nm: lay.reveal + i for i, nm in enumerate(REVEAL_NAMES)})
    table.update({nm: lay.keep + i for i, nm in enumerate(KEEP_NAMES)})
    return table


def all_protocol_names(num_players: int) -> list[str]:
    """Every protocol name for a table of ``num_players`` (absolute seats)."""
    names = [MAIN_ACTIONS[i] for i in range(4)]
    for kind in ("coup", "assassinate", "steal"):
        names += [f"{kind}:{s}" for s in range(num_players)]
    return names + list(REACTION_NAMES) + list(REVEAL_NAMES) + list(KEEP_NAMES)


def role_index(name: str) -> int:
    try:
        return ROLES.index(name)
    except ValueError:
        raise ValueError(f"unknown role {name!r}; roles are {', '.join(ROLES)}") from None
