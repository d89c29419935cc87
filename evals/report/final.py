"""The final report: ``docs/results.md`` generated from ``report.json``, on held-out seeds.

``python -m evals.report --config configs/eval.yaml --final [--runs DIR]`` plays the
evaluation matrix on held-out seeds (`coupjax.seeds.HELD_OUT_SEEDS`; every look is
recorded in the ledger), then this stage:

* reads the run directories ``python -m evals.experiments`` trained into ``DIR`` (its
  ``DIR/experiments.yaml``: labels, training seeds, the ``report`` section) and refuses
  a missing or unfinished run;
* seats every training-seed unit of every config, and each baseline, in the same seat
  of the same tables (`evals.report.paired.play_paired`; other seats drawn from the
  ``report.condition``): per config, its mean win rate with a Student-t interval over
  training seeds, beside each training seed's own figure;
* ranks every pair of ``report.pairs`` with the paired hierarchical bootstrap
  (`evals.report.stats.paired_bootstrap`, the function of ``python -m evals.compare``)
  and every pair of ``report.head_to_head`` with `evals.report.paired.compare` (A, then
  B, in one seat against three copies of B's first training seed), Holm-corrected over
  all of them (`evals.report.stats.holm`): "beats" only where the corrected test rejects
  and the 95% interval excludes 0, otherwise "no significant difference";
* reports exploitability from ``DIR/exploit.json`` (`evals.exploit.summarize` per
  config): the maximum over families, training seeds and best-response seeds, or "not
  found at this budget (>= 0.25)".

`render` writes every sentence and figure from the JSON (no figure is typed by hand)
and `check_results` refuses a text without its ``Criterion: <commit>`` line.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import yaml

from coupjax.metrics import t_interval, wilson_interval
from evals.report.stats import holm, paired_bootstrap

CRITERION_LINE = re.compile(r"^Criterion: [0-9a-f]{40}$", re.M)
ALPHA = 0.05


class FinalReportError(ValueError):
    """The runs or the criterion the final report needs are missing; the message says which."""


def check_results(text: str) -> str:
    """``text`` if it names a criterion commit (a line ``Criterion: <40 hex digits>``);
    FinalReportError otherwise: a results file must say which criterion it answers."""
    if not CRITERION_LINE.search(text):
        raise FinalReportError("a results file needs a line 'Criterion: <full commit hash>' naming the commit of the "
                               "criterion it answers (docs/experiments/README.md); set COUPJAX_CRITERION")
    return text


def read_experiments(runs: Path) -> dict:
    """The experiments config the runs in ``runs`` were trained with (``runs/experiments.yaml``)."""
    path = Path(runs) / "experiments.yaml"
    if not path.is_file():
        raise FinalReportError(f"--runs {str(runs)!r} holds no experiments.yaml: train the runs first with "
                               "python -m evals.experiments --config configs/experiments.yaml")
    return yaml.safe_load(path.read_text())


def units(exp: dict, runs: Path) -> dict:
    """Label -> its units: each config's run directories (one per training seed, all
    finished), each baseline's spec.  FinalReportError naming the runs that are missing."""
    out, missing = {}, []
    for label in exp["configs"]:
        dirs = [Path(runs) / "train" / label / f"seed_{s}" for s in exp["training_seeds"]]
        missing += [str(d) for d in dirs if not ((d / "export").is_dir() and (d / "summary.json").is_file())]
        out[label] = [str(d) for d in dirs]
    if missing:
        raise FinalReportError(f"{len(missing)} run(s) are missing or unfinished, e.g. {missing[0]!r}: finish them "
                               "with python -m evals.experiments (it resumes)")
    for label, spec in exp["report"].get("baselines", {}).items():
        out[label] = [spec]
    return out


def _verdict(a: str, b: str, lo: float, hi: float, reject: bool) -> str:
    if reject and lo > 0:
        return f"`{a}` beats `{b}`"
    if reject and hi < 0:
        return f"`{b}` beats `{a}`"
    return f"no significant difference between `{a}` and `{b}`"


def rank(rows: list[dict], alpha: float = ALPHA) -> list[dict]:
    """``rows`` (each ``a``, ``b``, ``diff``, ``ci95_low``, ``ci95_high``, ``p_value``)
    with Holm's adjusted p-value over all of them and the verdict of the module doc."""
    h = holm([r["p_value"] for r in rows], alpha)
    return [dict(r, p_holm=p, verdict=_verdict(r["a"], r["b"], r["ci95_low"], r["ci95_high"], bool(rej)))
            for r, p, rej in zip(rows, h["adjusted"], h["reject"])]


