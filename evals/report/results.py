"""From the suite's cells to ``report.json``: pooled rows, the raw counts beside every
rate, ratings, cross-play, scenario and ablation tables.

Layout of ``report.json`` (every rate has its counts beside it):

* ``policies``: label -> condition -> the pooled row of `evals.report.stats.row`
  (``games``, ``wins``, ``win_rate``, ``ci95_low``, ``ci95_high``, placement, both
  episode rewards, bluff / challenge counts and rates, entropy) plus ``seeds`` (the
  Student-t interval of the win rate over the per-seed values) and ``offline``
  (``winner_rows``, ``winner_action_match``, ``main_rows``, ``one_step_regret``);
  search policies the same on their smaller count;
* ``advice_on_off``: advised label -> condition -> on / off rows and the difference;
* ``advice_paired``: scripted base -> condition -> the page's advice on (``advised:BASE``)
  vs off on the same tables: ``win_rate_on``, ``win_rate_off``, ``diff`` with its paired
  bootstrap ``ci95_low`` / ``ci95_high`` and ``p_value``, ``placement`` (the same for the
  mean placement), ``games`` (tables per seed), ``seeds`` and ``verdict`` (as
  ``python -m evals.compare`` words it);
* ``advice_paired_search``: the same for the page's default advice, search on at the
  page's budget (``advised:BASE:search``) against BASE, for ``advice_search_bases``;
* ``reaction_rates``: label -> condition -> role -> ``challenge_opportunities``,
  ``challenges``, ``challenge_rate``, ``block_opportunities``, ``blocks``, ``bluff_blocks``,
  ``block_rate`` (`evals.reaction_rates`);
* ``exploit_probes``: label -> the strongest scripted probe against its policy and its
  baseline (`evals.report.probes.probe`: ``strongest``, ``win_rate_vs_policy``,
  ``win_rate_vs_baseline``, ``diff``, ``ci95_low``, ``ci95_high``, ``upper95``, ``probes``);
* ``by_players``: table size -> label -> condition -> row;
* ``cross_play``: ``labels``, ``win_rate`` [tested][opponent] and every cell's row;
* ``ratings``: label -> ``mu``, ``sigma``, ``ordinal`` (mu - 3 sigma), ``games`` (the
  openskill Plackett-Luce model over the mixed tables' placements);
* ``advisor``: belief -> condition -> ``tp``, ``fp``, ``fn``, ``tn``, ``f1``, ``brier``,
  ``ece``, ... (`evals.report.advisor.belief_metrics`), with ``coupvisor_paper`` the
  published figures, and ``advisor_constants`` (``alpha``, ``v_last``: the page's,
  `coupjax.advice.recommend.advice_params`, which every advised row and F1 here uses);
  ``scenarios``; ``ablation``.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from evals.report import stats
from evals.report.advisor import condition_metrics, pool
from evals.report.paired import verdict

# CoupVisor's published advisor figures (conditions in this order)
COUPVISOR_PAPER = {"aggressive_heavy": {"f1": 0.5641, "outcome_accuracy": 0.5619},
                   "honest_heavy": {"f1": 0.2831, "outcome_accuracy": 0.5769}}


def _nan_to_none(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _nan_to_none(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_nan_to_none(v) for v in x]
    if isinstance(x, (np.floating,)):
        return _nan_to_none(float(x))
    if isinstance(x, (np.integer,)):
        return int(x)
    return x


def advisor_constants(params=None) -> dict:
    """The value constants of the advisor the report scores and seats (the page's)."""
    from coupjax.advice.recommend import advice_params

    p = advice_params() if params is None else params
    return {"alpha": float(p.alpha), "v_last": float(p.v_last)}


def pooled_rows(cells: dict, labels: list, conditions, seeds) -> dict:
    """label -> condition -> pooled row + ``seeds`` (t-interval of the win rate)."""
    out = {}
    for label in labels:
        out[label] = {}
        for cond in conditions:
            per_seed = [cells[(cond, s)][label] for s in seeds if (cond, s) in cells and label in cells[(cond, s)]]
            if not per_seed:
                continue
            total = None
            for s in per_seed:
                total = stats.add(total, s)
            row = stats.row(total)
            row["seeds"] = stats.across_seeds([stats.row(s) for s in per_seed])
            out[label][cond] = row
    return out


def offline_rows(cells: dict, labels: list, conditions) -> dict:
    out = {}
    for label in labels:
        out[label] = {}
        for cond in conditions:
            parts = [c[label] for (cc, _), c in cells.items() if cc == cond and label in c]
            if not parts:
                continue
            w = sum(p["winner_rows"] for p in parts)
            m = sum(p["main_rows"] for p in parts)
            out[label][cond] = {
                "winner_rows": w, "winner_action_match": sum(p["winner_match"] for p in parts) / max(w, 1),
                "main_rows": m, "one_step_regret": sum(p["regret"] for p in parts) / max(m, 1),
                "positions_games": sum(c["games"] for (cc, _), c in cells.items() if cc == cond)}
    return out


def ratings(mixed: dict, seed: int = 0) -> dict:
    """openskill Plackett-Luce ratings from the mixed tables' placements (games in a
    seeded random order, one rating update per table; each seat its own team)."""
    from openskill.models import PlackettLuce

    if not mixed:
        return {}
    labels = mixed["labels"]
    model = PlackettLuce()
    rating = {x: model.rating(name=x) for x in labels}
    idx, place = np.asarray(mixed["idx"]), np.asarray(mixed["placement"])
    games = {x: 0 for x in labels}
    for g in np.random.default_rng(seed).permutation(len(idx)):
        names = [labels[i] for i in idx[g]]
        if len(set(names)) != len(names):
            raise ValueError("a mixed table seats one policy twice")
        new = model.rate([[rating[x]] for x in names], ranks=[int(p) for p in place[g]])
        for x, team in zip(names, new):
            rating[x] = team[0]
            games[x] += 1
    return {x: {"mu": r.mu, "sigma": r.sigma, "ordinal": r.mu - 3 * r.sigma, "ci95": [r.mu - 2 * r.sigma,
                                                                                     r.mu + 2 * r.sigma],
                "games": games[x]} for x, r in rating.items()}


def cross_table(cross: dict) -> dict:
    if not cross:
        return {}
    labels = cross["labels"]
    cells = {k: stats.row(v) for k, v in cross["cells"].items()}
    wr = [[cells[f"{a}|{b}"]["win_rate"] for b in labels] for a in labels]
    return {"labels": labels, "win_rate": wr, "cells": cells}


def advisor_table(cells: dict, conditions) -> dict:
    out = {}
    for cond in conditions:
        parts = [c for (cc, _), c in cells.items() if cc == cond]
        if not parts:
            continue
        rec = pool(parts)
        for belief, m in condition_metrics(rec).items():
            out.setdefault(belief, {})[cond] = dict(m, overflow=rec["overflow"], unfinished_games=rec["unfinished"])
    return out


def advice_on_off(policies: dict, cfg) -> dict:
    out = {}
    for label, a in cfg.advised.items():
        out[label] = {}
        for cond in cfg.conditions:
            on, off = policies.get(label, {}).get(cond), policies.get(a["base"], {}).get(cond)
            if on is None or off is None:
                continue
            out[label][cond] = {"base": a["base"], "belief": a["belief"], "on": on, "off": off,
                                "win_rate_change": on["win_rate"] - off["win_rate"],
                                "challenge_rate_on": on["challenge_rate"], "challenge_rate_off": off["challenge_rate"]}
    return out


def advice_paired(cells: dict, cfg, bases=None) -> dict:
    """The ``advice_paired`` block (module doc) from the suite's ``advice/{condition}`` cells
    (``bases``: default the config's ``advice_bases``; ``advice_paired_search`` is the same
    block of ``advice_search_bases`` from the ``advice_search/{condition}`` cells)."""
    out = {}
    for cond, cell in cells.items():
        for i, base in enumerate(cfg.advice_bases if bases is None else bases):
            on, off = np.asarray(cell["wins_on"][i:i + 1]), np.asarray(cell["wins_off"][i:i + 1])
            win = stats.paired_bootstrap(on, off)
            place = stats.paired_bootstrap(cell["place_on"][i:i + 1], cell["place_off"][i:i + 1])
            out.setdefault(base, {})[cond] = {
                "win_rate_on": float(on.mean()), "win_rate_off": float(off.mean()), "diff": win["diff"],
                "ci95_low": win["ci_low"], "ci95_high": win["ci_high"], "p_value": win["p_value"],
                "placement": {"diff": place["diff"], "ci95_low": place["ci_low"], "ci95_high": place["ci_high"]},
                "games": int(on.shape[-1]), "seeds": list(cfg.seeds),
                "verdict": verdict(win["ci_low"], win["ci_high"], "advice on", "advice off")}
    return out


def reaction_table(cells: dict, cfg) -> dict:
    """label -> condition -> role -> counts and rates, from the ``reactions/{condition}`` cells."""
    return {label: {cond: cell[label] for cond, cell in cells.items() if label in cell}
            for label in cfg.reaction_policies if any(label in cell for cell in cells.values())}


def read_ablation(paths: dict) -> dict:
    """label -> the run's per-chunk curves (entropy in nats, episode return, win rate,
    epsilon) and action-visit histograms, from its summary.json."""
    out = {}
    for label, path in paths.items():
        s = json.loads(Path(path).read_text())
        hist = s["history"]
        curves = {k: [h.get(k) for h in hist] for k in ("chunk", "step", "entropy", "episode_return", "win_rate",
                                                        "epsilon", "greedy_share", "loss", "q_mean")}
        hists = [h["action_hist"] for h in hist if "action_hist" in h]
        out[label] = {"source": str(path), "curves": curves, "action_hist": hists,
                      "config": s.get("config"), "wall_seconds": s.get("wall_seconds")}
    return out


def build(cfg, res: dict) -> dict:
    """The report's JSON (module doc) from `evals.report.suite.Suite.run`'s cells."""
    policies = pooled_rows(res["seat"], [*cfg.policies, *cfg.advised], cfg.conditions, cfg.seeds)
    search = pooled_rows(res["search"], list(cfg.search_policies), cfg.conditions, cfg.seeds)
    offline = offline_rows(res["positions"], [*cfg.policies, *cfg.search_policies, *cfg.advised], cfg.conditions)
    for block in (policies, search):
        for label, conds in block.items():
            for cond, row in conds.items():
                if cond in offline.get(label, {}):
                    row["offline"] = offline[label][cond]
    by_players = {}
    for (k, cond), cell in res["players"].items():
        for label, sums in cell.items():
            by_players.setdefault(str(k), {}).setdefault(label, {})[cond] = stats.row(sums)
    first = cfg.seeds[0]
    for cond in cfg.conditions:
        for label, sums in res["seat"].get((cond, first), {}).items():
            by_players.setdefault(str(cfg.num_players), {}).setdefault(label, {})[cond] = stats.row(sums)
    out = {
        "policies": policies, "search_policies": search, "advice_on_off": advice_on_off(policies, cfg),
        "advice_paired": advice_paired(res.get("advice", {}), cfg),
        "advice_paired_search": advice_paired(res.get("advice_search", {}), cfg, cfg.advice_search_bases),
        "reaction_rates": reaction_table(res.get("reactions", {}), cfg),
        "exploit_probes": dict(res.get("probes", {})),
        "by_players": by_players, "cross_play": cross_table(res["cross"]),
        "ratings": ratings(res["mixed"], cfg.seeds[0]),
        "advisor": advisor_table(res["advisor"], cfg.conditions), "coupvisor_paper": COUPVISOR_PAPER,
        "advisor_constants": advisor_constants(),
        "scenarios": scenario_table(res["scenarios"]), "ablation": read_ablation(cfg.ablation),
    }
    return _nan_to_none(out)


def scenario_table(sc: dict) -> dict:
    if not sc:
        return {}
    out = {"scenarios": sc["scenarios"], "policies": {}, "advisors": {}}
    for label, per in sc["policies"].items():
        out["policies"][label] = {"mean_mass": float(np.mean([v["mass"] for v in per.values()])),
                                  "hits": int(sum(v["hit"] for v in per.values())), "count": len(per),
                                  "per_scenario": per}
    for belief, per in sc["advisors"].items():
        out["advisors"][belief] = {"correct": int(sum(v["correct"] for v in per.values())), "count": len(per),
                                   "per_scenario": per}
    return out
