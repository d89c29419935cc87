"""The evaluation suite on a tiny matrix: the JSON against metrics recomputed by hand from
replayed games and recorded claims, resume without replay, the config's strictness,
the scenarios, and the shared posterior of belief_ev.

The quick suite runs a micro matrix (two scripted policies, the seat tables only: one
compilation of the table runner) and checks its JSON against replayed games and its
resume; the tiny matrix with every stage (advisor, positions, cross-play, scenarios:
several minutes of compilation on a shared 2-core CPU) is ``-m slow``."""
from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml

from coupjax import seat_tables
from coupjax.advice.action_ev import recommend_action
from coupjax.advice.challenge import AdvisorParams, advise_challenge
from coupjax.beliefs.posterior import exact_posterior
from coupjax.env import Env
from coupjax.game import board
from coupjax.game.tables import tables
from coupjax.policies import make_policy
from coupjax.policies.common import bluff_actions
from evals.report import decision_benchmark
from evals.report.__main__ import main
from evals.report.config import EvalConfigError, config_from_dict
from evals.report.play import condition_weights, draw_condition_tables
from evals.report.suite import table_keys
from training.rewards import RewardInputs, shaped

N = 4
TINY = {
    "policies": {"random": "random", "honest": "honest", "bluffer": "bluffer", "belief_ev": "belief_ev"},
    "advised": {"honest+advisor": {"base": "honest", "belief": "exact"}},
    "conditions": ["aggressive_heavy", "honest_heavy"], "seeds": [7, 8], "games": 12, "search_games": 0,
    "cross_play_games": 6, "mixed_games": 10, "player_counts": [3, 4], "player_count_games": 6,
    "position_games": 4, "advisor_games": 12, "scenarios": True, "batch": 32,
}


# the quick suite's matrix: the seat tables of two scripted policies and honest's advice on/off, nothing else
MICRO = {
    "policies": {"random": "random", "honest": "honest"}, "conditions": ["aggressive_heavy"], "seeds": [7],
    "games": 6, "search_games": 0, "cross_play_games": 0, "mixed_games": 0, "player_count_games": 0,
    "position_games": 0, "advisor_games": 0, "scenarios": False, "batch": 8, "advice_bases": ["honest"],
    "advice_games": 6, "reaction_policies": {"honest": "honest"}, "reaction_games": 6,
    "exploit_probes": {"honest": {"policy": "honest", "baseline": "random"}}, "probe_games": 6, "probe_tune_games": 4,
}


def run_report(root, matrix):
    cfg = root / "eval.yaml"
    cfg.write_text(yaml.safe_dump(matrix))
    out = root / "out"
    assert main(["--config", str(cfg), "--out", str(out), "--quiet", "--no-wandb"]) == 0
    return cfg, out, json.loads((out / "report.json").read_text())


@pytest.fixture(scope="module")
def micro(tmp_path_factory):
    from evals.report import probes

    with pytest.MonkeyPatch.context() as mp:  # two candidate probes, not twelve: the same cell, compiled smaller
        mp.setattr(probes, "PROBES", ("role_bluffer:duke:1", "aggressive"))
        return run_report(tmp_path_factory.mktemp("micro"), MICRO)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return run_report(tmp_path_factory.mktemp("report"), TINY)


# ------------------------------------------------------------------ replay by hand
def replay_tools(env, policies) -> dict:
    """Jitted pieces of `replay` (compiled once per test)."""
    n = env.num_players

    def keys(key, t):
        return jax.random.split(jax.random.fold_in(key, t), 3)

    def decide(p, k_pol, k_act, s):
        logits = jax.lax.switch(p, policies, k_pol, s)
        return jax.random.categorical(k_act, logits), bluff_actions(s.observation, s.legal_action_mask, n)

    def reward(prev_obs, obs, done):
        return shaped(RewardInputs(prev_obs, obs, done, False, 0.0), n)

    return dict(step=jax.jit(env.step), keys=jax.jit(keys), decide=jax.jit(decide), reward=jax.jit(reward),
                observe=jax.jit(env.observe), alive=jax.jit(board.alive), placements=jax.jit(board.placements),
                init=jax.jit(lambda k: env.init(jax.random.fold_in(k, seat_tables.INIT_STREAM))))


