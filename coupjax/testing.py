"""Conformance checks for users' own code: `api_test(env)` and `check_policy(policy, env)`.

Both raise ``AssertionError`` with a message saying what broke, and return a small
report when everything holds.  The project's own tests run them over the engine and
every registered policy.

`api_test` checks the Pgx v2 contract of an env: pure ``init`` / ``step`` that jit and
vmap, the public fields' shapes and dtypes, private fields ``_``-prefixed, a legal
action at every decision before the end, zero rewards until the end and a zero-sum
result at it, a finished state left unchanged by ``step``, and no recompilation when
stepping new states of the same shape.

`check_policy` checks the policy interface (`coupjax.policies.common`) on mid-game
positions of every phase: float32 logits of the action count, ``-inf`` exactly on the
illegal actions, finite on the legal ones, no NaN; that the policy reads nothing the
acting seat cannot see (every unseen card and every private field of the previous
step's event scrambled by `coupjax.game.deal.scramble_unseen` leaves its logits
unchanged, with the same key); and that it traces once for repeated calls.
"""
from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rollout
from coupjax import rules
from coupjax.events import last_event
from coupjax.game import board
from coupjax.game.deal import scramble_unseen

PUBLIC_FIELDS = ("current_player", "observation", "rewards", "terminated", "truncated", "legal_action_mask")


_uniform_legal = rollout.uniform_legal


def api_test(env, num_games: int = 64, max_steps: int = 3000, seed: int = 0) -> dict:
    """Check ``env`` against the Pgx v2 API contract (module doc) over ``num_games``
    uniform-random games; returns {"games", "steps", "finished"}."""
    key = jax.random.PRNGKey(seed)
    n, A = env.num_players, env.num_actions
    s = jax.jit(env.init)(key)
    fields = set(s.__dataclass_fields__)
    missing = set(PUBLIC_FIELDS) - fields
    assert not missing, f"state lacks the public fields {sorted(missing)}"
    extra = sorted(f for f in fields - set(PUBLIC_FIELDS) if not f.startswith("_"))
    assert not extra, f"non-Pgx fields must be _-prefixed: {extra}"
    assert s.current_player.shape == () and s.current_player.dtype == jnp.int32, "current_player: int32[]"
    assert s.observation.shape == tuple(env.observation_shape), "observation shape != env.observation_shape"
    assert s.rewards.shape == (n,) and s.rewards.dtype == jnp.float32, "rewards: float32[num_players]"
    assert s.terminated.shape == () and s.terminated.dtype == jnp.bool_, "terminated: bool[]"
    assert s.truncated.shape == () and s.truncated.dtype == jnp.bool_, "truncated: bool[]"
    assert s.legal_action_mask.shape == (A,) and s.legal_action_mask.dtype == jnp.bool_, "legal_action_mask: bool[A]"

    chex.clear_trace_counter()
    vstep = jax.vmap(env.step)
    step = jax.jit(chex.assert_max_traces(lambda s, a, k: vstep(s, a, k), n=1))
    init = jax.jit(jax.vmap(env.init))
    states = init(jax.random.split(key, num_games))
    total = np.zeros((num_games, n), np.float32)
    steps = 0
    for t in range(max_steps):
        done = np.asarray(states.terminated)
        if done.all():
            break
        mask = np.asarray(states.legal_action_mask)
        assert mask[~done].any(axis=1).all(), f"a live game has no legal action at step {t}"
        k_act, k_step = jax.random.split(jax.random.fold_in(key, t + 1))
        actions = _uniform_legal(k_act, states.legal_action_mask)
        new = step(states, actions, jax.random.split(k_step, num_games))
        chex.assert_trees_all_equal_shapes_and_dtypes(states, new)
        rewards = np.asarray(new.rewards)
        assert not rewards[~np.asarray(new.terminated)].any(), "rewards before the end must be zero"
        assert not rewards[done].any(), "stepping a finished game must give zero rewards"
        for name in PUBLIC_FIELDS:  # a finished game is left as it was
            before, after = np.asarray(getattr(states, name)), np.asarray(getattr(new, name))
            if name != "rewards":
                assert (before[done] == after[done]).all(), f"step changed {name} of a finished game"
        total = total + rewards
        states = new
        steps += int((~done).sum())
    finished = np.asarray(states.terminated)
    assert finished.all(), f"{int((~finished).sum())} games did not end within {max_steps} steps"
    assert np.asarray(states.legal_action_mask).all(), "the mask of a finished game must be all True"
    np.testing.assert_allclose(total.sum(axis=1), 0.0, atol=1e-5, err_msg="rewards of a game must sum to zero")
    assert ((total > 0).sum(axis=1) == 1).all(), "every game must reward exactly one winner"
    assert not np.asarray(states.truncated).any(), "truncated must stay False (the turn cap is an end)"
    return {"games": num_games, "steps": steps, "finished": int(finished.sum())}


