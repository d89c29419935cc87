"""Advisor quality: how well the challenge advice separates bluffs from true claims.

    python -m evals.advisor_quality --games-per-condition 10000 --seed 0 --out advisor_quality.json
    python -m evals.advisor_quality --fit --seed 1000 --games-per-condition 4000   # refit configs/advisor.yaml
    python -m evals.advisor_quality --seat-table 2000 --seed 3       # belief_ev vs the scripted bots

Games: 4 players per game, seats drawn per game with `policies.draw_seats` from each
condition of `policies.CONDITIONS` (aggressive_heavy, honest_heavy); every seat plays its
scripted bot.  The advisor watches as an observer: every challengeable claim (a main
action claiming a role, or a block) is scored ONCE, from the seat with the first
chance to challenge it -- the first live responder clockwise after the actor in the
react window, or the actor answering a block -- using that seat's observation only.

Positive class: the claim is a bluff (the claimant does not hold the role).  The
ground truth is read from the engine's hidden hands (``state._hands``) by THIS
HARNESS ONLY, at the moment of scoring; the advisor never sees it.

Two jitted stages per chunk of games (``--chunk``, default 1000):

1. one vmapped `lax.while_loop` over the steps plays the games and records, at every
   scored decision (up to ``MAX_SCORED`` per game; overflow is counted and reported),
   the observation (int16), the label, the claim kind and the step index;
2. one vmapped advisor call over the recorded observations computes, for each belief,
   p_truth, the threshold and the recommendation.

(The posterior costs about 5x a bot step; evaluated inside the loop it would run at
every step of every game, not only at the ~30 % of steps that are scored decisions.
Split this way a 10,000-game condition takes about 2 minutes on 2 busy CPU cores.)

Output JSON: per condition, for ``coupvisor`` and ``exact`` (each through its fitted
calibration map, as the advisor uses them) and for ``coupvisor_uncalibrated`` and
``exact_uncalibrated`` (the raw beliefs under the same thresholds): ``f1, precision,
recall, false_challenge_share`` (recommended challenges of true claims / claims
scored), ``missed_bluff_share`` (bluffs not recommended / claims scored), ``brier,
ece`` (positive-class probability 1 - p_truth, 10 bins), ``claims, games``, plus
``roc_auc, outcome_accuracy, bluff_rate, challenge_rate, tp/fp/fn/tn, reliability`` and
``per_kind`` (the metrics per claim kind); and ``meta``.

``--fit`` (seed >= 1000; evaluation seeds are < 1000 and the evaluation refuses the
seed recorded in the config) fits, on the recorded observations of the fitting games:
the exact posterior's likelihood ratios for action and block claims (grid; calibrated
log loss), both beliefs' calibration maps (weighted logistic regression; the condition
weights minimise the worst per-condition ECE held out by 2-fold cross-validation over
games), then ``alpha, v_last, coin_threat`` (grid; the highest mean F1 of the exact
advisor over both conditions with the false-challenge share <= 0.15 in each) and the
band (the widest band whose mean F1 is within one bootstrap standard error of no band),
and writes configs/advisor.yaml.

``--seat-table GAMES`` plays 4-player games with every seat drawn uniformly from the
five scripted bots and belief_ev (one jitted `policies.make_table_runner`) and reports
win rate = wins / seats occupied per policy; ``--alphas a,b`` adds belief_ev variants
challenging with those alphas (how `advisor.PLAY_OVERRIDES` was chosen).
"""
from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import arena
from coupjax import metrics as M
from coupjax.advice import challenge as A
from coupjax.beliefs import coupvisor as B
from coupjax.beliefs import posterior as POST
from coupjax.env import Env
from coupjax.game.deal import hidden_hands
from coupjax.policies import belief_ev as BEV
from coupjax.policies import make_policy
from coupjax.policies.pools import SCRIPTED_NAMES
from coupjax.paths import config_path

