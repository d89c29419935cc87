"""Policies: the interface contract and leak test over every registered policy (and
an export, and search with other options), teeth for the leak test, documented rates
within their standard errors, the registry and the spec resolver.

One set of mid-game positions (every phase) and their scrambled copies serves every
policy (`coupjax.testing.check_policy`); one jitted table runner (the five scripted
bots, 2,000 games) measures the rates.
"""
from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import seat_tables, testing
from coupjax import policies
from coupjax import rules
from coupjax.env import Env
from coupjax.game import board
from coupjax.match import compiled
from coupjax.policies import pools
from coupjax.policies.common import bluff_actions

NUM_PLAYERS = 4
NUM_GAMES = 2000
Z = 4.0  # rate tolerances: Z standard errors


@pytest.fixture(scope="module")
def env():
    return Env(NUM_PLAYERS)


@pytest.fixture(scope="module")
def positions4(env):
    """(mid-game positions of every phase, their scrambled copies)."""
    states = testing.sample_positions(env, 256, seed=3)
    assert set(np.asarray(board.phase(states)).tolist()) == set(range(rules.NUM_PHASES))
    return states, testing.scramble_positions(states, seed=4)


# ------------------------------------------------------------------ the interface and the leak test
def test_scramble_changes_what_is_unseen_and_nothing_else(positions4):
    states, scrambled = positions4
    before, after = np.asarray(states._hands), np.asarray(scrambled._hands)
    p = np.asarray(states.current_player)
    rows = np.arange(len(p))
    np.testing.assert_array_equal(before[rows, p], after[rows, p])  # own hand kept
    np.testing.assert_array_equal(before >= 0, after >= 0)  # hand sizes kept
    assert (before != after).any(axis=(1, 2)).mean() > 0.5  # most positions really changed

    def counts(s):  # hands + deck + drawn hold the same multiset
        size = np.asarray(s._deck_size)[:, None]
        deck = np.where(np.arange(15) < size, np.asarray(s._deck), -1)
        cards = np.concatenate([np.asarray(s._hands).reshape(len(p), -1), deck, np.asarray(s._drawn)], axis=1)
        return np.stack([(cards == r).sum(1) for r in range(rules.NUM_ROLES)], 1)

    np.testing.assert_array_equal(counts(states), counts(scrambled))
    ev0, ev1 = states._event, scrambled._event
    kept = (np.asarray(ev0.phase) == rules.PH_EXCHANGE) & (np.asarray(ev0.seat) != p)  # another seat's keep
    assert kept.sum() >= 5, "too few positions follow another seat's exchange choice"
    assert (np.asarray(ev0.action) != np.asarray(ev1.action))[kept].mean() > 0.5
    revealed = (np.asarray(ev0.reveal_index) >= 0) & (np.asarray(ev0.reveal_seat) != p[:, None])
    assert revealed.any(axis=1).sum() >= 5, "too few positions follow another seat's reveal"
    assert (np.asarray(ev0.reveal_index) != np.asarray(ev1.reveal_index))[revealed].mean() > 0.3
    np.testing.assert_array_equal(np.asarray(states.observation), np.asarray(scrambled.observation))
    np.testing.assert_array_equal(np.asarray(states.legal_action_mask), np.asarray(scrambled.legal_action_mask))


# selfplay_search needs a run directory (selfplay_search:DIR): tests/test_selfplay_search.py checks it.
# The search policies at their full default budget compile for minutes on 2 cores: slow tier.
SEARCH_MODES = ("thompson", "expected", "regularized")


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SEARCH_MODES else n
                                  for n in policies.policy_names() if n != "selfplay_search"])
def test_registered_policy_passes_check_policy(env, positions4, name):
    """Every registered policy at its default settings.  Quick twin of the search modes:
    test_search_with_other_options_passes_check_policy (each mode at a small budget)."""
    states, scrambled = positions4
    report = testing.check_policy(policies.make_policy(name, env), env, states, scrambled)
    assert report["positions"] == 256 and len(report["phases"]) == rules.NUM_PHASES


