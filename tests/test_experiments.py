"""evals.experiments (the plan of every run the final report needs, resumable) and
``python -m evals.report --final`` (docs/results.md from report.json, with issue 40's
optional compute curve and targets, `evals.report.recipe`): tiny sizes, run
directories faked from the committed reference export, results written to tmp paths,
the ledger moved to a tmp file (COUPJAX_LEDGER)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest
import yaml

from coupjax import seeds as S
from evals import experiments
from evals.report import final, recipe

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "evals" / "reference" / "dqn" / "export"
TINY_DQN = ["num_envs=4", "batch_size=8", "buffer_size=64", "warmup_steps=8", "updates_per_chunk=6",
            "target_update_steps=3", "hidden_sizes=[16]", "epsilon_decay_steps=10", "num_chunks=2",
            "checkpoint_every=1", "max_checkpoints=2"]
TINY_SP = ["num_envs=8", "rollout_steps=8", "num_minibatches=2", "num_epochs=1", "updates_per_chunk=4",
           "num_chunks=2", "hidden_sizes=[16]", "belief_hidden_sizes=[16]", "checkpoint_every=1"]
SMALL = {
    "training_seeds": [21, 22, 23],
    "configs": {"dqn": "dqn_cpu.yaml", "sp": "selfplay_cpu.yaml"},
    "set": {"dqn": TINY_DQN, "sp": TINY_SP},
    "exploit": {"configs": ["dqn", "sp"], "families": ["dqn"], "one_seed_families": ["ppo"], "br_seeds": [50, 51],
                "games": 8, "set": TINY_DQN},
    "report": {"games": 40, "baselines": {"random": "random"}, "pairs": [["dqn", "random"]]},
}


@pytest.fixture(autouse=True)
def tmp_ledger(tmp_path, monkeypatch):
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(S.LEDGER_ENV, str(ledger))
    monkeypatch.setenv("WANDB_MODE", "offline")
    return ledger


def write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def one_line_error(capsys, fn, *words):
    with pytest.raises(SystemExit) as exc:
        fn()
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and all(w in err[0] for w in words), err
    return err[0]


# ------------------------------------------------------------------ the plan
def test_dry_run_plan_lists_the_expected_items(tmp_path, capsys, tmp_ledger):
    cfg = write(tmp_path / "exp.yaml", {**SMALL, "exploit": {**SMALL["exploit"], "br_seeds": [150, 151]}})
    out = tmp_path / "runs"
    assert experiments.main(["--config", str(cfg), "--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    names = [line.split("]", 1)[1].split()[0] for line in text.splitlines() if line.strip().startswith("[")]
    train = [f"train/{c}/seed_{s}" for c in ("dqn", "sp") for s in (21, 22, 23)]
    exploit = [f"exploit/{c}/seed_{s}/{f}/br_{b}" for c in ("dqn", "sp") for s in (21, 22, 23)
               for f in (("dqn", "ppo") if s == 21 else ("dqn",)) for b in (150, 151)]
    assert names == train + exploit
    assert "22 items, 0 done; left: 22 items, est." in text and "(train " in text and "exploit " in text
    assert all("est. " in line for line in text.splitlines() if line.strip().startswith("["))
    assert not out.exists() and not tmp_ledger.exists()  # a dry run writes nothing and spends no held-out seed
    assert experiments.main(["--config", str(cfg), "--out", str(out), "--dry-run", "--only", "sp"]) == 0
    only = capsys.readouterr().out
    assert "train/sp/seed_21" in only and "train/dqn/" not in only and "exploit/sp/seed_21/ppo/br_150" in only


def test_one_seed_families_run_on_the_labels_and_seeds_named(tmp_path, capsys):
    """``one_seed_configs`` and ``one_seed_br_seeds`` narrow the one-seed families only:
    every exploit config keeps its ``families`` on every training seed and best-response seed."""
    ex = {**SMALL["exploit"], "br_seeds": [150, 151], "one_seed_configs": ["sp"], "one_seed_br_seeds": [152]}
    cfg = write(tmp_path / "exp.yaml", {**SMALL, "exploit": ex})
    assert experiments.main(["--config", str(cfg), "--out", str(tmp_path / "r"), "--dry-run", "--only", "exploit"]) == 0
    text = capsys.readouterr().out
    names = [line.split("]", 1)[1].split()[0] for line in text.splitlines() if line.strip().startswith("[")]
    dqn = [f"exploit/{c}/seed_{s}/dqn/br_{b}" for s in (21, 22, 23) for b in (150, 151) for c in ("dqn", "sp")]
    assert sorted(names) == sorted(dqn + ["exploit/sp/seed_21/ppo/br_152"])
    bad = write(tmp_path / "bad.yaml", {**SMALL, "exploit": {**ex, "one_seed_configs": ["nobody"]}})
    one_line_error(capsys, lambda: experiments.main(["--config", str(bad), "--dry-run"]),
                   "exploit.one_seed_configs: 'nobody' is not a label of exploit.configs")


def test_the_shipped_plan(capsys, tmp_path):
    """The shipped config: every config x 3 fresh training seeds, then its best responses."""
    assert experiments.main(["--config", str(ROOT / "configs" / "experiments.yaml"), "--out", str(tmp_path / "r"),
                   "--dry-run", "--only", "train"]) == 0
    text = capsys.readouterr().out
    cfg = experiments.load_config(ROOT / "configs" / "experiments.yaml")
    assert set(cfg.configs) == {"dqn_cpu", "selfplay_cpu", "selfplay_psro_cpu", "main_job", "selfplay_cpu_2x",
                                "recipe_cpu", "recipe_cpu_10", "recipe_cpu_20"}
    assert len(cfg.training_seeds) >= 3 and not set(cfg.training_seeds) & set(S.TUNING_SEEDS)
    for label in cfg.configs:
        for s in cfg.training_seeds:
            assert (f"train/{label}/seed_{s}" in text) == (s in cfg.seeds_of(label))
    # issue 40: the recipe on five seeds of its own, fresh (it was chosen on runs of 21 and 22, and no
    # other label trains on them), its compute curve's smaller budgets on two of them
    recipe = cfg.seeds_of("recipe_cpu")
    assert len(recipe) == 5 and not set(recipe) & ({21, 22} | set(S.TUNING_SEEDS) | set(cfg.training_seeds))
    assert [cfg.seeds_of(f"recipe_cpu_{n}") for n in (10, 20)] == [recipe[:2]] * 2
    chunks = [experiments.training_config(cfg, x, 21).num_chunks for x in cfg.report["curve"]["recipe"]["budgets"]]
    assert chunks == sorted(chunks) and len(set(chunks)) == 3
    assert experiments.training_config(cfg, "main_job", 22).num_chunks == 6  # the main job's cut, on a fresh seed
    # equal compute: the league with exploiters' two passes of updates (training.exploiter_league)
    from training.exploiter_league import learner_config

    league = experiments.training_config(cfg, "selfplay_psro_cpu", 22)
    twice = experiments.training_config(cfg, "selfplay_cpu_2x", 22)
    assert league.seed == 22 and learner_config(league).seed == 22
    assert twice.num_chunks * twice.updates_per_chunk == experiments.planned_chunks(league) * \
        learner_config(league).updates_per_chunk
    assert ("selfplay_psro_cpu", "selfplay_cpu_2x") in {tuple(p) for p in cfg.report["pairs"]}


@pytest.mark.parametrize("change, words", [
    ({"trainig_seeds": [1]}, ("trainig_seeds is not known", "training_seeds")),
    ({"training_seeds": [0, 21]}, ("training_seeds: seed 0 was used to tune",)),
    ({"exploit": {**SMALL["exploit"], "br_seeds": [1002]}}, ("exploit.br_seeds: seed 1002 was used to tune",)),
    ({"exploit": {**SMALL["exploit"], "families": ["dqm"]}}, ("unknown best-response family 'dqm'",)),
    ({"set": {"dqn": ["num_chunk=2"]}}, ("configs.dqn", "'num_chunk' is not known")),
    ({"report": {"pairs": [["dqn", "nobody"]]}}, ("report.pairs",)),
])
def test_config_mistakes_are_one_line(tmp_path, capsys, change, words):
    cfg = write(tmp_path / "exp.yaml", {**SMALL, **change})
    one_line_error(capsys, lambda: experiments.main(["--config", str(cfg), "--dry-run"]), experiments.PROG, *words)


def fake_run(path: Path, num_chunks: int) -> None:
    """A finished run directory: the reference export and a complete summary."""
    shutil.copytree(REFERENCE, path / "export")
    (path / "summary.json").write_text(json.dumps({"chunks_done": num_chunks, "wall_seconds": 12.0}))


def test_a_run_made_with_another_config_is_named_in_the_plan(tmp_path, capsys):
    """A finished run whose config.json differs from its label's config now (a recipe
    edited after its runs) is named with the keys that differ: a key the run lacks counts
    as its default, a key dropped since and the run-free keys (num_chunks, eval_games, ...)
    are not compared."""
    from training.config import config_to_dict

    cfg_path = write(tmp_path / "exp.yaml", SMALL)
    cfg, out = experiments.load_config(cfg_path), tmp_path / "runs"
    for seed in (21, 22, 23):
        fake_run(experiments.run_dir(out, "sp", seed), 2)
        saved = config_to_dict(experiments.training_config(cfg, "sp", seed))
        if seed == 21:  # as the config says (at the default of a key added since) and with a knob dropped since
            del saved["search_target_impossible_pool"]
            saved.update(psro_budget=0, eval_games=5)
        if seed == 22:
            saved.update(entropy_coef=0.5, learning_rate=1.0)
        (experiments.run_dir(out, "sp", seed) / "config.json").write_text(json.dumps(saved))
    stale = {s: experiments.stale_keys(experiments.run_dir(out, "sp", s), experiments.training_config(cfg, "sp", s))
             for s in (21, 22, 23)}
    assert stale == {21: [], 22: ["entropy_coef", "learning_rate"], 23: []}
    assert experiments.main(["--config", str(cfg_path), "--out", str(out), "--dry-run"]) == 0
    warned = [line for line in capsys.readouterr().out.splitlines() if "warning" in line]
    assert len(warned) == 1 and "sp/seed_22" in warned[0] and "keys entropy_coef, learning_rate differ" in warned[0]


def test_resume_skips_finished_items_and_resumes_cut_runs(tmp_path, capsys, monkeypatch):
    cfg_path = write(tmp_path / "exp.yaml", SMALL)
    cfg, out = experiments.load_config(cfg_path), tmp_path / "runs"
    fake_run(experiments.run_dir(out, "dqn", 21), 2)
    cut = experiments.run_dir(out, "dqn", 22)
    (cut / "checkpoints" / "1").mkdir(parents=True)
    (cut / "summary.json").write_text(json.dumps({"chunks_done": 1}))  # stopped after 1 of 2 chunks
    done = experiments.exploit_file(out, "dqn", 21, "dqn", 50)
    done.parent.mkdir(parents=True)
    done.write_text(json.dumps({"policy": str(experiments.run_dir(out, "dqn", 21)), "seed": 50, "win_rate": 0.2,
                                "ci95_low": 0.1, "ci95_high": 0.3, "games": 8, "train_seconds": 3.0,
                                "eval_seconds": 1.0, "curve": [0.1, 0.2], "config": {"num_players": 4}}))
    states = {it.name: it.state for it in experiments.plan(cfg, out)}
    assert states["train/dqn/seed_21"] == "done" and states["train/dqn/seed_22"] == "cut"
    assert states["train/dqn/seed_23"] == "to do" and states["exploit/dqn/seed_21/dqn/br_50"] == "done"
    ran = []
    monkeypatch.setattr(experiments, "run_item", lambda cfg, out, it, **kw: ran.append((it.name, it.state)))
    assert experiments.main(["--config", str(cfg_path), "--out", str(out), "--only", "dqn", "--no-wandb", "--quiet"]) == 0
    names = dict(ran)
    assert "train/dqn/seed_21" not in names and "exploit/dqn/seed_21/dqn/br_50" not in names
    assert names["train/dqn/seed_22"] == "cut" and names["train/dqn/seed_23"] == "to do"
    assert "exploit/dqn/seed_21/dqn/br_51" in names and not any(n.startswith(("train/sp", "exploit/sp")) for n in names)
    text = capsys.readouterr().out
    assert "[ done] train/dqn/seed_21" in text and "measured 12 s" in text
    summary = json.loads((out / "exploit.json").read_text())["dqn"]  # evals.exploit.summarize of what is there
    assert (out / "experiments.yaml").is_file() and len(summary["missing"]) == 7  # 8 planned, the fake wrote none
    assert summary["verdict"] == "not found at this budget (>= 0.25)" and summary["families"]["dqn"][0]["seed"] == 50
    other = write(tmp_path / "other.yaml", {**SMALL, "training_seeds": [31, 32, 33]})
    one_line_error(capsys, lambda: experiments.main(["--config", str(other), "--out", str(out), "--dry-run"]),
                   "holds experiments of another config", "training_seeds")


def test_more_training_seeds_reuse_the_runs_with_best_response_seeds_of_their_own(tmp_path, capsys):
    """Issue 41: configs that are compared get more training seeds later.  The runs already
    made are kept; the added seeds' best responses take seeds of their own (a mapping per
    training seed), and any change to the earlier seeds' runs is still refused."""
    out = tmp_path / "runs"
    first = write(tmp_path / "first.yaml", SMALL)
    out.mkdir()
    (out / "experiments.yaml").write_text(yaml.safe_dump(experiments.load_config(first).to_dict(), sort_keys=False))
    more = {**SMALL, "training_seeds": [21, 22, 23, 24],
            "exploit": {**SMALL["exploit"], "br_seeds": {21: [50, 51], 22: [50, 51], 23: [50, 51], 24: [52, 53]}}}
    capsys.readouterr()
    assert experiments.main(["--config", str(write(tmp_path / "more.yaml", more)), "--out", str(out),
                             "--dry-run", "--only", "exploit"]) == 0
    text = capsys.readouterr().out
    assert "training seeds [21, 22, 23] extended to [21, 22, 23, 24]" in text
    assert "exploit/sp/seed_24/dqn/br_52" in text and "exploit/sp/seed_23/dqn/br_51" in text
    assert "seed_24/dqn/br_50" not in text and "exploit/dqn/seed_21/ppo/br_50" in text
    moved = {**more, "exploit": {**more["exploit"], "br_seeds": {**more["exploit"]["br_seeds"], 22: [52, 53]}}}
    one_line_error(capsys, lambda: experiments.main(["--config", str(write(tmp_path / "moved.yaml", moved)),
                                                     "--out", str(out), "--dry-run"]),
                   "holds experiments of another config", "exploit")
    fewer = {**SMALL, "training_seeds": [21, 22]}
    one_line_error(capsys, lambda: experiments.main(["--config", str(write(tmp_path / "fewer.yaml", fewer)),
                                                     "--out", str(out), "--dry-run"]),
                   "holds experiments of another config", "training_seeds")
    short = {**more, "exploit": {**more["exploit"], "br_seeds": {21: [50], 22: [50], 23: [50]}}}
    one_line_error(capsys, lambda: experiments.main(["--config", str(write(tmp_path / "short.yaml", short)),
                                                     "--dry-run"]),
                   "exploit.br_seeds names no best-response seeds for training seed(s) [24]")