NUM_PLAYERS = 4
MAX_SCORED = 256
MAX_STEPS = 3000
CONDITIONS = ("aggressive_heavy", "honest_heavy")
FCS_LIMIT = 0.15  # fitting constraint on the false-challenge share
FIT_SEED_MIN = 1000  # evaluation seeds are < 1000, fitting seeds >= 1000
CONFIG = config_path("advisor.yaml")


# ---------------------------------------------------------------- stage 1: play and record
def make_recorder(env: Env, policy_list, max_steps: int = MAX_STEPS, max_scored: int = MAX_SCORED):
    """Jitted ``record(key, seat_policy_index int32[B, n]) -> dict`` (see the module doc).

    Returned arrays: ``obs`` int16[B, K, obs], ``label`` bool[B, K] (bluff), ``kind``
    int32[B, K], ``step`` int32[B, K], ``count`` int32[B] (scored decisions, may exceed
    K: overflow), ``steps`` int32[B], ``finished`` bool[B], ``wins`` int32[B, n].
    """
    policies = list(policy_list)
    n = env.num_players
    K = max_scored
    obs_size = env.observation_shape[0]

    def scored_decision(s):
        """(scored, claimant absolute seat, role, kind) of the decision in state s."""
        ctx = A.challenge_context(s.observation, n)
        v = ctx["view"]
        rel = jnp.arange(n)
        between = (rel > ctx["claimant"]) & v.alive
        first = ctx["answer"] | ~between.any()  # react: no live seat between the actor and us
        scored = ctx["decision"] & first & ~s.terminated
        claimant = (s.current_player + ctx["claimant"]) % n
        return scored, claimant, ctx["role"], ctx["kind"]

    def one(key, seat_idx):
        k_init, key = jax.random.split(key)
        state = env.init(k_init)
        bufs = dict(obs=jnp.zeros((K, obs_size), jnp.int16), label=jnp.zeros(K, bool),
                    kind=jnp.full(K, -1, jnp.int32), step=jnp.full(K, -1, jnp.int32))

        def cond(c):
            s, t, _, _, _ = c
            return ~s.terminated & (t < max_steps)

        def body(c):
            s, t, b, count, k = c
            k, k_pol, k_act, k_step = jax.random.split(k, 4)
            scored, claimant, role, kind = scored_decision(s)
            # GROUND TRUTH (harness only): does the claimant's hidden hand hold the role?
            bluff = ~jnp.any(hidden_hands(s)[claimant] == role)
            i = jnp.minimum(count, K - 1)
            w = scored & (count < K)
            b = dict(
                obs=b["obs"].at[i].set(jnp.where(w, jnp.round(s.observation).astype(jnp.int16), b["obs"][i])),
                label=b["label"].at[i].set(jnp.where(w, bluff, b["label"][i])),
                kind=b["kind"].at[i].set(jnp.where(w, kind, b["kind"][i])),
                step=b["step"].at[i].set(jnp.where(w, t, b["step"][i])),
            )
            logits = jax.lax.switch(seat_idx[s.current_player], policies, k_pol, s)
            a = jax.random.categorical(k_act, logits).astype(jnp.int32)
            return env.step(s, a, k_step), t + 1, b, count + scored, k

        state, steps, bufs, count, _ = jax.lax.while_loop(cond, body, (state, jnp.int32(0), bufs, jnp.int32(0), key))
        winner = env.placements(state)[0]
        wins = ((jnp.arange(n) == winner) & state.terminated).astype(jnp.int32)
        return dict(bufs, count=count, steps=steps, finished=state.terminated, wins=wins)

    return jax.jit(lambda key, idx: jax.vmap(one)(jax.random.split(key, idx.shape[0]), idx))