@pytest.mark.parametrize("mode, options", [
    ("thompson", dict(num_worlds=2, rollouts_per_world=3, rollout_policy="honest", rollout_self_policy="random",
                      max_rollout_steps=4, denoise_worlds=False)),
    ("expected", dict(num_worlds=3, rollouts_per_world=1, rollout_policy="belief_ev", max_rollout_steps=None,
                      lanes=64)),
    ("regularized", dict(num_worlds=2, rollouts_per_world=2, prior_policy="belief_ev", prior_uniform=0.1, tau=0.5,
                         max_rollout_steps=6)),
])
def test_search_with_other_options_passes_check_policy(env, positions4, mode, options):
    """Each search mode at a small budget: legal logits, no leak.  The one-compilation
    check (a second compilation of the search costs a minute here) runs for one mode:
    the modes share the code that is traced."""
    states, scrambled = positions4
    few = jax.tree.map(lambda x: x[:48], states), jax.tree.map(lambda x: x[:48], scrambled)
    testing.check_policy(policies.make_policy(mode, env, **options), env, *few, check_traces=mode == "expected")


def test_exported_policy_passes_check_policy(env, positions4, tmp_path):
    """Each kind of network an export holds, the self-play policy that reads its learned
    belief among them: its logits depend on the acting seat's observation alone."""
    from training import checkpoint
    from coupjax.networks import PolicyReadingBelief, init_params, make_network

    d = env.observation_shape[0]
    params = init_params(make_network(env, (16,)), jax.random.PRNGKey(0), d)
    reading = init_params(PolicyReadingBelief(env.num_actions, 4, (16,), (8,), 15), jax.random.PRNGKey(1), d)
    for kind, temperature, net, extra in (("dqn", 0.0, params, {}), ("bc_mlp", 1.0, params, {}),
                                          ("selfplay", 1.0, reading,
                                           {"policy_reads_belief": True, "belief_hidden_sizes": [8]})):
        checkpoint.write_export(tmp_path / kind, net, kind=kind, num_players=4, hidden_sizes=(16,),
                       obs_dim=d, num_actions=env.num_actions, temperature=temperature, config={}, extra=extra)
        testing.check_policy(policies.resolve_policy(str(tmp_path / kind), env), env, *positions4)


def test_a_table_takes_a_loaded_networks_weights_as_an_argument(env, tmp_path):
    """A loaded network's weights are an argument of the compiled seat table
    (`coupjax.seat_tables.as_param_policy`), not constants folded into it: a table built
    for one export plays another export's weights with the results of a table built for
    that export, so networks of one architecture share one compilation."""
    from training import checkpoint
    from coupjax.networks import init_params, make_network

    d = env.observation_shape[0]
    for name, seed in (("a", 0), ("b", 1)):
        checkpoint.write_export(tmp_path / name, init_params(make_network(env, (16,)), jax.random.PRNGKey(seed), d),
                                kind="dqn", num_players=4, hidden_sizes=(16,), obs_dim=d,
                                num_actions=env.num_actions, temperature=0.0, config={})
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert isinstance(seat_tables.as_param_policy(policies.resolve_policy(a, env)), seat_tables.ParamPolicy)
    play = seat_tables.make_seat_table(env, [a], opponents="random")
    weights_b = policies.resolve_policy(b, env).params
    played_as_b = play(64, 5, chunk=64, params={a: weights_b})[a]
    assert played_as_b == seat_tables.make_seat_table(env, [b], opponents="random")(64, 5, chunk=64)[b]
    assert played_as_b != play(64, 5, chunk=64)[a]  # the weights made a difference


def _peeking(env, peek):
    def policy(key, state):
        del key
        return jnp.where(state.legal_action_mask, peek(state).astype(jnp.float32), -jnp.inf)
    return policy


