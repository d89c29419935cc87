"""coupjax.search: sampled worlds, rollout values on positions with known answers,
reproducible advice, batch independence.

The information-leak test for the three registered search policies is the generic one
in tests/test_policies.py (parametrized over `policies.policy_names()`); here the
worlds themselves are checked to depend on the observation only.  Each compiled
function is built once per module (a compile is most of this file's run time).
"""
from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import seat_tables, testing
from coupjax import policies
from coupjax.game import deal
from coupjax.policies import pools
from coupjax import rules
from coupjax import search
from coupjax.env import Env
from coupjax.search import action_values
from coupjax.search import sampled_worlds
from coupjax.search.config import max_legal_actions

D, A, C, AM, CO = range(5)


def _deck(cards):
    return deal.deck_array(list(cards))


def _rest(*used):
    """The 15 cards minus ``used`` (role ids), in role order."""
    left = [r for r in range(5) for _ in range(3)]
    for r in used:
        left.remove(r)
    return left


# ------------------------------------------------------------------ 2-player positions, known answers
@pytest.fixture(scope="module")
def env2():
    return Env(2)


@pytest.fixture(scope="module")
def config2(env2):
    # a policy callable (not a name) as rollout policy, full-length rollouts
    return search.SearchConfig(num_worlds=16, rollouts_per_world=8, rollout_policy=policies.make_policy("random", env2),
                          max_rollout_steps=None, lanes=1024)


@pytest.fixture(scope="module")
def positions2(env2):
    """[forced coup (10 coins, opponent on 1 card), forced coup (opponent on 2 cards),
    one-influence endgame (both on 1 card, seat 0 has 7 coins), a finished game]."""
    pos = jax.jit(lambda h, d, c, rv: deal.make_position(2, h, d, c, rv, 0, 5))
    no_rev = np.full((2, 2), -1, np.int32)
    forced1 = pos(deal.hand_arrays([[D, A], [C]], 2), _deck(_rest(D, A, C, CO)),
                  np.array([10, 3], np.int32), np.array([[-1, -1], [CO, -1]], np.int32))
    forced2 = pos(deal.hand_arrays([[D, A], [C, CO]], 2), _deck(_rest(D, A, C, CO)),
                  np.array([10, 3], np.int32), no_rev)
    endgame = pos(deal.hand_arrays([[CO], [C]], 2), _deck(_rest(CO, C, D, AM)),
                  np.array([7, 2], np.int32), np.array([[D, -1], [AM, -1]], np.int32))
    over = jax.jit(env2.step)(endgame, jnp.int32(rules.action_id("coup:1", 0, 2)), jax.random.PRNGKey(0))
    assert bool(over.terminated) and not bool(endgame.terminated)
    return jax.tree.map(lambda *x: jnp.stack(x), forced1, forced2, endgame, over)


@pytest.fixture(scope="module")
def searched2(config2, positions2):
    """SearchResult rows and the three modes' logits for `positions2` (the compiled
    one-state search that `search.advise` uses, so the advice test reuses it)."""
    fn = action_values.advice_function(2, config2)
    out = [fn(jax.random.PRNGKey(7 + b), jax.tree.map(lambda x: x[b], positions2))
           for b in range(positions2.current_player.shape[0])]
    res = jax.tree.map(lambda *x: np.stack([np.asarray(v) for v in x]), *[o[1] for o in out])
    logits = {m: np.stack([np.asarray(o[0][m]) for o in out]) for m in search.MODES}
    return res, logits


def mask_of(logits):
    return np.isfinite(logits)


def _values(res, b, n):
    """{protocol name: (value, se, rollouts)} of decision b's searched actions (actor seat 0)."""
    return {rules.action_name(int(a), 0, n): (float(q), float(se), int(r))
            for a, v, q, se, r in zip(res.action_ids[b], res.valid[b], res.q[b], res.se[b], res.rollouts[b]) if v}


def test_forced_coup(searched2, positions2, config2):
    res, logits = searched2
    coup = rules.action_id("coup:1", 0, 2)
    budget = config2.num_worlds * config2.rollouts_per_world
    for b in (0, 1):
        mask = np.asarray(positions2.legal_action_mask[b])
        assert np.flatnonzero(mask).tolist() == [coup]  # only coup is legal, and it is still searched
        assert res.searched[b]
        vals = _values(res, b, 2)
        assert list(vals) == ["coup:1"] and vals["coup:1"][2] == budget
        for m in search.MODES:
            assert np.argmax(logits[m][b]) == coup and np.isfinite(logits[m][b][coup])
    # the opponent's last card: the coup ends the game, value exactly +1 in every world
    assert _values(res, 0, 2)["coup:1"][:2] == (1.0, 0.0)
    # two cards left: the game goes on; a 2-player reward is +1 or -1
    q = _values(res, 1, 2)["coup:1"][0]
    assert -1.0 <= q <= 1.0 and q > 0.0  # one card up on a random opponent


