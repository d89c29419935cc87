"""Engine conformance (Pgx v2 API), property tests over many vmapped games, no hidden-card
leaks in observations or public events, and no recompilation in loops."""
from __future__ import annotations

import os

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import Env, rules as R
from coupjax.events import event_to_dict, public_event
from coupjax.match import Match, compiled
from coupjax.game.deal import replace_hidden

PROPERTY_GAMES = int(os.environ.get("COUPJAX_PROPERTY_GAMES", "4096"))


# ------------------------------------------------------------------ API conformance
@pytest.mark.parametrize("num_players", [2, 4, 6])
def test_api_fields_shapes_and_dtypes(num_players):
    env, init, step, _ = compiled(num_players)
    s = init(jax.random.PRNGKey(0))
    n, A = num_players, env.num_actions
    assert A == R.num_actions(n) == 32 + 3 * n
    assert s.current_player.dtype == jnp.int32 and s.current_player.shape == ()
    assert s.observation.shape == env.observation_shape and s.observation.dtype == jnp.float32
    assert s.rewards.shape == (n,) and s.rewards.dtype == jnp.float32
    assert s.terminated.dtype == bool and s.truncated.dtype == bool
    assert s.legal_action_mask.shape == (A,) and s.legal_action_mask.dtype == bool
    public = {"current_player", "observation", "rewards", "terminated", "truncated", "legal_action_mask"}
    fields = set(s.__dataclass_fields__)
    assert public <= fields
    assert all(f.startswith("_") for f in fields - public)
    assert "_step_count" in fields
    # step keeps every leaf's shape and dtype
    s2 = step(s, jnp.int32(0), jax.random.PRNGKey(1))
    chex.assert_trees_all_equal_shapes_and_dtypes(s, s2)
    assert int(s2._step_count) == 1


def _random_policy(key, state):
    u = jax.random.uniform(key, state.legal_action_mask.shape)
    return jnp.argmax(jnp.where(state.legal_action_mask, u, -1.0), axis=-1).astype(jnp.int32)


def _mixed_policy(key, state, mode):
    """mode 0: uniform legal; 1: stalling (exchange/steal/pass: no coins enter play);
    2: uniform legal with 1% of actions drawn from all ids (forfeits)."""
    k1, k2, k3 = jax.random.split(key, 3)
    A = state.legal_action_mask.shape[-1]
    n = (A - 32) // 3
    lay = R.ActionLayout(n)
    legal = state.legal_action_mask
    u = jax.random.uniform(k1, legal.shape)
    calm = jnp.zeros(A, bool).at[R.EXCHANGE].set(True).at[lay.steal:lay.steal + n].set(True)
    calm = calm.at[lay.reaction + R.PASS].set(True).at[lay.reveal:].set(True)
    boost = jnp.where((mode == 1) & calm, 4.0, 0.0)
    a = jnp.argmax(jnp.where(legal, u + boost, -1.0)).astype(jnp.int32)
    wild = jax.random.randint(k2, (), 0, A)
    return jnp.where((mode == 2) & (jax.random.uniform(k3) < 0.01), wild, a)


def _invariants(env, s):
    """Per-game booleans: cards conserved, coins >= 0, mask non-empty before the end."""
    cards = jnp.concatenate([s._hands.reshape(-1), s._revealed.reshape(-1), s._drawn,
                             jnp.where(jnp.arange(R.DECK_SIZE) < s._deck_size, s._deck, -1)])
    counts = (cards[:, None] == jnp.arange(R.NUM_ROLES)).sum(0)
    ok_cards = jnp.all(counts == R.COPIES_PER_ROLE)
    ok_coins = jnp.all(s._coins >= 0)
    ok_mask = s.terminated | s.legal_action_mask.any()
    ok_turn = s._turn <= R.TURN_CAP
    ok_rewards = jnp.where(s.terminated, jnp.isclose(s.rewards.sum(), 0.0, atol=1e-5), jnp.all(s.rewards == 0))
    ok_hidden = jnp.all(((s._hands >= 0).sum(1) + (s._revealed >= 0).sum(1)) == 2)
    # a proven-absent role is true of the hand; a caught bluff costs a card, so such a seat
    # holds one card, except while it chooses that loss
    hidden = (s._hands >= 0).sum(1)
    held = jnp.any((s._hands[:, :, None] == jnp.arange(R.NUM_ROLES)) & s._disproven[:, None, :])
    choosing = (s._phase == R.PH_LOSE) & (jnp.arange(hidden.shape[0]) == s.current_player)
    ok_disproven = ~held & jnp.all(~s._disproven.any(1) | (hidden <= 1) | choosing)
    return jnp.stack([ok_cards, ok_coins, ok_mask, ok_turn, ok_rewards, ok_hidden, ok_disproven])


