"""Fitting the advisor's constants on recorded tuning games (``--fit``).

Runs only on a seed recorded in `coupjax.seeds.TUNING_SEEDS` (the evaluation refuses
those seeds, so no figure is reported on games that chose the constants).  On the
recorded observations of the fitting games (`evals.lib.advisor.record`) it fits:

1. the exact posterior's likelihood ratios for action and block claims (grid `Q_GRID`;
   the calibrated log loss);
2. both beliefs' calibration maps (weighted logistic regression; the condition weights
   minimise the worst per-condition ECE held out by 2-fold cross-validation over games);
3. ``alpha, v_last, coin_threat`` (grid; the highest mean F1 of the exact advisor over
   both conditions with the false-challenge share <= `FCS_LIMIT` in each);
4. the band (the widest band whose mean F1 is within one bootstrap standard error, over
   games, of no band);

and `write_config` writes them with the fit record to configs/advisor.yaml, where
`coupjax.advice.challenge` reads its defaults from (the one copy of the constants).
"""
from __future__ import annotations

import itertools
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import metrics
from coupjax.advice import challenge
from coupjax.beliefs import coupvisor
from coupjax.beliefs import posterior
from evals.lib.advisor.record import NUM_PLAYERS
from evals.lib.advisor.score import rows_apply

FCS_LIMIT = 0.15  # fitting constraint on the false-challenge share
Q_GRID = (1.5, 2.0, 2.5, 3.0)  # likelihood ratios q_honest / q_bluff tried for action and block claims
ALPHA_GRID = (0.25, 0.35, 0.5, 0.6, 0.75, 0.9, 1.0)  # alpha <= 1: harm to an opponent never beats harm to me
V_LAST_GRID = (1.25, 1.5, 2.0, 2.5, 3.0)
THREAT_GRID = (0.0, 0.25, 0.5, 1.0)
BAND_GRID = (0.0, 0.01, 0.02, 0.03, 0.05)
FIT_ROWS = 40000  # rows per condition used for the likelihood-ratio grid (all rows for the final map)



def _facts_one(o):
    ctx = challenge.challenge_context(o, NUM_PLAYERS)
    v = ctx.pop("view")
    return dict(ctx, features=challenge.calibration_features(v, ctx["claimant"], ctx["role"]))


# Built once, so repeated calls (every grid point of --fit) reuse one compilation per shape.
_facts_rows = jax.jit(jax.vmap(_facts_one))
_p_raw_rows = jax.jit(jax.vmap(
    lambda o, qq: posterior.claim_truth_probabilities(o, NUM_PLAYERS, posterior.PosteriorParams(*qq)), in_axes=(0, None)))


def _facts(obs):
    """Per row: context facts and calibration features (NumPy)."""
    return rows_apply(_facts_rows, obs)


def _p_raw(obs, facts, q):
    table = rows_apply(_p_raw_rows, obs, jnp.asarray(q, jnp.float32))
    return table[np.arange(len(table)), facts["claimant"], facts["role"]]


def _design(z, kind, feats):
    onehot = np.eye(challenge.NUM_KINDS)[kind]
    return np.concatenate([onehot * z[:, None], onehot, feats], axis=1)


def fit_calibration(p_raw, kind, feats, label, weight, ridge: float = 1e-3, iters: int = 50):
    """Weighted logistic regression (Newton) of P(true claim) on the calibration design:
    per kind a scale of logit(p_raw) and a shift, plus `A.CAL_FEATURES` weights.
    Rows with p_raw in {0, 1} (hard facts) are left out.  Returns (scale, shift, w, loss)."""
    keep = (p_raw > 0) & (p_raw < 1)
    q = np.clip(p_raw[keep], 1e-6, 1 - 1e-6)
    X = _design(np.log(q / (1 - q)), kind[keep], feats[keep])
    t = (~label[keep]).astype(np.float64)
    w = weight[keep] / weight[keep].mean()
    K = challenge.NUM_KINDS
    beta = np.concatenate([np.ones(K), np.zeros(K), np.zeros(X.shape[1] - 2 * K)])
    reg = np.full(X.shape[1], ridge)
    reg[:K] = 0.0  # scales and shifts unpenalised
    reg[K:2 * K] = 0.0
    for _ in range(iters):
        u = X @ beta
        s = 1.0 / (1.0 + np.exp(-u))
        g = X.T @ (w * (s - t)) / len(t) + reg * beta
        H = (X * (w * s * (1 - s))[:, None]).T @ X / len(t) + np.diag(reg + 1e-9)
        step = np.linalg.solve(H, g)
        beta = beta - step
        if np.abs(step).max() < 1e-8:
            break
    u = X @ beta
    loss = float(np.mean(w * (np.logaddexp(0, u) - t * u)))
    return beta[:K], beta[K:2 * K], beta[2 * K:], loss


