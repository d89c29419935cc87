"""Hand-computed checks for coupjax.metrics."""
import itertools
import json
import math

import numpy as np
import pytest

from coupjax import metrics


# --------------------------------------------------------------------------- confusion / PRF

Y_TRUE6 = [1, 1, 1, 1, 0, 0]
Y_PRED6 = [1, 0, 0, 1, 1, 0]
# tp = 2 (idx 0, 3), fn = 2 (idx 1, 2), fp = 1 (idx 4), tn = 1 (idx 5)


def test_confusion_hand():
    assert metrics.confusion(Y_TRUE6, Y_PRED6) == {"tp": 2, "fp": 1, "fn": 2, "tn": 1}
    c = metrics.confusion(np.array(Y_TRUE6, bool), np.array(Y_PRED6, bool))
    assert c == {"tp": 2, "fp": 1, "fn": 2, "tn": 1}
    assert all(type(v) is int for v in c.values())


def test_precision_recall_f1_hand():
    r = metrics.precision_recall_f1(Y_TRUE6, Y_PRED6)
    # precision = 2/3, recall = 2/4, f1 = 2*(2/3)(1/2)/(2/3+1/2) = 4/7
    assert r["precision"] == pytest.approx(2 / 3)
    assert r["recall"] == pytest.approx(1 / 2)
    assert r["f1"] == pytest.approx(4 / 7)


def test_precision_recall_f1_undefined_is_zero():
    # no predicted positives and no actual positives
    assert metrics.precision_recall_f1([0, 0, 0], [0, 0, 0]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    # predicted positives but all wrong: precision 0, recall 0 -> f1 0
    assert metrics.precision_recall_f1([1, 0], [0, 1]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    # perfect
    assert metrics.precision_recall_f1([1, 0, 1], [1, 0, 1]) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}


def test_outcome_accuracy_hand():
    assert metrics.outcome_accuracy(Y_TRUE6, Y_PRED6) == pytest.approx(3 / 6)
    assert metrics.outcome_accuracy([True, False], [True, False]) == 1.0
    assert math.isnan(metrics.outcome_accuracy([], []))


# --------------------------------------------------------------------------- Brier

def test_brier_perfect_and_constant():
    y = [1, 0, 1, 1, 0]
    assert metrics.brier(y, [1.0, 0.0, 1.0, 1.0, 0.0]) == 0.0
    assert metrics.brier(y, [0.5] * 5) == pytest.approx(0.25)
    assert metrics.brier(y, [0.0, 1.0, 0.0, 0.0, 1.0]) == 1.0


def test_brier_hand():
    # (0.8-1)^2 + (0.3-0)^2 + (0.6-1)^2 + (0.1-0)^2 = .04 + .09 + .16 + .01 = .30 -> /4
    assert metrics.brier([1, 0, 1, 0], [0.8, 0.3, 0.6, 0.1]) == pytest.approx(0.075)


# --------------------------------------------------------------------------- reliability / ECE

def test_reliability_bins_edges_and_assignment():
    p = [0.0, 0.1, 0.3, 0.29999, 0.95, 1.0]
    y = [0, 1, 1, 0, 1, 1]
    bins = metrics.reliability_bins(y, p, n_bins=10)
    assert len(bins) == 10
    for i, b in enumerate(bins):
        assert b["lo"] == pytest.approx(i / 10)
        assert b["hi"] == pytest.approx((i + 1) / 10)
    counts = [b["count"] for b in bins]
    # 0.0 -> bin 0; 0.1 -> bin 1 (lo inclusive); 0.29999 -> bin 2; 0.3 -> bin 3;
    # 0.95 and 1.0 -> last bin (which includes 1.0)
    assert counts == [1, 1, 1, 1, 0, 0, 0, 0, 0, 2]
    assert bins[9]["mean_p"] == pytest.approx(0.975)
    assert bins[9]["frac_pos"] == 1.0
    assert bins[3]["mean_p"] == pytest.approx(0.3) and bins[3]["frac_pos"] == 1.0
    assert math.isnan(bins[5]["mean_p"]) and math.isnan(bins[5]["frac_pos"])


def test_ece_perfectly_calibrated_is_zero():
    p = [0.25] * 4 + [0.75] * 4
    y = [1, 0, 0, 0] + [1, 1, 1, 0]
    assert metrics.ece(y, p) == pytest.approx(0.0, abs=1e-12)
    assert metrics.ece([1, 0], [1.0, 0.0]) == 0.0


def test_ece_known_miscalibration():
    # bin [0.2,0.3): 4 samples, mean_p .2, frac_pos .25 -> gap .05
    # bin [0.9,1.0]: 2 samples, mean_p .9, frac_pos .5  -> gap .4
    # ece = 4/6 * .05 + 2/6 * .4 = 1/30 + 4/30 = 1/6
    p = [0.2, 0.2, 0.2, 0.2, 0.9, 0.9]
    y = [0, 0, 0, 1, 1, 0]
    assert metrics.ece(y, p) == pytest.approx(1 / 6)
    # single bin: all 0.8, half positive -> 0.3
    assert metrics.ece([1, 0, 1, 0], [0.8] * 4) == pytest.approx(0.3)
    # with one bin everything pools: mean_p = (0.8+0.9+0.8+0.9)/4=0.85... vs frac .5
    assert metrics.ece([1, 0, 1, 0], [0.8, 0.9, 0.8, 0.9], n_bins=1) == pytest.approx(0.35)


# --------------------------------------------------------------------------- ROC AUC

def _auc_bruteforce(y, p):
    pos = [s for s, t in zip(p, y) if t]
    neg = [s for s, t in zip(p, y) if not t]
    total = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(pos, neg))
    return total / (len(pos) * len(neg))


