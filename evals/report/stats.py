"""Sufficient statistics of a tested seat's games, and the rows the report prints.

A cell of the suite (one condition and seed, say) stores, per policy, sums over its
games (`game_sums`), so cells pool by adding them and the report can recompute every
rate and interval from the raw counts: ``games``, ``wins``, placement, episode
rewards (sums and sums of squares), decisions, bluffs and challenges with their
opportunities, entropy (nats summed over decisions).

Intervals: the win rate's is Wilson's over tables (`coupjax.metrics.wilson_interval`,
the arena's); means (placement, rewards) get ``mean +- 1.96 sd / sqrt(games)`` over
tables; across seeds, a Student-t interval over the per-seed values
(`coupjax.metrics.t_interval`).
"""
from __future__ import annotations

import math

import numpy as np

from coupjax.metrics import t_interval, wilson_interval

SUM_KEYS = ("games", "wins", "placement", "placement_sq", "shaped", "shaped_sq", "win_reward", "decisions", "bluffs",
            "bluff_opportunities", "challenges", "challenge_opportunities", "entropy")


def game_sums(rows: dict) -> dict:
    """Sums over games of a tested seat's per-game values (`evals.report.play.seat_rows`)."""
    f = lambda x: np.asarray(x, np.float64)  # noqa: E731
    return {
        "games": int(len(rows["wins"])), "wins": int(np.sum(rows["wins"])),
        "placement": float(f(rows["placement"]).sum()), "placement_sq": float((f(rows["placement"]) ** 2).sum()),
        "shaped": float(f(rows["shaped"]).sum()), "shaped_sq": float((f(rows["shaped"]) ** 2).sum()),
        "win_reward": float(f(rows["win_reward"]).sum()),
        **{k: int(np.sum(rows[k])) for k in ("decisions", "bluffs", "bluff_opportunities", "challenges",
                                             "challenge_opportunities")},
        "entropy": float(f(rows["entropy"]).sum()),
    }


def add(a: dict | None, b: dict) -> dict:
    """Two `game_sums` pooled."""
    return dict(b) if a is None else {k: a[k] + b[k] for k in SUM_KEYS}


def _mean_ci(total: float, total_sq: float, n: int) -> tuple[float, float, float]:
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    mean = total / n
    var = max(total_sq / n - mean * mean, 0.0) * n / max(n - 1, 1)
    half = 1.96 * math.sqrt(var / n)
    return mean, mean - half, mean + half


def row(s: dict) -> dict:
    """The report's row of pooled sums: the raw counts beside every rate (``games``,
    ``wins``, ``win_rate``, ``ci95_low``, ``ci95_high``, ...)."""
    g = s["games"]
    low, high = wilson_interval(s["wins"], g)
    place = _mean_ci(s["placement"], s["placement_sq"], g)
    shaped = _mean_ci(s["shaped"], s["shaped_sq"], g)
    win_r = _mean_ci(s["win_reward"], s["win_reward"], g)  # a 0/1 reward: sum of squares = sum
    return {
        "games": g, "wins": s["wins"], "win_rate": s["wins"] / g if g else float("nan"),
        "ci95_low": low, "ci95_high": high,
        "mean_placement": place[0], "placement_ci95": [place[1], place[2]],
        "shaped_reward": shaped[0], "shaped_reward_ci95": [shaped[1], shaped[2]],
        "win_reward": win_r[0], "win_reward_ci95": [win_r[1], win_r[2]],
        "decisions": s["decisions"],
        "bluffs": s["bluffs"], "bluff_opportunities": s["bluff_opportunities"],
        "bluff_rate": s["bluffs"] / s["bluff_opportunities"] if s["bluff_opportunities"] else float("nan"),
        "challenges": s["challenges"], "challenge_opportunities": s["challenge_opportunities"],
        "challenge_rate": (s["challenges"] / s["challenge_opportunities"] if s["challenge_opportunities"]
                           else float("nan")),
        "action_entropy": s["entropy"] / max(s["decisions"], 1),
    }


def across_seeds(per_seed: list[dict], key: str = "win_rate") -> dict:
    """Student-t interval of ``key`` over per-seed rows (mean, ci95_low, ci95_high, sd, per_seed)."""
    vals = [r[key] for r in per_seed]
    bounds = (0.0, 1.0) if key.endswith("rate") else (-math.inf, math.inf)
    return t_interval(vals, bounds)
