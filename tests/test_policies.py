"""Policies: information leaks, legal logits, documented rates, no recompilation.

One jitted table runner (the five scripted bots, 2,000 games) serves both the rate
test (complete games) and the mid-game positions (the same games stopped after a
random number of decisions), so the engine's while loop compiles once per module.
"""
from __future__ import annotations

import time

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import arena
from coupjax.game import deal as positions
from coupjax.policies import pools
from coupjax.policies.common import bluff_actions
from coupjax import rules as R
from coupjax.env import Env
from coupjax.match import compiled
from coupjax import policies as P

NUM_PLAYERS = 4
NUM_GAMES = 2000
MAX_STEPS = 3000
RATE_TOLERANCE = 0.05


@pytest.fixture(scope="module")
def env():
    return Env(NUM_PLAYERS)


@pytest.fixture(scope="module")
def table(env):
    """(runner over SCRIPTED_NAMES, uniform seat draw int32[2000, 4])."""
    names = list(pools.SCRIPTED_NAMES)
    runner = arena.make_table_runner(env, [P.make_policy(x, env) for x in names], MAX_STEPS)
    seats = arena.draw_seats(jax.random.PRNGKey(11), {x: 1.0 for x in names}, NUM_GAMES, NUM_PLAYERS)
    return runner, seats


@pytest.fixture(scope="module")
def full_games(table):
    runner, seats = table
    t0 = time.perf_counter()
    jax.block_until_ready(runner(arena.game_keys(0, 0, NUM_GAMES), seats, jnp.zeros(NUM_GAMES, jnp.int32)))  # compile only
    t1 = time.perf_counter()
    state, stats = runner(arena.game_keys(12, 0, NUM_GAMES), seats, jnp.full(NUM_GAMES, MAX_STEPS, jnp.int32))
    jax.block_until_ready(stats)
    return state, {k: np.asarray(v) for k, v in stats.items()}, (t1 - t0, time.perf_counter() - t1)


@pytest.fixture(scope="module")
def mid_states(table):
    """Non-terminal positions after a random number (0..150) of decisions, all phases."""
    runner, seats = table
    limits = jax.random.randint(jax.random.PRNGKey(13), (NUM_GAMES,), 0, 151)
    state, _ = runner(arena.game_keys(14, 0, NUM_GAMES), seats, limits)
    live = np.flatnonzero(~np.asarray(state.terminated))[:1024]
    states = jax.tree.map(lambda x: x[live], state)
    phases = set(np.asarray(states._phase).tolist())
    assert phases == set(range(R.NUM_PHASES)), f"sample misses phases: {phases}"
    return states


# ------------------------------------------------------------------ re-dealing what the actor cannot see
def _rehide(env: Env, state, key):
    """Permute every card the current player cannot see (others' hidden cards, the deck)."""
    n = env.num_players
    p = state.current_player
    idx = jnp.arange(R.DECK_SIZE)
    size = state._deck_size
    deck = jnp.where(idx < size, state._deck[jnp.clip(size - 1 - idx, 0)], -1)  # draw order
    pool = jnp.concatenate([state._hands.ravel(), deck])
    owner = jnp.concatenate([jnp.repeat(jnp.arange(n), 2), jnp.full(R.DECK_SIZE, -1)])
    unseen = (pool >= 0) & (owner != p)
    r = jax.random.uniform(key, pool.shape)
    src = jnp.argsort(jnp.where(unseen, r, 2.0), stable=True)  # unseen slots, random order
    dst = jnp.argsort(jnp.where(unseen, 0, 1), stable=True)  # unseen slots, in order
    new = pool.at[dst].set(pool[src])
    return positions.replace_hidden(state, new[: 2 * n].reshape(n, 2), new[2 * n:])


def _policy_batch(env, name):
    return jax.jit(jax.vmap(P.make_policy(name, env)))


@pytest.fixture(scope="module")
def rehidden(env, mid_states):
    keys = jax.random.split(jax.random.PRNGKey(21), mid_states.current_player.shape[0])
    return jax.jit(jax.vmap(lambda s, k: _rehide(env, s, k)))(mid_states, keys)


