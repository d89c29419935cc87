"""Expert iteration in self-play (training.search_targets): the searched decisions, the
targets' information, and a training chunk that uses them."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import rules
from coupjax.game import board
from coupjax.networks import posterior_features
from coupjax.testing import check_policy, sample_positions
from training.config import ConfigError, config_from_dict
from training.league import masked_log_softmax
from coupjax.observation import parse
from training.search_targets import (SearchTargets, cross_entropy, facing_impossible_claim, make_search_targets,
                                     RANDOM_DECISIONS, pick_decisions, random_positions)
from training.selfplay import make_train

TINY = dict(algo="selfplay", seed=3, num_envs=8, rollout_steps=8, num_minibatches=2, num_epochs=1,
            updates_per_chunk=2, num_chunks=1, hidden_sizes=[16], belief_hidden_sizes=[16], num_snapshots=2,
            snapshot_every=2, opponents={"random": 1, "honest": 1}, num_seeds=1, learning_rate=3e-3,
            search_target_coef=1.0, search_target_states=4, search_target_rollout_steps=2)


@pytest.fixture(scope="module")
def setup():
    return make_train(config_from_dict(TINY))


def test_pick_decisions_draws_distinct_decisions_with_a_choice(setup):
    states = sample_positions(setup.env, 64, seed=4)
    single = jnp.arange(64) % 3 == 0  # a third left with one legal action (a forced move)
    forced = jnp.arange(states.legal_action_mask.shape[-1]) == jnp.argmax(states.legal_action_mask, -1)[:, None]
    states = states.replace(legal_action_mask=jnp.where(single[:, None], forced, states.legal_action_mask))
    choice = np.asarray(states.legal_action_mask.sum(-1) > 1)
    for count in (8, 64):
        idx, valid = jax.jit(pick_decisions, static_argnums=2)(jax.random.PRNGKey(0), states, count)
        idx, valid = np.asarray(idx), np.asarray(valid)
        assert len(set(idx.tolist())) == count
        np.testing.assert_array_equal(valid, choice[idx])
        assert valid.sum() == min(count, choice.sum())


def test_random_positions_reach_claims_that_are_false_for_sure(setup):
    """Random play's positions are mid-game (cards revealed, claims pending) and some hold
    a pending claim the seat to move knows is false: what self-play rarely reaches.
    `facing_impossible_claim` finds such claims, and the exact posterior agrees on each."""
    states = jax.jit(lambda k: random_positions(setup.env, k, 512))(jax.random.PRNGKey(5))
    live = ~np.asarray(states.terminated)
    assert live.mean() > 0.5
    n = setup.env.num_players
    assert (np.asarray(board.hidden_counts(states)).sum(-1)[live] < 2 * n).mean() > 0.3  # cards revealed
    truth = np.asarray(jax.jit(lambda o: posterior_features(o, setup.env.num_players))(states.observation))[:, -2:]
    false_for_sure = live & (truth.min(-1) == 0.0)
    assert false_for_sure.sum() >= 3, false_for_sure.sum()
    # the cheap test the impossible share draws on: every claim it flags, the posterior rules out
    flagged = np.asarray(facing_impossible_claim(states, n))
    ruled_out = np.asarray(jax.jit(jax.vmap(lambda o: _claim_ruled_out(o, n)))(states.observation))
    assert flagged.sum() >= 3 and ruled_out[flagged].all(), (flagged.sum(), ruled_out[flagged])
    assert not flagged[~live].any()  # a finished game faces no claim (they once were a sixth of the pool)


def test_trajectory_positions_are_positions_of_random_play(setup):
    """`coupjax.testing.trajectory_positions`, the teacher's pool: every position along G
    random games, step-major; step 0 is the deal, a finished game stays finished, and the
    share facing an impossible claim is that of `random_positions` (games stopped once at a
    uniform decision), 2.9% in 16,384 of those."""
    from coupjax.testing import trajectory_positions

    env, n, G, D = setup.env, setup.env.num_players, 200, RANDOM_DECISIONS
    pool = jax.jit(lambda k: trajectory_positions(env, k, G, D))(jax.random.PRNGKey(8))
    assert pool.current_player.shape == ((D + 1) * G,)
    done = np.asarray(pool.terminated).reshape(D + 1, G)
    assert not done[0].any() and (np.diff(done.astype(int), axis=0) >= 0).all() and done[-1].any()
    assert (np.asarray(board.hidden_counts(jax.tree.map(lambda x: x[:G], pool))) == 2).all()
    once = jax.jit(lambda k: random_positions(env, k, (D + 1) * G))(jax.random.PRNGKey(9))

    def share(states):
        eligible = (np.asarray(states.legal_action_mask).sum(-1) > 1) & ~np.asarray(states.terminated)
        return np.asarray(facing_impossible_claim(states, n))[eligible].mean()

    assert abs(share(pool) - share(once)) < 0.015, (share(pool), share(once))


def test_the_search_targets_read_only_the_seat_to_moves_view(setup):
    """The target as a policy (one decision searched per call) passes the scrambling
    leak test: the worlds come from the seat's observation, not the real hands."""
    env = setup.env
    params = jax.tree.map(lambda x: x[0], setup.init(jax.random.PRNGKey(0)).params)
    one = dict(TINY, search_target_states=1)  # the game's own decision (random play would ignore the state)
    targets = make_search_targets(env, config_from_dict(one), setup.policy_logits,
                                  lambda p, obs: setup.value_net.apply({"params": p}, obs)[..., 0])

    def as_policy(key, state):
        t = targets(params, key, jax.tree.map(lambda x: x[None], state))
        return jnp.where(state.legal_action_mask, jnp.log(jnp.maximum(t.target[0], 1e-30)), -jnp.inf)

    check_policy(as_policy, env, num_states=24, check_traces=False)