@functools.lru_cache(maxsize=16)
def position_player(env):
    """The jitted game player of `sample_positions` (one compilation per env and shape):
    ``play(key, limit int32[G], after_private bool[G]) -> states [G]``, G games of
    uniformly random legal moves, each stopped after ``limit`` decisions (and, where
    ``after_private``, just after another seat's private choice); also the exploring
    starts of `training.search_targets`."""

    def private(s):
        ev = last_event(s)
        return ((ev.phase == rules.PH_LOSE) | (ev.phase == rules.PH_EXCHANGE)) & (ev.seat != s.current_player)

    players = _uniform_players(env)

    @jax.jit
    def play(key, limit, after_private):
        k0, k = jax.vmap(jax.random.split)(jax.random.split(key, limit.shape[0])).transpose(1, 0, 2)
        s = jax.vmap(env.init)(k0)

        def live(tables):
            t = tables.steps
            stop = (t >= limit) & (~after_private | jax.vmap(private)(tables.state) | (t >= limit + 60))
            return ~tables.state.terminated & ~stop

        def body(carry):  # each game splits its own key at each of its steps
            tables, k = carry
            lv = live(tables)
            new = jax.vmap(lambda kk: jax.random.split(kk, 3))(k)
            tables, _ = rollout.step(players, tables, rollout.StepKeys(new[:, 2], new[:, 1], new[:, 2]), lv)
            return tables, jnp.where(lv[:, None], new[:, 0], k)

        first = (rollout.start(s, jnp.zeros((limit.shape[0], env.num_players), jnp.int32)), k)
        return jax.lax.while_loop(lambda c: live(c[0]).any(), body, first)[0].state

    return play


def _uniform_players(env):
    """The rollout players of uniformly random legal play."""
    def sample(ka, logits):  # a served game's logits are finite exactly where legal
        return jax.vmap(_uniform_legal)(ka, jnp.isfinite(logits))

    return rollout.Players(env, (rollout.uniform_logits,), sample=sample)


def trajectory_positions(env, key, games: int, decisions: int):
    """Every position of ``games`` games of uniformly random legal moves, after 0, 1, ..,
    ``decisions`` decisions: one batched state of ``(decisions + 1) * games``, step-major
    (position ``t * games + g`` is game g after t decisions; a game that ended stays
    ended).  Each position is distributed as `position_player`'s with a limit of t, so a
    uniform pick among them is one of its positions at a uniform limit, at a
    ``decisions + 1``-th of the play (the positions of one game are not independent).
    Jittable; ``games`` and ``decisions`` static."""
    players = _uniform_players(env)
    k0, k = jax.vmap(jax.random.split)(jax.random.split(key, games)).transpose(1, 0, 2)
    first = rollout.start(jax.vmap(env.init)(k0), jnp.zeros((games, env.num_players), jnp.int32))

    def body(carry, _):  # each game splits its own key at each of its steps, as `position_player`
        tables, k = carry
        lv = ~tables.state.terminated
        new = jax.vmap(lambda kk: jax.random.split(kk, 3))(k)
        tables, _ = rollout.step(players, tables, rollout.StepKeys(new[:, 2], new[:, 1], new[:, 2]), lv)
        return (tables, jnp.where(lv[:, None], new[:, 0], k)), tables.state

    _, later = jax.lax.scan(body, (first, k), None, length=decisions)
    steps = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first.state, later)
    return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), steps)


