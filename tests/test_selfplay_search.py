"""``selfplay_search`` (`coupjax.search.selfplay_search`) on a tiny self-play export made here.

The export comes from `training.selfplay.export` of an untrained run (only ``init`` is
compiled), with its value head (``value_file``), which scores cut rollouts.  The slow tests run the policy's full checks.
"""
from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import serialization

from coupjax import Env, testing
from coupjax import rules
from coupjax.beliefs import posterior
from coupjax.policies import resolve_policy
from coupjax.search import selfplay_search
from coupjax.observation import parse
from training.config import config_from_dict

selfplay = pytest.importorskip("training.selfplay", reason="self-play training (issue 16) is not on this branch")

TINY = dict(algo="selfplay", seed=3, num_envs=8, rollout_steps=8, num_minibatches=2, num_epochs=1,
            updates_per_chunk=3, num_chunks=2, hidden_sizes=[16], belief_hidden_sizes=[32], num_snapshots=2,
            snapshot_every=2, opponents={"random": 1, "honest": 1}, num_seeds=1, export_temperature=1.0)
SMALL = "num_worlds=2,rollouts_per_world=2,max_rollout_steps=4,lanes=256"


@pytest.fixture(scope="module")
def env():
    return Env(4)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """An untrained self-play run whose export carries the value head of its parameters."""
    setup = selfplay.make_train(config_from_dict(TINY))
    rs = setup.init(jax.random.PRNGKey(3))
    run_dir = tmp_path_factory.mktemp("sp") / "run"
    d = selfplay.export(setup, rs, run_dir)
    value = jax.tree.map(lambda x: np.asarray(x[0]), jax.device_get(rs.params["value"]))
    info = json.loads((d / "policy.json").read_text())
    assert info["value_hidden_sizes"] == TINY["hidden_sizes"]
    written = serialization.msgpack_restore((d / info["value_file"]).read_bytes())
    assert jax.tree_util.tree_all(jax.tree.map(np.array_equal, written, value))
    return run_dir


@pytest.fixture(scope="module")
def positions(env):
    states = testing.sample_positions(env, 24, 0)
    return states, testing.scramble_positions(states, 1)


def test_selfplay_search_passes_check_policy(env, run, positions):
    pol = resolve_policy(f"selfplay_search:{run},belief=learned,{SMALL}", env)
    assert pol.belief == "learned" and pol.value_source == "value head"
    cfg = pol.config
    assert cfg.num_worlds == 2 and cfg.world_sampler is not None and cfg.cut_value is not None
    assert cfg.rollout_policy.info["kind"] == "selfplay" and cfg.prior_policy.info["kind"] == "selfplay"
    report = testing.check_policy(pol, env, *positions, check_traces=False)
    assert report["positions"] == 24


def test_spec_errors_name_the_problem(env, run, tmp_path):
    with pytest.raises(ValueError, match="unknown selfplay_search option 'bogus'"):
        resolve_policy(f"selfplay_search:{run},bogus=1", env)
    with pytest.raises(ValueError, match="belief must be one of"):
        resolve_policy(f"selfplay_search:{run},belief=oracle", env)
    with pytest.raises(ValueError, match="needs a self-play run directory"):
        resolve_policy("selfplay_search", env)
    with pytest.raises(ValueError, match="no exported policy"):
        selfplay_search.make_selfplay_search(env, tmp_path / "nothing")
    from training import checkpoint
    from coupjax.networks import init_params, make_network

    params = init_params(make_network(env, (8,)), jax.random.PRNGKey(0), env.observation_shape[0])
    checkpoint.write_export(tmp_path / "dqn", params, kind="dqn", num_players=4, hidden_sizes=(8,),
                   obs_dim=env.observation_shape[0], num_actions=env.num_actions, temperature=0.0, config={})
    with pytest.raises(ValueError, match="not a self-play run"):
        selfplay_search.make_selfplay_search(env, tmp_path / "dqn")