@jax.jit
def _theta_rows(context, me_hidden, claimant_hidden, threat, stake, params):
    return challenge.threshold_parts(context, me_hidden == 1, claimant_hidden == 1, threat, stake, params)["theta"]


CONDITION_SHARES = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)  # weight of the first condition in the calibration fit


def _apply_map(raw, kind, feats, fitted):
    scale, shift, w = fitted[:3]
    q = np.clip(raw, 1e-6, 1 - 1e-6)
    u = scale[kind] * np.log(q / (1 - q)) + shift[kind] + feats @ w
    return np.where(raw <= 0, 0.0, np.where(raw >= 1, 1.0, 1 / (1 + np.exp(-u))))


def _decide(facts, p_cal, params):
    theta = np.asarray(_theta_rows(facts["context"], facts["me_hidden"], facts["claimant_hidden"], facts["threat"],
                                   facts["stake"], params))
    return (p_cal <= 0) | (p_cal < theta - params.band)


def fit_constants(records: dict, seed: int, games: int, log=print):
    """Fit the exact advisor's constants on ``records`` (module doc).  Returns (params, info)."""
    conds = list(records)
    obs = {c: records[c]["obs"] for c in conds}
    label = {c: records[c]["label"] for c in conds}
    facts = {c: _facts(obs[c]) for c in conds}

    def pooled(fn, limit=None):
        sl = (lambda x: x[:limit]) if limit else (lambda x: x)
        return {c: fn(c, sl) for c in conds}

    def weights(sizes, share=None):  # condition c weighs share[c] in total (default: equal)
        share = share or {c: 1.0 / len(conds) for c in conds}
        return np.concatenate([np.full(sizes[c], share[c] / sizes[c]) for c in conds])

    # 1. claim likelihood ratios: best calibrated log loss over the grid
    grid = []
    for la, lb in itertools.product(Q_GRID, Q_GRID):
        q = (la / (1 + la), 1 / (1 + la), lb / (1 + lb), 1 / (1 + lb))
        t0 = time.perf_counter()
        pr = pooled(lambda c, sl: _p_raw(sl(obs[c]), jax.tree.map(sl, facts[c]), q), FIT_ROWS)
        sizes = {c: len(pr[c]) for c in conds}
        cat = lambda key: np.concatenate([facts[c][key][:sizes[c]] for c in conds])  # noqa: E731
        _, _, _, loss = fit_calibration(np.concatenate([pr[c] for c in conds]), cat("kind"), cat("features"),
                                        np.concatenate([label[c][:sizes[c]] for c in conds]), weights(sizes))
        grid.append({"lr_action": la, "lr_block": lb, "log_loss": loss})
        log(f"  likelihood ratios action {la} block {lb}: calibrated log loss {loss:.5f} "
            f"({time.perf_counter() - t0:.1f} s)")
    best = min(grid, key=lambda g: g["log_loss"])
    la, lb = best["lr_action"], best["lr_block"]
    q = (la / (1 + la), 1 / (1 + la), lb / (1 + lb), 1 / (1 + lb))

    # 2. the calibration maps.  One map serves every table, so it is a compromise between the
    #    conditions; their weights are chosen to minimise the worst per-condition calibration
    #    error (ECE) held out by 2-fold cross-validation over games.
    pr = {c: _p_raw(obs[c], facts[c], q) for c in conds}
    cv = jax.jit(jax.vmap(lambda o: coupvisor.claim_truth_probabilities(o, NUM_PLAYERS)))
    cv_raw = {}
    for c in conds:
        table = rows_apply(cv, obs[c])
        cv_raw[c] = table[np.arange(len(table)), facts[c]["claimant"], facts[c]["role"]]
    sizes = {c: len(pr[c]) for c in conds}
    cat = lambda key: np.concatenate([facts[c][key] for c in conds])  # noqa: E731
    y_all = np.concatenate([label[c] for c in conds])

    fold = {c: records[c]["game"] % 2 for c in conds}  # 2-fold split by game

    def fit_map(raw, name):
        """Choose the condition share by the worst held-out per-condition ECE (2-fold by
        game), then fit the map on every row with that share."""
        best = None
        for share0 in CONDITION_SHARES:
            share = {conds[0]: share0, **{c: (1 - share0) / (len(conds) - 1) for c in conds[1:]}}
            eces = {c: [] for c in conds}
            for k in (0, 1):
                tr = {c: fold[c] != k for c in conds}
                sz = {c: int(tr[c].sum()) for c in conds}
                m = fit_calibration(np.concatenate([raw[c][tr[c]] for c in conds]),
                                    np.concatenate([facts[c]["kind"][tr[c]] for c in conds]),
                                    np.concatenate([facts[c]["features"][tr[c]] for c in conds]),
                                    np.concatenate([label[c][tr[c]] for c in conds]), weights(sz, share))
                for c in conds:
                    te = ~tr[c]
                    pc = _apply_map(raw[c][te], facts[c]["kind"][te], facts[c]["features"][te], m)
                    eces[c].append(metrics.ece(label[c][te], 1 - pc))
            held = {c: float(np.mean(v)) for c, v in eces.items()}
            log(f"  {name} calibration, {conds[0]} share {share0}: held-out ece "
                f"{dict((k, round(v, 4)) for k, v in held.items())}")
            if best is None or max(held.values()) < best[1]:
                best = (share0, max(held.values()))
        share0 = best[0]
        share = {conds[0]: share0, **{c: (1 - share0) / (len(conds) - 1) for c in conds[1:]}}
        m = fit_calibration(np.concatenate([raw[c] for c in conds]), cat("kind"), cat("features"), y_all,
                            weights(sizes, share))
        return m, share0, best[1]

    (scale, shift, wts, loss), share_ex, _ = fit_map(pr, "exact")
    (cv_scale, cv_shift, cv_wts, cv_loss), share_cv, _ = fit_map(cv_raw, "coupvisor")
    tup = lambda x: tuple(float(v) for v in x)  # noqa: E731
    base = challenge.AdvisorParams(q_honest_action=q[0], q_bluff_action=q[1], q_honest_block=q[2], q_bluff_block=q[3],
                           cal_scale=tup(scale), cal_shift=tup(shift), cal_weights=tup(wts),
                           cv_cal_scale=tup(cv_scale), cv_cal_shift=tup(cv_shift), cv_cal_weights=tup(cv_wts))
    cal = jax.jit(jax.vmap(lambda p, k, f: challenge.calibrate(p, k, f, base)))
    p_cal = {c: np.where(pr[c] <= 0, 0.0, np.asarray(cal(pr[c], facts[c]["kind"], facts[c]["features"])))
             for c in conds}
    # hard impossibilities (visible copies) are exact zeros in the advisor
    for c in conds:
        log(f"  calibrated {c}: ece {metrics.ece(label[c], 1 - p_cal[c]):.4f}, auc {metrics.roc_auc(label[c], 1 - p_cal[c]):.4f}")

    # 3. value constants: best mean F1 with the false-challenge share <= FCS_LIMIT in every condition
    def score(params):
        f1s, fcs = [], []
        for c in conds:
            ch = _decide(facts[c], p_cal[c], params)
            cf = metrics.confusion(label[c], ch)
            f1s.append(metrics.precision_recall_f1(label[c], ch)["f1"])
            fcs.append(cf["fp"] / len(ch))
        return float(np.mean(f1s)), max(fcs), f1s, fcs

    table_rows = []
    for alpha, v_last, threat in itertools.product(ALPHA_GRID, V_LAST_GRID, THREAT_GRID):
        prm = base.replace(alpha=alpha, v_last=v_last, coin_threat=threat, band=0.0)
        f1, worst, f1s, fcs = score(prm)
        table_rows.append((f1 if worst <= FCS_LIMIT else -1.0, alpha, v_last, threat, f1s, fcs))
    table_rows.sort(key=lambda r: -r[0])
    _, alpha, v_last, threat, _, _ = table_rows[0]
    # the band: the widest band whose mean F1 is within one bootstrap standard error of band 0
    # (a close call is not worth a challenge unless refusing it measurably costs F1)
    band_rows = []
    for band in BAND_GRID:
        prm = base.replace(alpha=alpha, v_last=v_last, coin_threat=threat, band=band)
        f1, worst, f1s, fcs = score(prm)
        band_rows.append({"band": band, "mean_f1": f1, "f1": f1s, "false_challenge_share": fcs})
    se = _f1_standard_error(facts, p_cal, label, base.replace(alpha=alpha, v_last=v_last, coin_threat=threat,
                                                               band=0.0), records)
    ok = [r for r in band_rows if r["mean_f1"] >= band_rows[0]["mean_f1"] - se]
    band = max(r["band"] for r in ok)
    params = base.replace(alpha=alpha, v_last=v_last, coin_threat=threat, band=band)
    f1, worst, f1s, fcs = score(params)
    log(f"  fitted alpha {alpha}, v_last {v_last}, coin_threat {threat}, band {band} (F1 se {se:.4f}): "
        f"F1 {dict(zip(conds, np.round(f1s, 4)))}, false-challenge share {dict(zip(conds, np.round(fcs, 4)))}")
    info = {
        "seed": seed, "games_per_condition": games, "conditions": conds,
        "claims": {c: int(len(label[c])) for c in conds},
        "likelihood_ratio_grid": grid, "calibration_features": list(challenge.CAL_FEATURES),
        "calibration_log_loss": {"exact": loss, "coupvisor": cv_loss},
        "calibration_condition_share": {"exact": {conds[0]: share_ex}, "coupvisor": {conds[0]: share_cv}},
        "objective": f"mean F1 of the exact advisor over the conditions, false_challenge_share <= {FCS_LIMIT} in each; "
                     "band: widest with mean F1 within one bootstrap SE of band 0",
        "grids": {"alpha": list(ALPHA_GRID), "v_last": list(V_LAST_GRID), "coin_threat": list(THREAT_GRID),
                  "band": list(BAND_GRID), "likelihood_ratios": list(Q_GRID)},
        "top_value_constants": [{"mean_f1": r[0], "alpha": r[1], "v_last": r[2], "coin_threat": r[3]}
                                for r in table_rows[:5]],
        "band_rows": band_rows, "f1_standard_error": se,
        "fitted_f1": dict(zip(conds, f1s)), "fitted_false_challenge_share": dict(zip(conds, fcs)),
    }
    return params, info