@pytest.mark.parametrize("what, peek", [
    ("another seat's hand", lambda s: s._hands[(s.current_player + 1) % 4, 0]),
    ("the deck", lambda s: s._deck[jnp.maximum(s._deck_size - 1, 0)] + jnp.arange(s._deck.shape[0])[:1]),
    ("the previous step's private event", lambda s: (s._event.exchange_drawn.sum() + s._event.redraw_role
                                                      + s._event.reveal_index.sum() + s._event.action)),
])
def test_leak_check_has_teeth(env, positions4, what, peek):
    """A policy that peeks at each kind of hidden information is caught."""
    with pytest.raises(AssertionError, match="hidden information"):
        testing.check_policy(_peeking(env, peek), env, *positions4, check_traces=False)


@pytest.mark.parametrize("broken, says", [
    (lambda key, s: jnp.zeros(s.legal_action_mask.shape, jnp.float32), "-inf exactly on the illegal"),
    (lambda key, s: jnp.where(s.legal_action_mask, jnp.nan, -jnp.inf), "NaN"),
    (lambda key, s: jnp.where(s.legal_action_mask, 0.0, -jnp.inf).astype(jnp.float16), "float32"),
])
def test_contract_check_has_teeth(env, positions4, broken, says):
    with pytest.raises(AssertionError, match=says):
        testing.check_policy(broken, env, *positions4, check_traces=False)


def test_api_test_passes_and_has_teeth():
    for n in (2, 4, 6):
        assert testing.api_test(Env(n), num_games=16)["finished"] == 16

    class Unfair(Env):  # pays the winner twice: rewards no longer sum to zero
        def step(self, state, action, key):
            s = super().step(state, action, key)
            return s.replace(rewards=jnp.where(s.rewards > 0, 2 * s.rewards, s.rewards))

    with pytest.raises(AssertionError, match="sum to zero"):
        testing.api_test(Unfair(4), num_games=8)


# ------------------------------------------------------------------ rates within their standard errors
@pytest.fixture(scope="module")
def rates(env):
    return seat_tables.measure_rates(env, jax.random.PRNGKey(12), NUM_GAMES)[0]


def _tolerance(p, n, measured):
    """Z standard errors of a rate measured over n opportunities (x sqrt 2 when the
    table's value is itself a measurement, made on at least as many)."""
    se = np.sqrt(max(p * (1 - p), 0.0) / n)
    return Z * se * (np.sqrt(2.0) if measured else 1.0)


@pytest.mark.parametrize("name", pools.SCRIPTED_NAMES)
def test_rates_match_table(rates, name):
    r, want = rates[name], pools.SCRIPTED_RATES[name]
    for rate, opp in (("bluff", "bluff_opportunities"), ("challenge", "challenge_opportunities")):
        n = r[opp]
        assert n > 1000, (name, rate, n)
        p = want[rate]
        measured = rate in pools.MEASURED_RATES.get(name, ())
        tol = _tolerance(p, n, measured)
        print(f"{name:10s} {rate:9s} {r[rate]:.4f} (table {p}, tolerance {tol:.4f}, {n} opportunities)")
        assert abs(r[rate] - p) <= tol, (name, rate, r[rate], p, tol)


def test_rate_check_has_teeth():
    """A cautious bot that never bluffs is 0.05 off over ~5,000 opportunities: far outside."""
    n = 5000
    assert abs(0.0 - 0.05) > _tolerance(0.05, n, measured=False)
    assert _tolerance(0.0, n, measured=False) == 0.0  # a rate that is exactly 0 must be exactly 0


def test_registry(env):
    names = policies.policy_names()
    assert set(pools.SCRIPTED_NAMES) <= set(names)
    docs = policies.describe_policies()
    assert set(docs) == set(names) and all(isinstance(d, str) and d.endswith(".") for d in docs.values())
    assert set(pools.SCRIPTED_RATES) == set(pools.SCRIPTED_NAMES)
    with pytest.raises(KeyError):
        policies.make_policy("no-such-policy", env)
    with pytest.raises(TypeError):
        policies.make_policy("honest", env, bogus=1)
    with pytest.raises(ValueError):
        policies.register_policy("random", "dup.")(lambda env: None)