def test_one_influence_endgame(searched2):
    """2 players on one card each, seat 0 has 7 coins: coup:1 wins at once (+1), every other
    action lets the opponent play on and is worth less."""
    res, logits = searched2
    vals = _values(res, 2, 2)
    assert set(vals) == {"income", "foreign_aid", "tax", "exchange", "coup:1", "assassinate:1", "steal:1"}
    assert vals["coup:1"][:2] == (1.0, 0.0)
    others = {k: v[0] for k, v in vals.items() if k != "coup:1"}
    assert max(others.values()) < 1.0, others
    assert all(-1.0 <= v <= 1.0 for v in others.values())
    coup = rules.action_id("coup:1", 0, 2)
    assert np.argmax(logits["expected"][2]) == coup and logits["expected"][2][coup] == 0.0
    # best in every world, or tied best (another action may win all 8 of its rollouts too)
    slot = list(res.action_ids[2]).index(coup)
    qw = np.where(res.valid[2][None, :], res.q_world[2], -np.inf)
    assert (qw[:, slot] == 1.0).all() and (qw.max(axis=1) == 1.0).all()
    share = dict(zip(res.action_ids[2][res.valid[2]].tolist(), res.best_share[2][res.valid[2]].tolist()))
    assert share[coup] == max(share.values()) and share[coup] > 0.5 and sum(share.values()) == pytest.approx(1.0)
    th = logits["thompson"][2]
    assert np.argmax(th) == coup and th[coup] == pytest.approx(np.log(share[coup]))
    assert np.all(th[mask_of(th)] >= np.log(1e-6) - 1e-4)
    reg = np.exp(logits["regularized"][2])
    assert reg.sum() == pytest.approx(1.0, abs=1e-5) and reg[coup] > 0.99


def test_terminated_is_not_searched(searched2, positions2):
    res, logits = searched2
    assert not res.searched[3] and not res.valid[3].any() and res.rollouts[3].sum() == 0
    for m in search.MODES:
        lg = logits[m][3]
        assert np.isfinite(lg).all()  # the mask of a finished game is all True
        if m == "expected":
            assert lg[0] == 0.0 and (lg[1:] < -60).all()  # no values: the first legal action
        else:
            np.testing.assert_allclose(lg, lg[0], atol=1e-5)  # uniform / the rollout policy


def test_logits_contract(searched2, positions2):
    _, logits = searched2
    mask = np.asarray(positions2.legal_action_mask)
    for m in search.MODES:
        lg = logits[m]
        assert lg.dtype == np.float32
        np.testing.assert_array_equal(np.isneginf(lg), ~mask)
        assert not np.isnan(lg).any() and not np.isposinf(lg).any()


def test_advice_is_reproducible(positions2, config2):
    endgame = jax.tree.map(lambda x: x[2], positions2)
    a1 = search.advise(endgame, mode="expected", budget=config2, key=jax.random.PRNGKey(3))
    a2 = search.advise(endgame, seat=0, mode="expected", budget=config2, key=jax.random.PRNGKey(3))
    assert a1 == a2
    assert a1["action"] == "coup:1" and a1["values"]["coup:1"] == 1.0 and a1["se"]["coup:1"] == 0.0
    assert [r["action"] for r in a1["actions"]][0] == "coup:1" and len(a1["actions"]) == 7
    assert all(r["rollouts"] == 128 for r in a1["actions"])
    assert "coup:1" in a1["explanation"] and a1["searched"]
    assert a1["budget"]["num_worlds"] == 16 and a1["budget"]["max_rollout_steps"] is None
    with pytest.raises(ValueError):
        search.advise(endgame, seat=1, budget=config2)
    with pytest.raises(ValueError):
        search.advise(endgame, mode="nope", budget=config2)
    with pytest.raises(ValueError):
        search.advise(jax.tree.map(lambda x: x[3], positions2), budget=config2)


# ------------------------------------------------------------------ 4 players: worlds and batches
@pytest.fixture(scope="module")
def env4():
    return Env(4)


@pytest.fixture(scope="module")
def states4(env4):
    """8 first decisions, the same 8 games after a tax (seat 1 reacts), and the same 8
    after an exchange and three passes (seat 0 chooses its keep: its own drawn cards)."""
    step = jax.jit(jax.vmap(env4.step))
    init = jax.vmap(env4.init)(jax.random.split(jax.random.PRNGKey(5), 8))
    k = jax.random.split(jax.random.PRNGKey(6), 8)
    full = lambda a: jnp.full(8, a, jnp.int32)  # noqa: E731
    react = step(init, full(rules.TAX), k)
    ex = init
    for a in (rules.EXCHANGE, env4.layout.reaction + rules.PASS, env4.layout.reaction + rules.PASS,
              env4.layout.reaction + rules.PASS):
        ex = step(ex, full(a), k)
    assert (np.asarray(ex._phase) == rules.PH_EXCHANGE).all() and (np.asarray(ex.current_player) == 0).all()
    return jax.tree.map(lambda *x: jnp.concatenate(x), init, react, ex)