def test_cross_entropy_weighs_only_the_searched_decisions():
    mask = jnp.array([[True, True, False], [True, True, True]])
    target = jnp.array([[0.25, 0.75, 0.0], [1.0, 0.0, 0.0]])
    logits = jnp.array([[0.0, 1.0, 5.0], [0.0, 3.0, 0.0]])
    logp = masked_log_softmax(logits, mask)
    t = SearchTargets(obs=jnp.zeros((2, 1)), mask=mask, target=target, valid=jnp.array([True, False]))
    xent, agree = cross_entropy(logp, t)
    p = np.exp([0.0, 1.0]) / np.exp([0.0, 1.0]).sum()
    np.testing.assert_allclose(float(xent), -(0.25 * np.log(p[0]) + 0.75 * np.log(p[1])), rtol=1e-5)
    assert float(agree) == 1.0  # row 0: both put most on action 1; row 1 (not searched) is out
    xent2, agree2 = cross_entropy(logp, t.replace(valid=jnp.array([False, True])))
    np.testing.assert_allclose(float(xent2), -float(logp[1, 0]), rtol=1e-5)
    assert float(agree2) == 0.0


@pytest.mark.parametrize("share", [0.0, 0.5])
def test_a_chunk_with_search_targets_trains_and_reports_them(setup, share):
    """Also (share 0.5) with the policy reading the posterior: the searched decisions carry
    their features, computed once for every minibatch; and with exploring starts (half the
    games restarted from random play each update, `training.selfplay.restart_from_random`)."""
    if share:
        setup = make_train(config_from_dict(dict(TINY, search_target_random_share=share,
                                                 policy_reads_posterior=True, exploring_starts=share)))
    rs0 = setup.init(jax.random.PRNGKey(setup.config.seed))
    rs1, m = setup.train_chunk(rs0)
    flat = setup.flatten_metrics(m)
    assert np.isfinite(flat["search_target_xent"]) and 0.0 <= flat["search_target_agree"] <= 1.0
    assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(rs1.params))


