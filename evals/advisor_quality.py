"""Advisor quality: how well the challenge advice separates bluffs from true claims.

    python -m evals.advisor_quality --games-per-condition 2000 --seed 0 --out advisor_quality.json
    python -m evals.advisor_quality --fit --seed 1000 --games-per-condition 2000   # refit configs/advisor.yaml

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

1. one vmapped `lax.while_loop` over the steps plays the games and records, for each
   scored decision (up to ``MAX_SCORED`` per game, overflow counted and reported), the
   observation (int16), the label, the claim kind and the step index;
2. one vmapped advisor call over the recorded observations computes, for both beliefs
   (coupvisor, exact), p_truth, the threshold and the recommendation.

The advisor (beliefs, posterior) costs ~5x a bot step; computing it only at the
scored decisions instead of at every step of every game in the loop keeps a 10,000-game
condition to about a minute on 2 CPU cores.

Output JSON: per condition and belief ``f1, precision, recall, false_challenge_share``
(recommended challenges of true claims / claims scored), ``missed_bluff_share`` (bluffs
not recommended / claims scored), ``brier, ece`` (positive-class probability 1 -
p_truth), ``claims, games``, plus ``roc_auc, outcome_accuracy, bluff_rate,
challenge_rate, tp/fp/fn/tn, reliability`` and ``per_kind`` (the same metrics per claim
kind).

``--fit`` (seeds must be disjoint from any evaluation's) fits, on the recorded
observations of the fitting games: the exact posterior's claim likelihoods (maximum
likelihood over a grid of the action and block likelihood ratios), the Platt map of
logit(p_truth), then ``alpha, v_last, coin_threat, band`` (grid; the highest mean F1 of
the exact advisor over both conditions with the false-challenge share <= 0.15 in each),
and writes configs/advisor.yaml.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import advisor as A
from coupjax import metrics as M
from coupjax import policies as P
from coupjax import rules as R
from coupjax.engine import Env

NUM_PLAYERS = 4
MAX_SCORED = 256
MAX_STEPS = 3000
CONDITIONS = ("aggressive_heavy", "honest_heavy")
FCS_LIMIT = 0.15  # fitting constraint on the false-challenge share
CONFIG = Path(__file__).resolve().parent.parent / "configs" / "advisor.yaml"


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
        p = ctx["obs"]
        rel = jnp.arange(n)
        between = (rel > ctx["claimant"]) & p["alive"].astype(bool)
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
            bluff = ~jnp.any(s._hands[claimant] == role)
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


def make_scorer(n: int, params: A.AdvisorParams, style: str = "balanced"):
    """Jitted ``score(obs f32[R, obs]) -> dict`` of per-belief advice arrays."""
    def one(o):
        out = {}
        for belief in A.BELIEFS:
            adv = A.advise_challenge(o, n, belief, params, style)
            out[belief] = {k: adv[k] for k in ("p_truth", "p_raw", "theta", "challenge", "impossible", "close_call")}
        adv = A.advise_challenge(o, n, "exact", params, style)
        out["ctx"] = {k: adv[k] for k in ("decision", "context", "me_hidden", "claimant_hidden", "threat", "stake",
                                         "kind")}
        return out

    f = jax.jit(jax.vmap(one))

    def score(obs):
        rows = obs.shape[0]
        outs = []
        for start in range(0, rows, ROW_BLOCK):
            chunk = obs[start:start + ROW_BLOCK]
            pad = ROW_BLOCK - chunk.shape[0]
            if pad:
                chunk = np.concatenate([chunk, np.repeat(chunk[-1:], pad, axis=0)])
            o = jax.tree.map(np.asarray, f(jnp.asarray(chunk)))
            outs.append(jax.tree.map(lambda x: x[:ROW_BLOCK - pad], o))
        return jax.tree.map(lambda *xs: np.concatenate(xs), *outs) if outs else None

    return score


def play_condition(recorder, key, condition: str, games: int, chunk: int, progress=None, task=None) -> dict:
    """Play ``games`` games of ``condition`` in chunks; return the flattened records."""
    k_seats, k_play = jax.random.split(key)
    seats = np.asarray(P.draw_seats(k_seats, condition, games, NUM_PLAYERS))
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
        for belief in A.BELIEFS:
            b = adv[belief]
            result[cond][belief] = quality(rec["label"], b["p_truth"], b["challenge"], rec["games"], rec["kind"])
        result[cond]["overflow"] = rec["overflow"]
        result[cond]["unfinished_games"] = rec["unfinished"]
    return result


# ---------------------------------------------------------------- driving
def record_conditions(games: int, seed: int, chunk: int, conditions=CONDITIONS, quiet: bool = False) -> dict:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    env = Env(NUM_PLAYERS)
    recorder = make_recorder(env, [P.make_policy(x, env) for x in P.SCRIPTED_NAMES])
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
    lines = [f"{'condition':18s} {'belief':9s} {'f1':>6s} {'prec':>6s} {'recall':>6s} {'FCS':>6s} {'MBS':>6s} "
             f"{'brier':>6s} {'ece':>6s} {'auc':>6s} {'claims':>7s} {'games':>6s}"]
    for cond in CONDITIONS:
        if cond not in result:
            continue
        for belief in A.BELIEFS:
            m = result[cond][belief]
            lines.append(f"{cond:18s} {belief:9s} {m['f1']:6.4f} {m['precision']:6.4f} {m['recall']:6.4f} "
                         f"{m['false_challenge_share']:6.4f} {m['missed_bluff_share']:6.4f} {m['brier']:6.4f} "
                         f"{m['ece']:6.4f} {m['roc_auc']:6.4f} {m['claims']:7d} {m['games']:6d}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games-per-condition", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=str, default=None, help="JSON output file")
    ap.add_argument("--chunk", type=int, default=1000, help="games per jitted chunk")
    ap.add_argument("--style", choices=tuple(A.STYLES), default="balanced")
    ap.add_argument("--params", type=str, default=None, help="YAML with a params mapping (default: AdvisorParams())")
    ap.add_argument("--fit", action="store_true", help="fit the constants on these games and write --config")
    ap.add_argument("--config", type=str, default=str(CONFIG))
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    records = record_conditions(args.games_per_condition, args.seed, args.chunk, quiet=args.quiet)
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


def _params_dict(params: A.AdvisorParams) -> dict:
    return {f: float(getattr(params, f)) for f in params.__dataclass_fields__}


if __name__ == "__main__":
    main()
