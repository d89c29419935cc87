"""Issue 40's recipe in docs/results.md: its compute curve and its targets (both optional).

The final stage (`evals.report.final`) adds them where the experiments config's
``report`` section names ``curve`` or ``targets`` (`evals.experiments_keys`); without
them it adds nothing, to report.json or to docs/results.md.

* `play_recipe`, on the held-out seeds: each named config's training cost from its runs'
  summary.json (``wall_seconds``, ``env_steps``, ``env_steps_per_s``); for each target,
  its training seeds in one seat of tables whose other seats are all the opponent (the
  pool's `evals.lib.paired.play_paired`), and its networks' decision scenarios
  (`evals.report.decision_benchmark`, scored as the report's scenario stage scores).
* `curve_section` and `targets_section` write the sections from that JSON and the pool's
  figures (every verdict derived at rendering, as the rankings): per budget the training
  minutes, env steps/s, the win rate minus the baseline's (`unit_test` on the training-
  seed units of the pool's tables) and the ``dqn`` best response (`evals.exploit.over_runs`);
  per target each check met, not met or not measured (`target_checks`).
"""
from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

import numpy as np

from coupjax.metrics import t_interval
from evals.exploit import over_runs
from evals.lib.stats import unit_test
from evals.report.markdown import markdown_table


def untimed(name: str):
    """A part nobody times (`play_recipe`'s and `play_final`'s default ``part``)."""
    return contextlib.nullcontext()


def condition_tables(fin: dict) -> dict:
    """Condition -> its per-config figures in the pool's tables, in the report's order: each
    of ``report.conditions`` (``configs_by_condition``), or the one ``condition``."""
    return fin.get("configs_by_condition") or {fin.get("condition"): fin["configs"]}


def pool_units(fin: dict, label: str, condition: str | None = None) -> tuple[list[float], int]:
    """(each unit's win rate, its tables) of ``label`` in the pool's tables of ``condition``
    (default the first condition's, ``fin["configs"]``)."""
    configs = fin["configs"] if condition is None else condition_tables(fin)[condition]
    units = configs[label]["units"]
    return [u["win_rate"] for u in units], units[0]["games"]


def training_seeds_text(fin: dict) -> str:
    """The header's "training seeds ...": the report's own, then each config whose runs
    are of other seeds (``config_seeds``: the recipe's fresh ones), read from its units."""
    default = [int(s) for s in fin["training_seeds"]]
    own = []
    for label, c in fin["configs"].items():
        seeds = [int(m.group(1)) for u in c["units"] if (m := re.search(r"seed_(\d+)$", str(u["unit"])))]
        if seeds and seeds != default[:len(seeds)]:
            own.append(f"`{label}`: {', '.join(map(str, seeds))}")
    return f"training seeds {', '.join(map(str, default))}" + (f" ({'; '.join(own)})" if own else "")


