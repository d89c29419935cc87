"""The report as markdown: headline tables first, figures inline, definitions at the end."""
from __future__ import annotations

from coupjax import rules


def _f(x, d=3):
    return "-" if x is None else f"{x:.{d}f}"


def _ci(r, key="win_rate", lo="ci95_low", hi="ci95_high", d=3):
    return f"{_f(r[key], d)} [{_f(r[lo], d)}, {_f(r[hi], d)}]"


def _table(head, rows) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out + [""]


def policy_section(rep, cfg) -> list[str]:
    lines = ["## Policies: the main matrix", "",
             f"Each policy in one seat of the same {cfg.games:,} {cfg.num_players}-player tables per condition and "
             f"seed (seeds {', '.join(map(str, cfg.seeds))}; seat uniform, opponents drawn from the condition's "
             f"weights over the scripted bots)"
             + (f"; search policies on the first {cfg.search_games:,} of them. " if cfg.search_policies else ". ") +
             "Win rate with its 95% Wilson interval over all tables; `seeds` is the Student-t interval over the "
             "per-seed win rates. Episode rewards: CoupVisor's shaped (coins + opponents eliminated) and win "
             "(1 for a win). Offline columns on logged positions (see Definitions).", ""]
    for cond in cfg.conditions:
        rows = []
        for label, conds in {**rep["policies"], **rep["search_policies"]}.items():
            r = conds.get(cond)
            if not r:
                continue
            off = r.get("offline", {})
            rows.append([f"`{label}`", _ci(r), f"{r['wins']:,}/{r['games']:,}",
                         f"[{_f(r['seeds']['ci95_low'])}, {_f(r['seeds']['ci95_high'])}]",
                         _f(r["mean_placement"], 2), _f(r["shaped_reward"], 2), _f(r["win_reward"]),
                         _f(off.get("winner_action_match")), _f(off.get("one_step_regret"), 2),
                         _f(r["bluff_rate"]), _f(r["challenge_rate"]), _f(r["action_entropy"])])
        lines += [f"### {cond}", ""]
        lines += _table(["policy", "win rate [95%]", "wins/games", "over seeds", "mean place", "shaped reward",
                         "win reward", "winner match", "regret (coins)", "bluff rate", "challenge rate",
                         "entropy (nats)"], rows)
    return lines