@pytest.mark.parametrize("key,value", [("search_target_coef", -1.0), ("search_target_states", 0),
                                       ("search_target_prior_uniform", 1.5), ("search_target_tau", 0.0),
                                       ("search_target_random_share", 1.5), ("search_target_impossible_share", -0.1),
                                       ("search_target_impossible_pool", 0)])
def test_bad_search_target_settings_are_one_line_errors(key, value):
    with pytest.raises(ConfigError, match=key):
        config_from_dict(dict(TINY, **{key: value}))


def test_the_scripted_teacher_challenges_impossible_claims_where_it_is_sure(setup):
    """``search_target_rollout_policy: scripted_mix`` (the registered search's rollouts and
    heuristic value): at the scenario benchmark's impossible claims, every decision the
    margin keeps has the challenge as the target's most likely play; a margin above any
    value gap keeps none."""
    from evals.report import decision_benchmark as db

    env = setup.env
    params = jax.tree.map(lambda x: x[0], setup.init(jax.random.PRNGKey(0)).params)
    built = [(s, m) for s, m in db.build_all() if s.name.startswith("impossible_")]
    value = lambda p, obs: setup.value_net.apply({"params": p}, obs)[..., 0]  # noqa: E731
    kept = 0
    for margin in (0.1, 10.0):
        cfg = config_from_dict(dict(TINY, search_target_states=1, search_target_rollout_policy="scripted_mix",
                                    search_target_rollout_steps=8, search_target_margin=margin))
        targets = jax.jit(make_search_targets(env, cfg, setup.policy_logits, value))
        for i, (s, m) in enumerate(built):
            t = targets(params, jax.random.PRNGKey(i), jax.tree.map(lambda x: jnp.asarray(x)[None], m.state))
            if margin > 1:
                assert not bool(t.valid[0]), s.name
            elif bool(t.valid[0]):
                kept += 1
                challenge = rules.action_id("challenge", m.current_player, env.num_players)
                assert int(jnp.argmax(t.target[0])) == challenge, s.name
    assert kept >= len(built) // 2, kept


def test_the_teachers_lanes_change_its_speed_not_its_targets(setup, monkeypatch):
    """The teacher runs fewer lanes than it has rollouts (`teacher_lanes`: 128 here, for up
    to 416 rollouts, so lanes are refilled), and its targets are those of a lane per
    rollout; the recipe's 64 states get 1,024 lanes.  The bug this guards: lanes that
    decided which rollouts run, or with which keys."""
    import training.search_targets as st

    env = setup.env
    cfg = config_from_dict(dict(TINY, search_target_states=8, search_target_rollouts_per_world=1,
                                search_target_rollout_policy="scripted_mix"))
    assert st.teacher_lanes(cfg) == 128
    assert st.teacher_lanes(config_from_dict(dict(TINY, search_target_states=64,
                                                  search_target_rollouts_per_world=1))) == 1024
    states = sample_positions(env, 8, seed=3)
    keys = jax.random.split(jax.random.PRNGKey(4), 8)
    net = lambda k, s: jnp.where(s.legal_action_mask, 0.0, -jnp.inf)  # noqa: E731
    few, res = jax.jit(st.teacher(env, cfg, net, None))(keys, states)
    assert int(res.lanes) == 128 and int(res.iterations) > cfg.search_target_rollout_steps
    monkeypatch.setattr(st, "teacher_lanes", lambda c: 4096)
    many, res_many = jax.jit(st.teacher(env, cfg, net, None))(keys, states)
    assert int(res_many.lanes) > 128
    np.testing.assert_array_equal(np.asarray(few), np.asarray(many))


def _claim_ruled_out(obs, n):
    """By the exact posterior: the claim the seat to move may challenge (the block's when it
    answers one) has probability 0 (`posterior_features`' last two entries)."""
    feats = posterior_features(obs, n)
    answering_block = parse(obs, n).phase == rules.PH_ANSWER_BLOCK
    return jnp.where(answering_block, feats[-1], feats[-2]) == 0.0