def run_property_games(num_players, num_games, seed=0, max_steps=4000):
    env = Env(num_players)

    @jax.jit
    def run(key):
        k0, k1 = jax.random.split(key)
        states = jax.vmap(env.init)(jax.random.split(k0, num_games))
        modes = jnp.arange(num_games) % 3

        def cond(c):
            s, _, _, t, _, _ = c
            return (~jnp.all(s.terminated)) & (t < max_steps)

        def body(c):
            s, ok, key, t, live_steps, returns = c
            key, ka, ks = jax.random.split(key, 3)
            acts = jax.vmap(_mixed_policy)(jax.random.split(ka, num_games), s, modes)
            live_steps = live_steps + (~s.terminated).sum()
            s = jax.vmap(env.step)(s, acts, jax.random.split(ks, num_games))
            ok = ok & jax.vmap(lambda x: _invariants(env, x))(s).all(0)
            return s, ok, key, t + 1, live_steps, returns + s.rewards

        ok0 = jax.vmap(lambda x: _invariants(env, x))(states).all(0)
        returns = jnp.zeros((num_games, num_players), jnp.float32)
        return jax.lax.while_loop(cond, body, (states, ok0, k1, 0, 0, returns))

    s, ok, _, steps, live, returns = run(jax.random.PRNGKey(seed))
    return env, jax.device_get(s), np.asarray(ok), int(steps), np.asarray(returns)


@pytest.mark.usefixtures("optimized_xla")
@pytest.mark.parametrize("num_players", [4, 2, 6])
def test_invariants_over_random_games(num_players):
    games = PROPERTY_GAMES if num_players == 4 else 512
    env, s, ok, steps, returns = run_property_games(num_players, games, seed=num_players)
    names = ["cards conserved", "coins >= 0", "legal mask non-empty", "turn <= cap", "rewards sum to 0",
             "2 cards per seat", "proven-absent roles absent (one card left)"]
    assert ok.all(), [nm for nm, good in zip(names, ok) if not good]
    assert s.terminated.all(), "every game is over by the cap"
    assert (s._turn <= R.TURN_CAP).all()
    assert (s._turn == R.TURN_CAP).any(), "stalling games reach the cap"
    # rewards arrive exactly once, at the end: +1 for the winner, -1/(n-1) for the rest
    winners = np.asarray(jax.vmap(env.placements)(s))[:, 0]
    assert np.allclose(returns[np.arange(games), winners], 1.0)
    assert np.allclose(returns.sum(1), 0.0, atol=1e-5)
    assert np.allclose(np.sort(returns, 1)[:, :-1], -1.0 / (num_players - 1))
    assert len(np.unique(winners)) == num_players  # every seat wins some game
    assert (s.legal_action_mask.all(1)).all()  # all True once terminated


# ------------------------------------------------------------------ no leaks
def _unseen_permutation(key, state, seat, n):
    """Shuffle every card ``seat`` cannot see among the slots it cannot see."""
    hands = state._hands
    size = state._deck_size
    deck = jnp.where(jnp.arange(R.DECK_SIZE) < size, jnp.roll(state._deck[::-1], size - R.DECK_SIZE), -1)
    other = (jnp.arange(n) != seat)[:, None] & (hands >= 0)
    flat = jnp.concatenate([jnp.where(other, hands, -1).reshape(-1), deck])
    slots = flat >= 0
    vals = jnp.where(slots, flat, 99)
    perm_keys = jnp.where(slots, jax.random.uniform(key, flat.shape), 2.0)
    shuffled = vals[jnp.argsort(perm_keys)]  # unseen cards in random order, then padding
    pos = jnp.cumsum(slots) - 1
    new_flat = jnp.where(slots, shuffled[jnp.clip(pos, 0)], -1)
    new_hands = jnp.where(other, new_flat[: 2 * n].reshape(n, 2), hands)
    return new_hands, new_flat[2 * n:]


def test_observations_and_public_events_leak_no_hidden_card():
    n = 4
    env = Env(n)
    num = 512

    @jax.jit
    def collect(key):
        k0, k1 = jax.random.split(key)
        s = jax.vmap(env.init)(jax.random.split(k0, num))

        def body(s, k):
            ka, ks = jax.random.split(k)
            acts = jax.vmap(_random_policy)(jax.random.split(ka, num), s)
            s = jax.vmap(env.step)(s, acts, jax.random.split(ks, num))
            return s, s

        _, traj = jax.lax.scan(body, s, jax.random.split(k1, 12))
        return jax.tree.map(lambda x: x[-1], traj)

    s = collect(jax.random.PRNGKey(3))
    live = ~np.asarray(s.terminated)
    assert live.sum() > 100

    @jax.jit
    def check(key, s):
        seat = s.current_player
        hands, deck = _unseen_permutation(key, s, seat, n)
        s2 = replace_hidden(s, hands, deck)
        changed = jnp.any(hands != s._hands)
        same_obs = jnp.array_equal(env.observe(s, seat), env.observe(s2, seat))
        same_mask = jnp.array_equal(s.legal_action_mask, s2.legal_action_mask)
        # the observation does see the observer's own hand
        own = s._hands.at[seat].set(s._hands[seat, ::-1])
        differs_own = ~jnp.array_equal(env.observe(replace_hidden(s, own, deck), seat), env.observe(s, seat))
        return changed, same_obs & jnp.array_equal(s2.observation, s.observation), same_mask, differs_own

    changed, same_obs, same_mask, differs_own = jax.vmap(check)(jax.random.split(jax.random.PRNGKey(4), num), s)
    changed, same_obs, same_mask = (np.asarray(x)[live] for x in (changed, same_obs, same_mask))
    assert changed.mean() > 0.9
    assert same_obs.all() and same_mask.all()
    two_distinct = np.asarray((s._hands[:, :, 0] != s._hands[:, :, 1]) & (s._hands[:, :, 1] >= 0))
    seats = np.asarray(s.current_player)
    assert np.asarray(differs_own)[live & two_distinct[np.arange(num), seats]].all()

    # Public events never carry private parts.
    pub = public_event(s._event)
    assert (np.asarray(pub.redraw_role) == -1).all() and (np.asarray(pub.reveal_index) == -1).all()
    assert (np.asarray(pub.exchange_drawn) == -1).all()
    private_phase = np.isin(np.asarray(s._event.phase), [R.PH_LOSE, R.PH_EXCHANGE])
    assert (np.asarray(pub.action)[private_phase] == -1).all()


