"""Tests of the training package (tiny configs; one shared compile of the DQN chunk)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import Env
from coupjax.game.views import NUM_SEAT_FEATURES
from coupjax.inference import load_policy
from coupjax.networks import apply_mlp
from training import checkpoint
from training.buffer import make_replay_buffer
from training.config import ConfigError, config_from_dict, load_config
from training.dqn import (MaskedEpsilonGreedy, bellman_target, exploration_distribution, make_train, masked_greedy,
                          sync_target)
from training.rewards import RewardInputs, make_reward

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(num_envs=4, batch_size=8, buffer_size=64, warmup_steps=8, updates_per_chunk=6, num_chunks=2,
            target_update_steps=3, hidden_sizes=[16], opponents="random", reward="win", epsilon_decay_steps=10,
            checkpoint_every=1, max_checkpoints=3, seed=3)


def _skip_unless_selected(request):
    """Slow tests run only when chosen with ``-m slow`` (pyproject's marker note)."""
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("slow: select with -m slow")


def _same(a, b):
    return jax.tree.all(jax.tree.map(lambda x, y: bool(np.array_equal(np.asarray(x), np.asarray(y))), a, b))


@pytest.fixture(scope="module")
def setup():
    return make_train(config_from_dict(TINY))


@pytest.fixture(scope="module")
def two_chunks(setup):
    """(initial state, after 1 chunk, after 2 chunks, metrics of chunk 2)."""
    rs0 = setup.init(jax.random.PRNGKey(setup.config.seed))
    rs1, _ = setup.train_chunk(rs0)
    rs2, m2 = setup.train_chunk(rs1)
    return rs0, rs1, rs2, jax.device_get(m2)


# ------------------------------------------------------------------ pure pieces
def test_bellman_target_by_hand():
    # 3 transitions, 4 actions.  Action 3 has the largest next value but is illegal in rows 0 and 1.
    reward = jnp.array([1.0, 0.5, -1.0])
    done = jnp.array([False, False, True])
    next_q = jnp.array([[0.2, 0.7, -0.3, 9.0],
                        [-1.0, -2.0, -0.5, 5.0],
                        [3.0, 4.0, 5.0, 6.0]])
    next_mask = jnp.array([[True, True, True, False],
                           [True, True, True, False],
                           [True, True, True, True]])
    y = bellman_target(reward, done, next_q, next_mask, 0.9)
    # row 0: 1 + 0.9 * 0.7 = 1.63; row 1: 0.5 + 0.9 * (-0.5) = 0.05; row 2: terminal -> -1
    np.testing.assert_allclose(np.asarray(y), [1.63, 0.05, -1.0], rtol=1e-6)
    # double DQN: the online argmax over legal actions picks the target's value
    online = jnp.array([[5.0, 0.0, 1.0, 99.0], [0.0, 3.0, 1.0, 99.0], [0.0, 0.0, 0.0, 0.0]])
    y2 = bellman_target(reward, done, next_q, next_mask, 0.9, online)
    np.testing.assert_allclose(np.asarray(y2), [1.0 + 0.9 * 0.2, 0.5 + 0.9 * -2.0, -1.0], rtol=1e-6)


def test_greedy_and_exploration_respect_the_mask():
    q = jnp.array([[5.0, 1.0, 2.0, 3.0], [0.0, 0.0, -1.0, 7.0]])
    mask = jnp.array([[False, True, True, False], [True, False, True, False]])
    np.testing.assert_array_equal(np.asarray(masked_greedy(q, mask)), [2, 0])
    eg = MaskedEpsilonGreedy(q, mask, 0.2)
    np.testing.assert_allclose(np.asarray(eg.probs), [[0, 0.1, 0.9, 0], [0.9, 0, 0.1, 0]], atol=1e-6)
    h = -(0.1 * np.log(0.1) + 0.9 * np.log(0.9))
    np.testing.assert_allclose(np.asarray(eg.entropy()), [h, h], rtol=1e-5)
    sm = exploration_distribution(q, mask, "boltzmann", temperature=0.5)
    p = np.asarray(sm.probs)
    assert (p[~np.asarray(mask)] == 0).all() and np.allclose(p.sum(-1), 1)
    np.testing.assert_allclose(p[0, 1:3], np.exp([2.0, 4.0]) / np.exp([2.0, 4.0]).sum(), rtol=1e-5)
    a = np.asarray(jax.vmap(lambda k: eg.sample(seed=k))(jax.random.split(jax.random.PRNGKey(0), 500)))
    assert np.asarray(mask)[np.arange(2)[None, :], a].all()


def test_target_sync_exactly_every_n_updates():
    n = 4
    params, target = {"w": jnp.zeros(())}, {"w": jnp.zeros(())}
    synced_at = []
    for u in range(1, 14):
        params = {"w": params["w"] + 1.0}  # one update
        new_target = sync_target(jnp.int32(u), n, params, target)
        if float(new_target["w"]) != float(target["w"]):
            synced_at.append(u)
        target = new_target
    assert synced_at == [4, 8, 12]


def test_target_sync_in_training(setup, two_chunks):
    rs0, rs1, rs2, m2 = two_chunks
    n = setup.config.target_update_steps
    u1, u2 = int(rs1.updates), int(rs2.updates)
    assert int(m2["target_syncs"]) == u2 // n - u1 // n
    assert _same(rs2.target_params, rs2.params) == (u2 % n == 0)


def test_buffer_wraps_around_and_samples_valid_rows():
    buf = make_replay_buffer(capacity=8, num_envs=2, batch_size=64)  # 4 rows of 2
    add, sample = jax.jit(buf.add), jax.jit(buf.sample)  # op by op, every call dispatches each op anew
    state = buf.init({"x": jnp.int32(0)})
    state = add(state, {"x": jnp.array([1, 2])})
    assert not bool(buf.can_sample(state))
    s = sample(state, jax.random.PRNGKey(0))
    assert set(np.asarray(s["x"]).tolist()) == {1, 2}
    for t in range(2, 7):  # 6 rows added in all: rows of t = 1, 2 overwritten by 5, 6
        state = add(state, {"x": jnp.array([2 * t - 1, 2 * t])})
    assert int(state.size) == 4 and int(state.index) == 2
    assert sorted(np.asarray(state.data["x"]).ravel().tolist()) == list(range(5, 13))
    s = np.asarray(sample(state, jax.random.PRNGKey(1))["x"])
    assert set(s.tolist()) == set(range(5, 13))  # only valid, newest items, each one reached
    # sharded sampling returns the matching block of the unsharded sample
    sh = make_replay_buffer(capacity=8, num_envs=2, batch_size=64, num_shards=2)
    parts = []
    for d in range(2):
        local = type(state)(data={"x": state.data["x"][:, d:d + 1]}, index=state.index, size=state.size)
        parts.append(np.asarray(jax.jit(sh.sample)(local, jax.random.PRNGKey(1), shard_index=d)["x"]))
    np.testing.assert_array_equal(np.concatenate(parts), s)


def test_rewards_by_hand():
    env = Env(4)
    lay = env.obs_layout
    start, _ = lay["seats"]
    obs0 = np.zeros(env.observation_shape, np.float32)
    obs1 = obs0.copy()
    for k in range(4):
        obs0[start + NUM_SEAT_FEATURES * k + 2] = 1.0  # all alive
        obs1[start + NUM_SEAT_FEATURES * k + 2] = 1.0
    obs0[start] = 2.0
    obs1[start] = 5.0  # +3 coins
    obs1[start + NUM_SEAT_FEATURES * 2 + 2] = 0.0  # one opponent eliminated
    x = RewardInputs(obs=jnp.asarray(obs0), next_obs=jnp.asarray(obs1), done=jnp.array(False), won=jnp.array(False),
                     engine_reward=jnp.float32(0))
    assert float(make_reward("shaped", 4)(x)) == 4.0
    assert float(make_reward("win", 4)(x)) == 0.0
    assert float(make_reward("win", 4)(x.replace(done=jnp.array(True), won=jnp.array(True)))) == 1.0
    assert float(make_reward("engine", 4)(x.replace(done=jnp.array(True), engine_reward=jnp.float32(-1 / 3)))) \
        == pytest.approx(-1 / 3)


# ------------------------------------------------------------------ the learner's view
def test_learner_transitions_are_at_learner_decisions(setup, two_chunks):
    rs0, rs1, _, _ = two_chunks
    ls = rs1.learner
    s = ls.env_state
    assert not bool(s.terminated.any())
    np.testing.assert_array_equal(np.asarray(s.current_player), np.asarray(ls.seat))
    data = rs1.buffer.data
    rows = int(rs1.buffer.size)
    mask, act = np.asarray(data.mask[:rows]), np.asarray(data.action[:rows])
    assert np.take_along_axis(mask, act[..., None], -1).all()  # the learner only took legal actions
    done = np.asarray(data.done[:rows])
    assert np.asarray(data.next_mask[:rows])[done].all()
    r = np.asarray(data.reward[:rows])
    assert set(np.unique(r).tolist()) <= {0.0, 1.0} and (r[~done] == 0).all()


# ------------------------------------------------------------------ checkpoints and export
def test_resume_equals_uninterrupted(setup, two_chunks, tmp_path):
    rs0, rs1, rs2, _ = two_chunks
    manager = checkpoint.checkpoint_manager(tmp_path / "ckpt")
    checkpoint.save_checkpoint(manager, 1, rs1, {"note": "tiny"})
    host, cfg, step = checkpoint.restore_checkpoint(tmp_path / "ckpt", setup.abstract_state())
    assert step == 1 and cfg == {"note": "tiny"}
    resumed, _ = setup.train_chunk(setup.put(host))
    assert _same(resumed.params, rs2.params)
    assert _same(resumed, rs2)  # buffer, games, key, counters too


def test_missing_or_corrupt_checkpoint_is_named(setup, tmp_path):
    with pytest.raises(ValueError, match="no checkpoint"):
        checkpoint.restore_checkpoint(tmp_path / "nothing", setup.abstract_state())
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="empty"):
        checkpoint.restore_checkpoint(tmp_path / "empty", setup.abstract_state())