def test_worlds_come_from_the_observation(env4, states4):
    K = 16
    B = states4.current_player.shape[0]
    keys = jax.random.split(jax.random.PRNGKey(8), B)
    worlds_of = jax.jit(jax.vmap(lambda k, s: search.world_states(env4, k, s, K)))
    rehidden = testing.scramble_positions(states4, seed=9)
    assert (np.asarray(rehidden._hands) != np.asarray(states4._hands)).any()
    w1, w2 = worlds_of(keys, states4), worlds_of(keys, rehidden)
    for a, b in zip(jax.tree.leaves(w1), jax.tree.leaves(w2)):  # nothing hidden gets through
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    w = jax.tree.map(np.asarray, w1)
    obs = np.asarray(states4.observation)[:, None]
    np.testing.assert_array_equal(w.observation, np.broadcast_to(obs, w.observation.shape))
    np.testing.assert_array_equal(w.legal_action_mask, np.broadcast_to(
        np.asarray(states4.legal_action_mask)[:, None], w.legal_action_mask.shape))
    hands = w._hands
    seat = np.asarray(states4.current_player)
    own = np.asarray(states4._hands)[np.arange(B), seat]  # [B, 2]
    np.testing.assert_array_equal(hands[np.arange(B), :, seat], np.broadcast_to(own[:, None], (B, K, 2)))
    assert ((hands >= 0) == (np.asarray(states4._hands)[:, None] >= 0)).all()
    # every world holds 3 of each role (hands + deck + revealed + drawn), and varies
    deck = np.where(np.arange(15) < w._deck_size[..., None], w._deck, -1)
    cards = np.concatenate([hands.reshape(B, K, -1), deck, w._revealed.reshape(B, K, -1), w._drawn], axis=-1)
    counts = np.stack([(cards == r).sum(-1) for r in range(5)], -1)
    assert (counts == 3).all()
    assert all(len({hands[b, k].tobytes() for k in range(K)}) > 1 for b in range(B))
    # in its own exchange the searcher's drawn cards are the real ones (as a multiset)
    ex = slice(16, 24)
    np.testing.assert_array_equal(np.sort(w._drawn[ex], -1),
                                  np.broadcast_to(np.sort(np.asarray(states4._drawn)[ex], -1)[:, None], (8, K, 2)))


@pytest.fixture(scope="module")
def regularized_batch(env4, states4):
    """A registered search policy with kwargs (its own-seat rollout policy and a smoothed
    belief_ev prior included) and its logits on `states4`, batched (one compile, shared)."""
    pol = policies.make_policy("regularized", env4, num_worlds=4, max_rollout_steps=8, lanes=256,
                               rollout_self_policy="honest", prior_policy="belief_ev", prior_uniform=0.1)
    fn = jax.jit(jax.vmap(pol))
    keys = jax.random.split(jax.random.PRNGKey(10), states4.current_player.shape[0])
    return pol, fn, keys, np.asarray(fn(keys, states4))


def test_policy_batch_independent(regularized_batch, states4):
    """A decision's logits do not depend on the rest of the batch: a permuted batch gives
    the permuted logits (the pooled custom_vmap search)."""
    pol, fn, keys, a = regularized_batch
    assert pol.config.num_worlds == 4 and pol.config.rollout_policy == search.DEFAULT_CONFIG.rollout_policy
    perm = np.random.default_rng(0).permutation(len(keys))
    b = np.asarray(fn(keys[perm], jax.tree.map(lambda x: x[perm], states4)))
    np.testing.assert_allclose(a[perm], b, atol=1e-5)
    mask = np.asarray(states4.legal_action_mask)
    np.testing.assert_array_equal(np.isneginf(a), ~mask)
    np.testing.assert_allclose(np.exp(a).sum(axis=1), 1.0, atol=1e-4)


@pytest.mark.slow
def test_pooled_search_equals_one_search_per_state(regularized_batch, states4):
    """The unbatched call (one search of one state, a second compile of the whole search)
    gives the batch's logits.  Quick twin: test_policy_batch_independent."""
    pol, _, keys, a = regularized_batch
    one = jax.jit(pol)
    for i in (0, 9, 17):  # a first decision, a reaction, an exchange choice
        np.testing.assert_allclose(np.asarray(one(keys[i], jax.tree.map(lambda x: x[i], states4))), a[i], atol=1e-5)