def flatten_records(rec) -> dict:
    """Host-side: the valid scored rows of a recorder output, flattened (NumPy)."""
    rec = {k: np.asarray(v) for k, v in rec.items()}
    B, K = rec["label"].shape
    valid = np.arange(K)[None, :] < np.minimum(rec["count"], K)[:, None]
    game = np.broadcast_to(np.arange(B)[:, None], (B, K))
    return {"obs": rec["obs"][valid].astype(np.float32), "label": rec["label"][valid], "kind": rec["kind"][valid],
            "step": rec["step"][valid], "game": game[valid]}


# ---------------------------------------------------------------- stage 2: advise
ROW_BLOCK = 4096


SCORED = ("coupvisor", "exact", "coupvisor_uncalibrated", "exact_uncalibrated")


def make_scorer(n: int, params: A.AdvisorParams, style: str = "balanced"):
    """Jitted ``score(obs f32[R, obs]) -> dict`` of advice arrays per `SCORED` entry (the
    uncalibrated entries reuse the belief's raw p_truth under the same thresholds)."""
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

    f = jax.jit(jax.vmap(one))

    def score(obs):
        return _rows_apply(f, obs) if obs.shape[0] else None

    return score


def play_condition(recorder, key, condition: str, games: int, chunk: int, progress=None, task=None) -> dict:
    """Play ``games`` games of ``condition`` in chunks; return the flattened records."""
    k_seats, k_play = jax.random.split(key)
    seats = np.asarray(arena.draw_seats(k_seats, condition, games, NUM_PLAYERS))
    parts, overflow, unfinished = [], 0, 0
    for c, start in enumerate(range(0, games, chunk)):
        idx = seats[start:start + chunk]
        size = idx.shape[0]
        if size < chunk:  # pad to one compiled shape; padded games are dropped
            idx = np.concatenate([idx, np.repeat(idx[-1:], chunk - size, axis=0)])
        rec = recorder(jax.random.fold_in(k_play, c), jnp.asarray(idx))
        rec = jax.tree.map(lambda x: np.asarray(x)[:size], rec)
        overflow += int(np.maximum(rec["count"] - MAX_SCORED, 0).sum())
        unfinished += int((~rec["finished"]).sum())
        flat = flatten_records(rec)
        flat["game"] = flat["game"] + start
        parts.append(flat)
        if progress is not None:
            progress.advance(task, size)
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    out["overflow"], out["unfinished"], out["games"] = overflow, unfinished, games
    return out


# ---------------------------------------------------------------- metrics
def quality(label, p_truth, challenge, games: int, kind=None, n_bins: int = 10) -> dict:
    """The JSON metrics of one condition x belief (module doc)."""
    y = np.asarray(label, bool)
    q = np.asarray(challenge, bool)
    pos = np.clip(1.0 - np.asarray(p_truth, np.float64), 0.0, 1.0)
    n = int(y.size)
    rep = M.binary_report(y, pos, q, n_bins)
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
            r = M.binary_report(y[sel], pos[sel], q[sel], n_bins)
            m = int(sel.sum())
            per[name] = {"claims": m, "bluff_rate": float(y[sel].mean()), "f1": r["f1"], "precision": r["precision"],
                         "recall": r["recall"], "false_challenge_share": r["fp"] / m, "missed_bluff_share": r["fn"] / m,
                         "brier": r["brier"], "ece": r["ece"], "roc_auc": r["roc_auc"]}
        out["per_kind"] = per
    return out


def evaluate(records: dict, params: A.AdvisorParams, style: str = "balanced") -> dict:
    """Score recorded conditions -> the JSON dict (condition -> belief -> metrics)."""
    scorer = make_scorer(NUM_PLAYERS, params, style)
    result = {}
    for cond, rec in records.items():
        adv = scorer(rec["obs"])
        assert adv is None or adv["ctx"]["decision"].all(), "a recorded row is no challenge decision"
        result[cond] = {}
        for belief in SCORED:
            b = adv[belief]
            result[cond][belief] = quality(rec["label"], b["p_truth"], b["challenge"], rec["games"], rec["kind"])
        result[cond]["overflow"] = rec["overflow"]
        result[cond]["unfinished_games"] = rec["unfinished"]
    return result


