"""Tests of training.replicate_coupvisor and training.replication at tiny sizes (one compile
of each piece, shared)."""
from __future__ import annotations

import dataclasses
import json
import math

import jax
import numpy as np
import pytest

from coupjax import seat_tables
from coupjax.env import Env
from coupjax.metrics import t_interval
from coupjax.seeds import TUNING_SEEDS, SeedError
from training import replicate_coupvisor
from training.replication import benchmark
from training.replication import logs
from training.replication import offline_dqn
from training.rewards import RewardInputs, action_match_reward, make_reward

TINY = dataclasses.replace(benchmark.QUICK, seeds=2, games=16, online_games=8, dqn_episodes=4, bc_epochs=2)
N = TINY.num_players


@pytest.fixture(scope="module")
def result():
    return benchmark.run_benchmark(TINY, progress=None, log=None)


@pytest.fixture(scope="module")
def rows():
    logger = logs.cached_logger(N, TINY.slots, TINY.steps_per_call)
    return logs.prepare_rows(logs.play(logger, jax.random.PRNGKey(7), 12, TINY.slots))


# ------------------------------------------------------------------ the JSON
def test_keys_and_json(result):
    assert {"shaped", "win"} <= set(result)
    assert set(result) - {"shaped", "win"} <= {"config", "meta", "comparison"}
    for mode in ("shaped", "win"):
        assert list(result[mode]) == ["bc", "dqn", "belief_ev", "random"]
        for pol, metrics in result[mode].items():
            for m in ("reward_per_episode", "winner_action_match", "win_rate"):
                s = metrics[m]
                assert set(s) >= {"mean", "ci95_low", "ci95_high", "per_seed"}
                assert len(s["per_seed"]) == TINY.seeds
                assert s["ci95_low"] - 1e-9 <= s["mean"] <= s["ci95_high"] + 1e-9, (mode, pol, m, s)
                assert math.isclose(s["mean"], float(np.mean(s["per_seed"])), rel_tol=1e-9, abs_tol=1e-12)
            for m in ("winner_action_match", "win_rate", "action_match"):
                assert 0.0 <= metrics[m]["ci95_low"] <= metrics[m]["ci95_high"] <= 1.0
    text = json.dumps(result)  # strict JSON: no NaN
    assert "NaN" not in text and "Infinity" not in text


def test_reward_identities(result):
    """win-mode reward per episode = winner-matched rows per held-out game; shaped = (row
    rewards + matched rows) per game; winner-action match = matched / winner rows."""
    for i, rec in enumerate(result["meta"]["per_seed"]):
        for mode in ("shaped", "win"):
            for pol in benchmark.POLICIES:
                c = rec["counts"][f"dqn_{mode}" if pol == "dqn" else pol]
                r = result[mode][pol]
                win_rpe = c["winner_matches"] / c["test_games"]
                shaped_rpe = (c["row_reward_sum"] + c["matches"]) / c["test_games"]
                rpe = r["reward_per_episode"]["per_seed"][i]
                assert rpe == pytest.approx(win_rpe if mode == "win" else shaped_rpe, abs=1e-9)
                assert r["winner_action_match"]["per_seed"][i] == pytest.approx(c["winner_matches"] / c["winner_rows"])
                assert r["win_rate"]["per_seed"][i] == rec["online"][f"dqn_{mode}" if pol == "dqn" else pol]["win_rate"]
        # the shaped reward differs between policies only through the matches
        sums = {k: c["shaped_reward_sum"] - c["matches"] for k, c in rec["counts"].items()}
        assert max(sums.values()) - min(sums.values()) < 1e-6


def test_random_matches_about_one_over_legal(result):
    matches = rows_ = expected = 0.0
    for rec in result["meta"]["per_seed"]:
        c = rec["counts"]["random"]
        matches += c["winner_matches"]
        rows_ += c["winner_rows"]
        expected += c["expected_random_winner_match"] * c["winner_rows"]
    assert rows_ > 50
    assert abs(matches - expected) <= 4 * math.sqrt(rows_ * 0.25) + 1, (matches, expected, rows_)


def test_online_games_and_comparison(result):
    for rec in result["meta"]["per_seed"]:
        for nm, o in rec["online"].items():
            assert o["games"] == TINY.online_games
            assert 0 <= o["wins"] <= o["games"] and o["win_rate"] == o["wins"] / o["games"]
    c = result["comparison"]
    assert sorted(c["shaped_order"]) == sorted(benchmark.POLICIES) and sorted(c["win_order"]) == sorted(benchmark.POLICIES)
    assert c["bc_leads_shaped"] == (c["shaped_order"][0] == "bc")
    assert c["dqn_leads_win"] == (c["win_order"][0] == "dqn")
    assert not c["dqn_leads_win_separated"] or c["dqn_leads_win"]
    d = c["diagnostics"]["bc_winners_only"]["winner_action_match"]
    assert 0.0 <= d["ci95_low"] <= d["mean"] <= d["ci95_high"] <= 1.0