def replay(env, tools, idx_row, key, seat):
    """One game played step by step with the arena's key scheme; the tested seat's
    counts and rewards computed transition by transition (training.rewards.shaped)."""
    T = tables(env.num_players)
    s = tools["init"](key)
    t, c = 0, dict(decisions=0, bluffs=0, bluff_opportunities=0, challenges=0, challenge_opportunities=0, shaped=0.0)
    prev_obs = None
    while not bool(s.terminated):
        k_pol, k_act, k_step = tools["keys"](key, t)
        p = int(s.current_player)
        if p == seat:
            obs = tools["observe"](s, seat)
            if prev_obs is not None:  # the previous transition ends at this decision
                c["shaped"] += float(tools["reward"](prev_obs, obs, False))
            prev_obs = obs
        a, bl = tools["decide"](int(idx_row[p]), k_pol, k_act, s)
        a = int(a)
        if p == seat:
            bl = np.asarray(bl)
            c["decisions"] += 1
            c["bluff_opportunities"] += int(bl.any())
            c["bluffs"] += int(bl[a])
            chal = bool(s.legal_action_mask[T.challenge_id])
            c["challenge_opportunities"] += int(chal)
            c["challenges"] += int(chal and a == T.challenge_id)
        alive_before = bool(tools["alive"](s)[seat])
        s = tools["step"](s, jnp.int32(a), k_step)
        t += 1
        if prev_obs is not None and alive_before and (not bool(tools["alive"](s)[seat]) or bool(s.terminated)):
            # the seat's game ends here: its last transition ends with this step
            c["shaped"] += float(tools["reward"](prev_obs, tools["observe"](s, seat), True))
            prev_obs = None
    place = int(np.argsort(np.asarray(tools["placements"](s)))[seat]) + 1
    c["wins"], c["placement"] = int(place == 1), place
    return c


def check_seat_rows(matrix, rep):
    env = Env(N)
    scripted = [make_policy(x, env) for x in ("random", "honest", "cautious", "aggressive", "bluffer")]
    labels = ("random", "honest")
    tools = replay_tools(env, scripted + [make_policy(x, env) for x in labels])
    for li, label in enumerate(labels):
        for ci, cond in enumerate(matrix["conditions"]):
            tot = dict(games=0, wins=0, placement=0, shaped=0.0, bluffs=0, bluff_opportunities=0, challenges=0,
                       challenge_opportunities=0)
            for seed in matrix["seeds"]:
                seats, opp = draw_condition_tables(matrix["games"], N, seed, condition_weights(cond))
                keys = table_keys(seed, ci, matrix["games"])
                idx = seat_tables.seat_index(seats, opp, 5 + li, N)
                for g in range(matrix["games"]):
                    c = replay(env, tools, idx[g], keys[g], int(seats[g]))
                    tot["games"] += 1
                    for k in tot:
                        if k != "games":
                            tot[k] += c[k]
            row = rep["policies"][label][cond]
            assert row["games"] == tot["games"] and row["wins"] == tot["wins"]
            assert row["win_rate"] == pytest.approx(tot["wins"] / tot["games"])
            assert row["mean_placement"] == pytest.approx(tot["placement"] / tot["games"])
            assert row["shaped_reward"] == pytest.approx(tot["shaped"] / tot["games"], abs=1e-6)
            assert row["win_reward"] == pytest.approx(tot["wins"] / tot["games"])
            for k in ("bluffs", "bluff_opportunities", "challenges", "challenge_opportunities"):
                assert row[k] == tot[k], (label, cond, k)
            lo, hi = row["ci95_low"], row["ci95_high"]
            assert lo <= row["win_rate"] <= hi


