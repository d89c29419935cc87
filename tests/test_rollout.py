"""The play primitive: the same games as a plain step-by-step loop, whatever the batch,
schedule or loop mode, records stacked per step, and one compilation per shape."""
from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import rollout
from coupjax.env import Env
from coupjax.policies import make_policy

N, B = 3, 6


@pytest.fixture(scope="module")
def env():
    return Env(N)


@pytest.fixture(scope="module")
def setup(env):
    policies = [make_policy("random", env), make_policy("honest", env)]
    seats = jnp.asarray(np.random.default_rng(1).integers(0, 2, (B, N)), jnp.int32)
    keys = jax.random.split(jax.random.PRNGKey(4), B)
    state = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(5), B))
    return policies, seats, keys, state


def _reference(env, policies, seats, keys, state, limit):
    """The loop `play` replaces, one game at a time on the host: game b's step t draws
    ``split(fold_in(keys[b], t), 3)``, its seat's policy picks the logits."""
    step = jax.jit(env.step)
    logits_of = [jax.jit(p) for p in policies]
    finals, steps = [], []
    for b in range(B):
        s = jax.tree.map(lambda x: x[b], state)
        t = 0
        while not bool(s.terminated) and t < limit:
            k_pol, k_act, k_step = jax.random.split(jax.random.fold_in(keys[b], t), 3)
            logits = logits_of[int(seats[b, int(s.current_player)])](k_pol, s)
            s = step(s, jax.random.categorical(k_act, logits).astype(jnp.int32), k_step)
            t += 1
        finals.append(s)
        steps.append(t)
    return jax.tree.map(lambda *x: np.stack(x), *finals), np.asarray(steps)


def _assert_same_states(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_play_is_the_plain_loop_whatever_the_schedule(env, setup):
    """Played to a step limit, the batch equals the game-by-game loop; with a capacity
    that serves two games per policy per iteration (games wait), it still does."""
    policies, seats, keys, state = setup
    limit = 12
    want, want_steps = _reference(env, policies, seats, keys, state, limit)
    for capacity in (None, (2, 2)):
        c, rec = jax.jit(lambda s: rollout.play(env, policies, s, keys, seats=seats, limit=limit,
                                                capacity=capacity))(state)
        assert rec is None
        np.testing.assert_array_equal(np.asarray(c.steps), want_steps)
        _assert_same_states(c.state, want)
    assert int(c.it) > limit  # the small capacity made games wait


def test_records_are_stacked_per_step(env, setup):
    """Scan mode stacks the records [T, B]; while mode writes the same rows into a
    buffer of ``limit`` rows, zeros after the last iteration."""
    policies, seats, keys, state = setup
    record = lambda s, a, new: {"seat": s.current_player, "action": a, "done": new.terminated}  # noqa: E731
    T = 5
    c, rec = jax.jit(lambda s: rollout.play(env, policies, s, keys, seats=seats, num_steps=T, record=record))(state)
    assert rec["action"].shape == (T, B) and rec["done"].dtype == jnp.bool_
    c2, rec2 = jax.jit(lambda s: rollout.play(env, policies, s, keys, seats=seats, limit=T, record=record))(state)
    assert rec2["action"].shape == (T, B) and int(c2.it) == T
    for k in rec:
        np.testing.assert_array_equal(np.asarray(rec[k]), np.asarray(rec2[k]))
    _assert_same_states(c.state, c2.state)
    # the record is of the step: the seat that moved, the action it chose (the reference's)
    np.testing.assert_array_equal(np.asarray(rec["seat"][0]), np.asarray(state.current_player))
    one, _ = rollout.play(env, policies, state, keys, seats=seats, num_steps=1)
    _assert_same_states(one.state, _reference(env, policies, seats, keys, state, 1)[0])


def test_one_compilation_per_shape(env, setup):
    """New games, keys and seats of the same shapes reuse the compiled loop."""
    policies, seats, keys, state = setup
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(s, k, idx):
        return rollout.play(env, policies, s, k, seats=idx, limit=4)[0].steps

    for i in range(3):
        s = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(10 + i), B))
        run(s, jax.random.split(jax.random.PRNGKey(i), B), (seats + i) % 2)
    assert run._cache_size() == 1