def summarize_units(label: str, unit_names: list[str], wins: np.ndarray, place: np.ndarray) -> dict:
    """A label's figures from its units' per-table results (``wins`` [units, seeds, tables]):
    each unit's win rate (Wilson over its tables) and the mean over units with a Student-t
    interval over them (the training seeds)."""
    per = []
    for j, u in enumerate(unit_names):
        w, n = int(wins[j].sum()), int(wins[j].size)
        lo, hi = wilson_interval(w, n)
        per.append({"unit": u, "win_rate": w / n, "ci95_low": lo, "ci95_high": hi, "games": n,
                    "mean_placement": float(place[j].mean())})
    t = t_interval([p["win_rate"] for p in per], (0.0, 1.0))
    return {"label": label, "units": per, "win_rate": t["mean"], "ci95_low": t["ci95_low"],
            "ci95_high": t["ci95_high"], "sd": t["sd"], "training_seeds": len(per)}


def check_boot(exp: dict, n_boot: int) -> None:
    """FinalReportError if ``n_boot`` resamples are too few for any of the report's
    comparisons to pass Holm's correction (the smallest bootstrap p-value is 2 / (n_boot + 1))."""
    rep = exp["report"]
    m = len(rep.get("pairs", [])) + len(rep.get("head_to_head", []))
    if m and 2.0 * m / (n_boot + 1) > ALPHA:
        raise FinalReportError(f"{n_boot} bootstrap resamples cannot show any of {m} comparisons at {ALPHA:g} after "
                               f"Holm's correction; use at least {int(2 * m / ALPHA)}")


def play_final(exp: dict, runs: Path, seeds: list[int], num_players: int, n_boot: int = 2000,
               batch: int = 1000) -> dict:
    """The final section of report.json (module doc), played on ``seeds``."""
    from coupjax.env import Env
    from evals.report.paired import compare, play_paired

    rep = exp["report"]
    check_boot(exp, n_boot)
    env = Env(num_players)
    by_label = units(exp, runs)
    every = list(dict.fromkeys(u for us in by_label.values() for u in us))
    res = play_paired(env, every, every[:1], rep["games"], list(seeds), rep["condition"], batch)
    wins, place = res["wins"][0], res["placement"][0]
    rows = {label: np.array([every.index(u) for u in us]) for label, us in by_label.items()}
    configs = {label: summarize_units(label, us, wins[rows[label]], place[rows[label]])
               for label, us in by_label.items()}
    pairs = []
    for a, b in rep.get("pairs", []):
        r = paired_bootstrap(wins[rows[a]], wins[rows[b]], n_boot=n_boot)
        pairs.append({"kind": "pool", "a": a, "b": b, "diff": r["diff"], "ci95_low": r["ci_low"],
                      "ci95_high": r["ci_high"], "p_value": r["p_value"], "games": rep["games"],
                      "seeds": list(seeds), "opponents": rep["condition"]})
    for a, b in rep.get("head_to_head", []):
        r = compare(env, ",".join(by_label[a]), ",".join(by_label[b]), rep["head_to_head_games"], list(seeds),
                    opponents=by_label[b][0], n_boot=n_boot, batch=batch)
        pairs.append({"kind": "head_to_head", "a": a, "b": b, "diff": r["diff"], "ci95_low": r["ci95_low"],
                      "ci95_high": r["ci95_high"], "p_value": r["p_value"], "games": rep["head_to_head_games"],
                      "seeds": list(seeds), "opponents": by_label[b][0], "win_rate_a": r["win_rate_a"],
                      "win_rate_b": r["win_rate_b"]})
    exploit_path = Path(runs) / "exploit.json"
    exploit = json.loads(exploit_path.read_text()) if exploit_path.is_file() else {}
    ranked = [*rep.get("pairs", []), *rep.get("head_to_head", [])]
    return {"runs": str(runs), "seeds": list(seeds), "condition": rep["condition"], "games": rep["games"],
            "training_seeds": list(exp["training_seeds"]), "configs": configs, "rankings": rank(pairs),
            "exploit": exploit, "exploit_comparisons": exploit_comparisons(exploit, ranked),
            "n_boot": n_boot, "alpha": ALPHA}


def exploit_comparisons(exploit: dict, pairs, family: str = "dqn") -> list[dict]:
    """For each ranked pair whose two configs both have ``family`` best responses on
    several runs: the two means with their 95% t intervals over the runs (training seeds
    x best-response seeds, the noise that varies), and the verdict.  "Less exploitable"
    only where the intervals do not overlap (a conservative test: the final report's
    criterion); otherwise "no significant difference"."""
    out = []
    for a, b in dict.fromkeys(tuple(p) for p in pairs):
        fa = exploit.get(a, {}).get("over_seeds", {}).get(family)
        fb = exploit.get(b, {}).get("over_seeds", {}).get(family)
        if not fa or not fb or min(fa["runs"], fb["runs"]) < 2:
            continue
        if fa["ci95_high"] < fb["ci95_low"]:
            verdict = f"`{a}` is less exploitable than `{b}`"
        elif fb["ci95_high"] < fa["ci95_low"]:
            verdict = f"`{b}` is less exploitable than `{a}`"
        else:
            verdict = f"no significant difference in exploitability between `{a}` and `{b}`"
        out.append({"a": a, "b": b, "family": family, "verdict": verdict,
                    **{f"{k}_{x}": o[x] for k, o in (("a", fa), ("b", fb)) for x in ("mean", "ci95_low", "ci95_high",
                                                                                       "runs")}})
    return out