def test_micro_report_rows_match_replayed_games(micro):
    check_seat_rows(MICRO, micro[2])


@pytest.mark.slow
def test_seat_table_rows_match_replayed_games(report):
    """Quick twin: test_micro_report_rows_match_replayed_games."""
    check_seat_rows(TINY, report[2])


def test_micro_report_files_and_resume(micro):
    cfg, out, rep = micro
    for name in ("report.md", "report.json", "config.yaml", "meta.json"):
        assert (out / name).is_file()
    assert (out / "figures" / "win_rates.png").is_file()
    assert rep["policies"]["honest"]["aggressive_heavy"]["games"] == MICRO["games"]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["git_commit"] and meta["versions"]["jax"] and meta["stages"]["seat"]["cells"] == 1
    before = {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()}
    assert main(["--config", str(cfg), "--out", str(out), "--quiet", "--no-wandb", "--resume"]) == 0
    assert {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()} == before
    again = json.loads((out / "report.json").read_text())
    assert again["meta"]["cells_reused"] == ["seat/n4/aggressive_heavy/s7", "advice/aggressive_heavy",
                                             "reactions/aggressive_heavy", "probes/honest"]
    assert again["policies"] == rep["policies"] and again["advice_paired"] == rep["advice_paired"]
    d = rep["advice_paired"]["honest"]["aggressive_heavy"]
    assert d["games"] == MICRO["advice_games"] and d["seeds"] == MICRO["seeds"]
    assert d["ci95_low"] <= d["diff"] <= d["ci95_high"] and d["diff"] == pytest.approx(d["win_rate_on"] - d["win_rate_off"])
    assert "The page's advice on vs off" in (out / "report.md").read_text()
    duke = rep["reaction_rates"]["honest"]["aggressive_heavy"]["duke"]
    assert duke["challenges"] <= duke["challenge_opportunities"] and duke["bluff_blocks"] == 0  # honest never bluffs
    assert "Challenge and block rates per claimed role" in (out / "report.md").read_text()
    probe = rep["exploit_probes"]["honest"]
    assert probe["strongest"] in probe["probes"] and probe["games"] == MICRO["probe_games"]
    assert probe["ci95_low"] <= probe["diff"] <= probe["ci95_high"] and "### Exploit probes" in (out / "report.md").read_text()
    with pytest.raises(SystemExit):  # a folder with cells is not overwritten without --resume
        main(["--config", str(cfg), "--out", str(out), "--quiet", "--no-wandb"])


@pytest.mark.slow
def test_advisor_counts_match_the_recorded_claims(report):
    """Quick twin: test_advisor_quality_small_run."""
    _, out, rep = report
    for cond in TINY["conditions"]:
        z = [np.load(out / "cells" / f"advisor__{cond}__s{s}.npz") for s in TINY["seeds"]]
        y = np.concatenate([a["label"] for a in z])
        for belief in ("exact", "coupvisor"):
            q = np.concatenate([a[f"{belief}/challenge"] for a in z])
            p_bluff = 1.0 - np.concatenate([a[f"{belief}/p_truth"] for a in z]).astype(np.float64)
            m = rep["advisor"][belief][cond]
            tp, fp = int((y & q).sum()), int((~y & q).sum())
            fn, tn = int((y & ~q).sum()), int((~y & ~q).sum())
            assert (m["tp"], m["fp"], m["fn"], m["tn"]) == (tp, fp, fn, tn)
            prec = tp / (tp + fp) if tp + fp else 0.0
            rec = tp / (tp + fn) if tp + fn else 0.0
            f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
            assert m["f1"] == pytest.approx(f1)
            assert m["brier"] == pytest.approx(np.mean((p_bluff - y) ** 2), rel=1e-5)
            assert m["outcome_accuracy"] == pytest.approx((tp + tn) / len(y))
            assert m["outcome_score"] == pytest.approx((tp - fp) / len(y))
            b = np.clip(np.floor(p_bluff * 10).astype(int), 0, 9)
            ece = sum(abs(p_bluff[b == i].mean() - y[b == i].mean()) * (b == i).sum() for i in range(10)
                      if (b == i).any()) / len(y)
            assert m["ece"] == pytest.approx(ece, abs=1e-6)
            assert sum(k["claims"] for k in m["per_kind"].values()) == len(y)


