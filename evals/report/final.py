"""The final report: ``docs/results.md`` generated from ``report.json``, on held-out seeds.

``python -m evals.report --config configs/eval.yaml --final [--runs DIR]`` plays the
evaluation matrix on held-out seeds (`coupjax.seeds.HELD_OUT_SEEDS`; every look is
recorded in the ledger), then this stage:

* reads the run directories ``python -m evals.experiments`` trained into ``DIR`` (its
  ``DIR/experiments.yaml``: labels, training seeds, the ``report`` section) and refuses
  a missing or unfinished run;
* seats every training-seed unit of every config, and each baseline, in the same seat
  of the same tables (`evals.lib.paired.play_paired`; other seats drawn from the
  ``report.condition``, or from each of ``report.conditions`` in turn): per config and
  condition, its mean win rate with a Student-t interval over training seeds, beside
  each training seed's own figure;
* ranks every pair of ``report.pairs`` (one seat of the pool's tables: one comparison
  per condition, named by its ``opponents``) and of ``report.head_to_head`` (A, then B's
  other training seeds, in one seat against three copies of B's first training seed:
  B's first seed does not play itself; no condition) by Welch's t on the training-seed
  units' mean win rates (`evals.lib.stats.unit_test`), Holm-corrected over all of them,
  every condition's included (`evals.lib.stats.holm`): "beats" only where the corrected
  test rejects and the 95% interval excludes 0, otherwise "no significant difference";
  each sentence with the smallest effect its design could detect;
* reports exploitability from ``DIR/exploit.json`` (`evals.exploit.summarize` per
  config): per family the mean over training seeds (each training seed's best-response
  seeds averaged first) with a t interval over training seeds; the maximum over runs as a
  maximum (it is selected, so no interval), or "not found at this budget (>= 0.25)";
* where the ``report`` section names them (optional, issue 40; `evals.report.recipe`):
  ``curve``, a recipe's win rate against a baseline and its ``dqn`` best response
  against training minutes, with env steps per second; ``targets``, checks printed met or
  not met with their figures (head to head against three copies of an opponent,
  exploitability, the network alone's decision scenarios, training minutes).

`render` derives every verdict from the per-unit figures of the JSON (`rankings`,
`evals.exploit.over_runs`), so a report made under an earlier test is re-derived under this one and
says which of its claims were kept, changed or withdrawn; it writes every sentence and
figure from the JSON (no figure is typed by hand), with a note for every held-out seed
the ledger shows looked at more than once; `check_results` refuses a text without its
``Criterion: <commit>`` line.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

from coupjax import seeds as seed_roles
from coupjax.metrics import t_interval, wilson_interval
from coupjax.yaml_file import read_yaml
from evals.experiments_keys import label_seeds, report_conditions
from evals.exploit import over_runs
from evals.lib.stats import holm, smallest_detectable_difference, unit_test
from evals.report.ledger_notes import repeat_notes
from evals.report.markdown import markdown_table
from evals.report.recipe import (condition_tables, curve_section, play_recipe, pool_units, target_parts,
                                 targets_section, training_seeds_text, untimed)

CRITERION_LINE = re.compile(r"^Criterion: [0-9a-f]{40}$", re.M)
ALPHA = 0.05
POWER = 0.8
# Issue 41: configs that are compared get at least five training seeds; fewer is said beside the rankings.
MIN_TRAINING_SEEDS = 5
TEST_NAME = "welch"  # the rankings' test (`unit_test`); a report.json without it was ranked by the bootstrap


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
    return read_yaml(path, FinalReportError)


def units(exp: dict, runs: Path) -> dict:
    """Label -> its units: each config's run directories (one per training seed, all
    finished), each baseline's spec.  FinalReportError naming the runs that are missing."""
    out, missing = {}, []
    for label in exp["configs"]:
        dirs = [Path(runs) / "train" / label / f"seed_{s}"
                for s in label_seeds(exp["training_seeds"], exp.get("config_seeds"), label)]
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