def test_export_load_act(setup, two_chunks, tmp_path):
    from training.dqn import export_dqn

    _, _, rs2, _ = two_chunks
    export_dqn(setup, rs2.params, tmp_path / "run" / "export")
    env = setup.env
    state = jax.jit(env.init)(jax.random.PRNGKey(5))  # jitted: op by op, one engine step compiles hundreds of kernels
    for a in (2, 0):  # tax, then a reaction window: some actions are illegal
        state = jax.jit(env.step)(state, jnp.int32(a), jax.random.PRNGKey(a))
    for path in (tmp_path / "run", tmp_path / "run" / "export"):
        pol = load_policy(path)
        logits = np.asarray(jax.jit(pol)(jax.random.PRNGKey(0), state))
        mask = np.asarray(state.legal_action_mask)
        assert (~mask).any() and np.isneginf(logits[~mask]).all() and np.isfinite(logits[mask]).all()
        q = np.asarray(setup.network.apply({"params": rs2.params}, state.observation))
        np.testing.assert_allclose(np.asarray(apply_mlp(pol.params, state.observation, 4)), q, rtol=1e-5, atol=1e-6)
        assert np.argmax(logits) == np.argmax(np.where(mask, q, -np.inf))
    soft = load_policy(tmp_path / "run", temperature=0.5)(None, state)
    assert np.isneginf(np.asarray(soft)[~mask]).all()
    with pytest.raises(ValueError, match="nowhere"):
        load_policy(tmp_path / "nowhere")
    (tmp_path / "run" / "export" / "params.msgpack").write_bytes(b"not msgpack")
    with pytest.raises(ValueError, match="params.msgpack"):
        load_policy(tmp_path / "run")


