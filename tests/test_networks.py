"""One network module (`coupjax.networks`) for training and `coupjax.inference`: the
export on disk loads through it and gives the actions of the plain forward pass that
`coupjax.inference` evaluated before (``x @ kernel + bias`` per layer, ReLU between)."""
from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import Env, networks
from coupjax.inference import load_policy
from coupjax.networks import (MLP, PolicyReadingBelief, PolicyReadingPosterior, PolicyWithBelief, apply_mlp, init_params,
                              num_posterior_features, observation_scale, policy_network_of)

ROOT = Path(__file__).resolve().parents[1]
EXPORTS = sorted(p.parent for p in ROOT.glob("evals/reference/**/policy.json")) + \
    sorted(p.parent for p in ROOT.glob("coupjax/**/policy.json"))


@pytest.fixture
def stand_in_posterior(monkeypatch):
    """`networks.posterior_features` replaced by a cheap function of the same width.

    These tests check how a posterior-reading network is wired (which inputs, in which
    order, through which layers), not the posterior; the real features cost one
    compilation of the exact posterior per jitted function, about 15 s each on CI's two
    cores.  The features themselves are tested below and in tests/test_best.py."""
    def features(obs, num_players):
        return jax.nn.sigmoid(jnp.asarray(obs, jnp.float32)[..., :num_posterior_features(num_players)] - 0.5)

    monkeypatch.setattr(networks, "posterior_features", features)
    return features


def _plain(params, obs, n, reads_posterior=False):
    """The forward pass `coupjax.inference.mlp_apply` was (before this module); an export
    that reads the posterior gets `networks.posterior_features` beside the scaled observation."""
    x = jnp.asarray(obs, jnp.float32) * jnp.asarray(observation_scale(n))
    if reads_posterior:
        x = jnp.concatenate([x, networks.posterior_features(obs, n)], axis=-1)
    i = 0
    while f"hidden_{i}" in params:
        x = jax.nn.relu(x @ params[f"hidden_{i}"]["kernel"] + params[f"hidden_{i}"]["bias"])
        i += 1
    return x @ params["out"]["kernel"] + params["out"]["bias"]


def _states(env, count=64):
    """Observations and masks of random play (main actions, reactions, reveals)."""
    step = jax.jit(env.step)
    s, out = env.init(jax.random.PRNGKey(3)), []
    for i in range(count):
        out.append(s)
        legal = np.flatnonzero(np.asarray(s.legal_action_mask))
        s = step(s, jnp.int32(legal[i * 7 % len(legal)]), jax.random.PRNGKey(i))
        if bool(s.terminated):
            s = env.init(jax.random.PRNGKey(100 + i))
    return jax.tree.map(lambda *x: jnp.stack(x), *out)


def test_shipped_exports_load_through_the_network_module_with_the_same_actions(stand_in_posterior):
    assert EXPORTS, "no export is shipped: the test has nothing to load"
    for d in EXPORTS:
        pol = load_policy(d)
        env = Env(int(pol.info["num_players"]))
        s = _states(env)
        mine = np.asarray(jax.vmap(pol.values)(s.observation))
        reads = bool(pol.info.get("policy_reads_posterior", False))
        plain = np.asarray(jax.vmap(lambda o: _plain(pol.params, o, env.num_players, reads))(s.observation))
        np.testing.assert_allclose(mine, plain, rtol=1e-6, atol=1e-6)
        mask = np.asarray(s.legal_action_mask)
        greedy = load_policy(d, temperature=0.0)
        logits = np.asarray(jax.vmap(greedy)(jax.random.split(jax.random.PRNGKey(0), len(mask)), s))
        assert (np.argmax(logits, -1) == np.argmax(np.where(mask, plain, -np.inf), -1)).all()


def test_the_policy_with_a_belief_head_is_an_mlp_with_one_more_layer():
    env = Env(4)
    n, A, d = env.num_players, env.num_actions, env.observation_shape[0]
    net = PolicyWithBelief(A, n, (16, 8), (n - 1) * 5)
    params = init_params(net, jax.random.PRNGKey(0), d)
    obs = _states(env, 8).observation
    logits, belief = net.apply({"params": params}, obs)
    policy = {k: v for k, v in params.items() if k != "belief_out"}
    np.testing.assert_array_equal(np.asarray(apply_mlp(policy, obs, n)), np.asarray(logits))
    np.testing.assert_array_equal(np.asarray(MLP(A, n, (16, 8)).apply({"params": policy}, obs)), np.asarray(logits))
    head = {**{k: v for k, v in policy.items() if k != "out"}, "out": params["belief_out"]}
    np.testing.assert_array_equal(np.asarray(apply_mlp(head, obs, n)), np.asarray(belief))