# ---------------------------------------------------------------- driving
def record_conditions(games: int, seed: int, chunk: int, conditions=CONDITIONS, quiet: bool = False) -> dict:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    env = Env(NUM_PLAYERS)
    recorder = make_recorder(env, [make_policy(x, env) for x in SCRIPTED_NAMES])
    chunk = max(1, min(chunk, games))
    records = {}
    cols = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*cols, disable=quiet, transient=False) as progress:
        for ci, cond in enumerate(conditions):
            task = progress.add_task(f"{cond} (games)", total=games)
            key = jax.random.fold_in(jax.random.PRNGKey(seed), ci)
            records[cond] = play_condition(recorder, key, cond, games, chunk, progress, task)
    return records


def table(result: dict) -> str:
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games-per-condition", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=str, default=None, help="JSON output file")
    ap.add_argument("--chunk", type=int, default=None,
                    help="games per jitted chunk (default 1000; 2000 for --seat-table)")
    ap.add_argument("--style", choices=tuple(A.STYLES), default="balanced")
    ap.add_argument("--params", type=str, default=None, help="YAML with a params mapping (default: AdvisorParams())")
    ap.add_argument("--fit", action="store_true", help="fit the constants on these games and write --config")
    ap.add_argument("--config", type=str, default=str(CONFIG))
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--seat-table", type=int, default=0, metavar="GAMES",
                    help="instead: play GAMES 4-player games with seats drawn uniformly from the scripted bots and "
                         "belief_ev and report each policy's win rate")
    ap.add_argument("--alphas", type=str, default="",
                    help="with --seat-table: also seat belief_ev variants challenging with these alphas (1,2,...)")
    args = ap.parse_args(argv)
    if args.seat_table:
        t0 = time.perf_counter()
        alphas = [float(a) for a in args.alphas.split(",") if a]
        res = seat_table(args.seat_table, args.seed, min(args.chunk or 2000, args.seat_table), alphas=alphas)
        res["seconds"] = round(time.perf_counter() - t0, 1)
        for name, r in sorted(res["policies"].items(), key=lambda kv: -kv[1]["win_rate"]):
            print(f"{name:12s} win rate {r['win_rate']:.4f}  (95% {r['wilson95'][0]:.4f}-{r['wilson95'][1]:.4f}, "
                  f"{r['wins']}/{r['seats']} seats)")
        print(f"{res['games']} games, {res['finished']} finished, {res['seconds']} s")
        if args.out:
            Path(args.out).write_text(json.dumps(res, indent=1))
        return res

    if args.fit and args.seed < FIT_SEED_MIN:
        ap.error(f"--fit needs a seed >= {FIT_SEED_MIN} (seeds below are kept for evaluation)")
    if not args.fit:
        used = _fit_seeds(args.config)
        if args.seed in used:
            ap.error(f"seed {args.seed} was used to fit {args.config}; evaluate on other seeds")
    t0 = time.perf_counter()
    records = record_conditions(args.games_per_condition, args.seed, args.chunk or 1000, quiet=args.quiet)
    t_play = time.perf_counter() - t0
    params = A.load_params(args.params) if args.params else A.AdvisorParams()
    if args.fit:
        params, info = fit_constants(records, args.seed, args.games_per_condition)
        write_config(args.config, params, info)
        print(f"wrote {args.config}")
    result = evaluate(records, params, args.style)
    t_all = time.perf_counter() - t0
    result["meta"] = {"games_per_condition": args.games_per_condition, "seed": args.seed, "style": args.style,
                      "num_players": NUM_PLAYERS, "fit": bool(args.fit), "params": _params_dict(params),
                      "seconds_play": round(t_play, 1), "seconds_total": round(t_all, 1)}
    print(table(result))
    print(f"play {t_play:.1f} s, total {t_all:.1f} s")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
        print(f"wrote {args.out}")
    return result