def test_config_validation(env4):
    with pytest.raises(TypeError):
        policies.make_policy("thompson", env4, bogus=1)
    with pytest.raises(ValueError):
        search.SearchConfig(num_worlds=0)
    with pytest.raises(ValueError):
        search.SearchConfig(tau=0.0)
    with pytest.raises(ValueError):
        sampled_worlds.rollout_policy(env4, "expected")  # a search policy cannot be its own rollout policy
    assert max_legal_actions(4) == 13 and max_legal_actions(2) == 7
    assert search.SearchConfig().rollout_policy == "random"  # the API's default rollout policy
    with pytest.raises(ValueError):
        search.SearchConfig(prior_uniform=1.0)
    with pytest.raises(TypeError):
        search.SearchConfig(rollout_self_policy=3)
    assert set(search.MODES) <= set(policies.policy_names())


def test_scripted_mix_is_the_average_of_the_bots(env4):
    """The fused `scripted_mix` equals the average of the five scripted bots' distributions
    (default weights) and a single bot with one-hot weights, on positions from every phase."""
    run = seat_tables.make_table_runner(env4, [policies.make_policy("random", env4)])
    limit = jnp.asarray(np.random.default_rng(0).integers(0, 60, 256), jnp.int32)
    states, _ = run(seat_tables.game_keys(0, 0, 256), jnp.zeros((256, 4), jnp.int32), limit)
    live = np.flatnonzero(~np.asarray(states.terminated))  # policies act on live positions only
    states = jax.tree.map(lambda x: np.asarray(x)[live], states)  # NumPy: one gather per leaf would compile
    assert len(set(states._phase.tolist())) >= 4
    keys = jax.random.split(jax.random.PRNGKey(1), len(live))

    def probs(pol):
        return np.asarray(jax.jit(jax.vmap(lambda k, s: jax.nn.softmax(pol(k, s))))(keys, states))

    bots = [probs(policies.make_policy(name, env4)) for name in pools.MIX_NAMES]
    mix = policies.make_policy("scripted_mix", env4)
    np.testing.assert_allclose(probs(mix), np.mean(bots, axis=0), atol=1e-5)
    np.testing.assert_array_equal(np.isneginf(np.asarray(jax.jit(jax.vmap(mix))(keys, states))),
                                  ~np.asarray(states.legal_action_mask))
    aggressive = policies.make_policy("scripted_mix", env4, weights=(0, 0, 0, 1, 0))
    np.testing.assert_allclose(probs(aggressive), bots[pools.MIX_NAMES.index("aggressive")], atol=1e-5)
    with pytest.raises(ValueError):
        policies.make_policy("scripted_mix", env4, weights=(1, 1))


# ------------------------------------------------------------------ thompson's per-world values
def _shares(values, valid):
    """Thompson's best-action shares [B, M] from per-world values [B, K, M]."""
    return np.asarray(_best_shares(jnp.asarray(values), jnp.asarray(valid)))


# jitted once per shape: op by op, each call would dispatch every small op anew
_best_shares, _denoised = jax.jit(search.best_shares), jax.jit(search.denoised_world_values)


def test_denoising_removes_rollout_noise_and_keeps_world_signal():
    """Three actions, K = 8 worlds, R = 4 rollouts.  Action 0 is worth 0.05 more on
    average.  (a) Worlds differ only by rollout noise (each rollout +-1, so the world
    means wander by ~0.5 while nothing about the worlds differs): the raw per-world argmax
    spreads the share over all actions, the denoised one gives it all to action 0.  (b)
    Action 2 is worth +1 in half of the worlds and nothing else varies (a bluff that half
    of the worlds expose): the denoised shares equal the raw ones, 1/2 each.  Action 3 is
    not legal: whatever its values, it never gets a share."""
    rng = np.random.default_rng(0)
    K, Rr = 8, 4
    mu = np.array([0.05, 0.0, 0.0, 5.0], np.float32)
    valid = np.array([[True, True, True, False]])
    noise = rng.choice([-1.0, 1.0], size=(1, K, 4, Rr)).astype(np.float32)
    v_noise = mu[None, None, :, None] + noise
    raw = _shares(v_noise.mean(-1), valid)[0]
    den = _shares(np.asarray(_denoised(jnp.asarray(v_noise), jnp.asarray(valid))), valid)[0]
    assert raw[0] < 0.9 and raw[1:3].sum() > 0.1, raw
    np.testing.assert_allclose(den, [1.0, 0.0, 0.0, 0.0])

    signal = np.zeros((1, K, 4, Rr), np.float32) + mu[None, None, :, None]
    signal[:, : K // 2, 2] += 1.0
    den = _shares(np.asarray(_denoised(jnp.asarray(signal), jnp.asarray(valid))), valid)[0]
    np.testing.assert_allclose(den, _shares(signal.mean(-1), valid)[0])
    np.testing.assert_allclose(den, [0.5, 0.0, 0.5, 0.0])