def test_the_policy_reading_its_belief_reads_it_and_cannot_train_it():
    """The policy's first layer reads concat(scaled observation, sigmoid(belief logits)),
    the belief being the ``belief`` sub-tree's own MLP; the policy's gradient stops at the
    belief (its loss alone trains it)."""
    env = Env(4)
    n, A, d = env.num_players, env.num_actions, env.observation_shape[0]
    net = PolicyReadingBelief(A, n, (16, 8), (12,), (n - 1) * 5)
    params = init_params(net, jax.random.PRNGKey(0), d)
    obs = _states(env, 8).observation
    logits, belief = net.apply({"params": params}, obs)
    np.testing.assert_array_equal(np.asarray(belief), np.asarray(apply_mlp(params["belief"], obs, n)))
    policy = {k: v for k, v in params.items() if k != "belief"}
    x = jnp.concatenate([obs * observation_scale(n), jax.nn.sigmoid(belief)], -1)
    by_hand = jax.nn.relu(jax.nn.relu(x @ policy["hidden_0"]["kernel"] + policy["hidden_0"]["bias"])
                          @ policy["hidden_1"]["kernel"] + policy["hidden_1"]["bias"])
    by_hand = by_hand @ policy["out"]["kernel"] + policy["out"]["bias"]
    np.testing.assert_allclose(np.asarray(logits), np.asarray(by_hand), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(policy_network_of(params, n)(obs)), np.asarray(logits))
    # another belief, another policy: the policy reads the belief it carries
    moved = {**params, "belief": jax.tree.map(lambda w: w + 0.5, params["belief"])}
    assert np.abs(np.asarray(net.apply({"params": moved}, obs)[0]) - np.asarray(logits)).max() > 1e-3
    weights = jax.random.normal(jax.random.PRNGKey(1), logits.shape)
    g_policy = jax.grad(lambda p: (net.apply({"params": p}, obs)[0] * weights).sum())(params)
    g_belief = jax.grad(lambda p: net.apply({"params": p}, obs)[1].sum())(params)
    assert all(not np.asarray(g).any() for g in jax.tree.leaves(g_policy["belief"]))
    assert np.asarray(g_policy["hidden_0"]["kernel"]).any()
    assert all(not np.asarray(g).any() for k in policy for g in jax.tree.leaves(g_belief[k]))
    assert np.asarray(g_belief["belief"]["hidden_0"]["kernel"]).any()


def test_the_posterior_features_say_an_impossible_or_disproven_claim_is_false():
    """`posterior_features`' last two entries, P(the pending action / block claim is
    true), are exactly 0 in every scenario whose claim every visible copy or a caught
    bluff rules out, and strictly between 0 and 1 for a first claim nothing rules out."""
    from coupjax.beliefs.posterior import claim_truth_probabilities
    from coupjax.networks import posterior_features
    from evals.report import decision_benchmark as db

    built = {sc.name: m for sc, m in db.build_all()}
    false = [name for name in built if name.startswith(("impossible_", "caught_bluff_"))
             and db.SCENARIOS[[x.name for x in db.SCENARIOS].index(name)].kind in ("react", "answer_block")]
    assert len(false) == 11
    obs = jnp.stack([built[name].state.observation for name in false + ["last_card_lets_a_tax_pass"]])
    feats = np.asarray(jax.jit(lambda o: posterior_features(o, 4))(obs))
    assert feats.shape == (12, num_posterior_features(4))
    pending = feats[:, -2:].min(axis=1)  # the claim under challenge is the action's or the block's
    np.testing.assert_array_equal(pending[:11], 0.0)
    assert 0.0 < pending[11] < 1.0
    marginals = np.asarray(jax.jit(jax.vmap(lambda o: claim_truth_probabilities(o, 4)))(obs))
    np.testing.assert_allclose(feats[:, :15], marginals[:, 1:].reshape(12, 15), atol=1e-6)


def test_the_policy_reading_the_posterior_is_an_mlp_on_wider_input(stand_in_posterior):
    """Its parameters are an MLP's (``hidden_i``, ``out``) whose first layer reads
    concat(scaled observation, posterior features); `policy_network_of` evaluates it
    only when told (the shapes alone would not say so)."""

    env = Env(4)
    n, A, d = env.num_players, env.num_actions, env.observation_shape[0]
    net = PolicyReadingPosterior(A, n, (16,))
    params = init_params(net, jax.random.PRNGKey(0), d)
    assert set(params) == {"hidden_0", "out"}
    assert params["hidden_0"]["kernel"].shape == (d + num_posterior_features(n), 16)
    obs = _states(env, 8).observation
    x = jnp.concatenate([obs * observation_scale(n), stand_in_posterior(obs, n)], -1)
    by_hand = jax.nn.relu(x @ params["hidden_0"]["kernel"] + params["hidden_0"]["bias"])
    by_hand = by_hand @ params["out"]["kernel"] + params["out"]["bias"]
    logits = jax.jit(lambda p, o: net.apply({"params": p}, o))(params, obs)
    np.testing.assert_allclose(np.asarray(logits), np.asarray(by_hand), rtol=1e-5, atol=1e-5)
    loaded = jax.jit(policy_network_of(params, n, True))(obs)
    np.testing.assert_allclose(np.asarray(loaded), np.asarray(logits), rtol=1e-6, atol=1e-6)