def between_seed_sd(fin: dict) -> float:
    """The spread of a trained config's win rate over its training seeds, pooled over the
    report's configs with several, in every condition (the root of their mean variance):
    the design's noise."""
    var = [np.var([u["win_rate"] for u in c["units"]], ddof=1) for configs in condition_tables(fin).values()
           for c in configs.values() if len(c["units"]) > 1]
    return float(np.sqrt(np.mean(var))) if var else 0.0


def pool_condition(fin: dict, r: dict) -> str | None:
    """The condition of a ranked pair's tables: a pool pair's ``opponents`` (the report's one
    condition where an older report.json did not say); None head to head."""
    return r.get("opponents", fin.get("condition")) if r["kind"] == "pool" else None


def _sides(fin: dict, r: dict):
    """(A's unit means, B's, A's tables per unit, B's) of a ranked pair; None where the
    report did not keep them (a head-to-head pair of a report made before issue 41)."""
    if r["kind"] == "pool":
        cond = pool_condition(fin, r)
        (ma, ga), (mb, gb) = pool_units(fin, r["a"], cond), pool_units(fin, r["b"], cond)
        return ma, mb, ga, gb
    if "per_unit" not in r:
        return None
    games = r["games"] * len(r["seeds"])
    return list(r["per_unit"]["a"].values()), list(r["per_unit"]["b"].values()), games, games


def detectable(k_a: int, k_b: int, tables: int, p: float, between_sd: float, comparisons: int) -> float:
    """The smallest difference a pair's design (``k_a`` and ``k_b`` units of ``tables``
    tables each) detects at 80% power, Bonferroni over ``comparisons`` (Holm's first
    step): t quantiles on the test's degrees of freedom, a fixed policy adding no
    training-seed spread (`evals.lib.stats.smallest_detectable_difference`)."""
    df = None if k_a == k_b == 1 else (k_a + k_b - 2 if min(k_a, k_b) > 1 else max(k_a, k_b) - 1)
    units = [math.inf if k == 1 else k for k in (k_a, k_b)]
    return smallest_detectable_difference(tables, p=min(max(p, 0.01), 0.99), alpha=ALPHA, power=POWER,
                                          comparisons=comparisons, between_sd=between_sd, units=units[0],
                                          units_b=units[1], df=df)


def rank(fin: dict, alpha: float = ALPHA) -> list[dict]:
    """The report's ranked pairs (``fin["rankings"]``: ``kind``, ``a``, ``b``, ``games``,
    ``seeds``) tested on their units' mean win rates (`unit_test`), Holm-corrected over all
    of them, with the verdict of the module doc and the smallest detectable effect.  A pair
    whose per-unit figures were not kept is ``withdrawn`` (p = 1 in Holm's correction)."""
    sd, m = between_seed_sd(fin), len(fin["rankings"])
    out = []
    for r in fin["rankings"]:
        keep = {k: r[k] for k in ("kind", "a", "b", "games", "seeds", "opponents", "per_unit") if k in r}
        sides = _sides(fin, r)
        if sides is None:
            out.append(dict(keep, withdrawn=True, p_value=1.0))
            continue
        ma, mb, ga, gb = sides
        t = unit_test(ma, mb, ga, gb, alpha)
        p_mean = (float(np.mean(ma)) + float(np.mean(mb))) / 2
        out.append(dict(keep, diff=t["diff"], ci95_low=t["ci_low"], ci95_high=t["ci_high"], p_value=t["p_value"],
                        df=t["df"], test=TEST_NAME, units_a=t["units_a"], units_b=t["units_b"],
                        detectable=detectable(len(ma), len(mb), min(ga, gb), p_mean, sd, m)))
    h = holm([r["p_value"] for r in out], alpha)
    for r, p, rej in zip(out, h["adjusted"], h["reject"]):
        r["p_holm"] = p
        r["verdict"] = ("withdrawn: the report kept no per-unit figures for it" if r.get("withdrawn") else
                        _verdict(r["a"], r["b"], r["ci95_low"], r["ci95_high"], bool(rej)))
    return out


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
    m = len(rep.get("pairs", [])) * len(report_conditions(rep)) + len(rep.get("head_to_head", []))
    if m and 2.0 * m / (n_boot + 1) > ALPHA:
        raise FinalReportError(f"{n_boot} bootstrap resamples cannot show any of {m} comparisons at {ALPHA:g} after "
                               f"Holm's correction; use at least {int(2 * m / ALPHA)}")