def test_draw_seats():
    for cond, mix in pools.CONDITIONS.items():
        assert abs(sum(mix.values()) - 1.0) < 1e-9
        seats = np.asarray(seat_tables.draw_seats(jax.random.PRNGKey(3), cond, 5000, 4))
        assert seats.shape == (5000, 4) and seats.dtype == np.int32
        for name, w in mix.items():
            share = (seats == pools.SCRIPTED_NAMES.index(name)).mean()
            assert abs(share - w) < 0.02, (cond, name, share)
    with pytest.raises(ValueError):
        seat_tables.draw_seats(jax.random.PRNGKey(0), {"nobody": 1.0}, 2, 4)


def test_bot_choices_on_positions():
    """Spot checks of the scripted logic on explicit positions."""
    env, _, _, position = compiled(4)
    D, A, C, AM, CO = range(5)
    deck = np.array([D, A, C, AM, CO, CO, C] + [-1] * 8, np.int32)
    no_reveals = np.full((4, 2), -1, np.int32)

    def pos(hands, coins):
        return position(np.asarray(hands, np.int32), deck, np.asarray(coins, np.int32), no_reveals, 0, 0)

    honest = jax.jit(policies.make_policy("honest", env))
    aggr = jax.jit(policies.make_policy("aggressive", env))
    key = jax.random.PRNGKey(0)
    # honest with duke+captain at 2 coins: tax with probability 0.8, never exchange (a bluff)
    s = pos([[D, C], [A, A], [AM, AM], [CO, D]], [2, 2, 2, 2])
    probs = np.exp(np.asarray(honest(key, s)))
    assert probs[2] == pytest.approx(0.8, abs=1e-5)
    assert probs[3] < 1e-20
    # honest with 7 coins: coup
    s = pos([[D, C], [A, A], [AM, AM], [CO, D]], [7, 2, 2, 2])
    probs = np.exp(np.asarray(honest(key, s)))
    assert probs[env.layout.coup:env.layout.coup + 4].sum() == pytest.approx(0.8, abs=1e-5)
    # aggressive targets the leader (seat 2: most coins)
    s = pos([[CO, CO], [A, A], [AM, AM], [C, D]], [7, 2, 5, 2])
    probs = np.exp(np.asarray(aggr(key, s)))
    coup = probs[env.layout.coup:env.layout.coup + 4]
    assert coup[2] > 0.5 and coup[1] < 1e-20 and coup[3] < 1e-20
    # a bluff is possible: the aggressive bot bluffs with probability 0.25
    bl = np.asarray(bluff_actions(s.observation, s.legal_action_mask, env.num_players))
    assert bl.any() and probs[bl].sum() == pytest.approx(0.25, abs=1e-5)


def test_run_games_small(env):
    state, stats = seat_tables.run_games(env, ["honest", "bluffer", "aggressive", "cautious"], jax.random.PRNGKey(5), 8)
    assert np.asarray(state.terminated).all()
    assert np.asarray(stats["wins"]).sum() == 8
    assert np.asarray(stats["bluffs"])[:, 0].sum() == 0
    assert set(stats) >= set(seat_tables.STAT_NAMES)


def test_bench_policy_times_every_spec_at_the_same_positions(tmp_path, capsys):
    from evals.bench import policy as bench_policy

    out = bench_policy.main(["--policy", "random", "--positions", "3", "--out", str(tmp_path / "b.json")])
    assert list(out) == ["random"] and json.loads((tmp_path / "b.json").read_text()) == out
    for r in out.values():
        assert r["positions"] == 3 and 0 < r["single_median_s"] <= r["single_max_s"]
        assert r["batched_per_decision_s"] > 0
    with pytest.raises(SystemExit) as info:
        bench_policy.main(["--policy", "no_such_bot"])
    assert info.value.code == 2 and "no_such_bot" in capsys.readouterr().err
