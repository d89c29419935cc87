"""The experiments config's keys, checked before anything runs: one line per mistake.

The helpers `evals.experiments` checks every section with, what a saved folder's config
shares with a new one (`changed_keys`, `br_seeds_for`), and its ``report`` section:
what ``python -m evals.report --final`` plays on held-out seeds (``condition``,
``games``, ``baselines``, ``pairs``, ``head_to_head_games``, ``head_to_head``) and, all
optional (issue 40; a config without them gives the report it gave before):

* ``conditions``: a list of conditions (`coupjax.policies.pools.CONDITIONS`) in place of
  the one ``condition``: the per-config table and every pool pair are played in each, so
  a pool pair is one ranked comparison per condition (issue 40 asks for wins "in the pool
  of both conditions").  A list of one is ``condition``; the checked section keeps one
  spelling (``condition`` for one, ``conditions`` for several), so a one-condition config
  is saved, played and rendered as before;

* ``curve``: name -> ``{budgets: [LABEL, ...], baseline: LABEL}``, labels of configs that
  are one recipe at growing budgets (e.g. ``num_chunks`` set per label), and a label of
  configs or baselines: docs/results.md gets each budget's training minutes and env
  steps per second, its pool win rate minus the baseline's and its ``dqn`` best
  response, as a table and a figure;
* ``targets``: LABEL (of configs) -> its checks, each printed met or not met with its
  figure: ``head_to_head`` (opponent -> the least mean win rate in one seat against three
  copies of it: a label of configs, whose first training seed plays, of baselines, or a
  policy spec; the 95% lower bound over training seeds must also be above 1/4; or
  ``{at_least: X, games: N}`` to play N tables per held-out seed against it instead of
  ``head_to_head_games``, for an opponent as slow as a search, which plays three seats;
  against a label of configs, ``opponent_seeds: all`` seats three copies of each of its
  training seeds in turn and takes each training seed's mean over them, since trios of
  one config's networks differ: two of ``selfplay_cpu``'s five seeds gang up on the
  fourth seat, see docs/experiments/2026-12-04-gang-up.md),
  ``dqn_mean_at_most``, ``max_at_most`` over ``max_families`` (default dqn, dqn4x, ppo),
  ``scenarios_at_least`` (decision scenarios where the network alone plays soundly, on
  every training seed) and ``train_minutes_at_most`` (every training seed).
"""
from __future__ import annotations

import difflib
from typing import Mapping

REPORT_KEYS = ("condition", "conditions", "games", "baselines", "pairs", "head_to_head_games", "head_to_head", "curve",
               "targets")
CURVE_KEYS = ("budgets", "baseline")
TARGET_KEYS = ("head_to_head", "dqn_mean_at_most", "max_at_most", "max_families", "scenarios_at_least",
               "train_minutes_at_most")
H2H_KEYS = ("at_least", "games", "opponent_seeds")  # a head-to-head target with its own tables or trios
OPPONENT_SEEDS = ("first", "all")  # a config opponent: its first training seed, or each in turn
MAX_FAMILIES = ("dqn", "dqn4x", "ppo")  # issue 40's maximum over families


class ExperimentsError(ValueError):
    """A wrong key or value of the experiments config; the message names it."""


def refuse(msg):
    """Stop with ``msg``: one line naming the key."""
    raise ExperimentsError(msg)


def check_known(where: str, raw: Mapping, names) -> None:
    """``raw`` is a mapping of known keys; an unknown one is named with the nearest known."""
    if not isinstance(raw, Mapping):
        refuse(f"config key {where or 'the config'} must be a mapping, got {raw!r}")
    for key in raw:
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(names)}"
            refuse(f"config key {where + '.' if where else ''}{key} is not known{hint}")


def str_list(key: str, v) -> tuple:
    """``v`` as a tuple of strings."""
    if not isinstance(v, (list, tuple)) or any(not isinstance(x, str) for x in v):
        refuse(f"config key {key} must be a list of strings, got {v!r}")
    return tuple(v)