# ---------------------------------------------------------------- fitting (never on scored games)
Q_GRID = (1.5, 2.0, 2.5, 3.0)  # likelihood ratios q_honest / q_bluff tried for action and block claims
ALPHA_GRID = (0.25, 0.35, 0.5, 0.6, 0.75, 0.9, 1.0)  # alpha <= 1: harm to an opponent never beats harm to me
V_LAST_GRID = (1.25, 1.5, 2.0, 2.5, 3.0)
THREAT_GRID = (0.0, 0.25, 0.5, 1.0)
BAND_GRID = (0.0, 0.01, 0.02, 0.03, 0.05)
FIT_ROWS = 40000  # rows per condition used for the likelihood-ratio grid (all rows for the final map)


def _rows_apply(fn, obs, *args, block=ROW_BLOCK):
    outs = []
    for start in range(0, obs.shape[0], block):
        chunk = obs[start:start + block]
        pad = block - chunk.shape[0]
        if pad:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], pad, axis=0)])
        outs.append(jax.tree.map(lambda x: np.asarray(x)[:block - pad], fn(jnp.asarray(chunk), *args)))
    return jax.tree.map(lambda *xs: np.concatenate(xs), *outs)


def _facts_one(o):
    ctx = A.challenge_context(o, NUM_PLAYERS)
    v = ctx.pop("view")
    return dict(ctx, features=A.calibration_features(v, ctx["claimant"], ctx["role"]))


# Built once, so repeated calls (every grid point of --fit) reuse one compilation per shape.
_facts_rows = jax.jit(jax.vmap(_facts_one))
_p_raw_rows = jax.jit(jax.vmap(
    lambda o, qq: POST.claim_truth_probabilities(o, NUM_PLAYERS, POST.PosteriorParams(*qq)), in_axes=(0, None)))


def _facts(obs):
    """Per row: context facts and calibration features (NumPy)."""
    return _rows_apply(_facts_rows, obs)


def _p_raw(obs, facts, q):
    table = _rows_apply(_p_raw_rows, obs, jnp.asarray(q, jnp.float32))
    return table[np.arange(len(table)), facts["claimant"], facts["role"]]


def _design(z, kind, feats):
    onehot = np.eye(A.NUM_KINDS)[kind]
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
    K = A.NUM_KINDS
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
    return A.threshold_parts(context, me_hidden == 1, claimant_hidden == 1, threat, stake, params)["theta"]


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
    cv = jax.jit(jax.vmap(lambda o: B.claim_truth_probabilities(o, NUM_PLAYERS)))
    cv_raw = {}
    for c in conds:
        table = _rows_apply(cv, obs[c])
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
                    eces[c].append(M.ece(label[c][te], 1 - pc))
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
    base = A.AdvisorParams(q_honest_action=q[0], q_bluff_action=q[1], q_honest_block=q[2], q_bluff_block=q[3],
                           cal_scale=tup(scale), cal_shift=tup(shift), cal_weights=tup(wts),
                           cv_cal_scale=tup(cv_scale), cv_cal_shift=tup(cv_shift), cv_cal_weights=tup(cv_wts))
    cal = jax.jit(jax.vmap(lambda p, k, f: A.calibrate(p, k, f, base)))
    p_cal = {c: np.where(pr[c] <= 0, 0.0, np.asarray(cal(pr[c], facts[c]["kind"], facts[c]["features"])))
             for c in conds}
    # hard impossibilities (visible copies) are exact zeros in the advisor
    for c in conds:
        log(f"  calibrated {c}: ece {M.ece(label[c], 1 - p_cal[c]):.4f}, auc {M.roc_auc(label[c], 1 - p_cal[c]):.4f}")

    # 3. value constants: best mean F1 with the false-challenge share <= FCS_LIMIT in every condition
    def score(params):
        f1s, fcs = [], []
        for c in conds:
            ch = _decide(facts[c], p_cal[c], params)
            cf = M.confusion(label[c], ch)
            f1s.append(M.precision_recall_f1(label[c], ch)["f1"])
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
        "likelihood_ratio_grid": grid, "calibration_features": list(A.CAL_FEATURES),
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