def final_parts(exp: dict, runs: Path) -> list[str]:
    """The names `play_final` times its parts by, in play order: the pool's tables per
    condition, each head-to-head pair, then `evals.report.recipe.target_parts`."""
    rep = exp["report"]
    pairs = [f"head_to_head/{a}/{b}" for a, b in rep.get("head_to_head", [])]
    return [f"pool/{c}" for c in report_conditions(rep)] + pairs + target_parts(rep, units(exp, runs))


def play_final(exp: dict, runs: Path, seeds: list[int], num_players: int, n_boot: int = 2000,
               batch: int = 1000, part=untimed) -> dict:
    """The final section of report.json (module doc), played on ``seeds``; ``part``: name
    -> a context that times that part (`evals.report.progress.Parts`, names `final_parts`)."""
    from coupjax.env import Env
    from evals.lib.paired import compare, play_paired

    rep = exp["report"]
    check_boot(exp, n_boot)
    env = Env(num_players)
    by_label = units(exp, runs)
    every = list(dict.fromkeys(u for us in by_label.values() for u in us))
    rows = {label: np.array([every.index(u) for u in us]) for label, us in by_label.items()}
    conditions, tables = report_conditions(rep), {}
    for cond in conditions:  # the same held-out seeds, the other seats drawn from each condition
        with part(f"pool/{cond}"):
            res = play_paired(env, every, every[:1], rep["games"], list(seeds), cond, batch)
        wins, place = res["wins"][0], res["placement"][0]
        tables[cond] = {label: summarize_units(label, us, wins[rows[label]], place[rows[label]])
                        for label, us in by_label.items()}
    pairs = [{"kind": "pool", "a": a, "b": b, "games": rep["games"], "seeds": list(seeds), "opponents": cond}
             for a, b in rep.get("pairs", []) for cond in conditions]
    for a, b in rep.get("head_to_head", []):
        # B's first training seed fills the three other seats: it does not play itself (a share
        # of 1/4 by symmetry), unless B is one unit (a fixed policy) and has no other
        b_units = by_label[b][1:] or by_label[b]
        with part(f"head_to_head/{a}/{b}"):
            r = compare(env, ",".join(by_label[a]), ",".join(b_units), rep["head_to_head_games"], list(seeds),
                        opponents=by_label[b][0], n_boot=n_boot, batch=batch)
        pairs.append({"kind": "head_to_head", "a": a, "b": b, "games": rep["head_to_head_games"],
                      "seeds": list(seeds), "opponents": by_label[b][0], "win_rate_a": r["win_rate_a"],
                      "win_rate_b": r["win_rate_b"], "per_unit": r["per_unit"]})
    exploit_path = Path(runs) / "exploit.json"
    exploit = json.loads(exploit_path.read_text()) if exploit_path.is_file() else {}
    # ``condition`` and ``configs`` are the first condition's (the figure and the compute curve use
    # them); ``configs_by_condition`` only with several, so a one-condition report.json is what it was
    fin = {"runs": str(runs), "seeds": list(seeds), "condition": conditions[0], "games": rep["games"],
           "training_seeds": list(exp["training_seeds"]), "configs": tables[conditions[0]], "rankings": pairs,
           "exploit": exploit, "n_boot": n_boot, "alpha": ALPHA}
    if len(conditions) > 1:
        fin["configs_by_condition"] = tables
    fin["rankings"] = rank(fin)
    fin["exploit_comparisons"] = exploit_comparisons(fin)
    fin.update(play_recipe(env, rep, by_label, list(seeds), batch, part))
    return fin