def report_section(rep: dict, labels: list) -> dict:
    """The ``report`` section (module doc), checked against the config ``labels``."""
    from coupjax.policies.pools import CONDITIONS
    from coupjax.policies.spec import PolicySpecError, describe_spec

    if "condition" in rep and "conditions" in rep:
        refuse("config keys report.condition and report.conditions: give one (a condition, or a list of them)")
    if "conditions" in rep:
        conds = str_list("report.conditions", rep["conditions"])
        if not conds or len(set(conds)) != len(conds) or any(c not in CONDITIONS for c in conds):
            refuse(f"config key report.conditions must list different conditions of {', '.join(CONDITIONS)}, "
                   f"got {rep['conditions']!r}")
        out = {"condition": conds[0]} if len(conds) == 1 else {"conditions": list(conds)}
    else:
        out = {"condition": rep.get("condition", "aggressive_heavy")}
        if out["condition"] not in CONDITIONS:
            refuse(f"config key report.condition must be one of {', '.join(CONDITIONS)}, got {out['condition']!r}")
    for key, default in (("games", 4000), ("head_to_head_games", 1000)):
        v = rep.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            refuse(f"config key report.{key} must be a positive integer, got {v!r}")
        out[key] = v
    baselines = rep.get("baselines") or {}
    check_known("report.baselines", baselines, list(baselines))
    for label, spec in baselines.items():
        if label in labels or not isinstance(spec, str):
            refuse(f"config key report.baselines.{label}: a new label and a policy spec, got {spec!r}")
        try:
            describe_spec(spec)
        except PolicySpecError as err:
            refuse(f"config key report.baselines.{label}: {err}")
    out["baselines"] = dict(baselines)
    known = labels + list(baselines)
    for key in ("pairs", "head_to_head"):
        pairs = rep.get(key) or []
        if not isinstance(pairs, (list, tuple)):
            refuse(f"config key report.{key} must be a list of [A, B] label pairs, got {pairs!r}")
        for p in pairs:
            if not isinstance(p, (list, tuple)) or len(p) != 2 or p[0] == p[1] or any(x not in known for x in p):
                refuse(f"config key report.{key}: {p!r} is not a pair of two labels of configs or baselines "
                      f"({', '.join(known)})")
        out[key] = [list(p) for p in pairs]
    if "curve" in rep:
        out["curve"] = _curve(rep["curve"], labels, known)
    if "targets" in rep:
        out["targets"] = _targets(rep["targets"], labels, known)
    return out


def label_seeds(training_seeds, config_seeds: Mapping | None, label: str) -> tuple:
    """The training seeds ``label`` trains on: ``config_seeds[label]`` when it is a list
    (a label retrained on fresh seeds after a choice was made on the others), the first
    ``config_seeds[label]`` of ``training_seeds`` when it is a number (a compute curve's
    smaller budgets), all of them by default; the plan and the final report both read it."""
    own = (config_seeds or {}).get(label, len(training_seeds))
    if isinstance(own, (list, tuple)):
        return tuple(own)
    return tuple(training_seeds)[:own]


def report_conditions(rep: Mapping) -> list[str]:
    """The conditions a ``report`` section (checked, or as saved beside the runs) plays the
    pool in, in order: ``conditions``, or the one ``condition``."""
    return list(rep.get("conditions") or [rep.get("condition", "aggressive_heavy")])