@pytest.mark.slow
def test_report_files_tables_and_resume(report, tmp_path):
    """Quick twin: test_micro_report_files_and_resume."""
    cfg, out, rep = report
    for name in ("report.md", "report.json", "config.yaml", "meta.json"):
        assert (out / name).is_file()
    figs = {p.name for p in (out / "figures").glob("*.png")}
    assert {"win_rates.png", "reliability.png", "cross_play.png", "ratings.png", "claim_errors.png"} <= figs
    md = (out / "report.md").read_text()
    for head in ("## Policies", "## The challenge advisor", "## Cross-play", "## Ratings", "## Scenario benchmark"):
        assert head in md
    labels = rep["cross_play"]["labels"]
    assert np.asarray(rep["cross_play"]["win_rate"]).shape == (len(labels), len(labels))
    assert set(rep["ratings"]) == set(labels)
    assert set(rep["by_players"]) == {"3", "4"}
    on = rep["advice_on_off"]["honest+advisor"]["aggressive_heavy"]
    assert on["off"] == rep["policies"]["honest"]["aggressive_heavy"]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["git_commit"] and meta["versions"]["jax"]
    # resume: every cell reused, nothing replayed, the same figures
    before = {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()}
    assert main(["--config", str(cfg), "--out", str(out), "--quiet", "--no-wandb", "--resume"]) == 0
    again = json.loads((out / "report.json").read_text())
    assert {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()} == before
    assert len(again["meta"]["cells_reused"]) == len([p for p in before if p.endswith(".json")])
    rep_copy = dict(rep)
    again.pop("meta"), rep_copy.pop("meta")
    assert again == rep_copy


@pytest.mark.slow
def test_interrupted_report_resumes_only_missing_cells(report, tmp_path):
    """Quick twin: test_micro_report_files_and_resume."""
    cfg, out, _ = report
    part = tmp_path / "part"
    (part / "cells").mkdir(parents=True)
    for p in (out / "cells").iterdir():
        if p.name.startswith("seat__"):
            (part / "cells" / p.name).write_bytes(p.read_bytes())
    assert main(["--config", str(cfg), "--out", str(part), "--quiet", "--no-wandb", "--resume"]) == 0
    meta = json.loads((part / "meta.json").read_text())
    assert sorted(meta["cells_reused"]) == sorted(p.name[:-5].replace("__", "/") for p in (out / "cells").iterdir()
                                                  if p.name.startswith("seat__") and p.name.endswith(".json"))
    assert json.loads((part / "report.json").read_text())["policies"] == json.loads(
        (out / "report.json").read_text())["policies"]


# ------------------------------------------------------------------ config
@pytest.mark.parametrize("change, words", [
    ({"gmaes": 3}, "'gmaes' is not known; did you mean 'games'"),
    ({"seeds": [7, 0]}, "used to tune"),
    ({"policies": {"x": "no_such_policy"}}, "policies.x"),
    ({"conditions": ["nope"]}, "conditions"),
    ({"advised": {"a": {"base": "honest", "belif": "exact"}}}, "advised.a.belif"),
    ({"player_counts": [7]}, "player_counts"),
])
def test_config_names_the_wrong_key(change, words):
    with pytest.raises(EvalConfigError, match=words):
        config_from_dict({**TINY, **change})