def exploit_comparisons(fin: dict, family: str = "dqn") -> list[dict]:
    """For each ranked pair whose two configs both have ``family`` best responses on
    several training seeds: the two means with their 95% t intervals over training seeds
    (`evals.exploit.over_runs`) and the verdict.  "Less exploitable" only where the intervals do not
    overlap (a conservative test: the final report's criterion); otherwise "no
    significant difference"."""
    exploit, out = fin.get("exploit", {}), []
    for a, b in dict.fromkeys((r["a"], r["b"]) for r in fin["rankings"]):
        ra = exploit.get(a, {}).get("families", {}).get(family)
        rb = exploit.get(b, {}).get("families", {}).get(family)
        if not ra or not rb:
            continue
        fa, fb = over_runs(ra), over_runs(rb)
        if min(fa["training_seeds"], fb["training_seeds"]) < 2:
            continue
        if fa["ci95_high"] < fb["ci95_low"]:
            verdict = f"`{a}` is less exploitable than `{b}`"
        elif fb["ci95_high"] < fa["ci95_low"]:
            verdict = f"`{b}` is less exploitable than `{a}`"
        else:
            verdict = f"no significant difference in exploitability between `{a}` and `{b}`"
        out.append({"a": a, "b": b, "family": family, "verdict": verdict,
                    **{f"{k}_{x}": o[x] for k, o in (("a", fa), ("b", fb))
                       for x in ("mean", "ci95_low", "ci95_high", "runs", "training_seeds")}})
    return out


# ------------------------------------------------------------------ docs/results.md
def _f(x, d=3):
    return "-" if x is None else f"{x:.{d}f}"


def _config_section(fin: dict) -> list[str]:
    tables = condition_tables(fin)
    drawn = (f"`{fin['condition']}`" if len(tables) == 1 else
             "each condition in turn, one table per condition: " + ", ".join(f"`{c}`" for c in tables))
    lines = ["## Each config over its training seeds", "",
             f"Every unit in the same seat of the same {fin['games']:,} four-player tables per held-out seed "
             f"(seeds {', '.join(map(str, fin['seeds']))}; the other seats drawn from {drawn}). "
             "A config's win rate is the mean over its training seeds with a 95% Student-t interval over them "
             "(the noise of training); each training seed's own figure carries a 95% Wilson interval over its "
             "tables.", ""]
    for cond, configs in tables.items():
        rows = []
        for label, c in configs.items():
            per = "; ".join(f"{Path(u['unit']).name}: {_f(u['win_rate'])} [{_f(u['ci95_low'])}, "
                            f"{_f(u['ci95_high'])}]" for u in c["units"])
            over = (f"{_f(c['win_rate'])} [{_f(c['ci95_low'])}, {_f(c['ci95_high'])}]" if c["training_seeds"] > 1
                    else f"{_f(c['win_rate'])} (one unit: a fixed policy, no training-seed interval)")
            rows.append([f"`{label}`", c["training_seeds"], over, per])
        if len(tables) > 1:
            lines += [f"In `{cond}` tables:", ""]
        lines += markdown_table(["config", "training seeds", "win rate, mean over training seeds [95%]",
                                 "per training seed [95% over tables]"], rows)
    return lines


def _where(fin: dict, r: dict) -> str:
    if r["kind"] == "pool":
        return f"in one seat of `{pool_condition(fin, r)}` tables"
    if "per_unit" not in r:  # played before issue 41: B's first seed also sat in B's seat
        return f"head to head (each in one seat against three copies of `{r['b']}`'s first training seed)"
    return (f"head to head (each in one seat against three copies of `{r['b']}`'s first training seed, which "
            "itself is left out of its side)")