# ------------------------------------------------------------------ config
def test_config_errors_name_the_key(tmp_path):
    with pytest.raises(ConfigError, match="config key 'lr' is not known; did you mean 'learning_rate'"):
        config_from_dict({"lr": 0.1})
    with pytest.raises(ConfigError, match="'gamma'"):
        config_from_dict({"gamma": 1.5})
    with pytest.raises(ConfigError, match="'exploration'"):
        config_from_dict({"exploration": "greedy"})
    with pytest.raises(ConfigError, match="'opponents'.*'honset'.*'honest'"):
        config_from_dict({"opponents": {"honset": 1}})
    with pytest.raises(ConfigError, match="'batch_size'"):
        config_from_dict({}, ["batch_size=-3"])
    for name in ("dqn_coupvisor", "dqn_cpu", "ablation_epsilon", "ablation_boltzmann"):
        load_config(ROOT / "configs" / f"{name}.yaml")
    cv = load_config(ROOT / "configs" / "dqn_coupvisor.yaml")
    assert (cv.seed, cv.gamma, cv.learning_rate, cv.batch_size, cv.buffer_size, cv.warmup_steps,
            cv.target_update_steps, cv.hidden_sizes, cv.reward) == (42, 0.98, 1e-3, 64, 10000, 256, 200, (128, 128),
                                                                    "shaped")
    bad = tmp_path / "bad.yaml"
    bad.write_text("num_envs: 4\nbatchsize: 8\n")
    from training.train import main

    with pytest.raises(SystemExit) as info:
        main(["--config", str(bad), "--run-dir", str(tmp_path / "r"), "--no-wandb"])
    assert info.value.code == 2
    assert not (tmp_path / "r").exists()  # stopped before any work