def test_cli_errors_are_one_line_with_status_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**TINY, "seeds": [1000]}))
    with pytest.raises(SystemExit) as e:
        main(["--config", str(bad), "--out", str(tmp_path / "o")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("python -m evals.report: error:") and "1000" in err and "\n" not in err


def test_the_default_config_loads():
    from coupjax.paths import config_path
    from evals.report.config import load_config

    cfg = load_config(config_path("eval.yaml"))
    assert cfg.games == 1500 and len(cfg.seeds) == 5 and cfg.cross_play_games == 800
    assert Path(cfg.policies["dqn_ref"]).is_dir()
    assert cfg.policies["best"] == "best" and cfg.reaction_games > 0
    assert {"best", "belief_ev", "advice"} <= set(cfg.reaction_policies)  # the three, side by side
    assert cfg.exploit_probes["best"] == {"policy": "best", "baseline": "belief_ev"} and cfg.probe_games > 0


def test_the_final_report_replaces_the_seeds(tmp_path, monkeypatch):
    """--final plays the matrix on held-out seeds instead of the config's: they are checked
    like the config's own (a tuning seed refused) and each is recorded in the ledger."""
    from coupjax import seeds as S
    from evals.report.config import load_config

    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(S.LEDGER_ENV, str(ledger))
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(yaml.safe_dump(MICRO))
    assert load_config(cfg).seeds == (7,) and not ledger.exists()
    assert load_config(cfg, seeds=[100, 101]).seeds == (100, 101)
    assert [e["seed"] for e in S.read_ledger(ledger)] == [100, 101]
    with pytest.raises(EvalConfigError, match="seed 1002 was used to tune"):
        load_config(cfg, seeds=[1002])


# ------------------------------------------------------------------ scenarios
@pytest.mark.slow
def test_scenarios_build_and_hard_facts_are_challenged():
    """Quick twins: test_advisor_calls_a_disproven_claim_impossible, test_three_copies_accounted_for_is_impossible."""
    built = decision_benchmark.build_all()
    assert len(built) >= 30
    for s, m in built:
        assert m.view()["phase"] == s.kind, s.name
        legal = m.legal_actions()
        assert s.sound_names(m) and all(a in legal for a in s.sound_names(m)), s.name
    for belief in ("exact", "coupvisor"):
        got = decision_benchmark.score_advisor(built, belief)
        for s, _ in built:
            if s.name.startswith(("impossible_", "caught_bluff_")):
                assert got[s.name]["challenge"] and got[s.name]["p_truth"] == 0.0, (belief, s.name)
    honest = decision_benchmark.score_policy(make_policy("honest", Env(4)), built)
    assert honest["early_tax_with_duke"]["hit"] and honest["impossible_tax"]["hit"]


# ------------------------------------------------------------------ belief_ev's shared posterior
@pytest.mark.slow
def test_shared_posterior_changes_nothing():
    """Quick twin: test_exact_posterior_matches_brute_force."""
    env = Env(N)
    run = seat_tables.make_table_runner(env, [make_policy("bluffer", env), make_policy("aggressive", env)])
    idx = jnp.asarray(np.random.default_rng(1).integers(0, 2, (48, N)), jnp.int32)
    limit = jnp.asarray(np.random.default_rng(2).integers(0, 60, 48), jnp.int32)
    states, _ = run(seat_tables.game_keys(5, 0, 48), idx, step_limit=limit)
    obs, mask = states.observation, states.legal_action_mask
    params = AdvisorParams()

    def both(o, m):
        post = exact_posterior(o, N, params.posterior_params())
        return (recommend_action(o, m, N, params), recommend_action(o, m, N, params, posterior=post),
                advise_challenge(o, N, "exact", params), advise_challenge(o, N, "exact", params, posterior=post))

    a, b, c, d = jax.jit(jax.vmap(both))(obs, mask)
    for x, y in ((a, b), (c, d)):
        for k in x:
            np.testing.assert_array_equal(np.asarray(x[k]), np.asarray(y[k]), err_msg=k)
    assert bool(np.asarray(c["decision"]).any())


# ------------------------------------------------------------------ the faster loops give the same games
@pytest.mark.slow
def test_queue_runner_plays_the_same_games_as_the_table_runner():
    """Quick twin: test_micro_report_rows_match_replayed_games."""
    env = Env(N)
    pols = [make_policy(x, env) for x in ("random", "honest", "aggressive", "bluffer")]
    G = 96
    idx = np.random.default_rng(0).integers(0, 4, (G, N)).astype(np.int32)
    keys = seat_tables.game_keys(3, 0, G)
    final, a = seat_tables.make_table_runner(env, pols)(keys, idx)
    b = seat_tables.make_queue_runner(env, pols, slots=24)(keys, idx)  # 4 games per slot, refilled
    for k in ("decisions", "bluffs", "bluff_opportunities", "challenges", "challenge_opportunities", "placement",
              "wins", "steps", "finished"):
        np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]), err_msg=k)
    np.testing.assert_allclose(np.asarray(a["entropy"]), np.asarray(b["entropy"]), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(jax.vmap(board.coins)(final)), np.asarray(b["coins"]))
    np.testing.assert_array_equal(np.asarray(jax.vmap(board.alive)(final)), np.asarray(b["alive"]))