def _few_seeds(fin: dict) -> list[str]:
    """A line naming the compared configs with fewer training seeds than issue 41 asks."""
    compared = dict.fromkeys(x for r in fin["rankings"] for x in (r["a"], r["b"]))
    few = [f"`{x}` ({fin['configs'][x]['training_seeds']})" for x in compared
           if 1 < fin["configs"].get(x, {}).get("training_seeds", 0) < MIN_TRAINING_SEEDS]
    if not few:
        return []
    return [f"**Too few training seeds.** The compared configs {', '.join(few)} have fewer than the "
            f"{MIN_TRAINING_SEEDS} training seeds a comparison of trained configs should have (issue 41), so only "
            "large differences between them can be shown (each sentence gives the smallest one its design could "
            "detect).", ""]


def _ranking_section(fin: dict) -> list[str]:
    ranks = rank(fin)
    if not ranks:
        return []
    n_cond = len(condition_tables(fin))
    per_condition = f" (each pool pair once in each of the {n_cond} conditions)" if n_cond > 1 else ""
    lines = ["## Rankings", "",
             f"Each sentence comes from Welch's t test on the training-seed units' mean win rates (the same tables; "
             f"a fixed policy is one unit with its tables' binomial noise; `evals.lib.stats.unit_test`), "
             f"Holm-corrected over the {len(ranks)} comparisons of this report{per_condition}: \"beats\" only where "
             f"the corrected test rejects at {fin['alpha']:g} and the 95% t interval excludes 0. \"Detectable\" is "
             f"the smallest difference the pair's design finds at {POWER:.0%} power (Bonferroni over the "
             f"{len(ranks)}, t quantiles on the test's degrees of freedom, a spread of {between_seed_sd(fin):.3f} in "
             "win rate over training seeds: the pooled spread of this report's trained configs).", ""]
    lines += _few_seeds(fin)
    for r in ranks:
        if r.get("withdrawn"):
            lines.append(f"- **Withdrawn: `{r['a']}` against `{r['b']}`** {_where(fin, r)}: the report kept only "
                         "the pooled figures of this pair, not each training seed's, so the few-units test cannot be "
                         f"made, and `{r['b']}`'s side counted its first seed against three copies of itself (1/4 by "
                         "symmetry); it counts in Holm's correction with p = 1.")
            continue
        lines.append(f"- **{r['verdict'][0].upper() + r['verdict'][1:]}** {_where(fin, r)}: `{r['a']}` minus "
                     f"`{r['b']}` {r['diff']:+.3f} [{r['ci95_low']:+.3f}, {r['ci95_high']:+.3f}], p = "
                     f"{r['p_value']:.3g}, Holm-adjusted {r['p_holm']:.3g} ({r['units_a']} vs {r['units_b']} "
                     f"unit(s), {r['games']:,} tables x {len(r['seeds'])} held-out seed(s) each; detectable: "
                     f"{r['detectable']:.3f}).")
    return lines + [""]