def test_labels_added_later_train_on_their_own_seeds_and_reuse_the_runs(tmp_path, capsys):
    """Issue 40: a recipe and its smaller budgets join experiments already made.  A label
    may train on the first ``config_seeds`` training seeds only (its best responses too);
    labels added to a saved config keep every run there, and a change to a saved label's
    runs is still refused."""
    out = tmp_path / "runs"
    out.mkdir()
    (out / "experiments.yaml").write_text(yaml.safe_dump(experiments.load_config(write(tmp_path / "first.yaml", SMALL))
                                                         .to_dict(), sort_keys=False))
    more = {**SMALL, "configs": {**SMALL["configs"], "sp_half": "selfplay_cpu.yaml"},
            "set": {**SMALL["set"], "sp_half": TINY_SP + ["num_chunks=1"]}, "config_seeds": {"sp_half": 2},
            "exploit": {**SMALL["exploit"], "configs": ["dqn", "sp", "sp_half"]}}
    cfg = experiments.load_config(write(tmp_path / "more.yaml", more))
    assert cfg.seeds_of("sp_half") == (21, 22) and cfg.seeds_of("sp") == (21, 22, 23)
    names = [it.name for it in experiments.plan(cfg, out, "sp_half")]
    assert names == ["train/sp_half/seed_21", "train/sp_half/seed_22", "exploit/sp_half/seed_21/dqn/br_50",
                     "exploit/sp_half/seed_21/dqn/br_51", "exploit/sp_half/seed_21/ppo/br_50",
                     "exploit/sp_half/seed_21/ppo/br_51", "exploit/sp_half/seed_22/dqn/br_50", "exploit/sp_half/seed_22/dqn/br_51"]
    capsys.readouterr()
    assert experiments.main(["--config", str(tmp_path / "more.yaml"), "--out", str(out), "--dry-run"]) == 0
    assert "train/sp_half/seed_22" in capsys.readouterr().out
    exp = {**cfg.to_dict(), "configs": {"sp_half": "x"}}  # the final report reads the same seeds
    with pytest.raises(final.FinalReportError, match="2 run"):
        final.units(exp, out)
    changed = {**more, "set": {**more["set"], "sp": TINY_SP + ["num_chunks=1"]}}
    one_line_error(capsys, lambda: experiments.main(["--config", str(write(tmp_path / "changed.yaml", changed)),
                                                     "--out", str(out), "--dry-run"]),
                   "holds experiments of another config", "set")
    for bad in (0, 4, "two"):
        one_line_error(capsys, lambda: experiments.main(["--config", str(write(
            tmp_path / "bad.yaml", {**more, "config_seeds": {"sp_half": bad}})), "--dry-run"]),
            "config key config_seeds.sp_half must be a number of training seeds in [1, 3]")
    one_line_error(capsys, lambda: experiments.main(["--config", str(write(
        tmp_path / "bad.yaml", {**more, "config_seeds": {"sp_hlf": 1}})), "--dry-run"]),
        "config key config_seeds.sp_hlf is not known; did you mean 'sp_half'?")