@pytest.mark.slow
def test_queue_recorder_records_the_claims_it_recorded_before():
    """The claims of 50 games, pinned as the per-game reference loop (``make_recorder``,
    deleted) and the queue recorded them alike.  Quick twin: test_advisor_quality_small_run."""
    from coupjax.policies.pools import SCRIPTED_NAMES
    from evals.advisor.record import QueueRecorder, play_condition

    env = Env(N)
    bots = [make_policy(x, env) for x in SCRIPTED_NAMES]
    b = play_condition(QueueRecorder(env, bots, slots=16, games_per_call=40), jax.random.PRNGKey(5),
                       "aggressive_heavy", 50, 25)
    assert len(b["label"]) == 1005
    assert [int(np.asarray(b[k]).astype(np.int64).sum()) for k in ("label", "kind", "step", "game")] == \
        [382, 2454, 45025, 25503]
    assert int(b["obs"].sum()) == 61462 and (b["overflow"], b["unfinished"]) == (0, 0)


SPLIT_SCRIPT = """
import sys, numpy as np, jax
from coupjax import seat_tables
from coupjax.env import Env
from coupjax.policies import make_policy
from coupjax.policies.pools import SCRIPTED_NAMES
from evals.advisor.record import QueueRecorder, play_condition
assert len(jax.devices()) == 2
env = Env(4)
pols = [make_policy(x, env) for x in ("random", "honest", "aggressive", "bluffer")]
idx = np.random.default_rng(0).integers(0, 4, (95, 4)).astype(np.int32)
out = seat_tables.make_queue_runner(env, pols, slots=12, devices=jax.devices())(seat_tables.game_keys(3, 0, 95), idx, count=90)
rec = play_condition(QueueRecorder(env, [make_policy(x, env) for x in SCRIPTED_NAMES], slots=16, games_per_call=40,
                                   devices=jax.devices()), jax.random.PRNGKey(5), "aggressive_heavy", 50, 25)
np.savez(sys.argv[1], placement=np.asarray(out["placement"]), steps=np.asarray(out["steps"]),
         label=rec["label"], game=rec["game"], step=rec["step"])
"""


