"""Self-play with a learned belief (training.selfplay, training.league): tiny configs,
one shared compile of the chunk."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import Env
from coupjax.inference import load_policy
from coupjax.networks import apply_mlp
from coupjax.observation import parse
from coupjax.testing import check_policy, sample_positions
from training import checkpoint
from training.config import ConfigError, SelfPlayConfig, config_from_dict, config_to_dict, load_config
from training.league import League
from training.league import masked_log_softmax
from training.runs import RunDirError, check_run_dir
from training.search_targets import random_positions
from training.selfplay import (Batch, calibration_sums, ece_from_sums, load_belief, make_train, on_learner_rows,
                               ppo_terms, restart_from_random, seat_advantages)

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(algo="selfplay", seed=3, num_envs=8, rollout_steps=8, num_minibatches=2, num_epochs=1,
            updates_per_chunk=3, num_chunks=2, hidden_sizes=[16], belief_hidden_sizes=[32], num_snapshots=2,
            snapshot_every=2, opponents={"random": 1, "honest": 1}, num_seeds=2, learning_rate=3e-3,
            checkpoint_every=1, max_checkpoints=3, export_temperature=1.0)


# the policy reads its learned belief (`coupjax.networks.PolicyReadingBelief`): one seed, one chunk
READING = dict(TINY, policy_reads_belief=True, num_seeds=1, num_chunks=1)
# the policy reads the exact posterior (`coupjax.networks.PolicyReadingPosterior`)
POSTERIOR = dict(TINY, policy_reads_posterior=True, num_seeds=1, num_chunks=1, updates_per_chunk=1)


def _same(a, b):
    return jax.tree.all(jax.tree.map(lambda x, y: bool(np.array_equal(np.asarray(x), np.asarray(y))), a, b))


@pytest.fixture(scope="module")
def setup():
    return make_train(config_from_dict(TINY))


@pytest.fixture(scope="module")
def chunks(setup):
    """(initial state, after 1 chunk, after 2 chunks, [metrics of chunk 1, of chunk 2])."""
    rs0 = setup.init(jax.random.PRNGKey(setup.config.seed))
    rs1, m1 = setup.train_chunk(rs0)
    rs2, m2 = setup.train_chunk(rs1)
    return rs0, rs1, rs2, [jax.device_get(m1), jax.device_get(m2)]


# ------------------------------------------------------------------ pure pieces
def test_seat_advantages_by_hand():
    """Two seats take turns; the game ends after step 3 (seat 1 wins: +1, seat 0: -1);
    a new game starts at step 4, where the rollout is cut (bootstrap 0.5 for seat 0)."""
    seat = jnp.array([0, 1, 0, 1, 0])
    learner = jnp.array([True, True, True, False, True])  # step 3: a bot's move
    value = jnp.array([0.1, 0.2, 0.3, 9.0, 0.4])
    done = jnp.array([False, False, False, True, False])
    rewards = jnp.zeros((5, 2)).at[3].set(jnp.array([-1.0, 1.0]))
    boot = jnp.array([0.5, 7.0])
    g, lam = 0.9, 0.5
    adv = np.asarray(seat_advantages(seat, learner, value, done, rewards, boot, g, lam))
    a4 = 0 + g * 0.5 - 0.4  # the new game's decision bootstraps on seat 0's value
    a2 = -1.0 - 0.3  # seat 0's last decision of the ended game: its reward, no bootstrap
    a1 = 1.0 - 0.2  # seat 1's: the bot's move at step 3 is not seat 1's decision
    a0 = (0 + g * 0.3 - 0.1) + g * lam * a2  # seat 0's next own decision is step 2
    np.testing.assert_allclose(adv, [a0, a1, a2, 0.0, a4], rtol=1e-6)


def test_calibration_sums_match_metrics_ece():
    from coupjax.metrics import ece

    rng = np.random.default_rng(0)
    p = rng.uniform(size=400).astype(np.float32)
    y = (rng.uniform(size=400) < p ** 2).astype(np.float32)
    got = float(ece_from_sums(calibration_sums(jnp.asarray(p), jnp.asarray(y), jnp.ones(400))))
    assert got == pytest.approx(ece(y, p), abs=1e-5)


def test_league_sampling_draws_from_every_member():
    env = Env(4)
    league = League(env, {"random": 1.0, "honest": 3.0}, num_snapshots=3, self_weight=0.2, snapshot_weight=0.3)
    assert league.names == ["self", "snapshot_0", "snapshot_1", "snapshot_2", "random", "honest"]
    member, primary = jax.jit(jax.vmap(league.draw_seats))(jax.random.split(jax.random.PRNGKey(0), 20000))
    member, primary = np.asarray(member), np.asarray(primary)
    assert (member[np.arange(len(member)), primary] == 0).all()  # the primary seat is the current network
    assert set(np.unique(primary)) == {0, 1, 2, 3}
    others = member[np.arange(4)[None, :] != primary[:, None]]
    freq = np.bincount(others, minlength=league.num_members) / others.size
    np.testing.assert_allclose(freq, [0.2, 0.1, 0.1, 0.1, 0.125, 0.375], atol=0.01)
    assert league.capacity(4, 256) == 256  # no margin: every game
    # a Dirichlet mix per table: the same shares, but tables dominated by one member
    tables = League(env, {"random": 1.0, "honest": 3.0}, 3, 0.2, 0.3, table_concentration=0.5)
    m2, p2 = jax.jit(jax.vmap(tables.draw_seats))(jax.random.split(jax.random.PRNGKey(1), 20000))
    m2, p2 = np.asarray(m2), np.asarray(p2)
    others2 = m2[np.arange(4)[None, :] != p2[:, None]].reshape(-1, 3)
    freq2 = np.bincount(others2.ravel(), minlength=tables.num_members) / others2.size
    np.testing.assert_allclose(freq2, freq, atol=0.02)
    same = lambda o: float(np.mean((o == o[:, :1]).all(axis=1)))  # noqa: E731
    assert same(others2) > 2 * same(others.reshape(-1, 3)) + 0.1
    narrow = League(env, {"random": 1.0, "honest": 3.0}, 3, 0.2, 0.3, pool_margin=3.0)
    assert 0.1 * 0.75 * 256 < narrow.capacity(4, 256) < 0.2 * 256


def test_on_learner_rows_gives_the_terms_and_gradients_of_every_row():
    """PPO's terms on the learner's rows gathered (room for them, and too little: the
    fallback to every row) equal, with their gradients, the terms on every row."""
    rng = np.random.default_rng(0)
    M, A, F = 16, 5, 3
    learner = np.zeros(M, bool)
    learner[[0, 4, 5, 9, 12, 15]] = True  # row 0 a learner row: the padding (its copies) must weigh 0
    mask = rng.random((M, A)) < 0.8
    mask[:, 0] = True
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    b = Batch(obs=f32(rng.normal(size=(M, F))), mask=jnp.asarray(mask), action=jnp.zeros(M, jnp.int32),
              logp=f32(rng.normal(size=M) - 1), adv=f32(rng.normal(size=M)), ret=f32(rng.normal(size=M)),
              learner=jnp.asarray(learner), belief_target=jnp.zeros((M, 3, 5)), belief_weight=jnp.zeros((M, 3, 5)),
              magnet_logp=jnp.zeros((M, A)))

    def terms(w, x):
        logits = x.obs @ w
        aux = ppo_terms(masked_log_softmax(logits, x.mask), x.mask, logits.sum(-1), x.action, x.logp, x.adv,
                        x.ret, x.learner, 0.2)
        return aux["pg_loss"] + aux["value_loss"] - 0.1 * aux["entropy"] + aux["approx_kl"]

    w = f32(rng.normal(size=(F, A)))
    want = jax.value_and_grad(lambda w: terms(w, b))(w)
    for rows in (8, 5):  # 6 learner rows: gathered with 2 padding rows, then the fallback
        got = jax.jit(jax.value_and_grad(lambda w, rows=rows: on_learner_rows(lambda x: terms(w, x), b, rows)))(w)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-4, atol=1e-6)


def test_new_games_drawn_on_gathered_games_are_the_same_games():
    """`League.new_games` with a capacity draws the ended games' successors on those games
    only, or on every game when more ended than it holds: both give the games a draw on
    every game gives (a Dirichlet table mix, the costly draw), and the base elsewhere."""
    env, B, cap = Env(4), 16, 4
    league = League(env, {"random": 1.0, "honest": 1.0}, 2, 0.2, 0.2, table_concentration=1.0)
    tables = league.reset(jax.random.PRNGKey(0), B)
    base = (tables.state, tables.member, tables.primary)
    keys = jax.random.split(jax.random.PRNGKey(1), B)
    gathered = jax.jit(league.new_games, static_argnums=3)
    every = jax.jit(league.new_games)
    for ended in ([3, 9, 15], [0, 1, 2, 4, 5, 7, 8, 11, 12, 14]):  # fewer than the capacity, and more
        done = jnp.zeros(B, bool).at[jnp.asarray(ended)].set(True)
        want, got = every(keys, done, base), gathered(keys, done, base, cap)
        assert _same(want, got), ended
        assert not _same(want[1][jnp.asarray(ended)], base[1][jnp.asarray(ended)])  # new members where ended
        kept = np.setdiff1d(np.arange(B), ended)
        assert _same(jax.tree.map(lambda x: x[kept], got), jax.tree.map(lambda x: x[kept], base))


def test_league_plays_the_same_games_gathered():
    """`League.play` with ``gathered`` (the snapshot's policy and the new games on gathered
    games) records the steps and leaves the tables it does without."""
    env, B, T = Env(4), 32, 24
    league = League(env, {"random": 1.0, "honest": 1.0}, 1, 0.2, 0.2, table_concentration=1.0)
    assert league.gather_capacity(1, B) < B and league.new_game_capacity(B) < B
    tables = league.reset(jax.random.PRNGKey(2), B)
    keys = jax.random.split(jax.random.PRNGKey(3), T)
    uniform = lambda k, s: jnp.zeros(s.legal_action_mask.shape, jnp.float32)  # noqa: E731
    snapshot = lambda k, s: s.observation[:s.legal_action_mask.shape[0]]  # noqa: E731  (differs per game)
    play = jax.jit(lambda t, k, g: league.play(t, k, uniform, [snapshot], gathered=g), static_argnums=2)
    want, got = play(tables, keys, False), play(tables, keys, True)
    assert int(want[1].done.sum()) > 0
    assert _same(want, got)



def test_exploring_starts_restart_the_drawn_games_from_random_play():
    """`restart_from_random` puts ``count`` positions of random play on ``count`` distinct
    tables, keeps a table's own game where the random game ended, and leaves every other
    table and every seat's member as they were."""
    env, B, count = Env(4), 16, 12
    league = League(env, {"random": 1.0, "honest": 1.0}, 1, 0.2, 0.2)
    tables = league.reset(jax.random.PRNGKey(5), B)
    key = jax.random.PRNGKey(6)
    out = jax.jit(restart_from_random, static_argnums=(0, 3))(env, key, tables, count)
    pos = random_positions(env, jax.random.split(key)[1], count)
    ended = np.asarray(pos.terminated)
    assert 0 < ended.sum() < count  # some random games end within 40 decisions, most do not
    assert not np.asarray(out.state.terminated).any()
    assert _same((out.member, out.primary, out.slot), (tables.member, tables.primary, tables.slot))
    changed = [g for g in range(B) if not _same(jax.tree.map(lambda x: x[g], out.state),
                                                jax.tree.map(lambda x: x[g], tables.state))]
    assert len(changed) == count - ended.sum()
    for g in changed:  # each is one of the live random positions
        game = jax.tree.map(lambda x: x[g], out.state)
        assert any(_same(game, jax.tree.map(lambda x: x[i], pos)) for i in np.flatnonzero(~ended))


