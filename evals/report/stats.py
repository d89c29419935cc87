"""Sufficient statistics of a tested seat's games, and the rows the report prints.

A cell of the suite (one condition and seed, say) stores, per policy, sums over its
games (`game_sums`), so cells pool by adding them and the report can recompute every
rate and interval from the raw counts: ``games``, ``wins``, placement, episode
rewards (sums and sums of squares), decisions, bluffs and challenges with their
opportunities, entropy (nats summed over decisions).

Intervals: the win rate's is Wilson's over tables (`coupjax.metrics.wilson_interval`,
the arena's); means (placement, rewards) get ``mean +- 1.96 sd / sqrt(games)`` over
tables; across seeds, a Student-t interval over the per-seed values
(`coupjax.metrics.t_interval`).  Paired comparisons (`evals.compare`): a hierarchical
bootstrap over seeds, training seeds and tables (`paired_bootstrap`), corrected for the
number of comparisons one report ranks (`holm`, `bonferroni_alpha`).
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


def f1_interval(game, tp, fp, fn, n_boot: int = 1000, alpha: float = 0.05, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of F1 = 2 tp / (2 tp + fp + fn) over claims, the
    games resampled whole (a game's claims are not independent: the same hands, the same
    bots).  ``game``: each claim's game id; ``tp``, ``fp``, ``fn``: each claim's outcome."""
    _, g = np.unique(np.asarray(game), return_inverse=True)
    G = int(g.max()) + 1 if g.size else 0
    if G == 0:
        return float("nan"), float("nan")
    per = np.stack([np.bincount(g, np.asarray(x, np.float64), G) for x in (tp, fp, fn)], axis=1)  # [G, 3]
    rng = np.random.default_rng(seed)
    f1 = []
    for start in range(0, int(n_boot), 100):  # 100 resamples at a time: [100, G] counts
        w = rng.multinomial(G, np.full(G, 1.0 / G), size=min(100, int(n_boot) - start))
        t, f_p, f_n = (w @ per).T
        f1.append(np.where(2 * t + f_p + f_n > 0, 2 * t / np.maximum(2 * t + f_p + f_n, 1e-12), np.nan))
    lo, hi = np.nanquantile(np.concatenate(f1), [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


# ------------------------------------------------------------------ paired comparisons
def paired_bootstrap(a, b, n_boot: int = 2000, alpha: float = 0.05, seed: int = 0) -> dict:
    """A minus B over paired tables, with a hierarchical percentile bootstrap interval.

    ``a`` [units_a, seeds, tables] and ``b`` [units_b, seeds, tables]: a per-table value
    (a win, a placement) of each training-seed unit of A and of B, the same tables at the
    same [seed, table] (common random numbers: the pairing).  The point is the mean over
    tables of (A's unit mean - B's unit mean).  Each resample draws what varies, level by
    level: the table seeds, the units of A and of B (training seeds), then the tables
    within each drawn seed, so the interval counts training-seed noise as well as the
    tables'.  ``p_value``: two-sided, the resampled differences on the far side of 0.
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.ndim != 3 or b.ndim != 3 or a.shape[1:] != b.shape[1:] or 0 in a.shape or 0 in b.shape:
        raise ValueError(f"need a [units_a, seeds, tables] and b [units_b, seeds, tables] with the same seeds and "
                         f"tables, got {a.shape} and {b.shape}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    (ua, S, T), ub = a.shape, b.shape[0]
    rng = np.random.default_rng(seed)
    diffs = np.empty(int(n_boot))
    for i in range(int(n_boot)):
        s = rng.integers(0, S, S)
        t = rng.integers(0, T, (S, T))
        d = a[rng.integers(0, ua, ua)][:, s].mean(0) - b[rng.integers(0, ub, ub)][:, s].mean(0)  # [S, T]
        diffs[i] = np.take_along_axis(d, t, axis=1).mean()
    lo, hi = np.quantile(diffs, [alpha / 2.0, 1.0 - alpha / 2.0])
    far = min(np.sum(diffs <= 0), np.sum(diffs >= 0))
    return {"diff": float(a.mean(0).mean() - b.mean(0).mean()), "ci_low": float(lo), "ci_high": float(hi),
            "level": 1.0 - alpha, "p_value": float(min(1.0, 2.0 * (far + 1) / (n_boot + 1))), "n_boot": int(n_boot)}


def holm(p_values, alpha: float = 0.05) -> dict:
    """Holm's step-down correction of the p-values of the comparisons one report ranks:
    ``adjusted`` p-values (in the given order; compare each with ``alpha``) and ``reject``
    flags, which keep the chance of any false "beats" among them below ``alpha``."""
    p = np.asarray(p_values, np.float64)
    m = len(p)
    if m == 0:
        return {"adjusted": [], "reject": []}
    if ((p < 0) | (p > 1)).any():
        raise ValueError(f"p-values must lie in [0, 1], got {p.tolist()}")
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return {"adjusted": adjusted.tolist(), "reject": (adjusted <= alpha).tolist()}


def bonferroni_alpha(alpha: float, comparisons: int) -> float:
    """The per-comparison level that keeps ``comparisons`` intervals jointly at ``1 - alpha``."""
    if int(comparisons) != comparisons or comparisons < 1:
        raise ValueError(f"comparisons must be a positive integer, got {comparisons!r}")
    return alpha / comparisons


def smallest_detectable_difference(tables: int, p: float = 0.25, alpha: float = 0.05, power: float = 0.8,
                                   comparisons: int = 1, between_sd: float = 0.0, units: int = 1) -> float:
    """The smallest win-rate difference a paired comparison of ``tables`` tables detects
    with probability ``power`` at level ``alpha`` (Bonferroni over ``comparisons``), for
    a criterion file: ``(z(1 - alpha / 2m) + z(power)) * sd``, with ``sd**2 = 2 p (1 - p) /
    tables`` (unpaired tables: pairing only helps) ``+ 2 between_sd**2 / units`` (the spread
    of one unit's win rate over training seeds, when each side has ``units`` of them)."""
    from scipy.stats import norm

    if tables < 1 or units < 1 or not 0 < p < 1 or not 0 < power < 1:
        raise ValueError("need tables >= 1, units >= 1 and p, power in (0, 1)")
    z = norm.ppf(1 - bonferroni_alpha(alpha, comparisons) / 2) + norm.ppf(power)
    return float(z * math.sqrt(2 * p * (1 - p) / tables + 2 * between_sd ** 2 / units))