def test_a_label_retrained_on_fresh_seeds_reuses_every_other_run(tmp_path, capsys):
    """Issue 40: once a choice has been made on a label's training seeds (its config
    changed after runs on them), it trains again on fresh seeds listed in
    ``config_seeds``, with best-response seeds of their own, while every other label's runs
    in the same folder are kept; the final report reads the listed seeds."""
    out = tmp_path / "runs"
    out.mkdir()
    (out / "experiments.yaml").write_text(yaml.safe_dump(experiments.load_config(write(tmp_path / "first.yaml", SMALL))
                                                         .to_dict(), sort_keys=False))
    fresh = {**SMALL, "config_seeds": {"sp": [26, 27]},
             "exploit": {**SMALL["exploit"], "br_seeds": {21: [50, 51], 22: [50, 51], 23: [50, 51], 26: [60],
                                                          27: [61]},
                         "one_seed_br_seeds": {21: [50, 51], 26: [62]}}}
    cfg = experiments.load_config(write(tmp_path / "fresh.yaml", fresh))
    assert cfg.seeds_of("sp") == (26, 27) and cfg.seeds_of("dqn") == (21, 22, 23)
    assert [it.name for it in experiments.plan(cfg, out, "sp")] == [
        "train/sp/seed_26", "train/sp/seed_27", "exploit/sp/seed_26/dqn/br_60", "exploit/sp/seed_26/ppo/br_62",
        "exploit/sp/seed_27/dqn/br_61"]
    assert "exploit/dqn/seed_21/ppo/br_50" in [it.name for it in experiments.plan(cfg, out, "dqn")]
    capsys.readouterr()
    assert experiments.main(["--config", str(tmp_path / "fresh.yaml"), "--out", str(out), "--dry-run"]) == 0
    assert "sp now trains on training seeds [26, 27] (was [21, 22, 23])" in capsys.readouterr().out
    with pytest.raises(final.FinalReportError, match="5 run"):  # dqn's three and sp's two, none trained here
        final.units(cfg.to_dict(), out)
    moved = {**fresh, "exploit": {**fresh["exploit"], "br_seeds": {**fresh["exploit"]["br_seeds"], 21: [52, 53]}}}
    one_line_error(capsys, lambda: experiments.main(["--config", str(write(tmp_path / "moved.yaml", moved)),
                                                     "--out", str(out), "--dry-run"]),
                   "holds experiments of another config", "exploit")
    for seeds, words in (([26, 26], "config key config_seeds.sp repeats a seed"),
                         ([26, 0], "config_seeds.sp: seed 0 was used to tune")):
        one_line_error(capsys, lambda: experiments.main(["--config", str(write(
            tmp_path / "bad.yaml", {**fresh, "config_seeds": {"sp": seeds}})), "--dry-run"]), words)
    no_br = {**fresh, "exploit": {**fresh["exploit"], "br_seeds": {21: [50], 22: [50], 23: [50], 26: [60]}}}
    one_line_error(capsys, lambda: experiments.main(["--config", str(write(tmp_path / "nobr.yaml", no_br)),
                                                     "--dry-run"]),
                   "exploit.br_seeds names no best-response seeds for training seed(s) [27]")
    no_one = {**fresh, "exploit": {**fresh["exploit"], "one_seed_br_seeds": {21: [50, 51]}}}
    one_line_error(capsys, lambda: experiments.main(["--config", str(write(tmp_path / "noone.yaml", no_one)),
                                                     "--dry-run"]),
                   "exploit.one_seed_br_seeds names no best-response seeds for training seed(s) [26]")


@pytest.mark.slow
def test_a_cut_training_resumes_and_a_best_response_is_recorded(tmp_path, capsys):
    """Real tiny runs: a run cut after one chunk resumes through the trainer's --resume,
    then one best response to it is trained and recorded.  Quick twin:
    test_resume_skips_finished_items_and_resumes_cut_runs."""
    from training.train import run_training

    small = {**SMALL, "training_seeds": [21], "configs": {"dqn": "dqn_cpu.yaml"}, "set": {"dqn": TINY_DQN},
             "exploit": {**SMALL["exploit"], "configs": ["dqn"], "one_seed_families": [], "br_seeds": [50]}}
    cfg_path = write(tmp_path / "exp.yaml", small)
    cfg, out = experiments.load_config(cfg_path), tmp_path / "runs"
    first = run_training(experiments.training_config(cfg, "dqn", 21), experiments.run_dir(out, "dqn", 21), use_wandb=False, quiet=True,
                         stop_after=1)
    assert first["chunks_done"] == 1
    assert [it.state for it in experiments.plan(cfg, out, "train")] == ["cut"]
    assert experiments.main(["--config", str(cfg_path), "--out", str(out), "--no-wandb", "--quiet"]) == 0
    summary = json.loads((experiments.run_dir(out, "dqn", 21) / "summary.json").read_text())
    assert summary["chunks_done"] == 2 and len(summary["history"]) == 1  # only the second chunk ran here
    rec = json.loads(experiments.exploit_file(out, "dqn", 21, "dqn", 50).read_text())
    assert rec["games"] == 8 and rec["seed"] == 50 and rec["family"] == "dqn"
    assert [it.state for it in experiments.plan(cfg, out)] == ["done", "done"]
    capsys.readouterr()
    assert experiments.main(["--config", str(cfg_path), "--out", str(out), "--no-wandb", "--quiet"]) == 0
    assert "left: 0 items" in capsys.readouterr().out


# ------------------------------------------------------------------ the final report
def fin_of(units: dict, pairs, games: int = 20_000) -> dict:
    """A final section with ``units`` (label -> its training seeds' win rates) and ``pairs`` ranked."""
    configs = {label: {"units": [{"unit": f"{label}/seed_{i}", "win_rate": w, "games": games}
                                 for i, w in enumerate(ws)], "training_seeds": len(ws)} for label, ws in units.items()}
    return {"configs": configs, "rankings": [{"kind": "pool", "a": a, "b": b, "games": games, "seeds": [100]}
                                             for a, b in pairs], "exploit": {}}


def test_rankings_say_beats_only_where_the_few_units_test_rejects():
    """Issue 41: "beats" from Welch's t on the training-seed units, Holm over the report."""
    fin = fin_of({"strong": [0.71, 0.70, 0.72], "weak": [0.50, 0.52, 0.49], "close": [0.70, 0.63, 0.68],
                  "fixed": [0.60]}, [("strong", "weak"), ("strong", "close"), ("weak", "strong"), ("strong", "fixed")])
    beats, close, loses, fixed = final.rank(fin)
    assert beats["verdict"] == "`strong` beats `weak`" and beats["ci95_low"] > 0 and beats["units_a"] == 3
    # issue 41's "selfplay_cpu beats dqn_cpu" (0.057 over 3 seeds a side): the bootstrap said beats, Welch does not
    assert close["verdict"] == "no significant difference between `strong` and `close`" and close["p_value"] > 0.05
    assert loses["verdict"] == "`strong` beats `weak`"
    assert fixed["units_b"] == 1 and fixed["verdict"] == "`strong` beats `fixed`"
    assert all(r["detectable"] > 0.1 for r in (beats, close, loses))  # three seeds a side: only large effects
    # Holm: a p-value that passes alone does not pass among many comparisons
    alone = final.rank(fin_of({"x": [0.62, 0.60, 0.61], "y": [0.58, 0.57, 0.585]}, [("x", "y")]))
    many = final.rank(fin_of({"x": [0.62, 0.60, 0.61], "y": [0.58, 0.57, 0.585]}, [("x", "y")] * 6))
    assert alone[0]["verdict"].endswith("beats `y`") and many[0]["verdict"].startswith("no significant")
    # a head-to-head pair of an earlier report kept no per-unit figures: withdrawn, p = 1 in Holm
    fin["rankings"].append({"kind": "head_to_head", "a": "strong", "b": "weak", "games": 1000, "seeds": [100]})
    assert final.rank(fin)[-1]["verdict"].startswith("withdrawn")