# ------------------------------------------------------------------ W&B
def test_wandb_offline_run_writes_files(setup, tmp_path, monkeypatch):
    from training.train import run_training

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wb"))
    summary = run_training(setup.config, tmp_path / "run", setup=setup, quiet=True)
    files = [p for p in (tmp_path / "wb").rglob("*") if p.is_file()]
    assert any(p.suffix == ".wandb" for p in files), files
    assert (tmp_path / "run" / "export" / "policy.json").is_file()
    assert summary["chunks_done"] == setup.config.num_chunks and summary["env_steps_per_s"] > 0
    assert (tmp_path / "run" / "checkpoints").is_dir()


# ------------------------------------------------------------------ data parallel
MULTI = textwrap.dedent("""
    from coupjax import compile_cache
    compile_cache.enable()  # before JAX starts: the quick CPU compiles and the persistent cache, as every command
    import json, sys, jax, numpy as np
    from training.config import config_from_dict
    from training.dqn import make_train
    cfg = config_from_dict(json.loads(sys.argv[1]))
    out = {}
    for d in (1, 4):
        s = make_train(cfg, devices=jax.devices()[:d])
        rs = s.init(jax.random.PRNGKey(7))
        rs, m = s.train_chunk(rs)
        out[d] = (jax.device_get(rs.params), int(m["updates_in_chunk"]), int(m["games"]),
                  {str(sh) for sh in jax.tree.leaves(jax.tree.map(lambda x: len(x.sharding.device_set), rs))})
    p1, p4 = out[1][0], out[4][0]
    err = max(float(np.max(np.abs(a - b))) for a, b in zip(jax.tree.leaves(p1), jax.tree.leaves(p4)))
    print(json.dumps({"devices": len(jax.devices()), "err": err, "updates": [out[1][1], out[4][1]],
                      "games": [out[1][2], out[4][2]], "spread": sorted(out[4][3])}))
""")


def test_multi_device_step_matches_one_device():
    cfg = dict(TINY, num_envs=8, batch_size=8, updates_per_chunk=4, warmup_steps=16, learning_rate=1e-4)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4 --xla_backend_optimization_level=0",
               JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", MULTI, json.dumps(cfg)], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["devices"] == 4
    assert out["updates"][0] == out["updates"][1] > 0
    assert out["games"][0] == out["games"][1]
    assert "4" in out["spread"]  # some state really lives on 4 devices
    assert out["err"] < 1e-5, out


