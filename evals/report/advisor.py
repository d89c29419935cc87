"""Advisor metrics of the suite: the challenge advisor scored on recorded claims.

Claims: every challengeable claim of ``advisor_games`` 4-player games per condition and
seed of the scripted bots, recorded once from the seat with the first chance to
challenge it (`evals.advisor.record`, ground truth read by the recorder only), then the
advisor run on the recorded observations (`evals.advisor.score`) for each belief:
``exact`` (the exact posterior) and ``coupvisor`` (CoupVisor's belief), each through its
fitted calibration map, and both raw (``*_uncalibrated``) under the same thresholds.

Metrics per belief and condition (positive class: the claim is a bluff; a
recommended challenge is a positive prediction): ``tp, fp, fn, tn``, precision,
recall, ``f1``, ``brier``, ``ece`` with reliability bins (probability of a bluff =
1 - p_truth, 10 bins), ROC-AUC, and two hindsight scores.  CoupVisor reports an
"outcome accuracy" and an "outcome score" of decisions judged correct in hindsight
without a formula; here:

* ``outcome_accuracy`` = (tp + tn) / claims: the share of decisions right in hindsight
  (challenge a bluff, or let a true claim pass);
* ``outcome_score`` = (tp - fp) / claims: the net influence the advice wins per claim
  when followed, in cards: +1 for a challenge that catches a bluff (the claimant loses
  a card), -1 for a challenge of a true claim (the challenger loses one), 0 for a pass.

Per claim kind (`coupjax.advice.challenge.KINDS`: tax, assassinate, steal, exchange
and each block) the same counts and rates (CoupVisor VII.C's error analysis).
"""
from __future__ import annotations

import jax
import numpy as np

from coupjax import metrics
from coupjax.advice import challenge as A
from coupjax.advice.recommend import advice_params
from coupjax.env import Env
from coupjax.policies import make_policy
from coupjax.policies.pools import CONDITIONS, SCRIPTED_NAMES
from evals.advisor.record import NUM_PLAYERS, QueueRecorder, play_condition
from evals.advisor.score import SCORED, make_scorer
from evals.report.shard import over_devices
from evals.report.stats import f1_interval

N_BINS = 10


class AdvisorRecorder:
    """Records and scores one condition and seed: ``run(condition, seed, games) -> dict``
    of arrays (``label``, ``kind``, ``game`` and per `SCORED` entry ``p_truth`` and
    ``challenge``) plus ``games``, ``overflow``, ``unfinished``."""

    def __init__(self, batch: int = 1000, params: A.AdvisorParams | None = None):
        self.env = Env(NUM_PLAYERS)
        self.recorder = QueueRecorder(self.env, [make_policy(x, self.env) for x in SCRIPTED_NAMES],
                                      devices=jax.devices())
        # the page's constants (`advice_params`): the F1 reported is that of the advisor the page uses
        self.scorer = make_scorer(NUM_PLAYERS, params or advice_params(), compile=over_devices)
        self.batch = batch

    def run(self, condition: str, seed: int, games: int):
        # the keys of evals.advisor.advisor_quality for the same seed and condition
        key = jax.random.fold_in(jax.random.PRNGKey(seed), list(CONDITIONS).index(condition))
        rec = play_condition(self.recorder, key, condition, games, 1000)  # advisor_quality's chunk: its games
        adv = self.scorer(rec["obs"])
        out = {"label": rec["label"].astype(bool), "kind": rec["kind"].astype(np.int8),
               "game": rec["game"].astype(np.int32)}
        for b in SCORED:
            out[f"{b}/p_truth"] = adv[b]["p_truth"].astype(np.float32)
            out[f"{b}/challenge"] = adv[b]["challenge"].astype(bool)
        out["games"], out["overflow"], out["unfinished"] = games, rec["overflow"], rec["unfinished"]
        return out


def belief_metrics(label, p_truth, challenge, kind=None, game=None) -> dict:
    """Counts, rates and calibration of one belief over claims (module doc); given each
    claim's ``game``, F1's 95% interval over games (`evals.report.stats.f1_interval`)."""
    y = np.asarray(label, bool)
    q = np.asarray(challenge, bool)
    pos = np.clip(1.0 - np.asarray(p_truth, np.float64), 0.0, 1.0)
    n = int(y.size)
    rep = metrics.binary_report(y, pos, q, N_BINS)
    out = {"claims": n, "tp": rep["tp"], "fp": rep["fp"], "fn": rep["fn"], "tn": rep["tn"],
           "precision": rep["precision"], "recall": rep["recall"], "f1": rep["f1"],
           "outcome_accuracy": rep["accuracy"],
           "outcome_score": (rep["tp"] - rep["fp"]) / n if n else float("nan"),
           "brier": rep["brier"], "ece": rep["ece"], "roc_auc": rep["roc_auc"],
           "bluff_rate": float(y.mean()) if n else float("nan"),
           "challenge_rate": float(q.mean()) if n else float("nan"),
           "reliability": rep["reliability"]}
    if game is not None:
        out["f1_ci95_low"], out["f1_ci95_high"] = f1_interval(game, y & q, ~y & q, y & ~q)
    if kind is not None:
        per = {}
        for k, name in enumerate(A.KINDS):
            sel = np.asarray(kind) == k
            if sel.any():
                per[name] = {key: v for key, v in belief_metrics(y[sel], 1.0 - pos[sel], q[sel]).items()
                             if key != "reliability"}
        out["per_kind"] = per
    return out


def pool(cells: list[dict]) -> dict:
    """Concatenate the arrays of several cells (seeds) of one condition."""
    keys = [k for k, v in cells[0].items() if isinstance(v, np.ndarray)]
    out = {k: np.concatenate([c[k] for c in cells]) for k in keys}
    if "game" in out:  # game ids distinct across cells: cell i's games follow cell i-1's
        offsets = np.cumsum([0] + [int(c["games"]) for c in cells[:-1]])
        out["game"] = np.concatenate([np.asarray(c["game"], np.int64) + o for c, o in zip(cells, offsets)])
    for k in ("games", "overflow", "unfinished"):
        out[k] = int(sum(int(c[k]) for c in cells))
    return out


def condition_metrics(rec: dict) -> dict:
    """belief -> `belief_metrics` for every `SCORED` entry of one condition's records."""
    return {b: dict(belief_metrics(rec["label"], rec[f"{b}/p_truth"], rec[f"{b}/challenge"], rec["kind"],
                                   rec.get("game")),
                    games=rec["games"]) for b in SCORED}