def test_less_exploitable_only_where_the_intervals_over_training_seeds_do_not_overlap():
    """The final report's exploitability verdicts (its criterion): from the `dqn` family's
    runs, best-response seeds averaged within each training seed and the interval over
    training seeds (issue 41: not over the 9 nested runs as if independent)."""
    from evals.exploit import summarize

    def runs(rates):
        return {"dqn": [{"win_rate": r, "seed": 150 + i % 3, "policy": f"p{i // 3}", "training_seed": 21 + i // 3,
                         "ci95_low": r - 0.03, "ci95_high": r + 0.03, "games": 1000, "train_seconds": 1.0,
                         "curve": [0.1, r], "config": {"num_players": 4}} for i, r in enumerate(rates)]}

    rng = np.random.default_rng(0)
    low = summarize("low", runs(0.30 + 0.01 * rng.standard_normal(9)))
    high = summarize("high", runs(0.60 + 0.01 * rng.standard_normal(9)))
    noisy = summarize("noisy", runs([0.2, 0.25, 0.3, 0.45, 0.5, 0.55, 0.65, 0.7, 0.75]))  # seeds 0.25, 0.5, 0.7: wide
    one = summarize("one", runs([0.9]))
    # nine runs that differ only between training seeds: an interval over 9 runs would be too narrow
    nested = summarize("nested", runs([0.40, 0.40, 0.40, 0.50, 0.50, 0.50, 0.60, 0.60, 0.60]))
    o = final.over_runs(nested["families"]["dqn"])
    assert (o["runs"], o["training_seeds"], o["max"]) == (9, 3, 0.60)
    assert o["ci95_high"] - o["ci95_low"] > 0.4  # t(2) over 3 seeds (0.50); t(8) over 9 runs would say 0.13
    exploit = {"low": low, "high": high, "noisy": noisy, "one": one, "nested": nested}
    fin = {"exploit": exploit, "rankings": [{"a": a, "b": b} for a, b in (
        ("low", "high"), ("high", "low"), ("noisy", "high"), ("low", "one"), ("low", "nobody"), ("low", "high"))]}
    comps = final.exploit_comparisons(fin)
    assert [c["verdict"] for c in comps] == [
        "`low` is less exploitable than `high`", "`low` is less exploitable than `high`",
        "no significant difference in exploitability between `noisy` and `high`"]  # one run: no interval
    assert comps[0]["a_runs"] == 9 and comps[0]["a_training_seeds"] == 3
    text = "\n".join(final._exploit_section(fin))
    assert "**`low` is less exploitable than `high`**" in text and "`one` dqn (best-response seed 150): 0.100 -> 0.900" in text
    assert "dqn: one run, 0.900" in text and "maximum 0.900 of 1 runs" in text and "[0.9" not in text


def test_a_results_file_without_a_criterion_line_is_refused():
    with pytest.raises(final.FinalReportError, match="Criterion: <full commit hash>"):
        final.check_results("# Results\n\nselfplay beats dqn\n")
    with pytest.raises(final.FinalReportError):
        final.check_results("Criterion: abc123\n")  # not a full commit hash
    text = f"# Results\n\nCriterion: {'a' * 40}\n"
    assert final.check_results(text) == text


def head_commit() -> str:
    commit = S.git("rev-parse", "HEAD")
    if not commit:
        pytest.skip("not a git checkout: no commit to name as the criterion")
    return commit


def fake_runs(root: Path, seeds=(21, 22)) -> Path:
    """Run directories as evals.experiments leaves them, each run the reference DQN export:
    `ref` and `twin` are equal policies, `random` a baseline far below them."""
    runs = root / "runs"
    exp = {"out": str(runs), "training_seeds": list(seeds), "configs": {"ref": "x", "twin": "x"},
           "report": {"condition": "aggressive_heavy", "games": 150, "head_to_head_games": 20,
                      "baselines": {"random": "random"}, "pairs": [["ref", "random"], ["ref", "twin"]],
                      "head_to_head": []}}
    for label in exp["configs"]:
        for s in seeds:
            fake_run(runs / "train" / label / f"seed_{s}", 2)
    write(runs / "experiments.yaml", exp)
    (runs / "exploit.json").write_text(json.dumps({"ref": {"missing": ["exploit/ref/seed_21/dqn/br_150"]}}))
    return runs


MICRO = {"policies": {"random": "random", "honest": "honest"}, "conditions": ["aggressive_heavy"], "seeds": [7],
         "games": 6, "search_games": 0, "cross_play_games": 0, "mixed_games": 0, "player_count_games": 0,
         "position_games": 0, "advisor_games": 0, "scenarios": False, "batch": 8}


def final_args(tmp_path, runs, *extra):
    cfg = write(tmp_path / "eval.yaml", MICRO)
    return ["--config", str(cfg), "--final", "--runs", str(runs), "--out", str(tmp_path / "out"),
            "--results", str(tmp_path / "results.md"), "--no-wandb", "--quiet", "--boot", "300", *extra]


def test_final_refuses_before_any_work(tmp_path, capsys, monkeypatch, tmp_ledger):
    from evals.report.__main__ import main

    runs = fake_runs(tmp_path)
    monkeypatch.delenv(S.CRITERION_ENV, raising=False)
    one_line_error(capsys, lambda: main(final_args(tmp_path, runs)), "--final needs COUPJAX_CRITERION")
    monkeypatch.setenv(S.CRITERION_ENV, head_commit())
    one_line_error(capsys, lambda: main(final_args(tmp_path, runs, "--seeds", "7")), "held-out seeds only", "got 7")
    shutil.rmtree(runs / "train" / "twin" / "seed_22" / "export")
    one_line_error(capsys, lambda: main(final_args(tmp_path, runs, "--seeds", "100")), "1 run(s) are missing",
                   "twin/seed_22")
    one_line_error(capsys, lambda: main(final_args(tmp_path, tmp_path / "none", "--seeds", "100")),
                   "holds no experiments.yaml")
    shutil.copytree(runs / "train" / "ref" / "seed_22" / "export", runs / "train" / "twin" / "seed_22" / "export")
    one_line_error(capsys, lambda: main([*final_args(tmp_path, runs, "--seeds", "100"), "--boot", "30"]),
                   "30 bootstrap resamples cannot show any of 2 comparisons")
    assert not tmp_ledger.exists() and not (tmp_path / "results.md").exists()


def test_final_sections_from_planted_tables(tmp_path, monkeypatch):
    """The final stage on planted per-table results (no play): each config's mean over its
    training seeds beside the per-seed figures, "beats" for the planted difference, "no
    significant difference" for equal policies, the criterion line."""
    from evals.lib import paired
    from evals.report.config import config_from_dict

    runs = fake_runs(tmp_path, seeds=(21, 22, 23))
    exp = final.read_experiments(runs)
    rng = np.random.default_rng(1)
    u = rng.random((1, 150))
    planted = {"random": (u < 0.05), "twin": (u < 0.5)}

    def fake_play(env, units_a, units_b, games, seeds, opponents, batch):
        assert games == 150 and seeds == [100] and opponents == "aggressive_heavy"
        wins = np.stack([planted.get(x, u < 0.5 - 0.02 * ("seed_22" in x)) for x in units_a]).astype(float)
        return {"wins": (wins, wins[:1]), "placement": (4 - 3 * wins, 4 - 3 * wins[:1])}

    monkeypatch.setattr(paired, "play_paired", fake_play)
    fin = final.play_final(exp, runs, [100], 4, n_boot=300)
    ref = fin["configs"]["ref"]
    assert [Path(x["unit"]).name for x in ref["units"]] == ["seed_21", "seed_22", "seed_23"]
    assert ref["win_rate"] == pytest.approx(np.mean([x["win_rate"] for x in ref["units"]]))
    assert ref["ci95_low"] < ref["win_rate"] < ref["ci95_high"]  # two different training seeds: an interval
    verdicts = [r["verdict"] for r in fin["rankings"]]
    assert verdicts == ["`ref` beats `random`", "no significant difference between `ref` and `twin`"]
    assert "configs_by_condition" not in fin  # one condition: the report.json of before report.conditions
    cfg = config_from_dict({**MICRO, "seeds": [7]})
    rep = {"final": fin, "policies": {}, "search_policies": {}, "advisor": {}, "meta": {"git_commit": "x"}}
    from evals.report.figures import draw_final

    made = draw_final(fin, tmp_path / "results-figures")
    assert made == {"configs": "configs.png"} and (tmp_path / "results-figures" / "configs.png").stat().st_size
    text = final.render(rep, cfg, {"path": "docs/experiments/c.md", "commit": "b" * 40},
                        {k: f"results-figures/{v}" for k, v in made.items()}, ledger=[])
    assert "![win rate per training seed and config](results-figures/configs.png)" in text.splitlines()
    assert f"Criterion: {'b' * 40}" in text.splitlines() and "**`ref` beats `random`**" in text
    assert "seed_21: " in text and "**No significant difference between `ref` and `twin`**" in text
    with pytest.raises(final.FinalReportError, match="resamples"):
        final.play_final(exp, runs, [100], 4, n_boot=30)  # too few to reject anything after Holm