def _curve(raw, labels: list, known: list) -> dict:
    """``report.curve``: name -> {budgets: [labels of configs, the same recipe at growing
    budgets], baseline: a label of configs or baselines}."""
    if not isinstance(raw, Mapping) or not raw:
        refuse(f"config key report.curve must map a name to {{budgets: [LABEL, ...], baseline: LABEL}}, got {raw!r}")
    out = {}
    for name, c in raw.items():
        where = f"report.curve.{name}"
        check_known(where, c, CURVE_KEYS)
        budgets = str_list(f"{where}.budgets", c.get("budgets", []))
        if len(budgets) < 2 or len(set(budgets)) != len(budgets) or any(x not in labels for x in budgets):
            refuse(f"config key {where}.budgets must list two or more different labels of configs "
                  f"({', '.join(labels)}), got {list(budgets)!r}")
        base = c.get("baseline")
        if base not in known or base in budgets:
            refuse(f"config key {where}.baseline must be a label of configs or baselines outside the budgets "
                  f"({', '.join(x for x in known if x not in budgets)}), got {base!r}")
        out[str(name)] = {"budgets": list(budgets), "baseline": base}
    return out


def _share(key: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 < v <= 1.0:
        refuse(f"config key {key} must be a win rate in (0, 1], got {v!r}")
    return float(v)


def _targets(raw, labels: list, known: list) -> dict:
    """``report.targets``: label of configs -> its checks (module doc of `evals.report.final`)."""
    from coupjax.policies.spec import PolicySpecError, describe_spec
    from evals.exploit import parse_families

    if not isinstance(raw, Mapping) or not raw:
        refuse(f"config key report.targets must map labels of configs to their checks, got {raw!r}")
    out = {}
    for label, t in raw.items():
        where = f"report.targets.{label}"
        if label not in labels:
            refuse(f"config key {where}: {label!r} is not a label of configs ({', '.join(labels)})")
        check_known(where, t, TARGET_KEYS)
        if not t:
            refuse(f"config key {where} names no check (known: {', '.join(TARGET_KEYS)})")
        checks = {}
        h2h = t.get("head_to_head", {})
        if not isinstance(h2h, Mapping):
            refuse(f"config key {where}.head_to_head must map opponents to minimum win rates, got {h2h!r}")
        for opp, least in h2h.items():
            if opp == label or not isinstance(opp, str):
                refuse(f"config key {where}.head_to_head: {opp!r} is not another label or a policy spec")
            if isinstance(least, Mapping):
                check_known(f"{where}.head_to_head.{opp}", least, H2H_KEYS)
                if "games" in least:
                    games = least["games"]
                    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
                        refuse(f"config key {where}.head_to_head.{opp}.games must be a positive integer (tables per "
                              f"held-out seed), got {games!r}")
                    checks.setdefault("head_to_head_games", {})[opp] = games
                if "opponent_seeds" in least:
                    which = least["opponent_seeds"]
                    if which not in OPPONENT_SEEDS:
                        refuse(f"config key {where}.head_to_head.{opp}.opponent_seeds must be one of "
                              f"{', '.join(OPPONENT_SEEDS)}, got {which!r}")
                    if which == "all":
                        if opp not in labels:
                            refuse(f"config key {where}.head_to_head.{opp}.opponent_seeds: all needs a label of "
                                  f"configs ({', '.join(labels)}), whose training seeds take turns")
                        checks.setdefault("head_to_head_opponent_seeds", {})[opp] = which
                least = least.get("at_least")
            if opp not in known:
                try:
                    describe_spec(opp)
                except PolicySpecError as err:
                    refuse(f"config key {where}.head_to_head: {opp!r} is neither a label of configs or baselines "
                          f"nor a policy spec ({err})")
            checks.setdefault("head_to_head", {})[opp] = _share(f"{where}.head_to_head.{opp}", least)
        for key in ("dqn_mean_at_most", "max_at_most"):
            if key in t:
                checks[key] = _share(f"{where}.{key}", t[key])
        if "max_families" in t:
            if "max_at_most" not in t:
                refuse(f"config key {where}.max_families needs {where}.max_at_most")
            try:
                checks["max_families"] = parse_families(",".join(str_list(f"{where}.max_families", t["max_families"])))
            except ValueError as err:
                refuse(f"config key {where}.max_families: {err}")
        elif "max_at_most" in t:
            checks["max_families"] = list(MAX_FAMILIES)
        if "scenarios_at_least" in t:
            v = t["scenarios_at_least"]
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                refuse(f"config key {where}.scenarios_at_least must be a positive count of the decision scenarios "
                      f"(evals.report.decision_benchmark), got {v!r}")
            checks["scenarios_at_least"] = v
        if "train_minutes_at_most" in t:
            v = t["train_minutes_at_most"]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                refuse(f"config key {where}.train_minutes_at_most must be a positive number, got {v!r}")
            checks["train_minutes_at_most"] = float(v)
        out[label] = checks
    return out


def br_seeds_for(exploit: dict, training_seed: int, key: str = "br_seeds") -> list:
    """The best-response seeds of the runs of ``training_seed`` (`_br_seeds`); ``key``
    ``one_seed_br_seeds``: those of its one-seed families, by default its ``br_seeds``."""
    seeds = exploit.get(key)
    if key != "br_seeds" and seeds is None:
        return br_seeds_for(exploit, training_seed)
    if isinstance(seeds, Mapping):
        return list(seeds.get(training_seed, seeds.get(str(training_seed), [])))
    return list(seeds)


def changed_keys(old: dict, new: dict) -> list[str]:
    """The keys of the saved config ``old`` that ``new`` changes for the runs already
    planned (``estimate`` and ``report`` change no run).  ``new`` may add training seeds
    after ``old``'s, each with best-response seeds of its own, labels of configs (with
    their ``set`` and best responses), and move a label to other seeds (``config_seeds``:
    runs are named by their seed, so none is read as another): more units, every run
    already made and still planned reused."""
    seeds = old.get("training_seeds")
    extended = (isinstance(seeds, list) and isinstance(new.get("training_seeds"), list)
                and new["training_seeds"][: len(seeds)] == seeds)
    labels = list(old.get("configs") or {})

    def planned(d):  # every training seed a saved label trains on under d
        if not isinstance(d.get("training_seeds"), list) or not isinstance(d.get("config_seeds") or {}, dict):
            return set()
        return {s for label in labels for s in label_seeds(d["training_seeds"], d.get("config_seeds"), label)}

    both = sorted(planned(old) & planned(new))

    def first(d, label):
        seeds = label_seeds(d["training_seeds"], d.get("config_seeds"), label) if planned(d) else ()
        return seeds[0] if seeds else None

    firsts = sorted({first(old, x) for x in labels if first(old, x) is not None and first(old, x) == first(new, x)})

    def per_seed(exploit):  # the best-response seeds of the runs both configs plan, per training seed (the
        # one-seed families': per first seed of a label)
        if not isinstance(exploit, dict) or "br_seeds" not in exploit:
            return exploit
        return {**exploit, "br_seeds": {s: br_seeds_for(exploit, s) for s in both},
                "one_seed_br_seeds": {s: br_seeds_for(exploit, s, "one_seed_br_seeds") for s in firsts}}

    def old_labels(key, d):  # a per-label mapping, restricted to the saved config's labels
        d = d.get(key) or {}
        return {k: v for k, v in d.items() if k in labels} if isinstance(d, dict) else d

    def old_configs(exploit):  # the best-response lists of the saved config's labels only
        if not isinstance(exploit, dict):
            return exploit
        return {**exploit, **{k: [c for c in exploit[k] if c in labels]
                              for k in ("configs", "one_seed_configs") if isinstance(exploit.get(k), list)}}

    diff = []
    for key in sorted(set(old) | set(new)):
        if key in ("estimate", "report", "config_seeds"):
            continue
        if key in ("configs", "set"):  # labels may be added: more runs, none changed
            if old_labels(key, old) != old_labels(key, new):
                diff.append(key)
            continue
        if key == "training_seeds" and extended:
            continue
        if key == "exploit":
            if per_seed(old_configs(old.get(key))) != per_seed(old_configs(new.get(key))):
                diff.append(key)
            continue
        if old.get(key) != new.get(key):
            diff.append(key)
    return diff