def advisor_section(rep, cfg) -> list[str]:
    adv, paper = rep["advisor"], rep["coupvisor_paper"]
    lines = ["## The challenge advisor", "",
             f"Every challengeable claim of {cfg.advisor_games:,} games per condition and seed of the scripted bots, "
             "recorded once from the seat with the first chance to challenge; positive = the claim is a bluff, "
             "predicted positive = the advisor recommends a challenge. CoupVisor's published figures beside.", ""]
    rows = []
    for cond in cfg.conditions:
        p = paper.get(cond, {})
        rows.append(["CoupVisor (paper)", cond, _f(p.get("f1"), 4), "-", "-", _f(p.get("outcome_accuracy"), 4),
                     "-", "-", "-", "-", "-", "-"])
        for belief in ("coupvisor", "exact", "coupvisor_uncalibrated", "exact_uncalibrated"):
            m = adv.get(belief, {}).get(cond)
            if not m:
                continue
            f1 = _f(m["f1"], 4) + (f" [{_f(m['f1_ci95_low'])}, {_f(m['f1_ci95_high'])}]"
                                   if m.get("f1_ci95_low") is not None else "")
            rows.append([f"`{belief}`", cond, f1, _f(m["precision"]), _f(m["recall"]),
                         _f(m["outcome_accuracy"], 4), _f(m["outcome_score"]), _f(m["brier"]), _f(m["ece"]),
                         _f(m["roc_auc"]), f"{m['tp']}/{m['fp']}/{m['fn']}/{m['tn']}", f"{m['claims']:,}"])
    lines += _table(["belief", "condition", "F1 [95% over games]", "precision", "recall", "outcome acc.",
                     "outcome score", "Brier", "ECE", "ROC-AUC", "tp/fp/fn/tn", "claims"], rows)
    lines += ["![reliability](figures/reliability.png)", "", "### Errors by claim kind (exact belief)", ""]
    rows = []
    for cond in cfg.conditions:
        per = adv.get("exact", {}).get(cond, {}).get("per_kind", {})
        for kind, m in per.items():
            rows.append([cond, kind, f"{m['claims']:,}", _f(m["bluff_rate"]), m["tp"], m["fp"], m["fn"], m["tn"],
                         _f(m["f1"]), _f(m["outcome_accuracy"]), _f(m["ece"])])
    lines += _table(["condition", "claim kind", "claims", "bluff rate", "tp", "fp", "fn", "tn", "F1",
                     "outcome acc.", "ECE"], rows)
    lines += ["![claim errors](figures/claim_errors.png)", ""]
    if rep["advice_on_off"]:
        lines += ["### Advice on vs off (same seat, same tables)", "",
                  "The base bot's challenge decisions replaced by the advisor's (everything else its own), seated "
                  "beside the plain bot on the same tables.", ""]
        rows = []
        for label, conds in rep["advice_on_off"].items():
            for cond, d in conds.items():
                rows.append([f"`{label}`", d["base"], d["belief"], cond, _ci(d["on"]), _ci(d["off"]),
                             f"{d['win_rate_change']:+.3f}", _f(d["challenge_rate_on"]),
                             _f(d["challenge_rate_off"])])
        lines += _table(["advised seat", "base", "belief", "condition", "win rate on", "win rate off", "change",
                         "challenge rate on", "off"], rows)
    if rep.get("advice_paired"):
        lines += ["### The page's advice on vs off (paired, same seat, same tables)", "",
                  "Each scripted base with its reactions (challenge, block, pass) taken from the page's one "
                  "recommendation (`advised:BASE`) and without, on the same tables; the difference with its paired "
                  "bootstrap 95% interval, as `python -m evals.compare` prints it.", ""]
        rows = [[f"`{base}`", cond, _f(d["win_rate_on"]), _f(d["win_rate_off"]),
                 f"{d['diff']:+.3f} [{d['ci95_low']:+.3f}, {d['ci95_high']:+.3f}]", d["verdict"],
                 f"{d['games']:,} x {len(d['seeds'])}"]
                for base, conds in rep["advice_paired"].items() for cond, d in conds.items()]
        lines += _table(["base", "condition", "win rate on", "off", "on - off [95%]", "verdict", "tables x seeds"],
                        rows)
    if rep.get("advice_paired_search"):
        lines += ["### The page's default advice (search on) vs off (paired, same seat, same tables)", "",
                  "The same with the page's default: the recommendation with the page's search at its budget "
                  "(`advised:BASE:search`). The page's default should be whichever of the two settings wins games.",
                  ""]
        rows = [[f"`{base}`", cond, _f(d["win_rate_on"]), _f(d["win_rate_off"]),
                 f"{d['diff']:+.3f} [{d['ci95_low']:+.3f}, {d['ci95_high']:+.3f}]", d["verdict"],
                 f"{d['games']:,} x {len(d['seeds'])}"]
                for base, conds in rep["advice_paired_search"].items() for cond, d in conds.items()]
        lines += _table(["base", "condition", "win rate on", "off", "on - off [95%]", "verdict", "tables x seeds"],
                        rows)
    if rep.get("reaction_rates"):
        lines += ["### Challenge and block rates per claimed role", "",
                  "How often each policy challenges a claim of each role when it may (challenged), and blocks by "
                  "claiming the role when it may (blocked; bluff-blocks counted among them), in one seat of "
                  f"{cfg.reaction_games:,} tables of seed {cfg.seeds[0]} per condition (`python -m "
                  "evals.reaction_rates`). \"-\": no such decision.", ""]
        rows = []
        for label, conds in rep["reaction_rates"].items():
            for cond, roles in conds.items():
                rows.append([f"`{label}`", cond, *(f"{_f(r['challenge_rate'], 2)} / {_f(r['block_rate'], 2)}"
                                                   for r in (roles[x] for x in rules.ROLES))])
        lines += _table(["policy", "condition", *(f"{x}: challenged / blocked" for x in rules.ROLES)], rows)
    if rep.get("exploit_probes"):
        lines += ["### Exploit probes", "",
                  "The strongest of the scripted probes (`role_bluffer:ROLE:RATE`, `bluffer`, `aggressive`), chosen "
                  "by its win rate against three copies of the policy on tuning seed 1003, then seated against the "
                  "policy and against the baseline on the same tables (`python -m evals.exploit_probe`). A fair "
                  "share is 0.25; the difference's one-sided 95% upper bound says how much more exploitable than the "
                  "baseline the policy can be.", ""]
        rows = [[f"`{d['policy']}`", f"`{d['baseline']}`", f"`{d['strongest']}`", _f(d["win_rate_vs_policy"]),
                 _f(d["win_rate_vs_baseline"]), f"{d['diff']:+.3f} [{d['ci95_low']:+.3f}, {d['ci95_high']:+.3f}]",
                 f"{d['upper95']:+.3f}", f"{d['games']:,}"]
                for d in rep["exploit_probes"].values()]
        lines += _table(["policy", "baseline", "strongest probe", "its win rate vs policy", "vs baseline",
                         "difference [95%]", "upper bound", "tables"], rows)
    return lines