def test_cli_resume_after_interruption_matches(setup, tmp_path):
    from coupjax.inference import read_export
    from training.train import run_training

    run_training(setup.config, tmp_path / "straight", use_wandb=False, setup=setup, quiet=True)
    first = run_training(setup.config, tmp_path / "split", use_wandb=False, setup=setup, quiet=True, stop_after=1)
    assert first["chunks_done"] == 1 and not (tmp_path / "split" / "export").exists()
    with pytest.raises(ValueError, match="--resume"):
        run_training(setup.config, tmp_path / "split", use_wandb=False, setup=setup, quiet=True)
    run_training(setup.config, tmp_path / "split", resume=True, use_wandb=False, setup=setup, quiet=True)
    assert _same(read_export(tmp_path / "straight")[1], read_export(tmp_path / "split")[1])


# ------------------------------------------------------------------ behaviour cloning
def test_bc_collect_numbers_games():
    """Every row carries its game: within a game the turn never goes back, and a new game
    of a lane starts at turn 0."""
    from coupjax.observation import parse
    from training.bc import collect_dataset

    env = Env(4)
    data = collect_dataset(env, {"random": 1.0}, 6, jax.random.PRNGKey(0), num_envs=4, steps=48)
    turn = np.asarray(jax.jit(jax.vmap(lambda o: parse(o, 4).turn))(jnp.asarray(data["obs"])))
    game = data["game"]
    assert len(np.unique(game)) >= 6 and set(np.unique(game)) == set(range(game.max() + 1))
    for g in np.unique(game):
        t = turn[game == g]  # rows in time order
        assert (np.diff(t) >= 0).all(), g
    assert (turn[np.unique(game, return_index=True)[1]] == 0).all()
    assert len(game) > 4 * 48  # several calls: the ids stay unique across them


def test_bc_validation_holds_out_whole_games():
    """Each game's rows share one observation (a one-hot of the game) and one logged action
    drawn per game: a model can only match a validation row by having trained on rows of
    its game.  Held-out games stay at chance; a row split would leak them (match ~1)."""
    from coupjax.networks import observation_scale
    from training.bc import fit, held_out_games, split_rows

    env = Env(4)
    G, per_game = 100, 8
    rng = np.random.default_rng(0)
    where = np.nonzero(observation_scale(4) > 0)[0][:G]
    obs = np.zeros((G * per_game, env.observation_shape[0]), np.float32)
    game = np.repeat(np.arange(G), per_game)
    obs[np.arange(G * per_game), where[game]] = 1.0
    mask = np.zeros((G * per_game, env.num_actions), bool)
    mask[:, :4] = True
    action = rng.integers(0, 4, G)[game].astype(np.int32)
    data = {"obs": obs, "mask": mask, "action": action, "game": game}
    tr, val = split_rows(data, 0.2, jax.random.PRNGKey(1))
    assert len(val) and not set(game[tr]) & set(game[val])
    held = held_out_games(game, 0.2, np.random.default_rng(2))
    assert held.sum() == 20 * per_game and not set(game[held]) & set(game[~held])
    cfg = config_from_dict({"algo": "bc", "model": "logreg", "learning_rate": 0.1, "batch_size": 32, "epochs": 15,
                            "val_fraction": 0.2})
    _, history = fit(cfg, env, data, jax.random.PRNGKey(1))
    assert history[-1]["train_match"] > 0.9  # the training games are learnt
    assert history[-1]["val_match"] < 0.6, history[-1]  # the held-out games are not: chance is 0.25
    with pytest.raises(ValueError, match="game"):
        fit(cfg, env, {k: data[k] for k in ("obs", "mask", "action")}, jax.random.PRNGKey(1))


@pytest.mark.slow
def test_bc_collect_fit_export_load(tmp_path, request):
    """Quick twins: test_bc_collect_numbers_games, test_bc_validation_holds_out_whole_games."""
    _skip_unless_selected(request)
    from training.bc import run_bc

    cfg = config_from_dict({"algo": "bc", "model": "logreg", "num_games": 20, "epochs": 2, "batch_size": 256,
                            "teachers": {"honest": 1, "bluffer": 1}})
    summary = run_bc(cfg, tmp_path / "bc", use_wandb=False, quiet=True)
    assert summary["samples"] > 0 and summary["final"]["val_match"] > 0.3
    pol = load_policy(tmp_path / "bc")
    assert pol.info["kind"] == "bc_logreg"
    env = Env(4)
    state = env.step(env.init(jax.random.PRNGKey(1)), 2, jax.random.PRNGKey(2))
    logits = np.asarray(pol(None, state))
    mask = np.asarray(state.legal_action_mask)
    assert np.isneginf(logits[~mask]).all() and np.isfinite(logits[mask]).all()
    probs = np.asarray(jax.nn.softmax(jnp.asarray(logits)))
    own = np.asarray(jax.nn.softmax(jnp.where(mask, pol.values(state.observation), -jnp.inf)))
    np.testing.assert_allclose(probs, own, rtol=1e-5, atol=1e-7)  # temperature 1: the cloned distribution