def test_value_cut_is_the_value_head_on_the_seats_view(env, run, positions):
    states, _ = positions
    value = selfplay_search.load_value(run)
    cut = selfplay_search.value_cut(env, value)
    seats = jnp.arange(4)
    got = jax.jit(jax.vmap(lambda s: jax.vmap(lambda q: cut(s, q))(seats)))(states)  # [B, n]
    head = jax.jit(jax.vmap(lambda s: jax.vmap(lambda q: value(env.observe(s, q)))(seats)))(states)
    alive = np.asarray(states._hands)[:, :, 0] >= 0
    assert (~alive).any() and alive.any()
    want = np.where(alive, np.clip(np.asarray(head), -1 / 3, 1.0), -1 / 3)
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-6)


def _holds(worlds, seat_rel, role):
    return np.asarray((worlds.hands[:, seat_rel, :] == role).any(axis=-1))


@pytest.mark.slow
def test_learned_worlds_keep_the_facts_and_follow_the_belief(env, positions):
    """A belief sure that opponent 1 holds role r (where it may) moves the sampled worlds
    there; every world still holds 3 copies of each role with the visible cards.
    Quick twin: test_sampled_worlds_respect_public_facts."""
    states, _ = positions
    K = 64
    hidden = np.asarray(jax.jit(jax.vmap(lambda o: parse(o, 4).hidden))(states.observation))
    b = int(np.argmax(hidden[:, 1] == 2))  # opponent 1 holds two hidden cards
    obs = states.observation[b]
    v = parse(obs, 4)
    free = np.asarray(v.unseen) - 3 * np.asarray(v.disproven[1])  # unseen copies opponent 1 may hold
    role = int(np.argmax(free))
    assert hidden[b, 1] == 2 and free[role] > 0
    sure = jnp.zeros((3, rules.NUM_ROLES)).at[0, role].set(1.0)
    sampler = selfplay_search.learned_world_sampler(lambda o: jnp.where(sure > 0, 0.999, 0.2), oversample=8)
    both = jax.jit(lambda k, o: (sampler(k, o, 4, K), posterior.sample_worlds(k, o, 4, K, selfplay_search.NEUTRAL)))
    learned, neutral = both(jax.random.PRNGKey(1), obs)
    assert _holds(learned, 1, role).mean() > _holds(neutral, 1, role).mean() + 0.2
    hands, deck, drawn = (np.asarray(x) for x in learned)
    visible = np.asarray(v.visible)
    other_draw = drawn if int(v.exchanger) > 0 else np.full((K, 0), -1)
    cards = np.concatenate([hands[:, 1:].reshape(K, -1), deck, other_draw], axis=1)
    counts = (cards[:, :, None] == np.arange(rules.NUM_ROLES)).sum(axis=1) + visible
    np.testing.assert_array_equal(counts, np.full((K, rules.NUM_ROLES), 3))  # every world: 3 of each role
    np.testing.assert_array_equal(hands[:, 0], np.broadcast_to(np.asarray(v.own_cards), (K, 2)))
    np.testing.assert_array_equal((hands[:, 1:] >= 0).sum(axis=-1), np.broadcast_to(np.asarray(v.hidden)[1:], (K, 3)))


@pytest.mark.slow
@pytest.mark.parametrize("options", ["", "belief=learned", "mode=expected,value=heuristic,num_worlds=2",
                                     "mode=thompson,num_worlds=3,tau=0.5"])
def test_selfplay_search_variants_pass_check_policy(env, run, options):
    """Quick twin: test_selfplay_search_passes_check_policy."""
    spec = f"selfplay_search:{run}" + (f",{options}" if options else "")
    states = testing.sample_positions(env, 64, 2)
    testing.check_policy(resolve_policy(spec, env), env, states, testing.scramble_positions(states, 3))


def test_a_corrupt_or_missing_head_file_is_named(run, tmp_path):
    import shutil

    from coupjax.inference import read_msgpack

    d = tmp_path / "run"
    shutil.copytree(run, d)
    (d / "export" / "value.msgpack").write_bytes(b"\xc1 not msgpack")
    with pytest.raises(ValueError, match=r"corrupt value file .*value\.msgpack"):
        selfplay_search.read_head(d, "value")
    (d / "export" / "value.msgpack").unlink()
    with pytest.raises(ValueError, match=r"missing value file .*value\.msgpack"):
        selfplay_search.read_head(d, "value")
    with pytest.raises(ValueError, match="missing parameter file"):
        read_msgpack(d / "export" / "nothing.msgpack", "parameter")