# ------------------------------------------------------------------ the training loop
def test_chunks_train_every_seed_and_league(setup, chunks):
    rs0, rs1, rs2, (m1, m2) = chunks
    S, cfg = setup.config.num_seeds, setup.config
    assert int(rs2.update[0]) == 2 * cfg.updates_per_chunk and rs2.update.shape == (S,)
    assert not _same(rs0.params, rs1.params)
    p = jax.tree.leaves(rs2.params["policy"])[0]
    assert not np.array_equal(np.asarray(p[0]), np.asarray(p[1]))  # two seeds, two different networks
    snaps = jax.tree.leaves(rs2.snapshots)[0]  # 6 updates, one snapshot every 2: ring slots 0, 1 refreshed
    assert not np.array_equal(np.asarray(snaps[0, 0]), np.asarray(snaps[0, 1]))
    flat = setup.flatten_metrics(m2)
    for key in ("win_rate", "entropy", "kl_magnet", "belief_loss", "belief_brier", "belief_ece", "approx_kl",
                "league/win_rate_vs_honest", "seed_1/entropy"):
        assert np.isfinite(flat[key]), key
    assert flat["env_steps"] == S * cfg.num_envs * cfg.rollout_steps * cfg.updates_per_chunk  # no stall
    assert 0 < flat["transitions"] < flat["env_steps"]
    tables = rs2.tables
    assert not bool(np.asarray(tables.state.terminated).any())
    me = np.asarray(tables.member)
    assert (np.take_along_axis(me, np.asarray(tables.primary)[..., None], -1) == 0).all()