def write_config(path, params: A.AdvisorParams, info: dict) -> None:
    """Write the fitted params and the fit record; a ``belief_ev`` section already in the
    file (belief_ev's play constants and how they were chosen) is kept."""
    import yaml

    keep = {}
    if Path(path).exists():
        old = yaml.safe_load(Path(path).read_text()) or {}
        keep = {k: old[k] for k in ("belief_ev",) if k in old}
    out = {
        "description": "Fitted constants of coupjax.advisor (AdvisorParams defaults equal these). Written by "
                       "`python -m evals.advisor_quality --fit`; fitted on games never scored.",
        "params": _params_dict(params),
        "fit": info,
        **keep,
    }
    Path(path).write_text(yaml.safe_dump(_plain(out), sort_keys=False, width=110))


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


# ---------------------------------------------------------------- belief_ev against the scripted bots
SEAT_TABLE_NAMES = tuple(SCRIPTED_NAMES) + ("belief_ev",)


def seat_table(games: int, seed: int, chunk: int = 2000, names=SEAT_TABLE_NAMES, alphas=()) -> dict:
    """4-player games, every seat drawn uniformly from ``names`` (plus one belief_ev
    variant per value of ``alphas``: its challenge rule with that alpha, the way
    `advisor.PLAY_OVERRIDES` was chosen), one jitted `policies.make_table_runner`; per
    policy: win rate = wins / seats occupied (Wilson 95% interval)."""
    env = Env(NUM_PLAYERS)
    policies = [make_policy(x, env) for x in names]
    names = list(names)
    for a in alphas:
        policies.append(BEV.make_belief_ev(env, BEV.play_params().replace(alpha=float(a))))
        names.append(f"belief_ev[alpha={a}]")
    run = arena.make_table_runner(env, policies)
    k_seats, k_run = jax.random.split(jax.random.PRNGKey(seed))
    idx = np.asarray(arena.draw_seats(k_seats, {x: 1.0 for x in names}, games, NUM_PLAYERS, names))
    wins, finished = [], 0
    for c, start in enumerate(range(0, games, chunk)):
        part = idx[start:start + chunk]
        size = part.shape[0]
        if size < chunk:
            part = np.concatenate([part, np.repeat(part[-1:], chunk - size, axis=0)])
        _, st = run(arena.game_keys(k_run, start, chunk), jnp.asarray(part))
        wins.append(np.asarray(st["wins"])[:size])
        finished += int(np.asarray(st["finished"])[:size].sum())
    wins = np.concatenate(wins)
    out = {"games": games, "seed": seed, "finished": finished, "policies": {}}
    for i, name in enumerate(names):
        sel = idx == i
        w, s = int(wins[sel].sum()), int(sel.sum())
        lo, hi = M.wilson_interval(w, s)
        out["policies"][name] = {"win_rate": w / max(s, 1), "wins": w, "seats": s, "wilson95": [lo, hi]}
    return out


def _fit_seeds(path) -> set:
    try:
        import yaml

        fit = yaml.safe_load(Path(path).read_text()).get("fit", {})
        return {int(fit["seed"])} if "seed" in fit else set()
    except (OSError, ValueError, AttributeError):
        return set()


def _params_dict(params: A.AdvisorParams) -> dict:
    return {f: (list(getattr(params, f)) if isinstance(getattr(params, f), tuple) else float(getattr(params, f)))
            for f in params.__dataclass_fields__}


if __name__ == "__main__":
    main()