def test_networks_play_online_with_their_trained_parameters(result):
    """The networks are `ParamPolicy` entries of one compiled seat table: with the trained
    parameters they are greedy with a unique best action (no entropy); with the zero
    placeholders every legal action would tie (a uniform choice, like random's)."""
    for r in result["meta"]["per_seed"]:
        assert r["online"]["random"]["action_entropy"] > 0.5
        for net in ("bc", "dqn_shaped", "dqn_win"):
            assert r["online"][net]["action_entropy"] < 1e-3, (net, r["online"][net])


@pytest.mark.slow
def test_online_win_rate_is_the_arenas(result):
    """The online rows are `coupjax.seat_tables`'s seat table: a policy scores exactly as in
    `play_tables` on the seed's tables (about 30 s more: a second compiled table).
    Quick twin: test_online_games_and_comparison."""
    rec = result["meta"]["per_seed"][0]
    rows = seat_tables.play_tables(Env(N), ["random"], TINY.online_games, rec["seed"], chunk=TINY.slots)
    mine = rec["online"]["random"]
    assert {k: mine[k] for k in ("games", "wins", "mean_placement")} == \
        {k: rows["random"][k] for k in ("games", "wins", "mean_placement")}
    assert mine["action_entropy"] == pytest.approx(rows["random"]["action_entropy"], rel=1e-5)


# ------------------------------------------------------------------ the logged rows
def test_logged_rows(rows):
    G = int(rows["game"].max()) + 1
    assert G == 16  # 12 games rounded up to a multiple of 8 slots
    assert rows["mask"][np.arange(len(rows["action"])), rows["action"]].all()  # logged actions are legal
    for cf in ("cf_belief_ev", "cf_random"):
        assert rows["mask"][np.arange(len(rows["action"])), rows[cf]].all()
    last = np.nonzero(rows["done"])[0]
    assert len(last) == G and (rows["game"][last] == np.arange(G)).all()
    assert (np.diff(rows["game"]) >= 0).all() and rows["first"].sum() == G
    for g in range(G):
        sel = rows["game"] == g
        assert np.nonzero(sel)[0][-1] == last[g]  # the done row ends its game
        w = rows["winner"][g]  # the rules' winner: the last seat standing, or the best ranked at the turn cap
        alive = rows["alive1"][last[g]]
        assert alive[w] and (alive.sum() > 1 or w == np.argmax(alive))
        assert (rows["actor_wins"][sel] == (rows["actor"][sel] == w)).all()


def test_the_logger_records_the_rows_it_recorded_before():
    """`make_logger` plays on `coupjax.rollout.step`; on this key its rows are those of
    the logger's own scan before it (pinned figures)."""
    d = logs.play(logs.cached_logger(N, TINY.slots, TINY.steps_per_call), jax.random.PRNGKey(7), 12, TINY.slots)
    assert len(d["action"]) == 1409 and float(d["obs"].sum()) == 99868.0
    assert [int(np.asarray(d[k]).astype(np.int64).sum()) for k in
            ("action", "actor", "cf_belief_ev", "cf_random", "coins1", "game_winner")] == \
        [18636, 2439, 17842, 19214, 14791, -1370]


def test_shaped_row_reward_matches_rewards_shaped(rows):
    """Oracle: the actor's coin change + opponents eliminated, up to its next decision
    (training.rewards.shaped on its two views), else to its elimination or the end."""
    shaped = jax.jit(make_reward("shaped", N))  # one compile; op by op, every row dispatched each op anew
    R = len(rows["action"])
    checked_obs = 0
    for i in range(R):
        g, p = rows["game"][i], rows["actor"][i]
        j = i + 1
        while j < R and rows["game"][j] == g and rows["actor"][j] != p:
            j += 1
        if j < R and rows["game"][j] == g:
            x = RewardInputs(obs=rows["obs"][i], next_obs=rows["obs"][j], done=np.bool_(False), won=np.bool_(False),
                             engine_reward=np.float32(0))
            assert float(shaped(x)) == pytest.approx(rows["row_reward"][i]), i
            checked_obs += 1
        else:
            k = i
            while not rows["done"][k] and rows["alive1"][k, p]:
                k += 1
            others = np.arange(N) != p
            expect = (rows["coins1"][k, p] - rows["coins0"][i, p]
                      + rows["alive0"][i, others].sum() - rows["alive1"][k, others].sum())
            assert rows["row_reward"][i] == pytest.approx(expect), i
    assert checked_obs > R // 2