# ------------------------------------------------------------------ docs/results.md
def _f(x, d=3):
    return "-" if x is None else f"{x:.{d}f}"


def _table(head, rows) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows] + [""]


def _config_section(fin: dict) -> list[str]:
    lines = ["## Each config over its training seeds", "",
             f"Every unit in the same seat of the same {fin['games']:,} four-player tables per held-out seed "
             f"(seeds {', '.join(map(str, fin['seeds']))}; the other seats drawn from `{fin['condition']}`). "
             "A config's win rate is the mean over its training seeds with a 95% Student-t interval over them "
             "(the noise of training); each training seed's own figure carries a 95% Wilson interval over its "
             "tables.", ""]
    rows = []
    for label, c in fin["configs"].items():
        per = "; ".join(f"{Path(u['unit']).name}: {_f(u['win_rate'])} [{_f(u['ci95_low'])}, {_f(u['ci95_high'])}]"
                        for u in c["units"])
        over = (f"{_f(c['win_rate'])} [{_f(c['ci95_low'])}, {_f(c['ci95_high'])}]" if c["training_seeds"] > 1
                else f"{_f(c['win_rate'])} (one unit: a fixed policy, no training-seed interval)")
        rows.append([f"`{label}`", c["training_seeds"], over, per])
    return lines + _table(["config", "training seeds", "win rate, mean over training seeds [95%]",
                           "per training seed [95% over tables]"], rows)


def _ranking_section(fin: dict) -> list[str]:
    ranks = fin["rankings"]
    if not ranks:
        return []
    lines = ["## Rankings", "",
             f"Each sentence comes from a paired comparison (the difference in win rate, the same tables; hierarchical "
             f"bootstrap over table seeds, training seeds and tables, {fin['n_boot']:,} resamples), Holm-corrected "
             f"over the {len(ranks)} comparisons of this report: \"beats\" only where the corrected test rejects at "
             f"{fin['alpha']:g} and the 95% interval excludes 0.", ""]
    for r in ranks:
        where = (f"in one seat of `{fin['condition']}` tables" if r["kind"] == "pool" else
                 f"head to head (each in one seat against three copies of `{r['b']}`'s first training seed)")
        lines.append(f"- **{r['verdict'][0].upper() + r['verdict'][1:]}** {where}: `{r['a']}` minus `{r['b']}` "
                     f"{r['diff']:+.3f} [{r['ci95_low']:+.3f}, {r['ci95_high']:+.3f}], p = {r['p_value']:.3g}, "
                     f"Holm-adjusted {r['p_holm']:.3g} ({r['games']:,} tables x {len(r['seeds'])} held-out seed(s)).")
    return lines + [""]


def _exploit_section(fin: dict) -> list[str]:
    lines = ["## Exploitability", "",
             "The best of the best responses (`evals.exploit` families) against three frozen copies of each "
             "training seed's export: the maximum over families, training seeds and best-response seeds. Below "
             "1/4 a best response only shows that the learner failed (copying the policy would give 1/4), so it "
             "reads \"not found at this budget\". Exploitability is reported here, not ranked.", ""]
    if not fin["exploit"]:
        return lines + ["No best responses were recorded (`python -m evals.experiments` writes exploit.json).", ""]
    rows = []
    for label, e in fin["exploit"].items():
        missing = f"; {len(e['missing'])} planned best response(s) missing" if e.get("missing") else ""
        if "win_rate" not in e:
            rows.append([f"`{label}`", "none recorded" + missing, "-", "-"])
            continue
        best = e["best"]
        head = (f"{_f(e['win_rate'])} [{_f(e['ci95_low'])}, {_f(e['ci95_high'])}] ({best['family']}, "
                f"{Path(best['policy']).name}, best-response seed {best['seed']})" if e["found"] else e["verdict"])
        per = "; ".join(f"{Path(p).name}: {_f(v['win_rate'])}" for p, v in e["per_policy"].items())
        fam = "; ".join(f"{f}: mean {_f(o['mean'])} [{_f(o['ci95_low'])}, {_f(o['ci95_high'])}] over {o['runs']}"
                        for f, o in e["over_seeds"].items())
        rows.append([f"`{label}`", head + missing, per, fam])
    lines += _table(["config", "exploitability (max)", "max per training seed",
                     "per family: mean over runs [95% t]"], rows)
    comps = fin.get("exploit_comparisons", [])
    if comps:
        lines += [f"Compared by their `{comps[0]['family']}` best responses (the mean over training seeds x "
                  "best-response seeds with a 95% t interval over those runs; \"less exploitable\" only where the "
                  "two intervals do not overlap):", ""]
        lines += [f"- **{c['verdict'][0].upper() + c['verdict'][1:]}**: `{c['a']}` {_f(c['a_mean'])} "
                  f"[{_f(c['a_ci95_low'])}, {_f(c['a_ci95_high'])}] over {c['a_runs']} runs, `{c['b']}` "
                  f"{_f(c['b_mean'])} [{_f(c['b_ci95_low'])}, {_f(c['b_ci95_high'])}] over {c['b_runs']} runs."
                  for c in comps]
        lines.append("")
    curves = [(label, f, r) for label, e in fin["exploit"].items() for f, rows in e.get("families", {}).items()
              if len(rows) == 1 for r in rows if r.get("curve")]
    if curves:
        lines += ["Learning curves of the one-run families (win rate along training; for a search best response, "
                  "along its sampled worlds doubling), to show where each stopped rising:", ""]
        lines += [f"- `{label}` {f} (best-response seed {r['seed']}): "
                  + " -> ".join(_f(x) for x in r["curve"]) for label, f, r in curves]
        lines.append("")
    return lines


