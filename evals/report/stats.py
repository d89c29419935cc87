"""Sufficient statistics of a tested seat's games, and the rows the report prints.

A cell of the suite (one condition and seed, say) stores, per policy, sums over its
games (`game_sums`), so cells pool by adding them and the report can recompute every
rate and interval from the raw counts: ``games``, ``wins``, placement, episode
rewards (sums and sums of squares), decisions, bluffs and challenges with their
opportunities, entropy (nats summed over decisions).

Intervals: the win rate's is Wilson's over tables (`coupjax.metrics.wilson_interval`,
the arena's); means (placement, rewards) get ``mean +- 1.96 sd / sqrt(games)`` over
tables; across seeds, a Student-t interval over the per-seed values
(`coupjax.metrics.t_interval`).  Comparisons of trained configs: Welch's t on the
training-seed units' mean win rates (`unit_test`), whose false-positive rate is nominal with
three units a side where the hierarchical bootstrap's is not (tests/test_compare.py simulates
the null); paired comparisons of one unit a side: a hierarchical bootstrap over seeds and
tables (`paired_bootstrap`); either corrected for the number of comparisons one report ranks
(`holm`, `bonferroni_alpha`).
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


def unit_test(means_a, means_b, games_a: int | None = None, games_b: int | None = None,
              alpha: float = 0.05) -> dict:
    """A minus B on the mean win rates of their training-seed units, with a test whose
    false-positive rate stays at ``alpha`` with few units (tests/test_compare.py simulates
    the null at 3 and 5 units a side).

    The unit of noise is the training seed: each side's variance is the spread of its
    unit means over its ``k`` units (it holds the tables' noise too).  Both sides with
    several units: Welch's t (`scipy.stats.ttest_ind`, unequal variances), its p-value and
    its t interval on the Welch-Satterthwaite degrees of freedom.  It is chosen over an
    exact permutation test, which cannot go below p = 0.1 with three units a side, and
    over the hierarchical bootstrap, whose quantiles are normal-like where a t with about
    2 degrees of freedom is due (it rejects a true null about 19% of the time at a
    nominal 5%).  A side of one unit (a fixed policy, no training seeds) has only its
    tables' noise, the binomial ``p (1 - p)`` over its ``games`` tables (required then),
    added to the other side's; the degrees of freedom stay the other side's ``k - 1``
    (Satterthwaite's would grow with the fixed side's share and reject too often);
    one unit a side: a normal test over tables.  The pairing of the tables is not used,
    which only makes the test conservative.  Returns ``diff``, ``ci_low``, ``ci_high``,
    ``p_value``, ``df``, ``se``, ``units_a``, ``units_b``, ``test``."""
    from scipy.stats import t as student_t
    from scipy.stats import ttest_ind

    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    a, b = (np.asarray(x, np.float64).ravel() for x in (means_a, means_b))
    for name, m, games in (("a", a, games_a), ("b", b, games_b)):
        if m.size == 0:
            raise ValueError(f"side {name} has no units")
        if m.size == 1 and (not games or games < 2):
            raise ValueError(f"side {name} has one unit: give its number of tables (games_{name}) for its noise")
    diff = float(a.mean() - b.mean())
    out = {"diff": diff, "level": 1.0 - alpha, "units_a": int(a.size), "units_b": int(b.size)}
    if a.size > 1 and b.size > 1:
        res = ttest_ind(a, b, equal_var=False)
        ci = res.confidence_interval(1.0 - alpha)
        se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
        return dict(out, ci_low=float(ci.low), ci_high=float(ci.high), p_value=float(res.pvalue), df=float(res.df),
                    se=se, test="welch")

    def var_of_mean(m, games):
        return m.var(ddof=1) / m.size if m.size > 1 else float(m[0] * (1.0 - m[0])) / games

    se = math.sqrt(var_of_mean(a, games_a) + var_of_mean(b, games_b))
    df = max(a.size, b.size) - 1 if max(a.size, b.size) > 1 else math.inf
    if se == 0:
        return dict(out, ci_low=diff, ci_high=diff, p_value=1.0 if diff == 0 else 0.0, df=df, se=se, test="t")
    half = float(student_t.ppf(1.0 - alpha / 2.0, df)) * se
    return dict(out, ci_low=diff - half, ci_high=diff + half, p_value=float(2.0 * student_t.sf(abs(diff) / se, df)),
                df=df, se=se, test="t" if math.isfinite(df) else "z")


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
                                   comparisons: int = 1, between_sd: float = 0.0, units: int = 1,
                                   units_b: float | None = None, df: float | None = None) -> float:
    """The smallest win-rate difference a comparison of ``tables`` tables detects with
    probability ``power`` at level ``alpha`` (Bonferroni over ``comparisons``), for a
    criterion file and beside every ranking: ``(q(1 - alpha / 2m) + q(power)) * sd``, with
    ``sd**2 = 2 p (1 - p) / tables`` (unpaired tables: pairing only helps) ``+
    between_sd**2 (1 / units + 1 / units_b)`` (the spread of one unit's win rate over
    training seeds; ``units_b`` defaults to ``units``, ``math.inf`` for a fixed policy).
    ``q``: normal quantiles, or Student t ones on ``df`` degrees of freedom where the test
    is a t on few units (`unit_test`): with three units a side that is what the design
    can show, not what the normal's quantiles promise."""
    from scipy.stats import norm
    from scipy.stats import t as student_t

    units_b = units if units_b is None else units_b
    if tables < 1 or units < 1 or units_b < 1 or not 0 < p < 1 or not 0 < power < 1 or (df is not None and df <= 0):
        raise ValueError("need tables >= 1, units >= 1, df > 0 and p, power in (0, 1)")
    q = norm.ppf if df is None else (lambda x: student_t.ppf(x, df))
    z = q(1 - bonferroni_alpha(alpha, comparisons) / 2) + q(power)
    return float(z * math.sqrt(2 * p * (1 - p) / tables + between_sd ** 2 * (1 / units + 1 / units_b)))