def test_rehide_changes_cards_not_the_view(env, mid_states, rehidden):
    before, after = np.asarray(mid_states._hands), np.asarray(rehidden._hands)
    p = np.asarray(mid_states.current_player)
    rows = np.arange(len(p))
    np.testing.assert_array_equal(before[rows, p], after[rows, p])  # own hand kept
    np.testing.assert_array_equal(before >= 0, after >= 0)  # hand sizes kept
    assert (before != after).any(axis=(1, 2)).mean() > 0.5  # most positions really changed
    # conservation: hands + deck hold the same multiset of roles
    for s_old, s_new in ((mid_states, rehidden),):
        count = lambda s: np.stack([((np.asarray(s._hands) == r).sum((1, 2))  # noqa: E731
                                     + (np.where(np.arange(15) < np.asarray(s._deck_size)[:, None],
                                                 np.asarray(s._deck), -1) == r).sum(1)) for r in range(5)])
        np.testing.assert_array_equal(count(s_old), count(s_new))
    np.testing.assert_array_equal(np.asarray(mid_states.observation), np.asarray(rehidden.observation))
    np.testing.assert_array_equal(np.asarray(mid_states.legal_action_mask), np.asarray(rehidden.legal_action_mask))


@pytest.mark.parametrize("name", P.policy_names())
def test_policy_sees_only_its_observation(env, mid_states, rehidden, name):
    fn = _policy_batch(env, name)
    keys = jax.random.split(jax.random.PRNGKey(31), mid_states.current_player.shape[0])
    a = np.asarray(fn(keys, mid_states))
    b = np.asarray(fn(keys, rehidden))
    np.testing.assert_array_equal(np.asarray(mid_states.observation), np.asarray(rehidden.observation))
    np.testing.assert_array_equal(a, b)


def test_leak_check_has_teeth(env, mid_states, rehidden):
    """A policy that peeks at the next seat's hidden cards is caught by the same comparison."""
    def leaky(key, state):
        nxt = (state.current_player + 1) % env.num_players
        bias = state._hands[nxt, 0].astype(jnp.float32)
        return jnp.where(state.legal_action_mask, bias, -jnp.inf)

    fn = jax.jit(jax.vmap(leaky))
    keys = jax.random.split(jax.random.PRNGKey(31), mid_states.current_player.shape[0])
    assert (np.asarray(fn(keys, mid_states)) != np.asarray(fn(keys, rehidden))).any()


@pytest.mark.parametrize("name", P.policy_names())
def test_logits_are_minus_inf_exactly_on_illegal(env, mid_states, name):
    init = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(41), 64))
    fn = _policy_batch(env, name)
    for states in (mid_states, init):
        mask = np.asarray(states.legal_action_mask)
        keys = jax.random.split(jax.random.PRNGKey(42), mask.shape[0])
        logits = np.asarray(fn(keys, states))
        assert logits.dtype == np.float32 and logits.shape == mask.shape
        assert not np.isnan(logits).any()
        np.testing.assert_array_equal(np.isneginf(logits), ~mask)
        assert (np.isfinite(logits) & mask).any(axis=1).all()
        assert not np.isposinf(logits).any()