def test_head_to_head_leaves_bs_first_seed_out_of_its_side(tmp_path, monkeypatch):
    """Issue 41: B's first training seed fills the three other seats, so on B's side it
    would play three copies of itself (1/4 by symmetry); B's side is its other seeds, each
    unit's figure is kept and the pair is ranked on them."""
    from evals.lib import paired

    runs = fake_runs(tmp_path, seeds=(21, 22, 23))
    exp = final.read_experiments(runs)
    exp["report"]["pairs"], exp["report"]["head_to_head"] = [], [["ref", "twin"]]
    seen = {}

    def fake_play(env, units_a, units_b, games, seeds, opponents, batch):
        wins = np.full((len(units_a), len(seeds), games), 0.5)
        return {"wins": (wins, wins[:1]), "placement": (wins, wins[:1])}

    def fake_compare(env, spec_a, spec_b, games, seeds, opponents=None, **kwargs):
        seen.update(a=spec_a.split(","), b=spec_b.split(","), opponents=opponents)
        return {"win_rate_a": 0.3, "win_rate_b": 0.25,
                "per_unit": {"a": {u: 0.30 + 0.01 * i for i, u in enumerate(spec_a.split(","))},
                             "b": {u: 0.25 + 0.01 * i for i, u in enumerate(spec_b.split(","))}}}

    monkeypatch.setattr(paired, "play_paired", fake_play)
    monkeypatch.setattr(paired, "compare", fake_compare)
    fin = final.play_final(exp, runs, [100], 4, n_boot=300)
    twin = [str(runs / "train" / "twin" / f"seed_{s}") for s in (21, 22, 23)]
    assert seen["opponents"] == twin[0] and seen["b"] == twin[1:] and len(seen["a"]) == 3
    (r,) = fin["rankings"]
    assert r["kind"] == "head_to_head" and (r["units_a"], r["units_b"]) == (3, 2) and r["test"] == "welch"


# ------------------------------------------------------------------ the pool in several conditions (issue 40)
BOTH = ["aggressive_heavy", "honest_heavy"]


def test_report_conditions_is_a_list_of_conditions(tmp_path, capsys):
    """``report.conditions`` lists conditions for the pool (issue 40: "in the pool of both
    conditions"); a list of one is the one ``condition``, so such a config is saved and
    played as before; a mistake is one line naming the key."""
    both = experiments.load_config(write(tmp_path / "b.yaml", {**SMALL, "report": {**SMALL["report"],
                                                                                  "conditions": BOTH}}))
    assert both.report["conditions"] == BOTH and "condition" not in both.report
    assert final.report_conditions(both.report) == BOTH
    one = experiments.load_config(write(tmp_path / "o.yaml", {**SMALL, "report": {**SMALL["report"],
                                                                                 "conditions": ["honest_heavy"]}}))
    assert one.report["condition"] == "honest_heavy" and "conditions" not in one.report
    plain = experiments.load_config(write(tmp_path / "p.yaml", SMALL))
    assert final.report_conditions(plain.report) == ["aggressive_heavy"] and "conditions" not in plain.report
    for bad, words in (({"conditions": ["aggressive_heavy", "honest_heavvy"]},
                        ("config key report.conditions must list different conditions of", "'honest_heavvy'")),
                       ({"conditions": ["honest_heavy", "honest_heavy"]}, ("config key report.conditions",)),
                       ({"conditions": []}, ("config key report.conditions",)),
                       ({"conditions": "honest_heavy"}, ("config key report.conditions must be a list",)),
                       ({"condition": "honest_heavy", "conditions": BOTH},
                        ("report.condition and report.conditions: give one",))):
        cfg = write(tmp_path / "bad.yaml", {**SMALL, "report": {**SMALL["report"], **bad}})
        one_line_error(capsys, lambda: experiments.main(["--config", str(cfg), "--dry-run"]), experiments.PROG,
                       *words)


def test_final_ranks_each_pool_pair_in_each_condition(tmp_path, monkeypatch):
    """With ``report.conditions`` the seat table is played once per condition (the same
    held-out seeds), each pool pair is ranked once per condition on that condition's
    tables, Holm (and the detectable effect, and the resamples check) counts every
    comparison, pairs x conditions + head to head, and docs/results.md gives a table per
    condition and names the condition in each pool sentence."""
    from evals.lib import paired
    from evals.lib.stats import holm
    from evals.report.config import config_from_dict
    from evals.report.figures import draw_final

    runs = fake_runs(tmp_path, seeds=(21, 22, 23))
    exp = final.read_experiments(runs)
    del exp["report"]["condition"]
    exp["report"].update(conditions=BOTH, head_to_head=[["ref", "twin"]])
    u = np.random.default_rng(1).random((1, 150))
    seen = []

    def fake_play(env, units_a, units_b, games, seeds, opponents, batch):
        # `twin` equals `ref` at aggressive_heavy tables and is far weaker at honest_heavy ones
        seen.append(opponents)
        twin = 0.2 if opponents == "honest_heavy" else 0.5

        def rate(x):
            return (0.05 if x == "random" else twin - 0.02 * ("seed_23" in x) if "/twin/" in x
                    else 0.5 - 0.02 * ("seed_22" in x))

        wins = np.stack([u < rate(x) for x in units_a]).astype(float)
        return {"wins": (wins, wins[:1]), "placement": (4 - 3 * wins, 4 - 3 * wins[:1])}

    def fake_compare(env, spec_a, spec_b, games, seeds, opponents=None, **kwargs):
        return {"win_rate_a": 0.3, "win_rate_b": 0.25,
                "per_unit": {"a": {x: 0.30 + 0.01 * i for i, x in enumerate(spec_a.split(","))},
                             "b": {x: 0.25 + 0.01 * i for i, x in enumerate(spec_b.split(","))}}}

    monkeypatch.setattr(paired, "play_paired", fake_play)
    monkeypatch.setattr(paired, "compare", fake_compare)
    fin = final.play_final(exp, runs, [7], 4, n_boot=300)  # planted tables: no game, no held-out seed
    assert seen == BOTH  # one seat table per condition, nothing else in the pool
    assert list(fin["configs_by_condition"]) == BOTH and fin["condition"] == BOTH[0]
    assert fin["configs"] == fin["configs_by_condition"]["aggressive_heavy"]
    honest = fin["configs_by_condition"]["honest_heavy"]
    assert honest["twin"]["win_rate"] == pytest.approx(float(np.mean(u < 0.2) * 2 + np.mean(u < 0.18)) / 3)
    ranks = fin["rankings"]
    assert [(r["kind"], r["a"], r["b"], r["opponents"] if r["kind"] == "pool" else None) for r in ranks] == [
        ("pool", "ref", "random", "aggressive_heavy"), ("pool", "ref", "random", "honest_heavy"),
        ("pool", "ref", "twin", "aggressive_heavy"), ("pool", "ref", "twin", "honest_heavy"),
        ("head_to_head", "ref", "twin", None)]
    assert [r["verdict"] for r in ranks[2:4]] == ["no significant difference between `ref` and `twin`",
                                                  "`ref` beats `twin`"]  # each on its condition's tables
    assert [r["p_holm"] for r in ranks] == pytest.approx(holm([r["p_value"] for r in ranks])["adjusted"])
    assert ranks[3]["p_holm"] == pytest.approx(5 * ranks[3]["p_value"])  # the smallest p, times all 5 comparisons
    p_mean = (honest["ref"]["win_rate"] + honest["twin"]["win_rate"]) / 2  # Bonferroni over all 5 comparisons
    assert ranks[3]["detectable"] == pytest.approx(final.detectable(3, 3, 150, p_mean, final.between_seed_sd(fin),
                                                                    5))
    with pytest.raises(final.FinalReportError, match="any of 5 comparisons"):
        final.check_boot(exp, 30)
    assert draw_final(fin, tmp_path / "figs") == {"configs": "configs.png"}
    one = tmp_path / "one"
    draw_final({k: v for k, v in fin.items() if k != "configs_by_condition"}, one)
    both, single = (mpimg.imread(d / "configs.png").shape for d in (tmp_path / "figs", one))
    assert both[1] > 1.8 * single[1] and both[0] == single[0]  # a panel per condition, side by side
    rep = {"final": fin, "policies": {}, "search_policies": {}, "advisor": {}, "meta": {"git_commit": "x"}}
    text = final.render(rep, config_from_dict({**MICRO, "seeds": [7]}), {"path": "c.md", "commit": "b" * 40},
                        {}, ledger=[])
    lines = text.splitlines()
    assert "In `aggressive_heavy` tables:" in lines and "In `honest_heavy` tables:" in lines
    assert "the other seats drawn from each condition in turn, one table per condition: `aggressive_heavy`, " \
           "`honest_heavy`)" in text
    assert "Holm-corrected over the 5 comparisons of this report (each pool pair once in each of the 2 " \
           "conditions)" in text
    assert "**`ref` beats `twin`** in one seat of `honest_heavy` tables:" in text
    assert ("**No significant difference between `ref` and `twin`** in one seat of `aggressive_heavy` tables:"
            in text)
    assert sum("in one seat of `" in x for x in lines) == 4 and sum("head to head (each" in x for x in lines) == 1


