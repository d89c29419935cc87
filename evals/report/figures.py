"""The report's figures (matplotlib, Agg): one PNG per figure, from ``report.json``."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402
import numpy as np  # noqa: E402

from coupjax import rules as R  # noqa: E402
from evals.report.recipe import curve_rows  # noqa: E402


def _save(fig, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def win_rates(rep: dict, path: Path, num_players: int = 4) -> str:
    rows = {**rep["policies"], **rep.get("search_policies", {})}
    labels = list(rows)
    conds = sorted({c for r in rows.values() for c in r})
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(labels) + 2), 4))
    w = 0.8 / max(len(conds), 1)
    for k, cond in enumerate(conds):
        x = np.arange(len(labels)) + (k - (len(conds) - 1) / 2) * w
        r = [rows[lab].get(cond) for lab in labels]
        y = [q["win_rate"] if q else np.nan for q in r]
        lo = [q["win_rate"] - q["ci95_low"] if q else 0 for q in r]
        hi = [q["ci95_high"] - q["win_rate"] if q else 0 for q in r]
        ax.bar(x, y, w, yerr=[lo, hi], capsize=3, label=cond)
    ax.axhline(1 / num_players, color="grey", lw=0.8, ls="--", label=f"fair share 1/{num_players}")
    ax.set_xticks(np.arange(len(labels)), labels, rotation=30, ha="right")
    ax.set_ylabel("win rate (95% Wilson interval)")
    ax.set_title("Win rate in one seat against the condition's scripted bots")
    ax.legend()
    return _save(fig, path)


def reliability(rep: dict, path: Path) -> str:
    adv = rep["advisor"]
    conds = sorted({c for b in adv.values() for c in b})
    fig, axes = plt.subplots(1, len(conds), figsize=(5 * len(conds), 4.5), squeeze=False)
    for ax, cond in zip(axes[0], conds):
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
        for belief in ("exact", "coupvisor", "exact_uncalibrated", "coupvisor_uncalibrated"):
            m = adv.get(belief, {}).get(cond)
            if not m:
                continue
            bins = [b for b in m["reliability"] if b["count"]]
            ax.plot([b["mean_p"] for b in bins], [b["frac_pos"] for b in bins], marker="o",
                    ls="-" if "uncal" not in belief else ":", label=f"{belief} (ECE {m['ece']:.3f})")
        ax.set_xlabel("predicted P(bluff)")
        ax.set_ylabel("observed bluff frequency")
        ax.set_title(f"Reliability: {cond}")
        ax.legend(fontsize=7)
    return _save(fig, path)


def cross_play(rep: dict, path: Path, num_players: int = 4) -> str:
    cp = rep["cross_play"]
    labels, wr = cp["labels"], np.asarray(cp["win_rate"], float)
    fair = 1 / num_players
    fig, ax = plt.subplots(figsize=(0.9 * len(labels) + 3, 0.75 * len(labels) + 2))
    # red below a seat's fair share, green above it
    im = ax.imshow(wr, cmap="RdYlGn", norm=TwoSlopeNorm(vmin=0, vcenter=fair, vmax=1))
    for i in range(len(labels)):
        for j in range(len(labels)):
            far = abs(wr[i, j] - fair) > 0.6 * (1 - fair if wr[i, j] > fair else fair)
            ax.text(j, i, f"{wr[i, j]:.2f}", ha="center", va="center", fontsize=9,
                    color="white" if far else "black")
    ax.set_xticks(range(len(labels)), labels, rotation=40, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("opponent (every other seat)")
    ax.set_ylabel("tested policy (one seat)")
    ax.set_title(f"Cross-play win rate (one seat vs {num_players - 1} copies; fair share {fair:.2f})")
    fig.colorbar(im, ax=ax, fraction=0.046)
    return _save(fig, path)


def ratings(rep: dict, path: Path) -> str:
    r = rep["ratings"]
    labels = sorted(r, key=lambda x: r[x]["mu"])
    fig, ax = plt.subplots(figsize=(6, 0.45 * len(labels) + 1.5))
    mu = [r[x]["mu"] for x in labels]
    err = [2 * r[x]["sigma"] for x in labels]
    ax.errorbar(mu, range(len(labels)), xerr=err, fmt="o", capsize=3)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("openskill Plackett-Luce mu (bars: 2 sigma)")
    ax.set_title("Ratings from mixed tables")
    return _save(fig, path)


def ablation_curves(rep: dict, path: Path) -> str:
    abl = rep["ablation"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for label, a in abl.items():
        c = a["curves"]
        x = c["step"]
        axes[0].plot(x, c["episode_return"], marker="o", label=label)
        axes[1].plot(x, c["entropy"], marker="o", label=label)
        axes[2].plot(x, c["win_rate"], marker="o", label=label)
    for ax, t in zip(axes, ("episode reward (win reward)", "behaviour entropy (nats)", "win rate while training")):
        ax.set_title(t)
        ax.set_xlabel("env steps of the batch")
        ax.legend()
    return _save(fig, path)


def ablation_hist(rep: dict, path: Path, num_players: int = 4) -> str:
    abl = rep["ablation"]
    fig, ax = plt.subplots(figsize=(12, 4))
    names = [R.action_name(a, 0, num_players) for a in range(R.num_actions(num_players))]
    w = 0.8 / max(len(abl), 1)
    for k, (label, a) in enumerate(abl.items()):
        h = np.sum(np.asarray(a["action_hist"], float), axis=0)
        ax.bar(np.arange(len(h)) + (k - (len(abl) - 1) / 2) * w, h / max(h.sum(), 1), w, label=label)
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
    ax.set_ylabel("share of the learner's actions")
    ax.set_title("Action visits over training (all chunks)")
    ax.legend()
    return _save(fig, path)


def claim_errors(rep: dict, path: Path, belief: str = "exact") -> str:
    adv = rep["advisor"].get(belief, {})
    conds = sorted(adv)
    fig, axes = plt.subplots(1, len(conds), figsize=(6 * len(conds), 4), squeeze=False)
    for ax, cond in zip(axes[0], conds):
        per = adv[cond]["per_kind"]
        kinds = list(per)
        x = np.arange(len(kinds))
        ax.bar(x - 0.2, [per[k]["fp"] for k in kinds], 0.4, label="false challenges (fp)")
        ax.bar(x + 0.2, [per[k]["fn"] for k in kinds], 0.4, label="missed bluffs (fn)")
        ax.set_xticks(x, kinds, rotation=30, ha="right")
        ax.set_title(f"Advisor errors by claim kind ({belief}): {cond}")
        ax.set_ylabel("claims")
        ax.legend()
    return _save(fig, path)


def scenario_scores(rep: dict, path: Path) -> str:
    sc = rep["scenarios"]
    labels = list(sc["policies"])
    names = [s["name"] for s in sc["scenarios"]]
    # scenarios as rows (their names read horizontally), policies as columns
    m = np.array([[sc["policies"][x]["per_scenario"][n]["mass"] for x in labels] for n in names])
    fig, ax = plt.subplots(figsize=(0.8 * len(labels) + 5.5, 0.26 * len(names) + 2))
    im = ax.imshow(m, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_xticks(range(len(labels)), labels, rotation=40, ha="right", fontsize=9)
    ax.set_title("Scenario benchmark: probability on the sound play", fontsize=10)
    fig.colorbar(im, ax=ax, fraction=0.05)
    return _save(fig, path)


def final_configs(fin: dict, path: Path, num_players: int = 4) -> str:
    """docs/results.md's first figure: each config's training seeds as dots (each with its
    Wilson interval over tables) beside their mean with the Student-t interval over
    training seeds, so the reader sees which noise is the larger; one panel per condition
    of the report (``configs_by_condition``), on one win-rate axis."""
    by = fin.get("configs_by_condition") or {fin["condition"]: fin["configs"]}
    labels = list(fin["configs"])
    width = max(6, 0.9 * len(labels) + 2)
    fig, axes = plt.subplots(1, len(by), figsize=(width * len(by), 4), sharey=True, squeeze=False)
    for ax, (condition, configs) in zip(axes[0], by.items()):
        mean_label = "mean [95% over training seeds]"  # on the first trained config only
        for i, label in enumerate(labels):
            c = configs[label]
            units = c["units"]
            xs = i - 0.15 + (np.arange(len(units)) - (len(units) - 1) / 2) * 0.08
            y = np.array([u["win_rate"] for u in units])
            err = [y - [u["ci95_low"] for u in units], np.array([u["ci95_high"] for u in units]) - y]
            ax.errorbar(xs, y, yerr=err, fmt="o", ms=4, color="tab:blue", capsize=2,
                        label="a training seed [95% over tables]" if i == 0 else None)
            if c["training_seeds"] > 1:
                ax.errorbar([i + 0.2], [c["win_rate"]], yerr=[[c["win_rate"] - c["ci95_low"]],
                                                             [c["ci95_high"] - c["win_rate"]]],
                            fmt="s", ms=6, color="tab:red", capsize=4, label=mean_label)
                mean_label = None
        ax.axhline(1 / num_players, color="grey", lw=0.8, ls="--", label=f"fair share 1/{num_players}")
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
        ax.set_xlim(-0.6, len(labels) - 0.4)
        ax.set_title(f"One seat of the same `{condition}` tables, held-out seeds", fontsize=10)
        ax.legend(fontsize=8, loc="best")
    axes[0][0].set_ylabel("win rate")
    return _save(fig, path)


def final_exploit(fin: dict, path: Path) -> str:
    """docs/results.md's exploitability figure: every best response's win rate against
    three frozen copies, by config and family (one dot per training seed x best-response
    seed), with the 1/4 line below which a best response found nothing."""
    labels = [k for k, e in fin["exploit"].items() if e.get("families")]
    families = sorted({f for k in labels for f in fin["exploit"][k]["families"]})
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(labels) + 2), 4))
    w = 0.8 / max(len(families), 1)
    for j, fam in enumerate(families):
        legend = fam  # on the family's first config only
        for i, label in enumerate(labels):
            rows = fin["exploit"][label]["families"].get(fam, [])
            if not rows:
                continue
            x = i + (j - (len(families) - 1) / 2) * w + np.linspace(-w / 4, w / 4, len(rows))
            ax.plot(x, [r["win_rate"] for r in rows], "o", ms=4, color=f"C{j}", label=legend)
            legend = None
    ax.axhline(0.25, color="grey", lw=0.8, ls="--", label="1/4: below it, not found")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlim(-0.5, len(labels) - 0.5)
    ax.set_ylim(0, 1)
    ax.set_ylabel("best response's win rate")
    ax.set_title("Exploitability: every best response, by family", fontsize=10)
    ax.legend(fontsize=8, ncol=2)
    return _save(fig, path)


def final_curve(fin: dict, path: Path) -> str:
    """docs/results.md's compute curve (``report.curve``): against training minutes per
    seed (mean over training seeds, bars their range), the pool win rate minus the
    baseline's (95% t over training seeds) and the ``dqn`` best response's mean (95% t);
    each point names its budget and env steps per second (`evals.report.recipe.curve_rows`)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for k, (name, c) in enumerate(fin["curve"].items()):
        rows = [r for r in curve_rows(fin, name) if r["minutes"] is not None]
        x = np.array([r["minutes"] for r in rows])
        xerr = np.maximum(0.0, [x - [r["minutes_min"] for r in rows], np.array([r["minutes_max"] for r in rows]) - x])
        y = np.array([r["diff"] for r in rows])
        yerr = np.maximum(0.0, [y - [r["ci95_low"] for r in rows], np.array([r["ci95_high"] for r in rows]) - y])
        left.errorbar(x, y, xerr=xerr, yerr=yerr, fmt="o-", capsize=3, color=f"C{k}", label=f"{name} - {c['baseline']}")
        for r in rows:
            speed = "" if r["env_steps_per_s"] is None else f"\n{r['env_steps_per_s'] / 1000:.1f}k steps/s"
            left.annotate(f"{r['label']}{speed}", (r["minutes"], r["diff"]), textcoords="offset points",
                          xytext=(5, 5), fontsize=7)
        ex = [r for r in rows if r["dqn"] is not None]
        if ex:
            xe = np.array([r["minutes"] for r in ex])
            ye = np.array([r["dqn"]["mean"] for r in ex])
            lo = [m - (r["dqn"]["ci95_low"] if r["dqn"]["ci95_low"] is not None else m) for m, r in zip(ye, ex)]
            hi = [(r["dqn"]["ci95_high"] if r["dqn"]["ci95_high"] is not None else m) - m for m, r in zip(ye, ex)]
            xerr_e = np.maximum(0.0, [xe - [r["minutes_min"] for r in ex],
                                      np.array([r["minutes_max"] for r in ex]) - xe])
            right.errorbar(xe, ye, xerr=xerr_e, yerr=np.maximum(0.0, [lo, hi]), fmt="o-", capsize=3, color=f"C{k}",
                           label=name)
            for r in ex:
                right.annotate(r["label"], (r["minutes"], r["dqn"]["mean"]), textcoords="offset points",
                               xytext=(5, 5), fontsize=7)
    left.axhline(0, color="grey", lw=0.8, ls="--")
    left.set_title("Pool win rate minus the baseline's (95% t over training seeds)", fontsize=9)
    left.set_ylabel("win-rate difference")
    right.axhline(0.25, color="grey", lw=0.8, ls="--", label="1/4: nothing found")
    right.set_ylim(0, 1)
    right.set_title("`dqn` best response against three copies (95% t over training seeds)", fontsize=9)
    right.set_ylabel("best response's win rate")
    for ax in (left, right):
        ax.set_xlabel("training minutes per seed (bars: range over training seeds)")
        ax.legend(fontsize=8)
    return _save(fig, path)