def test_split_and_episode_sequence(rows):
    train, test = logs.split_games(dict(rows, logged_game=rows["game"]), 0.25, np.random.default_rng(0))
    assert len(train["action"]) + len(test["action"]) == len(rows["action"])
    assert not set(train["logged_game"]) & set(test["logged_game"])  # whole games held out, no row split
    assert int(test["game"].max()) + 1 == 4 and int(train["game"].max()) + 1 == 12
    seq = offline_dqn.episode_sequence(train, 5, np.random.default_rng(1), bucket=256)
    T = int(seq["valid"].sum())
    assert len(seq["valid"]) % 256 == 0 and seq["valid"][:T].all() and not seq["valid"][T:].any()
    assert seq["done"][:T].sum() == 5 and seq["done"][T - 1]
    nd = np.nonzero(seq["valid"] & ~seq["done"])[0]
    np.testing.assert_array_equal(seq["next_obs"][nd], seq["obs"][nd + 1])  # next state = the game's next row
    np.testing.assert_array_equal(seq["next_mask"][nd], seq["mask"][nd + 1])
    assert seq["next_mask"][seq["done"]].all()


# ------------------------------------------------------------------ small pieces
def test_action_match_reward():
    chosen, logged = np.array([1, 2, 3, 3]), np.array([1, 2, 0, 3])
    rr, wins = np.array([2.0, -1.0, 0.5, 0.0]), np.array([True, False, True, True])
    np.testing.assert_allclose(action_match_reward("shaped", chosen, logged, rr, wins), [3.0, 0.0, 0.5, 1.0])
    np.testing.assert_allclose(action_match_reward("win", chosen, logged, rr, wins), [1.0, 0.0, 0.0, 1.0])
    with pytest.raises(ValueError):
        action_match_reward("engine", chosen, logged, rr, wins)


def test_t_interval():
    s = t_interval([1.0, 2.0, 3.0])
    half = 4.302652729911275 / math.sqrt(3)
    assert s["mean"] == 2.0 and s["ci95_low"] == pytest.approx(2 - half) and s["ci95_high"] == pytest.approx(2 + half)
    one = t_interval([0.4])
    assert one["ci95_low"] == one["mean"] == one["ci95_high"] == 0.4
    clipped = t_interval([0.0, 0.1], (0.0, 1.0))
    assert clipped["ci95_low"] == 0.0 and clipped["mean"] == pytest.approx(0.05)


def test_cli_rejects_bad_arguments(capsys):
    assert replicate_coupvisor.main(["--quick", "--seeds", "0"]) == 2
    assert "error" in capsys.readouterr().err
    tuning = next(t for t in sorted(TUNING_SEEDS) if t > 0 and t - 1 not in TUNING_SEEDS)
    assert replicate_coupvisor.main(["--quick", "--seed", str(tuning - 1), "--seeds", "2"]) == 2  # the second seed tuned something
    assert f"seed {tuning} was used to tune" in capsys.readouterr().err
    with pytest.raises(SeedError):
        benchmark.run_benchmark(dataclasses.replace(TINY, first_seed=tuning), progress=None, log=None)
    assert replicate_coupvisor.main(["--quick", "--dqn-set", "gama=0"]) == 2
    assert "gamma" in capsys.readouterr().err  # the config checker names the nearest key
    assert replicate_coupvisor.main(["--quick", "--dqn-set", "exploration=boltzmann"]) == 2  # a key the offline DQN ignores
    assert "'exploration' is not read by the offline DQN" in capsys.readouterr().err
    assert offline_dqn.dqn_config(("gamma=0",)).gamma == 0.0


def test_offline_dqn_learns_an_easy_log(result):
    """Sanity of the offline trainer (same compile as the benchmark's 512-step sequences):
    one-row episodes (no bootstrapping) whose logged action is always 2, every actor a
    winner: win-mode DQN ends up choosing action 2."""
    del result  # run after the benchmark so the trainer is compiled once
    env = Env(N)
    S, obs_dim, A = 512, env.observation_shape[0], env.num_actions
    rng = np.random.default_rng(0)
    obs = rng.random((S, obs_dim)).astype(np.float32)
    mask = np.zeros((S, A), bool)
    mask[:, :5] = True
    done = np.ones(S, bool)
    seq = {"obs": obs, "mask": mask, "logged": np.full(S, 2, np.int32), "row_reward": np.zeros(S, np.float32),
           "actor_wins": np.ones(S, bool),
           "next_obs": np.where(done[:, None], 0.0, np.roll(obs, -1, 0)).astype(np.float32),
           "next_mask": np.where(done[:, None], True, np.roll(mask, -1, 0)), "done": done, "valid": np.ones(S, bool),
           "episode": np.arange(S)}
    params, rewards = offline_dqn.cached_dqn(N)(jax.random.PRNGKey(0), seq, jax.numpy.bool_(False))
    nets = {"bc": benchmark.dummy_params(env, offline_dqn.dqn_config())["bc"], "dqn_shaped": params, "dqn_win": params}
    chosen = np.asarray(benchmark.cached_chooser(N)(obs[:256], mask[:256], nets))[2]
    assert (chosen == 2).mean() > 0.95
    assert np.asarray(rewards)[-128:].mean() > 0.3  # epsilon ~0.7 there: 0.43 if greedy picks 2, 0.2 if not