@pytest.mark.slow
def test_final_report_from_fake_runs(tmp_path, monkeypatch, tmp_ledger):
    """On held-out seed 100 (recorded in the tmp ledger): the planted difference reads
    "beats", the equal policies "no significant difference", and the file names its
    criterion; nothing is written under docs/.  Quick twin:
    test_final_sections_from_planted_tables."""
    from evals.report.__main__ import main

    commit = head_commit()
    monkeypatch.setenv(S.CRITERION_ENV, commit)
    runs = fake_runs(tmp_path)
    before = (ROOT / "docs" / "results.md").read_text() if (ROOT / "docs" / "results.md").exists() else None
    assert main(final_args(tmp_path, runs, "--seeds", "100")) == 0
    text = (tmp_path / "results.md").read_text()
    assert f"Criterion: {commit}" in text.splitlines()
    assert "**`ref` beats `random`**" in text
    assert "**No significant difference between `ref` and `twin`**" in text and "`ref` minus `twin` +0.000" in text
    rep = json.loads((tmp_path / "out" / "report.json").read_text())
    fin = rep["final"]
    assert fin["seeds"] == [100]
    ref = fin["configs"]["ref"]
    assert ref["training_seeds"] == 2 and len(ref["units"]) == 2 and ref["units"][0]["games"] == 150
    assert ref["win_rate"] == pytest.approx(np.mean([u["win_rate"] for u in ref["units"]]))
    assert "seed_21:" in text and "seed_22:" in text  # the per-training-seed figures beside the mean
    assert "1 planned best response(s) missing" in text
    assert {e["seed"] for e in S.read_ledger(tmp_ledger)} == {100}
    after = (ROOT / "docs" / "results.md").read_text() if (ROOT / "docs" / "results.md").exists() else None
    assert after == before


# ------------------------------------------------------------------ the recipe: compute curve and targets
RECIPE = {"curve": {"recipe": {"budgets": ["dqn", "sp"], "baseline": "random"}},
          "targets": {"sp": {"head_to_head": {"random": 0.4, "dqn": 0.35, "expected": 0.35}, "dqn_mean_at_most": 0.45,
                             "max_at_most": 0.6, "scenarios_at_least": 28, "train_minutes_at_most": 30}}}


def test_curve_and_targets_are_optional_report_keys(tmp_path):
    """Without them the report section is what it was; with them (the shipped config's)
    they are kept, the maximum's families defaulting to issue 40's."""
    plain = experiments.load_config(write(tmp_path / "plain.yaml", SMALL))
    assert set(plain.report) == {"condition", "games", "baselines", "pairs", "head_to_head_games", "head_to_head"}
    shipped = experiments.load_config(ROOT / "configs" / "experiments.yaml")  # issue 40's, as its criterion reads
    assert shipped.report["targets"]["recipe_cpu"]["scenarios_at_least"] == 28
    assert shipped.report["conditions"] == ["aggressive_heavy", "honest_heavy"]
    cfg = experiments.load_config(write(tmp_path / "r.yaml", {**SMALL, "report": {**SMALL["report"], **RECIPE}}))
    assert cfg.report["curve"] == RECIPE["curve"]
    assert cfg.report["targets"]["sp"] == {**RECIPE["targets"]["sp"], "max_families": ["dqn", "dqn4x", "ppo"]}
    assert cfg.to_dict()["report"]["targets"]["sp"]["max_at_most"] == 0.6  # saved for the final stage
    slow = {"sp": {"head_to_head": {"random": 0.4, "expected": {"at_least": 0.35, "games": 50}}}}
    cfg = experiments.load_config(write(tmp_path / "s.yaml", {**SMALL, "report": {**SMALL["report"], "targets": slow}}))
    assert cfg.report["targets"]["sp"] == {"head_to_head": {"random": 0.4, "expected": 0.35},
                                           "head_to_head_games": {"expected": 50}}
    trios = {"sp": {"head_to_head": {"dqn": {"at_least": 0.35, "opponent_seeds": "all"},
                                     "random": {"at_least": 0.4, "opponent_seeds": "first"}}}}
    cfg = experiments.load_config(write(tmp_path / "t.yaml", {**SMALL, "report": {**SMALL["report"], "targets": trios}}))
    assert cfg.report["targets"]["sp"] == {"head_to_head": {"dqn": 0.35, "random": 0.4},
                                           "head_to_head_opponent_seeds": {"dqn": "all"}}


@pytest.mark.parametrize("report, words", [
    ({"curve": {"r": ["dqn", "sp"]}}, ("report.curve.r must be a mapping",)),
    ({"curve": {"r": {"budgets": ["dqn"], "baseline": "random"}}}, ("report.curve.r.budgets must list two or more",)),
    ({"curve": {"r": {"budgets": ["dqn", "nobody"], "baseline": "random"}}}, ("report.curve.r.budgets",)),
    ({"curve": {"r": {"budgets": ["dqn", "sp"], "baseline": "sp"}}}, ("report.curve.r.baseline must be",)),
    ({"curve": {"r": {"budgets": ["dqn", "sp"], "baselin": "random"}}}, ("report.curve.r.baselin is not known",
                                                                          "did you mean 'baseline'")),
    ({"targets": {"nobody": {"max_at_most": 0.6}}}, ("report.targets.nobody: 'nobody' is not a label",)),
    ({"targets": {"sp": {"head_to_head": {"nonsense_policy": 0.4}}}}, ("report.targets.sp.head_to_head: "
                                                                       "'nonsense_policy' is neither",)),
    ({"targets": {"sp": {"head_to_head": {"random": 40}}}}, ("report.targets.sp.head_to_head.random must be a win "
                                                             "rate in (0, 1], got 40",)),
    ({"targets": {"sp": {"head_to_head": {"expected": {"at_least": 0.35, "games": 0}}}}},
     ("report.targets.sp.head_to_head.expected.games must be a positive integer",)),
    ({"targets": {"sp": {"head_to_head": {"expected": {"at_least": 0.35, "game": 50}}}}},
     ("report.targets.sp.head_to_head.expected.game is not known", "'games'")),
    ({"targets": {"sp": {"head_to_head": {"expected": {"games": 50}}}}},
     ("report.targets.sp.head_to_head.expected must be a win rate in (0, 1], got None",)),
    ({"targets": {"sp": {"head_to_head": {"dqn": {"at_least": 0.35, "opponent_seeds": "every"}}}}},
     ("report.targets.sp.head_to_head.dqn.opponent_seeds must be one of first, all, got 'every'",)),
    ({"targets": {"sp": {"head_to_head": {"random": {"at_least": 0.35, "opponent_seeds": "all"}}}}},
     ("report.targets.sp.head_to_head.random.opponent_seeds: all needs a label of configs",)),
    ({"targets": {"sp": {"scenarios_at_least": 0}}}, ("report.targets.sp.scenarios_at_least must be a positive",)),
    ({"targets": {"sp": {"max_families": ["dqn"]}}}, ("report.targets.sp.max_families needs",)),
    ({"targets": {"sp": {"max_at_most": 0.6, "max_families": ["dqm"]}}}, ("unknown best-response family 'dqm'",)),
    ({"targets": {"sp": {"train_minute_at_most": 30}}}, ("report.targets.sp.train_minute_at_most is not known",
                                                         "'train_minutes_at_most'")),
    ({"targets": {"sp": {}}}, ("report.targets.sp names no check",)),
])
def test_curve_and_target_mistakes_are_one_line(tmp_path, capsys, report, words):
    cfg = write(tmp_path / "exp.yaml", {**SMALL, "report": {**SMALL["report"], **report}})
    one_line_error(capsys, lambda: experiments.main(["--config", str(cfg), "--dry-run"]), experiments.PROG, *words)


