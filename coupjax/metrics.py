"""Quality metrics for binary predictions and intervals (NumPy; JAX-free).

Shared by the advisor evaluation and the evaluation suite.  Inputs are 1-D
array-likes; labels ``y_true`` / ``y_pred`` may be bool or 0/1 numbers, scores
``p`` are probabilities of the positive class in ``[0, 1]``.  Outputs are plain
Python ``int`` / ``float`` / ``dict`` / ``list`` / ``tuple`` so they can be written
with :func:`json.dump`.  Undefined quantities are ``float('nan')`` (which
``json.dump`` writes as ``NaN``) unless a docstring says otherwise.

Validation: every input must be 1-D, paired inputs must have equal lengths
(otherwise ``ValueError`` naming both lengths), labels must be binary and scores
finite and within ``[0, 1]``.

SciPy (the ``report`` extra) is imported only by the two functions that use it
(`roc_auc`, `t_interval`): the main job's seat table needs none of it.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

__all__ = [
    "t_interval",
    "confusion",
    "precision_recall_f1",
    "outcome_accuracy",
    "brier",
    "reliability_bins",
    "ece",
    "roc_auc",
    "binary_report",
    "bootstrap_ci",
    "wilson_interval",
]

_NAN = float("nan")


# --------------------------------------------------------------------------- validation

def _as_1d(x, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    return a


def _check_lengths(**arrays: np.ndarray) -> None:
    items = list(arrays.items())
    n0_name, n0 = items[0][0], len(items[0][1])
    for name, a in items[1:]:
        if len(a) != n0:
            raise ValueError(f"length mismatch: {n0_name} has length {n0} but {name} has length {len(a)}")


def _labels(x, name: str) -> np.ndarray:
    a = _as_1d(x, name)
    if a.dtype == bool:
        return a
    if a.size and not np.all((a == 0) | (a == 1)):
        raise ValueError(f"{name} must be binary (bool or 0/1)")
    return a.astype(bool)


def _probs(x, name: str = "p") -> np.ndarray:
    a = _as_1d(x, name).astype(float)
    if a.size and not (np.all(np.isfinite(a)) and a.min() >= 0.0 and a.max() <= 1.0):
        raise ValueError(f"{name} must be finite and within [0, 1]")
    return a


def _pair_labels(y_true, y_pred):
    t, q = _labels(y_true, "y_true"), _labels(y_pred, "y_pred")
    _check_lengths(y_true=t, y_pred=q)
    return t, q


def _pair_probs(y_true, p):
    t, s = _labels(y_true, "y_true"), _probs(p)
    _check_lengths(y_true=t, p=s)
    return t, s


# --------------------------------------------------------------------------- label metrics

def confusion(y_true, y_pred) -> dict:
    """Confusion counts ``{tp, fp, fn, tn}`` (Python ints) for binary labels."""
    t, q = _pair_labels(y_true, y_pred)
    return {
        "tp": int(np.sum(t & q)),
        "fp": int(np.sum(~t & q)),
        "fn": int(np.sum(t & ~q)),
        "tn": int(np.sum(~t & ~q)),
    }


def _prf(c: dict) -> dict:
    tp, fp, fn = c["tp"], c["fp"], c["fn"]
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": float(precision), "recall": float(recall), "f1": float(f1)}


def precision_recall_f1(y_true, y_pred) -> dict:
    """``{precision, recall, f1}`` of the positive class.

    Each is 0.0 when undefined: precision with no predicted positives, recall with
    no actual positives, F1 when precision + recall == 0.
    """
    return _prf(confusion(y_true, y_pred))


def outcome_accuracy(y_true, y_pred) -> float:
    """Fraction of decisions ``y_pred`` that were right in hindsight (``y_true``); NaN if empty."""
    t, q = _pair_labels(y_true, y_pred)
    return float(np.mean(t == q)) if t.size else _NAN


# --------------------------------------------------------------------------- probability metrics

def brier(y_true, p) -> float:
    """Brier score: mean of ``(p - y_true)**2``; NaN if empty."""
    t, s = _pair_probs(y_true, p)
    return float(np.mean((s - t) ** 2)) if t.size else _NAN


def _bin_index(s: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    if int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    n_bins = int(n_bins)
    # k / n_bins is correctly rounded, so e.g. p == 0.3 falls in [0.3, 0.4).
    edges = np.arange(n_bins + 1) / n_bins
    idx = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, n_bins - 1)
    return edges, idx


def reliability_bins(y_true, p, n_bins: int = 10) -> list:
    """Reliability diagram data: ``n_bins`` equal-width bins on ``[0, 1]``.

    Bin ``i`` is ``[lo, hi)``; the last bin also includes 1.0.  Each entry is
    ``{lo, hi, count, mean_p, frac_pos}``; ``mean_p`` and ``frac_pos`` are NaN for
    an empty bin.
    """
    t, s = _pair_probs(y_true, p)
    edges, idx = _bin_index(s, n_bins)
    out = []
    for i in range(len(edges) - 1):
        m = idx == i
        k = int(m.sum())
        out.append({
            "lo": float(edges[i]),
            "hi": float(edges[i + 1]),
            "count": k,
            "mean_p": float(s[m].mean()) if k else _NAN,
            "frac_pos": float(t[m].mean()) if k else _NAN,
        })
    return out


def _ece_from_bins(bins: list) -> float:
    n = sum(b["count"] for b in bins)
    if n == 0:
        return _NAN
    return float(sum(b["count"] / n * abs(b["mean_p"] - b["frac_pos"]) for b in bins if b["count"]))


def ece(y_true, p, n_bins: int = 10) -> float:
    """Expected calibration error: count-weighted mean of ``|mean_p - frac_pos|``
    over the non-empty bins of :func:`reliability_bins`; NaN if empty."""
    return _ece_from_bins(reliability_bins(y_true, p, n_bins))


def roc_auc(y_true, p) -> float:
    """ROC AUC as the Mann-Whitney statistic ``U / (n_pos * n_neg)``, ties counted 1/2.

    Equals P(score of a random positive > score of a random negative) + 1/2 P(tie).
    NaN when either class is absent.
    """
    from scipy.stats import rankdata

    t, s = _pair_probs(y_true, p)
    n_pos = int(t.sum())
    n_neg = t.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return _NAN
    ranks = rankdata(s)
    u = float(np.sum(ranks[t])) - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def binary_report(y_true, p, y_pred, n_bins: int = 10) -> dict:
    """All metrics at once.

    Keys: ``precision, recall, f1, accuracy`` (from ``y_pred``), ``brier, ece,
    roc_auc, reliability`` (from ``p``), ``tp, fp, fn, tn`` and ``n``.
    """
    t, s = _pair_probs(y_true, p)
    q = _labels(y_pred, "y_pred")
    _check_lengths(y_true=t, y_pred=q)
    c = confusion(t, q)
    bins = reliability_bins(t, s, n_bins)
    return {
        **_prf(c),
        "accuracy": outcome_accuracy(t, q),
        "brier": brier(t, s),
        "ece": _ece_from_bins(bins),
        "roc_auc": roc_auc(t, s),
        "reliability": bins,
        **c,
        "n": int(t.size),
    }


# --------------------------------------------------------------------------- intervals

def bootstrap_ci(
    values,
    stat: Callable = np.mean,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap ``(1 - alpha)`` interval of ``stat(values)``.

    Resamples ``values`` with replacement ``n_boot`` times (``np.random.default_rng(seed)``,
    so deterministic) and returns the ``alpha/2`` and ``1 - alpha/2`` quantiles.
    """
    v = _as_1d(values, "values")
    if v.size == 0:
        raise ValueError("values must be non-empty")
    if int(n_boot) != n_boot or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, v.size, size=(int(n_boot), v.size))
    stats = np.array([float(stat(v[i])) for i in idx])
    lo, hi = np.quantile(stats, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (e.g. a win rate).

    Returns ``(0.0, 1.0)`` when ``n == 0``.  Requires ``0 <= successes <= n``.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    phat = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (phat + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(phat * (1 - phat) / n + z2 / (4 * n * n))
    return float(max(0.0, center - half)), float(min(1.0, center + half))


def t_interval(values, bounds=(-math.inf, math.inf)) -> dict:
    """Mean and 95% Student-t interval over runs (seeds), ``mean +- t(0.975, k-1) sd / sqrt(k)``
    clipped to ``bounds`` (the metric's range); the point itself for one value."""
    from scipy.stats import t as student_t

    v = np.asarray(values, np.float64)
    k = len(v)
    mean = float(v.mean())
    sd = float(v.std(ddof=1)) if k > 1 else 0.0
    half = float(student_t.ppf(0.975, k - 1)) * sd / math.sqrt(k) if k > 1 else 0.0
    lo, hi = max(mean - half, bounds[0]), min(mean + half, bounds[1])
    return {"mean": mean, "ci95_low": lo, "ci95_high": hi, "sd": sd, "per_seed": v.tolist()}