def test_public_event_dict_hides_private_parts():
    m = Match(4, hands=[["duke", "assassin"], ["captain", "contessa"], ["duke", "ambassador"], ["captain", "assassin"]],
              deck=["ambassador", "contessa", "duke", "captain", "ambassador", "assassin", "contessa"])
    m.play("tax")
    e = m.play("challenge")  # seat 1 challenges a real duke: redraw (private), seat 1 chooses its loss
    assert e["challenge"] == {"seat": 0, "role": "duke", "bluff_caught": False} and e["redraw"] is not None
    pub = event_to_dict(public_event(m.state._event), 4, public=True)
    assert pub["redraw"] is None and pub["challenge"] == e["challenge"]
    e = m.play("reveal:1")
    assert e["reveals"] == [{"seat": 1, "role": "contessa", "index": 1}]
    pub = event_to_dict(public_event(m.state._event), 4, public=True)
    assert pub["action"] == "reveal" and pub["reveals"] == [{"seat": 1, "role": "contessa"}]


# ------------------------------------------------------------------ no recompilation
def test_jit_and_vmap_do_not_retrace_in_a_loop():
    env = Env(4)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def batched_step(s, a, keys):
        return jax.vmap(env.step)(s, a, keys)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def single_step(s, a, key):
        return env.step(s, a, key)

    s = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(0), 8))
    one = env.init(jax.random.PRNGKey(1))
    key = jax.random.PRNGKey(2)
    for _ in range(20):
        key, ka, ks = jax.random.split(key, 3)
        a = jax.vmap(_random_policy)(jax.random.split(ka, 8), s)
        s = batched_step(s, a, jax.random.split(ks, 8))
        one = single_step(one, _random_policy(ka, one), ks)
    chex.clear_trace_counter()


def test_terminated_state_is_returned_unchanged_with_zero_rewards():
    env, init, step, _ = compiled(2)
    m = Match(2, hands=[["duke"], ["captain"]], revealed=[["duke"], ["captain"]],
              deck=["duke", "assassin", "assassin", "assassin", "captain", "ambassador", "ambassador",
                    "ambassador", "contessa", "contessa", "contessa"], coins=[7, 0])
    m.play("coup:1")
    s = m.state
    assert bool(s.terminated) and s.rewards.tolist() == [1.0, -1.0]
    s2 = step(s, jnp.int32(0), jax.random.PRNGKey(0))
    assert float(jnp.abs(s2.rewards).sum()) == 0.0
    assert int(s2._step_count) == int(s._step_count)
    assert bool(s2.terminated)


def test_step_autoreset_starts_fresh_matches_and_reports_results():
    env = Env(4)
    num, T = 256, 120

    @jax.jit
    def run(key):
        s = jax.vmap(env.init)(jax.random.split(key, num))

        def body(s, k):
            ka, ks = jax.random.split(k)
            a = jax.vmap(_random_policy)(jax.random.split(ka, num), s)
            s = jax.vmap(env.step_autoreset)(s, a, jax.random.split(ks, num))
            ok = jax.vmap(lambda x: _invariants(env, x))(s).all()
            return s, (s.terminated, s.rewards, s._turn, s._coins, s.legal_action_mask.any(-1), ok)

        return jax.lax.scan(body, s, jax.random.split(key, T))[1]

    term, rewards, turn, coins, any_legal, ok = jax.device_get(run(jax.random.PRNGKey(5)))
    assert ok.all() and any_legal.all()  # cards conserved, and the new match is playable
    assert term.sum() > num  # several matches end per game slot
    # a finished match reports its result on a fresh table
    assert np.allclose(rewards[term].max(-1), 1.0) and np.allclose(rewards[term].sum(-1), 0.0, atol=1e-5)
    assert (turn[term] == 0).all() and (coins[term] == R.START_COINS).all()
    assert (rewards[~term] == 0).all()