def test_the_league_plays_the_games_it_played_before(chunks):
    """The league's games go through `coupjax.rollout.step`; on this key they are the
    games of the loop that scanned `League.step` before it (pinned figures of both
    chunks, per training seed)."""
    _, _, _, (m1, m2) = chunks
    want = {"games": ([1, 4], [5, 8]), "transitions": ([108, 97], [98, 99]), "stalls": ([0, 0], [0, 0]),
            "games_vs": ([[0, 1, 0, 1, 1], [2, 1, 2, 1, 3]], [[3, 1, 1, 3, 2], [5, 2, 1, 6, 4]])}
    for key, (a, b) in want.items():
        assert np.asarray(m1[key]).tolist() == a and np.asarray(m2[key]).tolist() == b, key
    np.testing.assert_allclose(np.asarray(m1["entropy"]), [1.1195850, 1.1541619], rtol=1e-5)


@pytest.mark.slow
def test_the_league_stalls_the_games_it_stalled_before():
    """With ``pool_margin`` > 0 (pool policies on 10 of 64 games per step) the same games
    wait as under the scanned `League.step` (pinned).  Quick twin:
    test_the_league_plays_the_games_it_played_before."""
    cfg = dict(TINY, num_envs=64, updates_per_chunk=2, num_chunks=1, snapshot_every=1, num_seeds=1,
               opponents={"random": 1, "honest": 1, "bluffer": 1}, pool_margin=0.3)
    s = make_train(config_from_dict(cfg))
    assert [s.league.capacity(m, 64) for m in range(s.league.first_pool, s.league.num_members)] == [10, 10, 10]
    m = jax.device_get(s.train_chunk(s.init(jax.random.PRNGKey(3)))[1])
    assert (int(m["stalls"][0]), int(m["games"][0]), int(m["transitions"][0])) == (15, 4, 477)