def cross_section(rep, cfg) -> list[str]:
    cp = rep["cross_play"]
    if not cp:
        return []
    labels = cp["labels"]
    lines = ["## Cross-play", "",
             f"Row policy in one seat against {cfg.num_players - 1} copies of the column policy, "
             f"{cfg.cross_play_games:,} tables per cell (win rate; a seat's fair share is "
             f"{1 / cfg.num_players:.2f}).", ""]
    rows = [[f"`{a}`"] + [_f(cp["cells"][f"{a}|{b}"]["win_rate"], 2) for b in labels] for a in labels]
    lines += _table(["tested \\ opponents"] + labels, rows)
    lines += ["![cross-play](figures/cross_play.png)", ""]
    if rep["ratings"]:
        r = rep["ratings"]
        lines += ["## Ratings (openskill, Plackett-Luce)", "",
                  f"{cfg.mixed_games:,} mixed tables, each seat a different policy of the cross-play set, drawn "
                  "uniformly; one rating update per table from its placements (games in a seeded random order). "
                  "Interval: mu +- 2 sigma; ordinal = mu - 3 sigma.", ""]
        rows = [[f"`{x}`", _f(v["mu"], 2), _f(v["sigma"], 2), f"[{_f(v['ci95'][0], 2)}, {_f(v['ci95'][1], 2)}]",
                 _f(v["ordinal"], 2), f"{v['games']:,}"] for x, v in sorted(r.items(), key=lambda kv: -kv[1]["mu"])]
        lines += _table(["policy", "mu", "sigma", "mu +- 2 sigma", "ordinal", "tables"], rows)
        lines += ["![ratings](figures/ratings.png)", ""]
    return lines


def players_section(rep, cfg) -> list[str]:
    bp = rep["by_players"]
    if not bp:
        return []
    ks = sorted(bp, key=int)
    labels = list(dict.fromkeys(x for k in ks for x in bp[k]))
    lines = ["## By table size", "",
             f"Win rate in one seat, {cfg.player_count_games:,} tables per size and condition (first seed; the "
             f"{cfg.num_players}-player column is the main matrix's first seed). A policy exported for one table "
             "size sits only there. Fair share: 1/n.", ""]
    for cond in cfg.conditions:
        rows = [[f"`{x}`"] + [_ci(bp[k][x][cond]) if x in bp[k] and cond in bp[k][x] else "-" for k in ks]
                for x in labels]
        lines += [f"### {cond}", ""] + _table(["policy"] + [f"{k} players" for k in ks], rows)
    return lines


def scenario_section(rep) -> list[str]:
    sc = rep["scenarios"]
    if not sc:
        return []
    lines = ["## Scenario benchmark", "",
             f"{len(sc['scenarios'])} fixed decisions from explicit deals and histories "
             "(`evals/report/decision_benchmark.py`). Policies: mean probability on the sound play, and how often their most "
             "likely play is sound. Advisors: correct recommendations on the challenge scenarios.", ""]
    rows = [[f"`{x}`", _f(v["mean_mass"]), f"{v['hits']}/{v['count']}"]
            for x, v in sorted(sc["policies"].items(), key=lambda kv: -kv[1]["mean_mass"])]
    rows += [[f"advisor `{b}`", "-", f"{v['correct']}/{v['count']}"] for b, v in sc["advisors"].items()]
    lines += _table(["policy / advisor", "mean mass on sound play", "sound top play"], rows)
    lines += ["![scenarios](figures/scenarios.png)", "", "<details><summary>The scenarios and why</summary>", ""]
    lines += _table(["scenario", "decision", "sound play", "why"],
                    [[s["name"], s["kind"], ", ".join(s["sound"]), s["reason"]] for s in sc["scenarios"]])
    return lines + ["</details>", ""]