def recipe_fin() -> dict:
    """A final section with a compute curve over three budgets (the largest not measured
    by best responses) and a target checked against planted figures."""
    fin = fin_of({"q": [0.25, 0.26, 0.255], "h": [0.36, 0.37, 0.35], "full": [0.41, 0.40, 0.42],
                  "belief_ev": [0.33]}, [("full", "belief_ev")], games=4000)
    fin.update(condition="aggressive_heavy", games=4000, seeds=[100], training_seeds=[21, 22, 23], alpha=0.05)
    for c in fin["configs"].values():  # the figures `summarize_units` gives a config and its units
        c.update(win_rate=float(np.mean([u["win_rate"] for u in c["units"]])), ci95_low=0.0, ci95_high=1.0)
        for u in c["units"]:
            u.update(ci95_low=u["win_rate"] - 0.01, ci95_high=u["win_rate"] + 0.01)
    fin["rankings"] = final.rank(fin)

    def runs(label, rates, family="dqn", seeds=(150, 151)):
        return [{"win_rate": r, "seed": seeds[i % len(seeds)], "policy": f"{label}/seed_{i // len(seeds)}",
                 "training_seed": 21 + i // len(seeds), "family": family} for i, r in enumerate(rates)]

    fin["exploit"] = {"q": {"families": {"dqn": runs("q", [0.70, 0.72, 0.68, 0.69, 0.71, 0.70])}},
                      "h": {"families": {"dqn": runs("h", [0.55, 0.57, 0.52, 0.56, 0.54, 0.53])}},
                      "full": {"families": {"dqn": runs("full", [0.40, 0.42, 0.44, 0.41, 0.43, 0.45]),
                                            "ppo": runs("full", [0.65], "ppo", (150,))}}}
    fin["training"] = {label: [{"unit": f"{label}/seed_{i}", "wall_seconds": 60.0 * m, "env_steps": 10**6,
                                "env_steps_per_s": 20_000.0 + 1000 * i} for i, m in enumerate(ms)]
                       for label, ms in (("q", [5, 6, 7]), ("h", [11, 12, 13]), ("full", [24, 29, 31]))}
    fin["curve"] = {"recipe": {"budgets": ["q", "h", "full"], "baseline": "belief_ev"}}
    fin["targets"] = {"full": {
        "checks": {"head_to_head": {"belief_ev": 0.40, "expected": 0.35}, "dqn_mean_at_most": 0.45,
                   "max_at_most": 0.60, "max_families": ["dqn", "dqn4x", "ppo"], "scenarios_at_least": 28,
                   "train_minutes_at_most": 30.0},
        "head_to_head": {"belief_ev": {"opponents": "belief_ev", "games": 1000, "seeds": [100],
                                       "per_unit": {"full/seed_0": 0.42, "full/seed_1": 0.41, "full/seed_2": 0.43}},
                         "expected": {"opponents": "expected", "games": 1000, "seeds": [100],
                                      "per_unit": {"full/seed_0": 0.20, "full/seed_1": 0.45, "full/seed_2": 0.46}}},
        "scenarios": {f"full/seed_{i}": {"hits": h, "scenarios": 31, "missed": []} for i, h in enumerate((29, 28, 30))},
    }}
    return fin


def test_curve_and_targets_render_from_the_json(tmp_path):
    """Issue 40's compute curve (training minutes, env steps/s, the paired difference with
    the baseline, the dqn best response or "not measured") and its targets (met / not met
    with the figure), with the curve's figure; each derived from the JSON's figures."""
    from evals.report.config import config_from_dict
    from evals.report.figures import draw_final

    fin = recipe_fin()
    q, h, full = recipe.curve_rows(fin, "recipe")
    assert (q["minutes"], q["minutes_min"], q["minutes_max"]) == pytest.approx((6.0, 5.0, 7.0))
    assert q["env_steps_per_s"] == pytest.approx(21_000.0) and q["dqn"]["training_seeds"] == 3
    assert q["diff"] == pytest.approx(0.255 - 0.33) and q["ci95_high"] < 0 < full["ci95_low"]
    assert h["dqn"]["mean"] == pytest.approx(np.mean([0.55, 0.57, 0.52, 0.56, 0.54, 0.53]))
    del fin["exploit"]["h"]
    assert recipe.curve_rows(fin, "recipe")[1]["dqn"] is None
    checks = {c["check"].split(":")[0].split(" at most")[0]: c for c in recipe.target_checks(fin, "full")}
    assert checks["head to head against three `belief_ev`"]["met"] is True
    weak = checks["head to head against three `expected`"]  # mean 0.37 >= 0.35, but the interval reaches below 1/4
    assert weak["met"] is False and weak["figure"].startswith("0.370 [")
    assert checks["`dqn` best response, mean over training seeds,"]["met"] is True  # 0.425
    top = checks["largest best response of `dqn`, `dqn4x`, `ppo`"]
    assert top["met"] is False and "maximum 0.650 of 7 runs (ppo" in top["figure"]  # above 0.60 before any dqn4x run
    assert top["figure"].endswith("; not measured: dqn4x")
    fin["exploit"]["full"]["families"]["ppo"][0]["win_rate"] = 0.55
    assert recipe.target_checks(fin, "full")[3]["met"] is None  # 0.55 so far, and dqn4x may find more
    fin["exploit"]["full"]["families"]["ppo"][0]["win_rate"] = 0.65
    scen = [c for c in checks.values() if "scenarios" in c["check"]][0]
    assert scen["met"] is True and scen["figure"].startswith("fewest 28 (seed_0: 29; seed_1: 28; seed_2: 30)")
    minutes = checks["training minutes per seed"]
    assert minutes["met"] is False and minutes["figure"].startswith("at most 31.0")  # one seed over 30 is enough
    made = draw_final(fin, tmp_path / "figs")
    assert made["curve"] == "curve.png" and (tmp_path / "figs" / "curve.png").stat().st_size > 10_000
    rep = {"final": fin, "policies": {}, "search_policies": {}, "advisor": {}, "meta": {"git_commit": "x"}}
    text = final.render(rep, config_from_dict({**MICRO, "seeds": [7]}), {"path": "c.md", "commit": "b" * 40},
                        {k: f"results-figures/{v}" for k, v in made.items()}, ledger=[])
    lines = text.splitlines()
    assert "## Strength against compute" in lines and "## Targets" in lines
    assert "![win rate and exploitability against training minutes](results-figures/curve.png)" in lines
    assert "| `q` | 3 | 6.0 [5.0, 7.0] | 21,000 | 0.255 | -0.075 [" in text
    (half,) = [x for x in lines if x.startswith("| `h` | 3 | 12.0 [11.0, 13.0] |")]
    assert half.endswith("| not measured |")
    assert "`full`: 3 of 6 checks met." in lines
    assert "| training minutes per seed at most 30 | at most 31.0 (mean 28.0 over 3 training seeds) | not met |" in lines


def test_the_header_names_each_configs_own_training_seeds():
    """docs/results.md's header lists the report's training seeds and, beside them, those of
    any config trained on others (`config_seeds`: the recipe's fresh seeds), read from its
    units' run directories; a config on the first k default seeds and a fixed policy add
    nothing."""
    def units(*names):
        return {"units": [{"unit": n} for n in names]}

    fin = {"training_seeds": [21, 22, 23], "configs": {
        "selfplay_cpu": units("runs/x/train/selfplay_cpu/seed_21", "runs/x/train/selfplay_cpu/seed_22",
                              "runs/x/train/selfplay_cpu/seed_23"),
        "short": units("runs/x/train/short/seed_21"), "belief_ev": units("belief_ev"),
        "recipe_cpu": units("runs/x/train/recipe_cpu/seed_26", "runs/x/train/recipe_cpu/seed_27")}}
    assert recipe.training_seeds_text(fin) == "training seeds 21, 22, 23 (`recipe_cpu`: 26, 27)"
    del fin["configs"]["recipe_cpu"]
    assert recipe.training_seeds_text(fin) == "training seeds 21, 22, 23"


def test_a_config_without_curve_or_targets_renders_as_before(tmp_path, monkeypatch):
    """The final stage adds nothing to report.json or docs/results.md where the config
    names neither (the shipped config's report, the committed results)."""
    from evals.report.config import config_from_dict
    from evals.report.figures import draw_final

    assert recipe.play_recipe(None, {"head_to_head_games": 10}, {}, [100]) == {}
    fin = recipe_fin()
    plain = {k: v for k, v in fin.items() if k not in ("curve", "targets", "training")}
    assert set(draw_final(plain, tmp_path / "figs")) == {"configs", "exploit"}
    rep = {"final": plain, "policies": {}, "search_policies": {}, "advisor": {}, "meta": {"git_commit": "x"}}
    text = final.render(rep, config_from_dict({**MICRO, "seeds": [7]}), {"path": "c.md", "commit": "b" * 40},
                        {**final.FIGURE_LINKS, "curve": final.CURVE_LINK}, ledger=[])
    assert "## Strength against compute" not in text and "## Targets" not in text and "curve.png" not in text
    # byte for byte: tests/test_docs.py renders the committed report.json (no curve, no targets) again and
    # compares it with the committed docs/results.md, which the code before these keys wrote


def test_targets_play_the_label_against_three_copies_of_each_opponent(tmp_path, monkeypatch):
    """`play_final` with a curve and targets (`play_recipe`): a config opponent is its first
    training seed, a baseline its spec, any other opponent a policy spec; the label's
    training seeds are the tested units; every named config's training cost comes from its
    summary.json; and the whole renders, with the curve's figure."""
    from evals.lib import paired
    from evals.report.config import config_from_dict
    from evals.report.figures import draw_final
    from evals.report.progress import Parts, Silent

    runs = fake_runs(tmp_path, seeds=(21, 22, 23))
    for i, s in enumerate((21, 22, 23)):
        (runs / "train" / "ref" / f"seed_{s}" / "summary.json").write_text(json.dumps(
            {"chunks_done": 2, "wall_seconds": 600.0 + 60 * i, "env_steps": 10**6, "env_steps_per_s": 9000.0}))
    exp = final.read_experiments(runs)
    exp["report"].update(curve={"r": {"budgets": ["twin", "ref"], "baseline": "random"}},
                         targets={"ref": {"head_to_head": {"twin": 0.4, "random": 0.4, "expected": 0.35},
                                          "head_to_head_games": {"expected": 8},  # its own tables, as checked
                                          "scenarios_at_least": 28, "train_minutes_at_most": 11.5}})
    seen = []

    def fake_play(env, units_a, units_b, games, seeds, opponents, batch):
        seen.append((units_a, opponents, games))
        wins = np.stack([np.arange(games) % (2 + i) == 0 for i in range(len(units_a))])[:, None].repeat(len(seeds), 1)
        wins &= not opponents.endswith("twin/seed_22")  # a trio that wins every table, for the mean over trios
        return {"wins": (wins, wins[:len(units_b)]), "placement": (4 - 3 * wins, 4 - 3 * wins[:len(units_b)])}

    monkeypatch.setattr(paired, "play_paired", fake_play)
    monkeypatch.setattr(recipe, "scenario_hits", lambda dirs: {d: {"hits": 30, "scenarios": 31, "missed": []}
                                                              for d in dirs})
    fin = final.play_final(exp, runs, [100], 4, n_boot=300)
    assert list(fin["training"]) == ["twin", "ref"] and fin["curve"] == exp["report"]["curve"]
    assert [c["wall_seconds"] for c in fin["training"]["ref"]] == [600.0, 660.0, 720.0]
    assert fin["training"]["twin"][0]["env_steps_per_s"] is None  # the fake twin's summary does not say
    ref = [str(runs / "train" / "ref" / f"seed_{s}") for s in (21, 22, 23)]
    assert seen[0][1] == "aggressive_heavy"  # the pool first, then one table set per opponent
    assert seen[1:] == [(ref, str(runs / "train" / "twin" / "seed_21"), 20), (ref, "random", 20),
                        (ref, "expected", 8)]
    t = fin["targets"]["ref"]
    assert t["head_to_head"]["random"]["per_unit"] == {ref[0]: 0.5, ref[1]: 0.35, ref[2]: 0.25}
    assert set(t["scenarios"]) == set(ref)
    made = draw_final(fin, tmp_path / "figs")
    rep = {"final": fin, "policies": {}, "search_policies": {}, "advisor": {}, "meta": {"git_commit": "x"}}
    text = final.render(rep, config_from_dict({**MICRO, "seeds": [7]}), {"path": "c.md", "commit": "b" * 40},
                        {k: f"results-figures/{v}" for k, v in made.items()}, ledger=[])
    assert "| `ref` | 3 | 11.0 [10.0, 12.0] | 9,000 |" in text and "(results-figures/curve.png)" in text
    assert "| `twin` | 3 | 0.2 [0.2, 0.2] | - |" in text  # the fake twin: 12 s, no env steps/s
    assert "`ref`: 1 of 5 checks met." in text  # the scenarios; 12 minutes > 11.5; 0.367 < 0.4 (and 0.35 vs 0.25)
    assert "in turn" not in text

    # against each of a config's training seeds in turn: one table set per seed, a unit's mean over them
    twins = [str(runs / "train" / "twin" / f"seed_{s}") for s in (21, 22, 23)]
    exp["report"]["targets"]["ref"]["head_to_head_opponent_seeds"] = {"twin": "all"}
    seen.clear()
    parts = Parts(Silent(), clock=iter(range(100)).__next__)  # each part one tick of a fake clock
    fin = final.play_final(exp, runs, [100], 4, n_boot=300, part=parts)
    assert seen[1:4] == [(ref, t, 20) for t in twins] and seen[4:] == [(ref, "random", 20), (ref, "expected", 8)]
    # meta.json's final_parts: every part timed once, in play order, under the names the stage counts
    assert list(parts.seconds) == final.final_parts(exp, runs) == [
        "pool/aggressive_heavy", *(f"targets/ref/twin/seed_{s}" for s in (21, 22, 23)), "targets/ref/random",
        "targets/ref/expected", "targets/ref/scenarios"]
    assert set(parts.seconds.values()) == {1}
    h = fin["targets"]["ref"]["head_to_head"]["twin"]
    assert h["opponents"] == twins and list(h["per_opponent"]) == twins
    assert h["per_opponent"][twins[0]] == {ref[0]: 0.5, ref[1]: 0.35, ref[2]: 0.25}
    assert h["per_opponent"][twins[1]] == {u: 0.0 for u in ref}
    assert h["per_unit"] == pytest.approx({ref[0]: 1 / 3, ref[1]: 0.7 / 3, ref[2]: 0.5 / 3})
    rep["final"] = fin
    text = final.render(rep, config_from_dict({**MICRO, "seeds": [7]}), {"path": "c.md", "commit": "b" * 40},
                        {k: f"results-figures/{v}" for k, v in made.items()}, ledger=[])
    assert "head to head against three `twin` (each of `twin`'s 3 training seeds in turn)" in text
    assert "a training seed's figure is its mean over them" in text


@pytest.mark.slow
def test_scenario_hits_of_a_network_alone():
    """`scenario_hits` counts the scenarios where the exported network's most likely play is
    sound, as `score_policy` scores the policy called on each decision.  Quick twin:
    test_curve_and_targets_render_from_the_json."""
    from coupjax.env import Env
    from coupjax.policies.spec import resolve_policy
    from evals.report import decision_benchmark

    (hits,) = recipe.scenario_hits([str(REFERENCE)]).values()
    built = decision_benchmark.build_all()
    direct = decision_benchmark.score_policy(resolve_policy(str(REFERENCE), Env(4)), built)
    assert hits["scenarios"] == len(built) == 31
    assert hits["hits"] == sum(s["hit"] for s in direct.values()) and 0 < hits["hits"] < 31
    assert hits["missed"] == [n for n, s in direct.items() if not s["hit"]]