def _advisor_claims(rep: dict) -> list[str]:
    """The advisor's F1 against CoupVisor's published figure, per condition and belief:
    "above" or "below" only where the interval over games lies wholly on one side."""
    adv, paper = rep.get("advisor") or {}, rep.get("coupvisor_paper") or {}
    out = []
    for cond, p in paper.items():
        for belief in ("exact", "coupvisor"):
            m = adv.get(belief, {}).get(cond)
            if not m or p.get("f1") is None:
                continue
            lo, hi = m.get("f1_ci95_low"), m.get("f1_ci95_high")
            if lo is None or hi is None:
                out.append(f"- The `{belief}` advisor's F1 in `{cond}` is {m['f1']:.4f} against CoupVisor's "
                           f"published {p['f1']:.4f}; the report gives no interval for it (a point estimate only).")
                continue
            side = "above" if lo > p["f1"] else "below" if hi < p["f1"] else None
            head = (f"The `{belief}` advisor's F1 is {side} CoupVisor's published figure" if side else
                    f"No significant difference between the `{belief}` advisor's F1 and CoupVisor's published figure")
            out.append(f"- **{head}** in `{cond}`: {m['f1']:.4f} [{lo:.4f}, {hi:.4f}] (95% over games, "
                       f"{m['claims']:,} claims of {m.get('games', 0):,} games) against {p['f1']:.4f}.")
    if not out:
        return []
    return ["## The challenge advisor against CoupVisor's figures", "",
            "F1 of the advisor's challenge recommendations on every challengeable claim of the held-out seeds' "
            "games (the table under \"The challenge advisor\" below), with a bootstrap interval that resamples "
            "whole games, beside CoupVisor's published figure (a fixed number: no interval).", ""] + out + [""]


def render(rep: dict, cfg, criterion: dict, figures: dict | None = None) -> str:
    """docs/results.md from report.json's ``final`` section and the matrix (``rep``);
    ``figures``: section -> link of `evals.report.figures.draw_final`'s PNGs."""
    from evals.report import markdown

    fin = rep["final"]
    lines = ["# Results", "",
             "Generated by `python -m evals.report --config configs/eval.yaml --final` from report.json; do not "
             "edit by hand (docs/experiments/README.md, \"Reproducing docs/results.md\").", "",
             f"Criterion: {criterion['commit']}", "",
             f"Criterion file: `{criterion['path']}`. Held-out table seeds: {', '.join(map(str, fin['seeds']))}; "
             f"training seeds {', '.join(map(str, fin['training_seeds']))}. Commit of the report: "
             f"`{rep.get('meta', {}).get('git_commit', 'unknown')}`.", ""]
    figures = figures or {}

    def figure(section, alt):
        return [f"![{alt}]({figures[section]})", ""] if section in figures else []

    lines += (_config_section(fin) + figure("configs", "win rate per training seed and config")
              + _ranking_section(fin) + _exploit_section(fin) + figure("exploit", "every best response's win rate")
              + _advisor_claims(rep))
    matrix = markdown.policy_section(rep, cfg) + (markdown.advisor_section(rep, cfg) if rep.get("advisor") else [])
    lines += [x for x in matrix if not x.startswith("![")]  # the figures stay beside report.md
    return check_results("\n".join(lines).rstrip() + "\n")