def test_rates_match_table(full_games, table, env):
    _, stats, (compile_s, run_s) = full_games
    _, seats = table
    seats = np.asarray(seats)
    assert stats["finished"].all()
    wins = stats["wins"].sum(axis=1)
    np.testing.assert_array_equal(wins, 1)
    steps = stats["steps"]
    print(f"\n{NUM_GAMES} games (4 players): run {run_s:.1f} s, compile/warm-up {compile_s:.1f} s; "
          f"decisions per game mean {steps.mean():.1f}, max {steps.max()}")
    for i, name in enumerate(pools.SCRIPTED_NAMES):
        sel = seats == i
        bluff = stats["bluffs"][sel].sum() / stats["bluff_opportunities"][sel].sum()
        chal = stats["challenges"][sel].sum() / stats["challenge_opportunities"][sel].sum()
        assert stats["bluff_opportunities"][sel].sum() > 1000 and stats["challenge_opportunities"][sel].sum() > 1000
        want = pools.SCRIPTED_RATES[name]
        print(f"{name:10s} bluff {bluff:.4f} (table {want['bluff']})  challenge {chal:.4f} (table {want['challenge']})")
        assert abs(bluff - want["bluff"]) <= RATE_TOLERANCE, (name, bluff)
        assert abs(chal - want["challenge"]) <= RATE_TOLERANCE, (name, chal)
    honest = seats == pools.SCRIPTED_NAMES.index("honest")
    assert stats["bluffs"][honest].sum() == 0


@pytest.mark.parametrize("name", P.policy_names())
def test_no_recompilation(env, mid_states, name):
    """Repeated calls on new keys and states of the same shape trace the policy once."""
    chex.clear_trace_counter()
    batch = 64
    batched = jax.vmap(P.make_policy(name, env))
    fn = jax.jit(chex.assert_max_traces(lambda k, s: batched(k, s), n=1))
    for i in range(5):
        states = jax.tree.map(lambda x: x[i * batch:(i + 1) * batch], mid_states)
        keys = jax.random.split(jax.random.PRNGKey(i), batch)
        jax.block_until_ready(fn(keys, states))
    one = jax.jit(chex.assert_max_traces(lambda k, s: P.make_policy(name, env)(k, s), n=1))
    for i in range(3):
        jax.block_until_ready(one(jax.random.PRNGKey(i), jax.tree.map(lambda x: x[i], mid_states)))


# ------------------------------------------------------------------ registry, seats, runner
def test_registry(env):
    names = P.policy_names()
    assert set(pools.SCRIPTED_NAMES) <= set(names)
    docs = P.describe_policies()
    assert set(docs) == set(names) and all(isinstance(d, str) and d.endswith(".") for d in docs.values())
    assert set(pools.SCRIPTED_RATES) == set(pools.SCRIPTED_NAMES)
    with pytest.raises(KeyError):
        P.make_policy("no-such-policy", env)
    with pytest.raises(TypeError):
        P.make_policy("honest", env, bogus=1)
    with pytest.raises(ValueError):
        P.register_policy("random", "dup.")(lambda env: None)


def test_draw_seats():
    for cond, mix in pools.CONDITIONS.items():
        assert abs(sum(mix.values()) - 1.0) < 1e-9
        seats = np.asarray(arena.draw_seats(jax.random.PRNGKey(3), cond, 5000, 4))
        assert seats.shape == (5000, 4) and seats.dtype == np.int32
        for name, w in mix.items():
            share = (seats == pools.SCRIPTED_NAMES.index(name)).mean()
            assert abs(share - w) < 0.02, (cond, name, share)
    with pytest.raises(ValueError):
        arena.draw_seats(jax.random.PRNGKey(0), {"nobody": 1.0}, 2, 4)


def test_bot_choices_on_positions():
    """Spot checks of the scripted logic on explicit positions."""
    env, _, _, position = compiled(4)
    D, A, C, AM, CO = range(5)
    deck = np.array([D, A, C, AM, CO, CO, C] + [-1] * 8, np.int32)
    no_reveals = np.full((4, 2), -1, np.int32)

    def pos(hands, coins):
        return position(np.asarray(hands, np.int32), deck, np.asarray(coins, np.int32), no_reveals, 0, 0)

    honest = jax.jit(P.make_policy("honest", env))
    aggr = jax.jit(P.make_policy("aggressive", env))
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
    state, stats = arena.run_games(env, ["honest", "bluffer", "aggressive", "cautious"], jax.random.PRNGKey(5), 8)
    assert np.asarray(state.terminated).all()
    assert np.asarray(stats["wins"]).sum() == 8
    assert np.asarray(stats["bluffs"])[:, 0].sum() == 0
    assert set(stats) >= set(arena.STAT_NAMES)