def _three(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def _trios(checks: dict, opp: str, by_label: dict) -> list[str]:
    """The opponents a target plays ``opp`` as: each of a config's training seeds in turn
    (``opponent_seeds: all``), its first, or a baseline or policy spec."""
    if checks.get("head_to_head_opponent_seeds", {}).get(opp) == "all":
        return list(by_label[opp])
    return [by_label[opp][0] if opp in by_label else opp]


def _target_part(label: str, opp: str, spec: str, each: bool) -> str:
    return f"targets/{label}/{opp}" + (f"/{Path(spec).name}" if each else "")


def target_parts(rep: dict, by_label: dict) -> list[str]:
    """The names `play_recipe` times its parts by, in its order: each target's tables per
    opponent (per training seed of a config played in turn) and its scenarios."""
    out = []
    for label, checks in (rep.get("targets") or {}).items():
        for opp in checks.get("head_to_head", {}):
            each = checks.get("head_to_head_opponent_seeds", {}).get(opp) == "all"
            out += [_target_part(label, opp, spec, each) for spec in _trios(checks, opp, by_label)]
        if "scenarios_at_least" in checks:
            out.append(f"targets/{label}/scenarios")
    return out


def play_recipe(env, rep: dict, by_label: dict, seeds: list[int], batch: int = 1000, part=untimed) -> dict:
    """The optional ``report.curve`` and ``report.targets`` figures (module doc): each
    named config's training cost from its runs' summary.json (``training``), and for each
    target its head-to-head tables (`evals.lib.paired.play_paired`: the label's training
    seeds in one seat, every other seat the opponent; ``head_to_head_games`` tables per
    seed, or the target's own ``games`` for that opponent) and its network's decision
    scenarios.  Nothing (an empty dict) where the config names neither, so such a
    report.json is what it was.  ``part``: name -> a context that times it
    (`evals.report.progress.Parts`; the names are `target_parts`')."""
    from evals.lib.paired import play_paired

    curve, targets = rep.get("curve") or {}, rep.get("targets") or {}
    if not curve and not targets:
        return {}
    named = dict.fromkeys([x for c in curve.values() for x in c["budgets"]] + list(targets))
    out = {"training": {label: training_costs(by_label[label]) for label in named}}
    if curve:
        out["curve"] = curve
    if targets:
        out["targets"] = {}
        for label, checks in targets.items():
            rec = {"checks": checks}
            for opp in checks.get("head_to_head", {}):
                games = checks.get("head_to_head_games", {}).get(opp, rep["head_to_head_games"])
                units = by_label[label]
                each = checks.get("head_to_head_opponent_seeds", {}).get(opp) == "all"
                specs = _trios(checks, opp, by_label)
                per_opp = {}
                for spec in specs:  # the label's seeds in one seat of the same tables, three copies of spec
                    with part(_target_part(label, opp, spec, each)):
                        wins = play_paired(env, units, units[:1], games, seeds, spec, batch)["wins"][0]
                    per_opp[spec] = {u: float(wins[j].mean()) for j, u in enumerate(units)}
                h = {"opponents": specs if each else specs[0], "games": games, "seeds": seeds}
                if each:  # a unit's figure is its mean over the trios
                    h["per_opponent"] = per_opp
                h["per_unit"] = {u: float(np.mean([r[u] for r in per_opp.values()])) for u in units}
                rec.setdefault("head_to_head", {})[opp] = h
            if "scenarios_at_least" in checks:
                with part(f"targets/{label}/scenarios"):
                    rec["scenarios"] = scenario_hits(by_label[label])
            out["targets"][label] = rec
    return out


def training_costs(run_dirs: list[str]) -> list[dict]:
    """Each run's training cost as its summary.json says: wall seconds (compilation
    included), env steps and env steps per second (None where it does not say)."""
    out = []
    for d in run_dirs:
        summary = json.loads((Path(d) / "summary.json").read_text())
        out.append({"unit": d, **{k: summary.get(k) for k in ("wall_seconds", "env_steps", "env_steps_per_s")}})
    return out


def scenario_hits(run_dirs: list[str]) -> dict:
    """Run directory -> the decision scenarios (`evals.report.decision_benchmark`) where its
    network alone (the export, no rule layer) puts its most likely play on a sound one:
    ``hits``, of ``scenarios``, and the names ``missed``."""
    import jax

    from coupjax.env import Env
    from coupjax.policies.spec import resolve_policy
    from evals.report import decision_benchmark, positions

    built = decision_benchmark.build_all()
    obs, mask = decision_benchmark.decision_inputs(built)
    env = Env(built[0][1].num_players)
    devices = len(jax.devices())
    block = -(-len(obs) // devices) * devices  # one block of the scenarios, not the positions' 2,048 rows
    out = {}
    for d in run_dirs:
        probs = positions.policy_probs(positions.make_row_scorer(env, resolve_policy(d, env)), obs, mask, block)
        scores = decision_benchmark.score_policy(None, built, probs)
        out[d] = {"hits": sum(s["hit"] for s in scores.values()), "scenarios": len(scores),
                  "missed": [name for name, s in scores.items() if not s["hit"]]}
    return out


def _minutes(costs: list[dict]) -> list[float]:
    return [c["wall_seconds"] / 60 for c in costs if c.get("wall_seconds") is not None]


def curve_rows(fin: dict, name: str) -> list[dict]:
    """One compute curve (``report.curve.NAME``) derived from the JSON: per budget label,
    its training minutes (mean, min, max over training seeds), env steps per second
    (mean), its pool win rate minus the baseline's on the same tables of the report's
    first condition (`unit_test` over training seeds, as the ranked pairs; not Holm-
    corrected: a description, not a claim) and its ``dqn`` best responses
    (`evals.exploit.over_runs`; None where not measured)."""
    c = fin["curve"][name]
    rows = []
    for label in c["budgets"]:
        costs = fin["training"][label]
        minutes = _minutes(costs)
        speed = [x["env_steps_per_s"] for x in costs if x.get("env_steps_per_s") is not None]
        (ma, ga), (mb, gb) = pool_units(fin, label), pool_units(fin, c["baseline"])
        t = unit_test(ma, mb, ga, gb, fin["alpha"])
        dqn = fin.get("exploit", {}).get(label, {}).get("families", {}).get("dqn")
        rows.append({"label": label, "training_seeds": len(costs),
                     "minutes": float(np.mean(minutes)) if minutes else None,
                     "minutes_min": min(minutes) if minutes else None, "minutes_max": max(minutes) if minutes else None,
                     "env_steps_per_s": float(np.mean(speed)) if speed else None,
                     "win_rate": fin["configs"][label]["win_rate"], "diff": t["diff"], "ci95_low": t["ci_low"],
                     "ci95_high": t["ci_high"], "dqn": over_runs(dqn) if dqn else None})
    return rows


def _interval(x: dict, lo="ci95_low", hi="ci95_high", mean="mean") -> str:
    if x[lo] is None:
        return f"{_three(x[mean])} (one run)"
    return f"{_three(x[mean])} [{_three(x[lo])}, {_three(x[hi])}]"


def curve_section(fin: dict) -> list[str]:
    if not fin.get("curve"):
        return []
    lines = ["## Strength against compute", "",
             "The same recipe trained at growing budgets (`report.curve`). Training minutes are each run's "
             "`wall_seconds` in its summary.json (compilation included; the mean over training seeds, their range in "
             "brackets), on the machine and under the load that trained them; env steps per second likewise (the "
             f"mean over training seeds). The win rate against the baseline is the pool's in `{fin['condition']}` "
             "(the same tables as the first table): the mean difference over training seeds with Welch's 95% t "
             "interval, as the rankings, but not Holm-corrected (a description, not a ranked claim). Exploitability "
             "is the `dqn` best response's mean over training seeds (best-response seeds averaged within each "
             "first) with a 95% t interval over them.", ""]
    for name, c in fin["curve"].items():
        rows = []
        for r in curve_rows(fin, name):
            minutes = ("not recorded" if r["minutes"] is None else
                       f"{r['minutes']:.1f} [{r['minutes_min']:.1f}, {r['minutes_max']:.1f}]")
            speed = "-" if r["env_steps_per_s"] is None else f"{r['env_steps_per_s']:,.0f}"
            dqn = "not measured" if r["dqn"] is None else _interval(r["dqn"])
            rows.append([f"`{r['label']}`", r["training_seeds"], minutes, speed, _three(r["win_rate"]),
                         f"{r['diff']:+.3f} [{r['ci95_low']:+.3f}, {r['ci95_high']:+.3f}]", dqn])
        lines += [f"`{name}` against `{c['baseline']}`:", ""]
        lines += markdown_table(["budget", "training seeds", "training minutes per seed", "env steps/s",
                                 "pool win rate", f"minus `{c['baseline']}` [95% t]", "`dqn` best response [95% t]"],
                                rows)
    return lines


def target_checks(fin: dict, label: str) -> list[dict]:
    """``report.targets.LABEL``'s checks derived from the JSON, each ``{check, figure,
    met}`` (``met`` None: not measured, which is not met):

    * ``head_to_head``: the mean over the label's training seeds of its one-seat win rate
      against three copies of the opponent, with a 95% t interval over training seeds;
      met when the mean reaches the minimum and the interval's lower bound is above 1/4;
    * ``dqn_mean_at_most``: the ``dqn`` best responses' mean over training seeds (best-
      response seeds averaged within each first) at most the figure;
    * ``max_at_most``: the largest best response of ``max_families`` (every training and
      best-response seed) at most the figure; while a family has no run, not met if the
      others already pass it, else not measured;
    * ``scenarios_at_least``: every training seed's network alone plays a sound move in
      at least that many decision scenarios (the smallest count is the figure);
    * ``train_minutes_at_most``: every training seed's wall-clock minutes at most that."""
    t = fin["targets"][label]
    checks, out = t["checks"], []
    for opp, least in checks.get("head_to_head", {}).items():
        h = t["head_to_head"][opp]
        ti = t_interval(list(h["per_unit"].values()), (0.0, 1.0))
        k = len(h["per_unit"])
        fig = (f"{ti['mean']:.3f} [{ti['ci95_low']:.3f}, {ti['ci95_high']:.3f}] over {k} training seeds"
               if k > 1 else f"{ti['mean']:.3f} (one training seed: no interval)")
        trios = f"each of `{opp}`'s {len(h['opponents'])} training seeds" if isinstance(h["opponents"], list) else ""
        out.append({"check": (f"head to head against three `{opp}`" + (f" ({trios} in turn)" if trios else "")
                              + f": mean at least {least:g}, lower bound above 0.25"),
                    "figure": f"{fig} ({h['games']:,} tables x {len(h['seeds'])} held-out seed(s) each)",
                    "met": bool(k > 1 and ti["mean"] >= least and ti["ci95_low"] > 0.25)})
    families = fin.get("exploit", {}).get(label, {}).get("families", {})
    if "dqn_mean_at_most" in checks:
        x = checks["dqn_mean_at_most"]
        o = over_runs(families["dqn"]) if families.get("dqn") else None
        out.append({"check": f"`dqn` best response, mean over training seeds, at most {x:g}",
                    "figure": "not measured" if o is None else
                    f"{_interval(o)} over {o['training_seeds']} training seed(s) ({o['runs']} runs)",
                    "met": None if o is None else o["mean"] <= x})
    if "max_at_most" in checks:
        x, named = checks["max_at_most"], checks["max_families"]
        runs = [r for f in named for r in families.get(f, [])]
        absent = [f for f in named if not families.get(f)]
        top = max(runs, key=lambda r: r["win_rate"]) if runs else None
        fig = ("no run" if top is None else
               f"maximum {top['win_rate']:.3f} of {len(runs)} runs ({top.get('family', '?')}, "
               f"{Path(str(top.get('policy', '?'))).name}, best-response seed {top.get('seed', '?')})")
        out.append({"check": f"largest best response of {', '.join(f'`{f}`' for f in named)} at most {x:g}",
                    "figure": fig + (f"; not measured: {', '.join(absent)}" if absent else ""),
                    "met": False if top is not None and top["win_rate"] > x else None if absent else True})
    if "scenarios_at_least" in checks:
        x, sc = checks["scenarios_at_least"], t["scenarios"]
        per = "; ".join(f"{Path(u).name}: {v['hits']}" for u, v in sc.items())
        low = min(v["hits"] for v in sc.values())
        of = next(iter(sc.values()))["scenarios"]
        out.append({"check": f"the network alone plays a sound move in at least {x} of the {of} decision scenarios, "
                             "on every training seed",
                    "figure": f"fewest {low} ({per})", "met": low >= x})
    if "train_minutes_at_most" in checks:
        x, costs = checks["train_minutes_at_most"], fin["training"][label]
        minutes = _minutes(costs)
        seen = len(minutes) == len(costs)
        out.append({"check": f"training minutes per seed at most {x:g}",
                    "figure": (f"at most {max(minutes):.1f} (mean {np.mean(minutes):.1f} over {len(minutes)} "
                               "training seeds)" if seen else "not recorded"),
                    "met": max(minutes) <= x if seen else None})
    return out


def targets_section(fin: dict) -> list[str]:
    if not fin.get("targets"):
        return []
    lines = ["## Targets", "",
             "Each check of `report.targets`, met or not met, with its figure (\"not measured\" counts as not met). "
             "Head to head: the config's training seeds each in one seat of the same tables, every other seat a copy "
             "of the opponent (a config's first training seed); the mean over training seeds with a 95% t interval "
             "over them. Exploitability: the best responses of \"Exploitability\" above. Scenarios: the decision "
             "scenarios of `evals.report.decision_benchmark` where the exported network alone, no rule layer, puts "
             "its most likely play on a sound move. Training minutes: each run's `wall_seconds`.", ""]
    if any(isinstance(h.get("opponents"), list) for t in fin["targets"].values()
           for h in t.get("head_to_head", {}).values()):
        lines[-2] += (" Where a check names a config's training seeds in turn, each seat three copies of one of "
                      "them on the same tables, a training seed's figure is its mean over them.")
    for label in fin["targets"]:
        checks = target_checks(fin, label)
        met = sum(c["met"] is True for c in checks)
        lines += [f"`{label}`: {met} of {len(checks)} checks met.", ""]
        lines += markdown_table(["check", "figure", "verdict"],
                                [[c["check"], c["figure"], "not measured" if c["met"] is None else
                                  "**met**" if c["met"] else "not met"] for c in checks])
    return lines