def test_roc_auc_perfect_constant_inverted():
    y = [0, 0, 1, 1, 0, 1]
    p = [0.1, 0.2, 0.8, 0.9, 0.3, 0.7]
    assert metrics.roc_auc(y, p) == 1.0
    assert metrics.roc_auc(y, [1 - s for s in p]) == 0.0
    assert metrics.roc_auc(y, [0.5] * 6) == 0.5


def test_roc_auc_hand():
    # pos scores {0.4, 0.8}, neg {0.4, 0.2}: pairs (.4,.4)=.5, (.4,.2)=1, (.8,.4)=1, (.8,.2)=1 -> 3.5/4
    assert metrics.roc_auc([1, 1, 0, 0], [0.4, 0.8, 0.4, 0.2]) == pytest.approx(0.875)


def test_roc_auc_nan_when_one_class():
    assert math.isnan(metrics.roc_auc([1, 1, 1], [0.1, 0.5, 0.9]))
    assert math.isnan(metrics.roc_auc([0, 0], [0.1, 0.5]))
    assert math.isnan(metrics.roc_auc([], []))


@pytest.mark.parametrize("seed", range(5))
def test_roc_auc_matches_bruteforce(seed):
    rng = np.random.default_rng(seed)
    n = 60
    y = rng.random(n) < 0.4
    y[0], y[1] = True, False
    p = np.round(np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1), 1)  # coarse -> many ties
    assert metrics.roc_auc(y, p) == pytest.approx(_auc_bruteforce(y.tolist(), p.tolist()), abs=1e-12)


# --------------------------------------------------------------------------- report

def test_binary_report_keys_values_and_json():
    y = [1, 1, 1, 1, 0, 0]
    p = [0.9, 0.4, 0.3, 0.8, 0.6, 0.1]
    yp = Y_PRED6
    r = metrics.binary_report(y, p, yp, n_bins=5)
    assert set(r) == {"precision", "recall", "f1", "accuracy", "brier", "ece", "roc_auc",
                      "reliability", "tp", "fp", "fn", "tn", "n"}
    assert (r["tp"], r["fp"], r["fn"], r["tn"], r["n"]) == (2, 1, 2, 1, 6)
    assert r["precision"] == pytest.approx(2 / 3) and r["f1"] == pytest.approx(4 / 7)
    assert r["accuracy"] == pytest.approx(0.5)
    assert r["brier"] == pytest.approx(metrics.brier(y, p))
    assert r["ece"] == pytest.approx(metrics.ece(y, p, n_bins=5))
    # pos {.9,.4,.3,.8} vs neg {.6,.1}: wins = 2+1+1+2 = 6 of 8
    assert r["roc_auc"] == pytest.approx(0.75)
    assert len(r["reliability"]) == 5
    json.loads(json.dumps(r))  # plain Python types throughout


# --------------------------------------------------------------------------- intervals

def test_wilson_known_values():
    lo, hi = metrics.wilson_interval(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-4) and hi == pytest.approx(0.5962, abs=1e-4)
    lo, hi = metrics.wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = metrics.wilson_interval(10, 10)
    assert hi == 1.0 and lo == pytest.approx(0.7225, abs=1e-4)
    assert metrics.wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        metrics.wilson_interval(5, 4)


def test_bootstrap_ci():
    assert metrics.bootstrap_ci([2.0] * 7) == (2.0, 2.0)
    v = np.random.default_rng(0).normal(1.0, 1.0, size=400)
    lo, hi = metrics.bootstrap_ci(v)
    assert lo < v.mean() < hi
    # SE ~ 1/20 = .05 -> 95% half-width ~ .098
    assert 0.15 < hi - lo < 0.25
    assert metrics.bootstrap_ci(v, seed=1) == metrics.bootstrap_ci(v, seed=1)
    assert isinstance(lo, float) and isinstance(hi, float)
    lo, hi = metrics.bootstrap_ci(v, stat=np.median, n_boot=200, alpha=0.1)
    assert lo < np.median(v) < hi
    with pytest.raises(ValueError):
        metrics.bootstrap_ci([])


# --------------------------------------------------------------------------- validation

@pytest.mark.parametrize("fn", [metrics.confusion, metrics.precision_recall_f1, metrics.outcome_accuracy])
def test_label_length_mismatch(fn):
    with pytest.raises(ValueError, match=r"5.*4"):
        fn([1, 0, 1, 0, 1], [1, 0, 1, 0])


@pytest.mark.parametrize("fn", [metrics.brier, metrics.reliability_bins, metrics.ece, metrics.roc_auc])
def test_prob_length_mismatch(fn):
    with pytest.raises(ValueError, match=r"3.*2"):
        fn([1, 0, 1], [0.2, 0.4])


def test_report_length_mismatch():
    with pytest.raises(ValueError, match=r"3.*2"):
        metrics.binary_report([1, 0, 1], [0.1, 0.2, 0.3], [1, 0])


def test_bad_inputs():
    with pytest.raises(ValueError):
        metrics.brier([1, 0], [0.5, 1.5])
    with pytest.raises(ValueError):
        metrics.brier([1, 0], [0.5, float("nan")])
    with pytest.raises(ValueError):
        metrics.confusion([1, 2], [1, 0])
    with pytest.raises(ValueError):
        metrics.confusion([[1, 0]], [[1, 0]])
    with pytest.raises(ValueError):
        metrics.ece([1, 0], [0.1, 0.2], n_bins=0)