def sample_positions(env, num_states: int = 256, seed: int = 0, max_decisions: int = 40):
    """Mid-game positions (a batched state, none finished) from uniform-random games
    stopped after a random number of decisions, covering every phase; a third of them
    stop just after a step whose event holds a private choice of another seat (a
    reveal or an exchange's keep), where a policy could peek at it."""
    key = jax.random.PRNGKey(seed)
    games = 4 * num_states
    k_stop, k_play = jax.random.split(key)
    limit = jax.random.randint(k_stop, (games,), 0, max_decisions + 1)
    after_private = jnp.arange(games) % 3 == 0
    states = position_player(env)(k_play, limit, after_private)
    live = np.flatnonzero(~np.asarray(states.terminated))[:num_states]
    assert len(live) == num_states, f"only {len(live)} of {num_states} positions were live; lower max_decisions"
    return jax.tree.map(lambda x: x[live], states)


def scramble_positions(states, seed: int = 1):
    """Each position with everything its seat to move cannot see scrambled."""
    keys = jax.random.split(jax.random.PRNGKey(seed), states.current_player.shape[0])
    return jax.jit(jax.vmap(lambda s, k: scramble_unseen(s, s.current_player, k)))(states, keys)


def check_policy(policy, env, states=None, scrambled=None, num_states: int = 256, seed: int = 0,
                 check_traces: bool = True) -> dict:
    """Check ``policy(key, state) -> logits`` on mid-game positions (module doc).

    ``states``: positions to use (default `sample_positions`); ``scrambled``: their
    scrambled copies (default `scramble_positions`; pass both to share them across
    policies).  Returns {"positions", "phases"}.
    """
    states = sample_positions(env, num_states, seed) if states is None else states
    scrambled = scramble_positions(states, seed + 1) if scrambled is None else scrambled
    B = states.current_player.shape[0]
    np.testing.assert_array_equal(np.asarray(states.observation), np.asarray(scrambled.observation),
                                  err_msg="scrambling changed an observation (a leak in the env, not the policy)")
    np.testing.assert_array_equal(np.asarray(states.legal_action_mask), np.asarray(scrambled.legal_action_mask))
    batched = jax.jit(jax.vmap(policy))
    keys = jax.random.split(jax.random.PRNGKey(seed + 2), B)
    logits = np.asarray(batched(keys, states))
    mask = np.asarray(states.legal_action_mask)
    assert logits.dtype == np.float32, f"logits must be float32, got {logits.dtype}"
    assert logits.shape == mask.shape, f"logits must have shape {mask.shape[1:]} per state, got {logits.shape[1:]}"
    assert not np.isnan(logits).any(), "logits contain NaN"
    assert not np.isposinf(logits).any(), "logits contain +inf"
    wrong = np.isneginf(logits) != ~mask
    assert not wrong.any(), (f"logits must be -inf exactly on the illegal actions; {int(wrong.any(axis=1).sum())} "
                             f"of {B} positions differ")
    other = np.asarray(batched(keys, scrambled))
    leaked = ~np.all((other == logits) | (np.isneginf(other) & np.isneginf(logits)), axis=1)
    assert not leaked.any(), (f"the policy's logits changed in {int(leaked.sum())} of {B} positions when only what "
                              f"the acting seat cannot see changed: it reads hidden information")
    if check_traces:
        chex.clear_trace_counter()
        one = jax.jit(chex.assert_max_traces(policy, n=1))
        for i in range(min(3, B)):
            jax.block_until_ready(one(keys[i], jax.tree.map(lambda x: x[i], states)))
    phases = sorted({int(p) for p in np.asarray(board.phase(states))})
    return {"positions": B, "phases": [rules.PHASES[p] for p in phases]}