def _earlier_claims(rep: dict) -> list[str]:
    """Where report.json was ranked by the hierarchical bootstrap (before issue 41): each
    of its claims beside the few-units test's, kept, changed or withdrawn."""
    fin = rep["final"]
    if all(r.get("test") == TEST_NAME for r in fin["rankings"]):
        return []
    lines = ["## Claims re-derived with the few-units test", "",
             "The report.json this file renders was ranked by the hierarchical bootstrap over table seeds, training "
             "seeds and tables, whose false-positive rate with three training seeds a side is far above its nominal "
             "5% (issue 41). Its verdicts are re-derived here from the same per-unit figures, no game played again; "
             "the exploitability intervals are re-derived over training seeds. Each claim of the earlier version of "
             "this file:", ""]
    for old, new in zip(fin["rankings"], rank(fin)):
        was = (f"{old['verdict']} ({old['diff']:+.3f} [{old['ci95_low']:+.3f}, {old['ci95_high']:+.3f}], "
               f"Holm-adjusted p {old['p_holm']:.3g})")
        if new.get("withdrawn"):
            status, now = "withdrawn", "no per-unit figures kept: not re-derived"
        else:
            now = (f"{new['verdict']} ({new['diff']:+.3f} [{new['ci95_low']:+.3f}, {new['ci95_high']:+.3f}], "
                   f"p {new['p_value']:.3g}, Holm-adjusted {new['p_holm']:.3g})")
            status = ("kept" if new["verdict"] == old["verdict"] else
                      "withdrawn" if " beats " in old["verdict"] else "changed")
        kind = "pool" if old["kind"] == "pool" else "head to head"
        lines.append(f"- **{status}** ({kind}): was {was}; now {now}.")
    new_comps = {(c["a"], c["b"]): c for c in exploit_comparisons(fin)}
    for c in fin.get("exploit_comparisons", []):
        n = new_comps.get((c["a"], c["b"]))
        status = "withdrawn" if n is None else "kept" if n["verdict"] == c["verdict"] else "changed"
        lines.append(f"- **{status}** (exploitability): was {c['verdict']} (intervals over {c['a_runs']} and "
                     f"{c['b_runs']} runs as if independent)" + (
                         f"; now {n['verdict']} (intervals over {n['a_training_seeds']} and {n['b_training_seeds']} "
                         "training seeds)." if n else "."))
    if _constants_note(rep):
        n = sum(1 for line in _advisor_claims(rep) if line.startswith("- "))
        lines.append(f"- **changed** (the advisor, {n} sentences): each F1 against CoupVisor's figure keeps its "
                     "figures and verdict, now marked as the F1-fitted advisor's, not the page's (see \"Not the page's "
                     "advisor\"); the `honest+advisor` and `honest+coupvisor` rows likewise.")
    for label, e in fin.get("exploit", {}).items():
        if e.get("found") and "ci95_low" in e:
            lines.append(f"- **changed** (exploitability): `{label}`'s maximum {e['win_rate']:.3f} was printed with "
                         f"the selected run's interval [{e['ci95_low']:.3f}, {e['ci95_high']:.3f}]; now as a maximum, "
                         "without one.")
    return lines + [""]