def _f1_standard_error(facts, p_cal, label, params, records, boots: int = 200):
    """Bootstrap (over games) standard error of the mean F1 across conditions."""
    rng = np.random.default_rng(0)
    per = {}
    for c in facts:
        ch = _decide(facts[c], p_cal[c], params)
        g = records[c]["game"]
        G = int(records[c]["games"])
        tp = np.bincount(g, weights=(ch & label[c]), minlength=G)
        fp = np.bincount(g, weights=(ch & ~label[c]), minlength=G)
        fn = np.bincount(g, weights=(~ch & label[c]), minlength=G)
        per[c] = (tp, fp, fn, G)
    vals = []
    for _ in range(boots):
        f1s = []
        for c, (tp, fp, fn, G) in per.items():
            i = rng.integers(0, G, G)
            a, b, d = tp[i].sum(), fp[i].sum(), fn[i].sum()
            f1s.append(2 * a / max(2 * a + b + d, 1))
        vals.append(np.mean(f1s))
    return float(np.std(vals))


def write_config(path, params: challenge.AdvisorParams, info: dict) -> None:
    """Write the fitted params and the fit record; a ``belief_ev`` section already in the
    file (belief_ev's play constants and how they were chosen) is kept."""
    import yaml

    keep = {}
    if Path(path).exists():
        old = yaml.safe_load(Path(path).read_text()) or {}
        keep = {k: old[k] for k in ("belief_ev",) if k in old}
    out = {
        "description": "Fitted constants of coupjax.advice.challenge, stored only here (AdvisorParams' defaults are "
                       "read from these). Written by `python -m evals.advisor_quality --fit` on a tuning seed "
                       "(coupjax.seeds.TUNING_SEEDS), which every evaluation refuses.",
        # the fitted fields at full precision: they are the defaults, not a rounded copy of them
        "params": {f: v for f, v in params_dict(params).items() if f in challenge.FITTED_FIELDS},
        "fit": _plain(info),
        **_plain(keep),
    }
    Path(path).write_text(yaml.safe_dump(out, sort_keys=False, width=110))


def _plain(x):
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return round(float(x), 6)
    if isinstance(x, (np.integer,)):
        return int(x)
    return x


def params_dict(params: challenge.AdvisorParams) -> dict:
    """`AdvisorParams` as plain JSON/YAML values."""
    return {f: ([float(x) for x in getattr(params, f)] if isinstance(getattr(params, f), tuple)
                else float(getattr(params, f)))
            for f in params.__dataclass_fields__}