@pytest.mark.slow
def test_pure_train_equals_chunked(setup, two_chunks, request):
    """Quick twin: test_resume_equals_uninterrupted."""
    _skip_unless_selected(request)
    _, _, rs2, _ = two_chunks
    rs, metrics = setup.train(jax.random.PRNGKey(setup.config.seed))
    assert _same(rs.params, rs2.params) and metrics["win_rate"].shape == (setup.config.num_chunks,)


# ------------------------------------------------------------------ a second start
SELFPLAY_TINY = dict(algo="selfplay", seed=3, num_envs=8, rollout_steps=8, num_minibatches=2, num_epochs=1,
                     updates_per_chunk=2, num_chunks=2, hidden_sizes=[16], belief_hidden_sizes=[16], num_snapshots=2,
                     snapshot_every=2, opponents="random", anneal_lr=True, learning_rate=3e-2)


def test_a_second_start_of_another_seed_and_length_traces_and_compiles_nothing(tmp_path, monkeypatch):
    """The driver's chunk is traced once per config shape (`training.train.compiled_program`):
    a start with another seed and ``num_chunks`` loads the saved trace and XLA's executable,
    and the annealed learning rate's horizon is the runner state's, not a constant of the
    saved program (another horizon, another update)."""
    from coupjax import compile_cache
    from training.selfplay import make_train as make_selfplay
    from training.train import compiled_program

    monkeypatch.setattr(compile_cache, "export_folder", lambda: str(tmp_path))  # a cold folder of saved traces

    def start(**changes):
        s = make_selfplay(config_from_dict({**SELFPLAY_TINY, **changes}))
        rs = s.for_this_run(s.init(jax.random.PRNGKey(s.config.seed)))
        with compile_cache.counting() as counts:
            chunk = compiled_program(s, "train-chunk", s.train_chunk, (rs,), say=lambda line: None)
        return s, rs, chunk, counts

    _, _, _, first = start()
    assert first.traced == ["flat", "call"]  # the chunk (traced into `flat`, the saved trace), then its call
    s, rs, chunk, second = start(seed=4, num_chunks=7)
    assert second.traced == ["call"] and second.misses == 0, (second.traced, second.misses)
    assert int(rs.lr_steps[0]) == 7 * 2 * 1 * 2  # this run's horizon, not that of the 2 chunks traced first
    short = rs.replace(lr_steps=jax.device_put(np.ones(rs.lr_steps.shape, np.int32), rs.lr_steps.sharding))
    (after, _), (after_short, _) = chunk(rs), chunk(short)  # a horizon of 1 step: no update after the first
    assert not _same(after.params, after_short.params)


def test_the_compile_log_says_what_compiles_and_where_the_time_went():
    """A log written to a file shows what a start waits for: a line before compiling and
    one after with the time, JAX's stages and the persistent cache's hits."""
    from coupjax import compile_cache

    lines, x = [], jnp.float32(1)
    with compile_cache.compile_log("a tiny sum", lines.append) as counts:
        assert lines == ["compiling a tiny sum"]
        jax.jit(lambda x: x * 2.0 + 1.0).lower(x).compile()
    assert len(lines) == 2 and lines[1].startswith("a tiny sum: ready in ")
    assert counts.traced == ["<lambda>"] and counts.total >= sum(counts.seconds.values()) - 1e-6
    if jax.config.jax_compilation_cache_dir:  # the cache is on: the executable was looked up there
        assert counts.hits + counts.misses == 1 and "of 1 from the cache" in lines[1]