@pytest.mark.slow
def test_two_devices_play_the_same_games(tmp_path):
    """The queue runner and the claim recorder split over two host devices (as the report
    runs on a 2-core CPU) give one device's games and claims; padding games are never played.
    Quick twin: test_multi_device_step_matches_one_device."""
    import os
    import subprocess
    import sys

    from coupjax.policies.pools import SCRIPTED_NAMES
    from evals.advisor.record import QueueRecorder, play_condition

    f = tmp_path / "split.npz"
    env_vars = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
                    PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    subprocess.run([sys.executable, "-c", SPLIT_SCRIPT, str(f)], check=True, env=env_vars)
    got = np.load(f)
    env = Env(N)
    pols = [make_policy(x, env) for x in ("random", "honest", "aggressive", "bluffer")]
    idx = np.random.default_rng(0).integers(0, 4, (95, N)).astype(np.int32)
    one = seat_tables.make_queue_runner(env, pols, slots=24)(seat_tables.game_keys(3, 0, 95), idx)
    np.testing.assert_array_equal(got["placement"][:90], np.asarray(one["placement"])[:90])
    np.testing.assert_array_equal(got["steps"][:90], np.asarray(one["steps"])[:90])
    assert (got["steps"][90:] == 0).all() and (got["placement"][90:] == 0).all()
    rec = play_condition(QueueRecorder(env, [make_policy(x, env) for x in SCRIPTED_NAMES], slots=16,
                                       games_per_call=40), jax.random.PRNGKey(5), "aggressive_heavy", 50, 25)
    for k in ("label", "game", "step"):
        np.testing.assert_array_equal(got[k], rec[k], err_msg=k)


def test_advice_paired_finds_a_planted_difference_and_none_where_there_is_none():
    """`results.advice_paired`: on/off wins [bases, seeds, tables] from the advice cells;
    a base whose advised seat wins every table where the plain one loses half is found,
    an identical pair gives an interval around 0."""
    from types import SimpleNamespace

    from evals.report.results import advice_paired

    rng = np.random.default_rng(0)
    off = rng.integers(0, 2, (2, 2, 400)).astype(np.int8)
    on = off.copy()
    on[0] = 1  # base 0: the advice wins every table
    cell = {"wins_on": on, "wins_off": off, "place_on": 2 - on, "place_off": 2 - off}
    got = advice_paired({"aggressive_heavy": cell}, SimpleNamespace(advice_bases=("honest", "cautious"), seeds=(7, 8)))
    win, same = got["honest"]["aggressive_heavy"], got["cautious"]["aggressive_heavy"]
    assert win["ci95_low"] > 0.3 and win["win_rate_on"] == 1.0 and win["placement"]["ci95_high"] < 0
    assert win["verdict"] == "advice on beats advice off"
    assert same["diff"] == 0 and same["ci95_low"] <= 0 <= same["ci95_high"] and same["games"] == 400
    assert same["verdict"] == "no significant difference"


def test_repeated_held_out_looks_get_a_note():
    """Issue 41: docs/results.md notes every held-out seed the ledger shows looked at again
    by the same item (ledger lines 61-62: one best response started twice), or without a
    criterion, up to the report's own run; distinct items on one seat's seed are no repeat."""
    from evals.report.ledger_notes import repeated_looks

    def look(seed, argv, criterion="c", commit="x"):
        return {"seed": seed, "command": "python -m evals.experiments", "argv": argv, "criterion": criterion,
                "commit": commit}

    entries = [look(150, ["a"]), look(151, ["a"]), look(151, ["a"]), look(150, ["b"]), look(100, [], None),
               look(101, ["r"], commit="report"), look(101, ["r"], commit="later")]
    assert [(g["seed"], g["lines"]) for g in repeated_looks(entries, {150, 151, 100, 101})] == [
        (151, [2, 3]), (100, [5]), (101, [6, 7])]
    assert [g["lines"] for g in repeated_looks(entries, {151, 101}, report_commit="report")] == [[2, 3]]
    results = (Path(__file__).resolve().parents[1] / "docs" / "results.md").read_text()
    assert "- seed 151: `python -m evals.experiments" in results and "on ledger line(s) 61, 62:" in results
