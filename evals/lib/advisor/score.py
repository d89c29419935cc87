"""Stage 2 of the advisor evaluation: run the advisor on recorded claims, and the metrics.

One vmapped advisor call per block of recorded observations computes, for each belief,
p_truth, the threshold and the recommendation.  Scored entries (`SCORED`):
``coupvisor`` and ``exact`` through their fitted calibration maps, as the advisor uses
them, and ``coupvisor_uncalibrated`` and ``exact_uncalibrated``: the raw beliefs under
the same thresholds.

Metrics per condition and entry (`quality`): ``f1, precision, recall,
false_challenge_share`` (recommended challenges of true claims / claims scored),
``missed_bluff_share`` (bluffs not recommended / claims scored), ``brier, ece``
(positive-class probability 1 - p_truth, 10 bins), ``claims, games``, plus ``roc_auc,
outcome_accuracy, bluff_rate, challenge_rate, tp/fp/fn/tn, reliability`` and
``per_kind`` (the metrics per claim kind).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import metrics
from coupjax.advice import challenge as A
from evals.lib.advisor.record import CONDITIONS, NUM_PLAYERS

ROW_BLOCK = 4096
SCORED = ("coupvisor", "exact", "coupvisor_uncalibrated", "exact_uncalibrated")


def rows_apply(fn, obs, *args, block: int = ROW_BLOCK):
    """``fn`` (jitted, batched) over the rows of ``obs`` in blocks of one padded shape
    (one compilation); NumPy leaves of the real rows."""
    outs = []
    for start in range(0, obs.shape[0], block):
        chunk = obs[start:start + block]
        pad = block - chunk.shape[0]
        if pad:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], pad, axis=0)])
        outs.append(jax.tree.map(lambda x: np.asarray(x)[:block - pad], fn(jnp.asarray(chunk), *args)))
    return jax.tree.map(lambda *xs: np.concatenate(xs), *outs)


def make_scorer(n: int, params: A.AdvisorParams, style: str = "balanced", compile=jax.jit):
    """``score(obs f32[R, obs]) -> dict`` of advice arrays per `SCORED` entry (the
    uncalibrated entries reuse the belief's raw p_truth under the same thresholds), plus
    ``ctx``; None for no rows.  ``compile`` turns the vmapped advisor into the batched
    function (`jax.jit`, or one split over devices)."""
    def one(o):
        out = {}
        for belief in A.BELIEFS:
            adv = A.advise_challenge(o, n, belief, params, style)
            out[belief] = {k: adv[k] for k in ("p_truth", "p_raw", "theta", "challenge", "impossible", "close_call")}
            raw = jnp.where(adv["impossible"], 0.0, adv["p_raw"])
            out[belief + "_uncalibrated"] = dict(
                out[belief], p_truth=raw,
                challenge=adv["decision"] & (adv["impossible"] | (raw < adv["theta"] - params.band)),
                close_call=adv["decision"] & ~adv["impossible"] & (jnp.abs(raw - adv["theta"]) <= params.band))
        out["ctx"] = {k: adv[k] for k in ("decision", "context", "me_hidden", "claimant_hidden", "threat", "stake",
                                         "kind")}
        return out

    f = compile(jax.vmap(one))

    def score(obs):
        return rows_apply(f, obs) if obs.shape[0] else None

    return score


def quality(label, p_truth, challenge, games: int, kind=None, n_bins: int = 10) -> dict:
    """The JSON metrics of one condition x scored entry (module doc)."""
    y = np.asarray(label, bool)
    q = np.asarray(challenge, bool)
    pos = np.clip(1.0 - np.asarray(p_truth, np.float64), 0.0, 1.0)
    n = int(y.size)
    rep = metrics.binary_report(y, pos, q, n_bins)
    out = {
        "f1": rep["f1"], "precision": rep["precision"], "recall": rep["recall"],
        "false_challenge_share": rep["fp"] / n if n else float("nan"),
        "missed_bluff_share": rep["fn"] / n if n else float("nan"),
        "brier": rep["brier"], "ece": rep["ece"], "claims": n, "games": int(games),
        "roc_auc": rep["roc_auc"], "outcome_accuracy": rep["accuracy"],
        "bluff_rate": float(y.mean()) if n else float("nan"),
        "challenge_rate": float(q.mean()) if n else float("nan"),
        "tp": rep["tp"], "fp": rep["fp"], "fn": rep["fn"], "tn": rep["tn"],
        "reliability": rep["reliability"],
    }
    if kind is not None:
        per = {}
        for k, name in enumerate(A.KINDS):
            sel = np.asarray(kind) == k
            if sel.sum() == 0:
                continue
            r = metrics.binary_report(y[sel], pos[sel], q[sel], n_bins)
            m = int(sel.sum())
            per[name] = {"claims": m, "bluff_rate": float(y[sel].mean()), "f1": r["f1"], "precision": r["precision"],
                         "recall": r["recall"], "false_challenge_share": r["fp"] / m, "missed_bluff_share": r["fn"] / m,
                         "brier": r["brier"], "ece": r["ece"], "roc_auc": r["roc_auc"]}
        out["per_kind"] = per
    return out


def evaluate(records: dict, params: A.AdvisorParams, style: str = "balanced") -> dict:
    """Score recorded conditions -> the JSON dict (condition -> entry -> metrics, plus
    ``overflow`` and ``unfinished_games`` per condition)."""
    scorer = make_scorer(NUM_PLAYERS, params, style)
    result = {}
    for cond, rec in records.items():
        adv = scorer(rec["obs"])
        if adv is not None and not adv["ctx"]["decision"].all():
            raise RuntimeError("a recorded row is no challenge decision")
        result[cond] = {}
        for belief in SCORED:
            b = adv[belief]
            result[cond][belief] = quality(rec["label"], b["p_truth"], b["challenge"], rec["games"], rec["kind"])
        result[cond]["overflow"] = rec["overflow"]
        result[cond]["unfinished_games"] = rec["unfinished"]
    return result


def metrics_text(result: dict) -> str:
    """The metrics of `evaluate` as a fixed-width text table."""
    lines = [f"{'condition':18s} {'belief':22s} {'f1':>6s} {'prec':>6s} {'recall':>6s} {'FCS':>6s} {'MBS':>6s} "
             f"{'brier':>6s} {'ece':>6s} {'auc':>6s} {'claims':>7s} {'games':>6s}"]
    for cond in CONDITIONS:
        if cond not in result:
            continue
        for belief in SCORED:
            m = result[cond][belief]
            lines.append(f"{cond:18s} {belief:22s} {m['f1']:6.4f} {m['precision']:6.4f} {m['recall']:6.4f} "
                         f"{m['false_challenge_share']:6.4f} {m['missed_bluff_share']:6.4f} {m['brier']:6.4f} "
                         f"{m['ece']:6.4f} {m['roc_auc']:6.4f} {m['claims']:7d} {m['games']:6d}")
    return "\n".join(lines)