def test_belief_calibration_records_the_decisions_it_recorded_before():
    """`evals.belief_calibration.record_decisions` on `League.play`: the policy's 200
    decisions of this key, pinned as the scanned `League.step` recorded them."""
    from coupjax.policies import make_policy
    from evals.belief_calibration import record_decisions

    env = Env(4)
    obs, truth, valid = record_decisions(env, make_policy("honest", env), {"random": 1.0, "bluffer": 1.0}, 200,
                                         jax.random.PRNGKey(1), lanes=16)
    assert obs.shape == (200, env.observation_shape[0])
    assert (float(obs.sum()), float(truth.sum()), int(valid.sum())) == (9044.0, 662.0, 452)


def test_belief_loss_falls(setup, chunks):
    """The calibration is measured on each new rollout before the update: held-out data."""
    _, _, _, (m1, m2) = chunks
    first, last = float(np.mean(m1["belief_brier"])), float(np.mean(m2["belief_brier"]))
    assert last < first - 0.01, (first, last)
    assert float(np.mean(m2["belief_loss"])) < float(np.mean(m1["belief_loss"]))


@pytest.mark.slow
def test_pure_train_equals_chunked(setup, chunks):
    """The whole run as one jitted function (a second compile: slow).
    Quick twin: test_resume_gives_the_identical_next_chunk."""
    _, _, rs2, (_, m2) = chunks
    rs, metrics = setup.train(jax.random.PRNGKey(setup.config.seed))
    assert metrics["win_rate"].shape == (setup.config.num_chunks, setup.config.num_seeds)
    np.testing.assert_allclose(np.asarray(metrics["belief_loss"][-1]), np.asarray(m2["belief_loss"]), rtol=1e-5)
    for a, b in zip(jax.tree.leaves(rs.params), jax.tree.leaves(rs2.params)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    assert _same(rs.tables.state.current_player, rs2.tables.state.current_player)


def test_resume_gives_the_identical_next_chunk(setup, chunks, tmp_path):
    _, rs1, rs2, _ = chunks
    manager = checkpoint.checkpoint_manager(tmp_path / "ckpt")
    checkpoint.save_checkpoint(manager, 1, rs1, {"algo": "selfplay"})
    host, _, step = checkpoint.restore_checkpoint(tmp_path / "ckpt", setup.abstract_state())
    resumed, _ = setup.train_chunk(setup.put(host))
    assert step == 1 and _same(resumed, rs2)


def test_export_loads_and_passes_check_policy(setup, chunks, tmp_path):
    from training.selfplay import export

    _, _, rs2, _ = chunks
    export(setup, rs2, tmp_path / "run")
    env = setup.env
    pol = load_policy(tmp_path / "run")
    assert pol.info["kind"] == "selfplay" and pol.info["seed_index"] == 0 and "training_seed" not in pol.info
    check_policy(pol, env, num_states=64)
    seed1 = load_policy(tmp_path / "run" / "exports" / "seed_1")
    state = env.step(env.init(jax.random.PRNGKey(5)), 2, jax.random.PRNGKey(1))  # tax: a reaction window
    mask = np.asarray(state.legal_action_mask)
    own = setup.policy_logits(jax.tree.map(lambda x: x[1], rs2.params["policy"]), state.observation)
    probs = np.asarray(jax.nn.softmax(seed1(None, state)))
    want = np.asarray(jax.nn.softmax(jnp.where(mask, own, -jnp.inf)))
    np.testing.assert_allclose(probs, want, rtol=1e-5, atol=1e-7)  # temperature 1: the policy itself
    np.testing.assert_allclose(np.asarray(apply_mlp(seed1.params, state.observation, 4)), np.asarray(own),
                               rtol=1e-5, atol=1e-6)
    belief = np.asarray(load_belief(tmp_path / "run")(state.observation))
    assert belief.shape == (3, 5) and ((belief >= 0) & (belief <= 1)).all()


@pytest.fixture(scope="module")
def reading(tmp_path_factory):
    """(setup, state before and after one chunk, its metrics, the export directory) of
    the policy that reads its learned belief."""
    from training.selfplay import export

    setup = make_train(config_from_dict(READING))
    rs0 = setup.init(jax.random.PRNGKey(setup.config.seed))
    rs1, m = setup.train_chunk(rs0)
    run = tmp_path_factory.mktemp("reading") / "run"
    export(setup, rs1, run)
    return setup, rs0, rs1, setup.flatten_metrics(m), run


def test_the_policy_reading_its_belief_trains_exports_and_plays(reading):
    """One parameter tree: the trained belief is inside the policy, its snapshots, its
    magnet and its export, and the exported policy is the training network's."""
    setup, rs0, rs1, m, run = reading
    assert set(rs1.params) == {"policy", "value"} and "belief" in rs1.params["policy"]
    assert "belief" in rs1.magnet and "belief" in rs1.snapshots
    for part in ("belief", "out"):
        assert not _same(rs0.params["policy"][part], rs1.params["policy"][part]), part  # both train
    assert np.isfinite(m["belief_loss"]) and np.isfinite(m["belief_ece"]) and np.isfinite(m["entropy"])
    assert m["env_steps"] == READING["num_envs"] * READING["rollout_steps"] * READING["updates_per_chunk"]
    env = setup.env
    pol = load_policy(run)
    assert pol.info["policy_reads_belief"] is True and "belief" in pol.params
    states = sample_positions(env, 64)  # mid-game positions of every phase
    check_policy(pol, env, states)  # legal logits, and no leak: the acting seat's observation alone
    own = jax.tree.map(lambda x: x[0], rs1.params)
    obs, mask = states.observation, np.asarray(states.legal_action_mask)
    trained = np.asarray(jax.jit(setup.policy_logits)(own["policy"], obs))
    np.testing.assert_allclose(np.asarray(jax.jit(pol.values)(obs)), trained, rtol=1e-5, atol=1e-6)
    probs = np.asarray(jax.nn.softmax(jax.jit(jax.vmap(pol))(jnp.zeros(64), states)))
    np.testing.assert_allclose(probs, np.asarray(jax.nn.softmax(jnp.where(mask, trained, -jnp.inf))), rtol=1e-5,
                               atol=1e-7)  # the export's temperature 1: the policy itself
    belief = np.asarray(jax.jit(jax.vmap(load_belief(run)))(obs))
    live = np.asarray(jax.vmap(lambda o: parse(o, env.num_players).hidden[1:] > 0)(obs))  # the loader's 0 else
    want = np.where(live[..., None], np.asarray(jax.nn.sigmoid(jax.jit(setup.belief_logits)(own, obs))), 0.0)
    np.testing.assert_allclose(belief, want, rtol=1e-5, atol=1e-6)


def test_the_policy_reading_the_posterior_trains_exports_and_plays(tmp_path):
    """The export says it reads the posterior, loads as the training network, and passes
    the leak test (the features come from the acting seat's observation alone)."""
    from training.selfplay import export

    setup = make_train(config_from_dict(POSTERIOR))
    rs1, m = setup.train_chunk(setup.init(jax.random.PRNGKey(setup.config.seed)))
    assert np.isfinite(setup.flatten_metrics(m)["entropy"])
    export(setup, rs1, tmp_path / "run")
    pol = load_policy(tmp_path / "run")
    assert pol.info["policy_reads_posterior"] is True and "belief" not in pol.params
    states = sample_positions(setup.env, 32)
    check_policy(pol, setup.env, states)
    own = jax.tree.map(lambda x: x[0], rs1.params)
    trained = np.asarray(jax.jit(setup.policy_logits)(own["policy"], states.observation))
    np.testing.assert_allclose(np.asarray(jax.jit(pol.values)(states.observation)), trained, rtol=1e-5, atol=1e-5)
    info = json.loads((tmp_path / "run" / "export" / "policy.json").read_text())
    info.pop("policy_reads_posterior")  # the plain MLP's shapes no longer fit the parameters
    (tmp_path / "run" / "export" / "policy.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match="corrupt"):
        load_policy(tmp_path / "run")


def test_the_update_reads_the_posterior_features_of_its_own_rows():
    """The exact posterior's features are computed once per decision in the rollout
    (`League.play`'s inputs, read by the current network and its gathered snapshots) and
    the update reads them from the batch (the magnet, every minibatch).  So they are the
    features of the recorded rows, every seat's recorded log-probability is the network's
    on its row, and the loss and its gradients are those of recomputing the features; a
    batch holding other rows' features gives another loss (the check can fail)."""
    from coupjax.networks import posterior_features

    # no pool: every seat is the network or a snapshot (the same parameters at init); 64 games, so that
    # each snapshot runs on its gathered games (`League.gather_capacity`: 30)
    setup = make_train(config_from_dict(dict(POSTERIOR, num_envs=64, self_weight=0.5, snapshot_weight=0.5)))
    rs = jax.tree.map(lambda x: x[0], setup.init(jax.random.PRNGKey(4)))
    _, rec, batch = jax.jit(setup.collect)(rs, jax.random.PRNGKey(5))
    n = setup.env.num_players
    np.testing.assert_allclose(np.asarray(batch.policy_inputs), np.asarray(jax.jit(posterior_features, static_argnums=1)(
        batch.obs, n)), rtol=1e-5, atol=1e-6)
    logits = jax.jit(setup.policy_logits)(rs.params["policy"], batch.obs)  # features recomputed from the rows
    logp = np.take_along_axis(np.asarray(masked_log_softmax(logits, batch.mask)), np.asarray(batch.action)[:, None], 1)
    stepped = np.asarray(rec.stepped).reshape(-1)
    assert stepped.sum() > 32 and (np.asarray(rec.learner).reshape(-1) != stepped).any()  # snapshots' rows too
    np.testing.assert_allclose(np.asarray(batch.logp)[stepped], logp[stepped, 0], rtol=1e-5, atol=1e-5)

    grad = jax.jit(jax.value_and_grad(setup.loss, has_aux=True))
    (cached, aux), g = grad(rs.params, batch)
    (again, aux0), g0 = grad(rs.params, batch.replace(policy_inputs=None))
    np.testing.assert_allclose(float(cached), float(again), rtol=1e-5)
    for k in ("pg_loss", "kl_magnet", "entropy"):
        np.testing.assert_allclose(float(aux[k]), float(aux0[k]), rtol=1e-5, atol=1e-7)
    for a, b in zip(jax.tree.leaves(g), jax.tree.leaves(g0)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
    (wrong, _), _ = grad(rs.params, batch.replace(policy_inputs=jnp.roll(batch.policy_inputs, 1, axis=0)))
    assert abs(float(wrong) - float(cached)) > 1e-4


def test_the_policy_losses_leave_the_belief_it_reads_alone(reading):
    """The stop-gradient: a loss on the policy's logits has no gradient on the belief's
    parameters; the belief's loss has one (it is what trains them)."""
    setup, _, rs1, _, _ = reading
    params = jax.tree.map(lambda x: x[0], rs1.params)
    obs = jax.jit(setup.env.init)(jax.random.PRNGKey(1)).observation
    weights = jax.random.normal(jax.random.PRNGKey(2), (setup.env.num_actions,))
    g_policy = jax.jit(jax.grad(lambda p: (setup.policy_logits(p["policy"], obs) * weights).sum()))(params)
    g_belief = jax.jit(jax.grad(lambda p: setup.belief_logits(p, obs).sum()))(params)
    assert all(not np.asarray(g).any() for g in jax.tree.leaves(g_policy["policy"]["belief"]))
    assert np.asarray(g_policy["policy"]["hidden_0"]["kernel"]).any()
    assert np.asarray(g_belief["policy"]["belief"]["out"]["kernel"]).any()


def test_an_export_saying_it_reads_its_belief_must_hold_it(reading, tmp_path):
    from coupjax.inference import read_export

    _, _, _, _, run = reading
    info = json.loads((run / "export" / "policy.json").read_text())
    for name, change in (("no flag", lambda i: i.pop("policy_reads_belief")),
                         ("no sizes", lambda i: i.pop("belief_hidden_sizes"))):
        bad = tmp_path / name
        bad.mkdir()
        (bad / "params.msgpack").write_bytes((run / "export" / "params.msgpack").read_bytes())
        wrong = dict(info)
        change(wrong)
        (bad / "policy.json").write_text(json.dumps(wrong))
        with pytest.raises(ValueError, match="corrupt"):
            read_export(bad)


def test_driver_runs_resumes_and_logs(setup, tmp_path, monkeypatch):
    """One driver for DQN and self-play: W&B offline files, checkpoints, export, summary;
    an interrupted run resumed gives the same export as a straight one."""
    from coupjax.inference import read_export
    from training.train import run_training

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wb"))
    summary = run_training(setup.config, tmp_path / "straight", setup=setup, quiet=True)
    assert any(p.suffix == ".wandb" for p in (tmp_path / "wb").rglob("*")), "no W&B files"
    assert summary["chunks_done"] == 2 and summary["algo"] == "selfplay" and summary["env_steps_per_s"] > 0
    assert "league/win_rate_vs_honest" in summary["final"]
    first = run_training(setup.config, tmp_path / "split", use_wandb=False, setup=setup, quiet=True, stop_after=1)
    assert first["chunks_done"] == 1 and not (tmp_path / "split" / "export").exists()
    run_training(setup.config, tmp_path / "split", resume=True, use_wandb=False, setup=setup, quiet=True)
    assert _same(read_export(tmp_path / "straight")[1], read_export(tmp_path / "split")[1])


# ------------------------------------------------------------------ configs
def test_config_errors_are_one_line(tmp_path, capsys):
    with pytest.raises(ConfigError, match="config key 'magnet_coeff' is not known; did you mean 'magnet_coef'"):
        config_from_dict({"algo": "selfplay", "magnet_coeff": 0.1})
    with pytest.raises(ConfigError, match="'self_weight' \\+ 'snapshot_weight' must be at most 1"):
        config_from_dict({"algo": "selfplay", "self_weight": 0.7, "snapshot_weight": 0.5})
    with pytest.raises(ConfigError, match="'num_minibatches'"):
        config_from_dict({"algo": "selfplay", "num_envs": 6, "rollout_steps": 1, "num_minibatches": 4})
    with pytest.raises(ConfigError, match="'export_seed'"):
        config_from_dict({"algo": "selfplay", "export_seed": 2, "num_seeds": 2})
    with pytest.raises(ConfigError, match="'opponents'.*did you mean 'belief_ev'"):
        config_from_dict({"algo": "selfplay", "opponents": {"belief_evv": 1}})
    with pytest.raises(ConfigError, match="'policy_reads_belief' needs a belief MLP of its own"):
        config_from_dict({"algo": "selfplay", "policy_reads_belief": True, "belief_hidden_sizes": []})
    for wrong in ({"policy_reads_belief": True}, {"belief_hidden_sizes": []}):
        with pytest.raises(ConfigError, match="'policy_reads_posterior' needs"):
            config_from_dict({"algo": "selfplay", "policy_reads_posterior": True, **wrong})
    for name in ("selfplay_cpu", "selfplay_gpu", "recipe_cpu", "recipe_gpu"):
        assert isinstance(load_config(ROOT / "configs" / f"{name}.yaml"), SelfPlayConfig)
    bad = tmp_path / "bad.yaml"
    bad.write_text("algo: selfplay\nrollout_step: 8\n")
    from training.train import main

    with pytest.raises(SystemExit) as info:
        main(["--config", str(bad), "--run-dir", str(tmp_path / "r"), "--no-wandb"])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and len(err.splitlines()) == 1 and "did you mean 'rollout_steps'" in err, err
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["selfplay_gpu", "recipe_gpu"])
def test_gpu_config_smoke_on_cpu(tmp_path, name):
    """A GPU config as it is, cut to one chunk of one update, on this CPU (the recipe's
    twin reads the posterior with two seeds under `vmap`, where nothing is gathered).
    Quick twin: test_chunks_train_every_seed_and_league."""
    env = dict(os.environ, WANDB_MODE="offline", PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "training.train", "--config", str(ROOT / "configs" / f"{name}.yaml"),
           "--run-dir", str(tmp_path / "gpu"), "--no-wandb", "--quiet", "--set", "num_chunks=1",
           "--set", "updates_per_chunk=1", "--set", "eval_games=0"]
    res = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads((tmp_path / "gpu" / "summary.json").read_text())
    assert summary["chunks_done"] == 1 and summary["env_steps"] > 0
    assert load_policy(tmp_path / "gpu").info["kind"] == "selfplay"


def test_a_run_saved_before_a_key_existed_resumes_at_its_default(tmp_path):
    """A cut run whose config.json predates ``policy_reads_belief`` resumes (the key is at
    its default); one saved with the key on does not resume with it off."""
    cfg = config_to_dict(config_from_dict(TINY))
    (tmp_path / "checkpoints").mkdir()
    saved = {k: v for k, v in cfg.items() if k != "policy_reads_belief"}
    (tmp_path / "config.json").write_text(json.dumps(saved))
    check_run_dir(tmp_path, cfg, resume=True)
    (tmp_path / "config.json").write_text(json.dumps({**saved, "policy_reads_belief": True}))
    with pytest.raises(RunDirError, match="policy_reads_belief"):
        check_run_dir(tmp_path, cfg, resume=True)