def ablation_section(rep) -> list[str]:
    abl = rep["ablation"]
    if not abl:
        return []
    lines = ["## Exploration ablation: epsilon-greedy vs Boltzmann DQN", "",
             "Two runs of `training.train` with identical seeds, network, reward and opponents, differing only in "
             "exploration (configs `ablation_epsilon.yaml`, `ablation_boltzmann.yaml`; their summaries are "
             "committed under `evals/reference/ablation/`). Entropy is the behaviour policy's, in nats, averaged "
             "over the chunk's decisions.", ""]
    rows = []
    for label, a in abl.items():
        c = a["curves"]
        rows.append([label, _f(c["entropy"][0]), _f(c["entropy"][-1]), _f(sum(c["entropy"]) / len(c["entropy"])),
                     _f(c["episode_return"][-1]), _f(c["win_rate"][-1])])
    lines += _table(["run", "entropy first chunk", "entropy last chunk", "mean entropy", "final episode reward",
                     "final win rate"], rows)
    return lines + ["![ablation curves](figures/ablation_curves.png)", "",
                    "![ablation actions](figures/ablation_actions.png)", ""]


def definitions() -> list[str]:
    return ["## Definitions", "",
            "- **Win**: placement 1 by the rules' ranking (`coupjax.seat_tables`, the one definition); win rate = wins / "
            "tables with a 95% Wilson interval.",
            "- **Episode rewards** (`training.rewards`): shaped = the sum over the seat's transitions of its coin "
            "change plus opponents eliminated (a potential difference, so coins at the end of its game minus at its "
            "start plus the opponents eliminated by then); win = 1 for a win.",
            "- **Winner action match**: on logged positions (games of the condition's scripted bots), the mean "
            "probability the policy gives the eventual winner's action at the winner's decisions.",
            "- **One-step regret** (coins): at logged main-action decisions, max over legal main actions of the "
            "one-step EV of `coupjax.advice.action_ev.recommend_action` minus the policy's expected EV (before the "
            "bluff-margin penalty). A yardstick: belief_ev plays on this model.",
            "- **Outcome accuracy** = (tp + tn) / claims; **outcome score** = (tp - fp) / claims, the net cards "
            "the followed advice wins per claim (CoupVisor gives no formula; these are ours).",
            "- **Brier / ECE**: of P(bluff) = 1 - p_truth; ECE over 10 equal-width bins.", ""]


def selection(cfg) -> list[str]:
    return ["## Seeds and selection", "",
            f"Every game of this report is keyed by the report seeds {', '.join(map(str, cfg.seeds))}; "
            "`coupjax.seeds` refuses the tuning seeds (0: the search defaults and the dqn_cpu config; 1000: the "
            "advisor's fit; 1001: belief_ev's play overrides), so no figure is measured on games used to choose "
            "what it measures. What carries selection on other games of the same distributions: the advisor's "
            "constants (fitted on seed-1000 claims: its F1, accuracy, Brier and ECE are out-of-sample, not "
            "selection-free in design), belief_ev's overrides (seed 1001), the search defaults and the DQN config "
            "(seed 0). The reference DQN export is one training run committed as it came (no choice among runs). "
            "The scenarios' sound plays are hand-written; the advised seat's rule of keeping the bot's blocks "
            "was adopted after its scenario `assassinated_on_last_card_holding_contessa` showed it challenging "
            "there, so that row carries selection.", ""]


def render(rep: dict, cfg, meta: dict) -> str:
    lines = ["# coupjax evaluation report", "",
             f"`python -m evals.report --config {meta['config_path']} --out {meta['out']}` at commit "
             f"`{meta['git_commit']}`; {meta['seconds_total']:.0f} s on {meta['machine']}.", "",
             "![win rates](figures/win_rates.png)", ""]
    lines += policy_section(rep, cfg) + advisor_section(rep, cfg) + cross_section(rep, cfg)
    lines += players_section(rep, cfg) + scenario_section(rep) + ablation_section(rep)
    lines += ["## Time", "", f"Total {meta['seconds_total']:.0f} s on {meta['machine']} ({meta['devices']} XLA "
              f"devices; load average {meta['load_average_start'][0]:.1f} at the start, "
              f"{meta['load_average_end'][0]:.1f} at the end); by stage (wall seconds include compilation; CPU "
              "seconds over all threads):", ""]
    rows = [[k, f"{v['seconds']:.0f}", f"{v.get('cpu_seconds', 0):.0f}", v["cells"]] for k, v in meta["stages"].items()]
    rows += [[k, f"{meta[f'seconds_{k}']:.0f}", "-", "-"] for k in ("results", "figures") if f"seconds_{k}" in meta]
    lines += _table(["stage", "wall seconds", "CPU seconds", "cells"], rows)
    lines += selection(cfg) + definitions()
    return "\n".join(lines)
