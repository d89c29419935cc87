"""Tables of the evaluation suite, played in `coupjax.arena`'s one table loop.

Every game of the suite (seat tables per condition, cross-play, mixed tables, other
table sizes) is a row ``(seat policy indices [n], game key)`` handed to the arena's
runner (`coupjax.arena.make_table_runner`), the one loop that seats policies and counts
results (placement 1 = a win).  What this module adds is the batching: the rows of
many groups (every tested policy x its tables) are interleaved and played in batches,
so each policy's share of the seats in a batch is its share overall and the runner's
capacities (`coupjax.arena.capacities`) follow it: one compilation serves every group
of a table size, and an expensive policy is computed only where it sits.  A game's
result depends on its key and its seat policies alone (the arena keys each game by its
index and step), so batching changes no result.

Per game and seat the runner's counts come back with two more: ``shaped``, the
episode reward of CoupVisor's shaped reward (`training.rewards.shaped`, B.1) and
``win_reward`` (its win reward).  The shaped reward of a transition is a difference of
the potential ``coins + opponents eliminated``, so the sum over a seat's transitions is
that potential at the end of its game (the end of the match, or the step that
eliminated it) minus its value at its first decision: ``coins_end - coins_start +
opponents eliminated before the seat's end``, which the final state and the placements
give (tests/test_report.py recomputes it transition by transition).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import arena
from coupjax.game import board
from coupjax.policies.pools import CONDITIONS, SCRIPTED_NAMES

STAT_KEYS = ("wins", "placement", "decisions", "bluffs", "bluff_opportunities", "challenges",
             "challenge_opportunities", "entropy", "shaped", "win_reward")


def condition_weights(condition: str, names=SCRIPTED_NAMES) -> np.ndarray:
    """f64[len(names)]: the condition's seat weights over ``names``, normalised."""
    w = np.array([CONDITIONS[condition].get(x, 0.0) for x in names], np.float64)
    return w / w.sum()


def draw_condition_tables(num_games: int, num_players: int, seed: int, weights) -> tuple[np.ndarray, np.ndarray]:
    """(tested seat [N] uniform, opponents [N, n-1] drawn with ``weights``) from ``seed``."""
    rng = np.random.default_rng([int(seed), num_players, 1])
    seats = rng.integers(0, num_players, num_games)
    opp = rng.choice(len(weights), size=(num_games, num_players - 1), p=np.asarray(weights))
    return seats, opp


def episode_rewards(env, keys, final_state, placement):
    """(shaped f32[B, n], win f32[B, n]): episode rewards of every seat (module doc)."""
    n = env.num_players
    start = jax.vmap(lambda k: board.coins(env.init(jax.random.fold_in(k, arena.INIT_STREAM))))(keys)
    alive = jax.vmap(board.alive)(final_state)
    coins = jax.vmap(board.coins)(final_state)
    dead = (~alive).sum(axis=1, keepdims=True)
    # a survivor saw every eliminated opponent go; an eliminated seat those placed below it
    gone = jnp.where(alive, dead, n - placement)
    shaped = (coins - start + gone).astype(jnp.float32)
    win = ((placement == 1) & final_state.terminated[:, None]).astype(jnp.float32)
    return shaped, win


class TablePlayer:
    """Plays rows of seat policy indices into ``entries`` (policies) at one table size.

    ``play(idx int32[R, n], keys [R, 2], progress=None, task=None) -> dict`` of
    `STAT_KEYS` arrays [R, n] (NumPy), plus ``steps`` [R].  ``capacity`` (per entry) is
    fixed at construction from the seat shares of ``share_idx`` (rows like those to be
    played), so every call uses one compilation.
    """

    def __init__(self, env, entries, share_idx, batch: int = 2000, slack: float = 1.5, capacity=None):
        self.env = env
        self.entries = list(entries)
        self.batch = int(batch)
        self.run = arena.make_table_runner(env, self.entries)
        self.capacity = (tuple(int(c) for c in capacity) if capacity is not None
                         else self.capacities_of(share_idx, len(self.entries), self.batch, slack))
        self._rewards = jax.jit(lambda k, s, p: episode_rewards(env, k, s, p))

    @staticmethod
    def capacities_of(share_idx, num_entries: int, batch: int, slack: float = 1.5) -> tuple:
        """`coupjax.arena.capacities` of a batch drawn evenly from ``share_idx`` (rows
        like those to be played): the shares of the whole."""
        share_idx = np.asarray(share_idx)
        order = np.linspace(0, len(share_idx) - 1, batch).astype(int)
        return tuple(int(c) for c in arena.capacities(share_idx[order], num_entries, slack))

    def play(self, idx, keys, progress=None, task=None) -> dict:
        idx = np.asarray(idx, np.int32)
        R = len(idx)
        out = {k: [] for k in (*STAT_KEYS, "steps")}
        for start in range(0, R, self.batch):
            part = idx[start:start + self.batch]
            k = keys[start:start + self.batch]
            real = len(part)
            if real < self.batch:  # pad: one compiled shape
                part = np.concatenate([part, np.repeat(part[-1:], self.batch - real, axis=0)])
                k = jnp.concatenate([k, jnp.repeat(k[-1:], self.batch - real, axis=0)])
            final, stats = self.run(k, part, capacity=self.capacity)
            shaped, win = self._rewards(k, final, stats["placement"])
            stats = jax.device_get(dict(stats, shaped=shaped, win_reward=win))
            if not np.asarray(stats["finished"])[:real].all():
                raise RuntimeError("a game did not finish within the arena's step bound")
            for key in out:
                out[key].append(np.asarray(stats[key])[:real])
            if progress is not None:
                progress.advance(task, real)
        return {key: np.concatenate(v) for key, v in out.items()}


def interleave(groups: list[np.ndarray]) -> np.ndarray:
    """Row order that interleaves groups of rows (lengths may differ) evenly: returns
    (group, row) pairs [R, 2] sorted by each row's fractional position in its group."""
    pos, pairs = [], []
    for gi, g in enumerate(groups):
        m = len(g)
        pos.append((np.arange(m) + 0.5) / max(m, 1))
        pairs.append(np.stack([np.full(m, gi), np.arange(m)], axis=1))
    pos, pairs = np.concatenate(pos), np.concatenate(pairs)
    return pairs[np.argsort(pos, kind="stable")]


def seat_rows(stats: dict, seats) -> dict:
    """Per game, the tested seat's values of each `STAT_KEYS` array."""
    rows = np.arange(len(seats))
    return {k: np.asarray(stats[k])[rows, seats] for k in STAT_KEYS}