def _exploit_section(fin: dict) -> list[str]:
    lines = ["## Exploitability", "",
             "Best responses (`evals.exploit` families) against three frozen copies of each training seed's export. "
             "Per family: the mean over training seeds, each training seed's best-response seeds averaged first, with "
             "a 95% t interval over training seeds (the best-response seeds are nested inside them); a family of one "
             "run says \"one run\". The exploitability is the maximum over families, training seeds and "
             "best-response seeds: a selected figure, printed without an interval. Below 1/4 a best response only "
             "shows that the learner failed (copying the policy would give 1/4), so it reads \"not found at this "
             "budget\". Exploitability is reported here, not ranked.", ""]
    if not fin["exploit"]:
        return lines + ["No best responses were recorded (`python -m evals.experiments` writes exploit.json).", ""]
    rows = []
    for label, e in fin["exploit"].items():
        missing = f"; {len(e['missing'])} planned best response(s) missing" if e.get("missing") else ""
        if "win_rate" not in e:
            rows.append([f"`{label}`", "none recorded" + missing, "-", "-"])
            continue
        best = e["best"]
        runs = sum(len(v) for v in e.get("families", {}).values())
        head = (f"maximum {_f(e['win_rate'])} of {runs} runs ({best['family']}, {Path(best['policy']).name}, "
                f"best-response seed {best['seed']})" if e["found"] else e["verdict"])
        per = "; ".join(f"{Path(p).name}: {_f(v['win_rate'])}" for p, v in e["per_policy"].items())
        fam = []
        for f, frs in e.get("families", {}).items():
            o = over_runs(frs)
            fam.append(f"{f}: one run, {_f(o['mean'])}" if o["runs"] == 1 else
                       f"{f}: mean {_f(o['mean'])} [{_f(o['ci95_low'])}, {_f(o['ci95_high'])}] over "
                       f"{o['training_seeds']} training seeds ({o['runs']} runs)" if o["training_seeds"] > 1 else
                       f"{f}: mean {_f(o['mean'])} of {o['runs']} runs on one training seed (no interval)")
        rows.append([f"`{label}`", head + missing, per, "; ".join(fam)])
    lines += markdown_table(["config", "exploitability (maximum, no interval)", "max per training seed",
                     "per family: mean over training seeds [95% t over them]"], rows)
    comps = exploit_comparisons(fin)
    if comps:
        lines += [f"Compared by their `{comps[0]['family']}` best responses (the mean over training seeds with a 95% "
                  "t interval over them; \"less exploitable\" only where the two intervals do not overlap):", ""]
        lines += [f"- **{c['verdict'][0].upper() + c['verdict'][1:]}**: `{c['a']}` {_f(c['a_mean'])} "
                  f"[{_f(c['a_ci95_low'])}, {_f(c['a_ci95_high'])}] over {c['a_training_seeds']} training seeds "
                  f"({c['a_runs']} runs), `{c['b']}` {_f(c['b_mean'])} [{_f(c['b_ci95_low'])}, {_f(c['b_ci95_high'])}]"
                  f" over {c['b_training_seeds']} training seeds ({c['b_runs']} runs)." for c in comps]
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
            "whole games, beside CoupVisor's published figure (a fixed number: no interval). The set-ups differ: "
            "here coupjax's five scripted bots in the two conditions' mixes, and the beliefs' likelihoods and "
            "calibration fitted on tuning seed 1000 (`coupjax.seeds.TUNING_SEEDS`); CoupVisor's figures come from "
            "its own bots and games.", ""] + _constants_note(rep) + out + [""]


def _constants_note(rep: dict) -> list[str]:
    """Where the report's advisor is not the page's: a report made before issue 41 scored and
    seated the F1-fitted constants, while the page (`advice_params`) uses those fitted for
    games won; its advised rows and F1 figures are then of an advisor the page does not use."""
    from coupjax.advice.challenge import AdvisorParams
    from evals.report.results import advisor_constants

    page = advisor_constants()
    used = rep.get("advisor_constants") or advisor_constants(AdvisorParams())
    if used == page:
        return []
    return [f"**Not the page's advisor.** This report scored and seated the advisor with the constants fitted for "
            f"F1 (alpha {used['alpha']:g}, v_last {used['v_last']:g}); the page uses those fitted for games won "
            f"(alpha {page['alpha']:g}, v_last {page['v_last']:g}; `coupjax.advice.recommend.advice_params`). The "
            "F1 figures below and the `honest+advisor` and `honest+coupvisor` rows are therefore of an advisor the "
            "page does not use (those rows lose games against plain `honest`); the report now uses the page's "
            "constants everywhere, and its next held-out run replaces these figures.", ""]