@pytest.mark.slow  # 122 s on CI's two cores (one search and the exact posterior compiled)
def test_the_impossible_share_searches_claims_the_posterior_rules_out(setup):
    """``search_target_impossible_share`` 0.5 of 8 random-play decisions: the first 4
    searched face a challengeable claim that the exact posterior gives probability 0 (the
    sampler tests the visible copies and caught bluffs instead, which is cheaper), the other
    4 do not (random play alone gives about 3% of such decisions).
    Quick twin: test_random_positions_reach_claims_that_are_false_for_sure"""
    env, n = setup.env, setup.env.num_players
    params = jax.tree.map(lambda x: x[0], setup.init(jax.random.PRNGKey(0)).params)
    value = lambda p, obs: setup.value_net.apply({"params": p}, obs)[..., 0]  # noqa: E731
    states = sample_positions(env, 8, seed=5)  # not searched: every decision comes from random play
    challenge = rules.ActionLayout(n).reaction + rules.CHALLENGE
    cfg = config_from_dict(dict(TINY, search_target_states=8, search_target_random_share=1.0,
                                search_target_impossible_share=0.5))
    t = jax.jit(make_search_targets(env, cfg, setup.policy_logits, value))(params, jax.random.PRNGKey(7), states)
    ruled_out = np.asarray(jax.vmap(lambda o: _claim_ruled_out(o, n))(t.obs)) & np.asarray(t.mask[:, challenge])
    assert np.asarray(t.valid).all()
    assert ruled_out[:4].all() and not ruled_out[4:].any()


@pytest.mark.slow  # 23 s alone on two cores (a search over 8 scenarios compiled)
def test_the_teachers_scenario_score_is_the_search_not_its_prior():
    """`decision_benchmark.score_teacher` with the uniform policy (`random`) as prior: the
    scripted teacher's mean target puts its most likely play on the challenge at most of the
    impossible claims, where the prior itself hits none (a teacher that echoed its prior
    would score 0), and each hit's reason is in its ``values``: the challenge's is the best.
    Quick twin: test_the_teacher_command_refuses_what_it_cannot_score"""
    from coupjax.env import Env
    from coupjax.policies import resolve_policy
    from evals.report import decision_benchmark as db

    built = [(s, m) for s, m in db.build_all() if s.name.startswith("impossible_")]
    cfg = config_from_dict(dict(TINY, search_target_rollout_policy="scripted_mix", search_target_rollout_steps=8,
                                search_target_rollouts_per_world=1))
    prior = db.score_policy(resolve_policy("random", Env(4)), built)
    taught = db.score_teacher(Env(4), "random", cfg, built, keys=2)
    assert not any(row["hit"] for row in prior.values())
    assert sum(row["hit"] for row in taught.values()) >= 6, taught
    for (s, m), row in zip(built, taught.values()):  # the values behind each target: every legal action's
        legal = {rules.action_name(int(a), m.current_player, m.num_players)
                 for a in np.flatnonzero(np.asarray(m.state.legal_action_mask))}
        assert set(row["values"]) == legal and all(v["sd"] >= 0 for v in row["values"].values()), s.name
        if row["hit"]:  # a hit the uniform prior cannot make: the challenge has the best value
            assert max(row["values"], key=lambda a: row["values"][a]["mean"]) == "challenge", s.name


@pytest.mark.parametrize("argv, says", [
    (["--policy", "random", "--set", "search_target_tau=0.02"], "give --teacher too"),
    (["--policy", "random", "--teacher", "dqn_cpu.yaml"], "not a self-play config"),
    (["--policy", "random", "--teacher", "recipe_cpu.yaml", "--set", "search_target_tau=0"], "search_target_tau"),
    (["--policy", "nosuch", "--teacher", "recipe_cpu.yaml"], "nosuch"),
])
def test_the_teacher_command_refuses_what_it_cannot_score(argv, says, capsys):
    """``python -m evals.report.decision_benchmark``: an override without ``--teacher``, a
    config without search targets, a bad override and an unknown policy are one-line errors
    before anything compiles."""
    from evals.report import decision_benchmark as db

    with pytest.raises(SystemExit):
        db.main(argv)
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1, err
