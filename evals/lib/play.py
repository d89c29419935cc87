"""Tables of the evaluation suite, played in `coupjax.seat_tables`'s one table loop.

Every game of the suite (seat tables per condition, cross-play, mixed tables, other
table sizes) is a row ``(seat policy indices [n], game key)`` handed to the arena's
runner (`coupjax.seat_tables.make_table_runner`), the one loop that seats policies and counts
results (placement 1 = a win).  What this module adds is the batching: the rows of
many groups (every tested policy x its tables) are interleaved and played in batches,
so each policy's share of the seats in a batch is its share overall and the runner's
capacities (`coupjax.seat_tables.capacities`) follow it: one compilation serves every group
of a table size, and an expensive policy is computed only where it sits.  A game's
result depends on its key and its seat policies alone (the arena keys each game by its
index and step), so batching changes no result.

Per game and seat the runner's counts come back with two more: ``shaped``, the
episode reward of CoupVisor's shaped reward (`training.rewards.shaped`, B.1) and
``win_reward`` (its win reward).  The shaped reward of a transition is a difference of
the potential ``coins + opponents eliminated``, so the sum over a seat's transitions is
that potential at the end of its game (the end of the match, or the step that
eliminated it) minus its value at its first decision: ``coins_end - coins_start +
opponents eliminated before the seat's end``, which the final coins, alive flags and
placements give (tests/test_report.py recomputes it transition by transition).

The queue runner (`coupjax.seat_tables.make_queue_runner`) keeps ``batch`` slots busy: a
slot whose game ends takes the next, so a batch no longer waits for its longest game.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import seat_tables
from coupjax import rules
from coupjax.policies.pools import CONDITIONS, SCRIPTED_NAMES

SLACK = 1.3  # capacity over the expected demand per iteration
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


def episode_rewards(coins, alive, placement, finished, num_players: int):
    """(shaped f32[G, n], win f32[G, n]): episode rewards of every seat (module doc) from
    the final coins, alive flags and placements (every game starts at `rules.START_COINS`)."""
    coins, alive, placement = np.asarray(coins), np.asarray(alive, bool), np.asarray(placement)
    dead = (~alive).sum(axis=1, keepdims=True)
    # a survivor saw every eliminated opponent go; an eliminated seat those placed below it
    gone = np.where(alive, dead, num_players - placement)
    shaped = (coins - rules.START_COINS + gone).astype(np.float32)
    win = ((placement == 1) & np.asarray(finished, bool)[:, None]).astype(np.float32)
    return shaped, win


def slots_per_device(batch: int) -> int:
    """A batch of ``batch`` slots split over `jax.devices()`."""
    return max(8, int(batch) // len(jax.devices()))


class TablePlayer:
    """Plays rows of seat policy indices into ``entries`` (policies) at one table size,
    through `coupjax.seat_tables.make_queue_runner` (``batch`` slots in all, split over
    `jax.devices()`: one per CPU core when the host is split, games queued).

    ``play(idx int32[G, n], keys [G, 2], progress=None, task=None) -> dict`` of
    `STAT_KEYS` arrays [G, n] (NumPy), plus ``steps`` [G].  ``capacity`` (per entry) is
    fixed at construction from the seat shares of ``share_idx`` (rows like those to be
    played), and calls hold ``queue`` games (a short call is padded, the padding never
    played), so every call of a player, whatever its game count, uses one compilation.
    """

    def __init__(self, env, entries, share_idx, batch: int = 2000, slack: float = SLACK, capacity=None,
                 queue: int | None = None):
        self.env = env
        self.entries = list(entries)
        self.devices = jax.devices()
        self.batch = slots_per_device(batch)
        self.queue = int(queue or 16 * int(batch))
        self.run = seat_tables.make_queue_runner(env, self.entries, self.batch, devices=self.devices)
        self.capacity = (tuple(int(c) for c in capacity) if capacity is not None
                         else self.capacities_of(share_idx, len(self.entries), self.batch, slack))

    @staticmethod
    def capacities_of(share_idx, num_entries: int, batch: int, slack: float = SLACK) -> tuple:
        """Per entry, games served per iteration: its share of the seats in ``share_idx``
        (rows like those to be played) x ``batch`` x ``slack``, plus 8, rounded up to a
        multiple of 8 (0 for an entry seated nowhere).  With slots refilled the demand per
        iteration stays near share x batch, so a small slack suffices; games beyond a
        capacity wait an iteration (results do not change)."""
        idx = np.asarray(share_idx)
        share = np.bincount(idx.ravel(), minlength=num_entries)[:num_entries] / max(idx.size, 1)
        caps = np.where(share > 0, np.ceil((slack * share * batch + 8) / 8) * 8, 0)
        return tuple(int(min(c, batch)) for c in caps)

    def play(self, idx, keys, progress=None, task=None) -> dict:
        idx = np.asarray(idx, np.int32)
        keys = np.asarray(keys)
        G, n = idx.shape
        out = {k: [] for k in (*STAT_KEYS, "steps")}
        for start in range(0, G, self.queue):
            part, k = idx[start:start + self.queue], keys[start:start + self.queue]
            real = len(part)
            if real < self.queue:  # pad to one compiled shape; the padding is never played
                part = np.concatenate([part, np.repeat(part[-1:], self.queue - real, axis=0)])
                k = np.concatenate([k, np.repeat(k[-1:], self.queue - real, axis=0)])
            stats = jax.device_get(self.run(jnp.asarray(k), part, capacity=self.capacity, count=real))
            stats = {key: np.asarray(v)[:real] for key, v in stats.items()}
            if not stats["finished"].all():
                raise RuntimeError("a game did not finish within the arena's step bound")
            stats["shaped"], stats["win_reward"] = episode_rewards(stats["coins"], stats["alive"],
                                                                   stats["placement"], stats["finished"], n)
            for key in out:
                out[key].append(stats[key])
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