def render(rep: dict, cfg, criterion: dict, figures: dict | None = None, ledger: list[dict] | None = None) -> str:
    """docs/results.md from report.json's ``final`` section and the matrix (``rep``);
    ``figures``: section -> link of `evals.report.figures.draw_final`'s PNGs; ``ledger``:
    its entries (default the committed ledger, `coupjax.seeds.read_ledger`)."""
    from evals.report import markdown

    fin = rep["final"]
    ledger = seed_roles.read_ledger() if ledger is None else ledger
    commit = rep.get("meta", {}).get("git_commit", "unknown")
    lines = ["# Results", "",
             "Generated by `python -m evals.report --config configs/eval.yaml --final` from report.json; do not "
             "edit by hand (docs/experiments/README.md, \"Reproducing docs/results.md\").", "",
             f"Criterion: {criterion['commit']}", "",
             f"Criterion file: `{criterion['path']}`. Held-out table seeds: {', '.join(map(str, fin['seeds']))}; "
             f"{training_seeds_text(fin)}. Commit of the report: `{commit}`.", ""]
    if not all(r.get("test") == TEST_NAME for r in fin["rankings"]):
        lines += ["Verdicts re-derived with the few-units test (Welch's t on the training-seed units, issue 41) from "
                  "the committed report.json, no game played again; the claims of the earlier version of this file "
                  "are listed as kept, changed or withdrawn under \"Claims re-derived with the few-units test\".", ""]
    figures = figures or {}

    def figure(section, alt):
        return [f"![{alt}]({figures[section]})", ""] if section in figures else []

    curve = curve_section(fin)
    if curve:
        curve += figure("curve", "win rate and exploitability against training minutes")
    lines += (_config_section(fin) + figure("configs", "win rate per training seed and config")
              + _ranking_section(fin) + _exploit_section(fin) + figure("exploit", "every best response's win rate")
              + curve + targets_section(fin)
              + _advisor_claims(rep) + _earlier_claims(rep) + repeat_notes(fin, ledger, commit))
    matrix = markdown.policy_section(rep, cfg) + (markdown.advisor_section(rep, cfg) if rep.get("advisor") else [])
    lines += [x for x in matrix if not x.startswith("![")]  # the figures stay beside report.md
    return check_results("\n".join(lines).rstrip() + "\n")


# ------------------------------------------------------------------ re-rendering the committed report
PROG = "python -m evals.report.final"
FIGURE_LINKS = {"configs": "results-figures/configs.png", "exploit": "results-figures/exploitability.png"}
CURVE_LINK = "results-figures/curve.png"  # only where the report has a compute curve (``report.curve``)


def rerender(report_dir: Path, results: Path) -> str:
    """``results`` rendered again from ``report_dir``'s committed report.json and config.yaml
    under the criterion ``results`` already names (its ``Criterion:`` and ``Criterion
    file:`` lines), its figures' links kept: no game is played.  What tests/test_docs.py
    checks docs/results.md against, and how a stricter test is applied to results already
    committed (issue 41)."""
    from evals.report.config import load_config

    text = Path(results).read_text()
    commit = re.search(r"^Criterion: ([0-9a-f]{40})$", text, re.M)
    path = re.search(r"^Criterion file: `([^`]+)`", text, re.M)
    if not commit or not path:
        raise FinalReportError(f"{results} names no 'Criterion: <commit>' and 'Criterion file:' lines to keep")
    rep = json.loads((Path(report_dir) / "report.json").read_text())
    cfg = load_config(Path(report_dir) / "config.yaml")
    links = dict(FIGURE_LINKS, **({"curve": CURVE_LINK} if rep["final"].get("curve") else {}))
    return render(rep, cfg, {"commit": commit.group(1), "path": path.group(1)}, links)


def main(argv=None) -> str:
    from coupjax.args import Parser, fail

    ap = Parser(prog=PROG, description="Render docs/results.md again from the committed report.json (no game is "
                                       "played).")
    ap.add_argument("--report", type=Path, default=Path("runs/experiments/report"),
                    help="the folder of report.json and config.yaml (default runs/experiments/report)")
    ap.add_argument("--results", type=Path, default=Path("docs/results.md"),
                    help="the results file to render again (default docs/results.md)")
    args = ap.parse_args(argv)
    try:
        text = rerender(args.report, args.results)
    except (OSError, json.JSONDecodeError, KeyError, FinalReportError) as err:
        fail(PROG, err)
    args.results.write_text(text)
    print(f"wrote {args.results}")
    return text


if __name__ == "__main__":
    main()