def draw_final(fin: dict, out_dir: Path, num_players: int = 4) -> dict:
    """docs/results.md's figures into ``out_dir``: section name -> file name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    made = {"configs": final_configs(fin, out_dir / "configs.png", num_players)}
    if any(e.get("families") for e in fin.get("exploit", {}).values()):
        made["exploit"] = final_exploit(fin, out_dir / "exploitability.png")
    if fin.get("curve"):
        made["curve"] = final_curve(fin, out_dir / "curve.png")
    return made


def draw_all(rep: dict, out_dir: Path, num_players: int = 4) -> list[str]:
    """Every figure the report's data allow; returns the file names."""
    out_dir.mkdir(parents=True, exist_ok=True)
    made = []
    jobs = [("win_rates.png", lambda r, p: win_rates(r, p, num_players), bool(rep.get("policies"))),
            ("reliability.png", reliability, bool(rep.get("advisor"))),
            ("claim_errors.png", claim_errors, bool(rep.get("advisor"))),
            ("cross_play.png", lambda r, p: cross_play(r, p, num_players), bool(rep.get("cross_play"))),
            ("ratings.png", ratings, bool(rep.get("ratings"))),
            ("ablation_curves.png", ablation_curves, bool(rep.get("ablation"))),
            ("ablation_actions.png", lambda r, p: ablation_hist(r, p, num_players), bool(rep.get("ablation"))),
            ("scenarios.png", scenario_scores, bool(rep.get("scenarios")))]
    for name, fn, ok in jobs:
        if ok:
            made.append(fn(rep, out_dir / name))
    return made
