"""The play primitive: the same games as a plain step-by-step loop, whatever the batch,
schedule or loop (`play` or a caller's scan of `step`), and one compilation per shape."""
from __future__ import annotations

import ast
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import rollout
from coupjax.env import Env
from coupjax.game import board
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
    that serves two games per policy per iteration (games wait), it still does, and with
    policies computed on gathered games (2 and 1 of 6: both the gathered branch and the
    fallback to every game run) too."""
    policies, seats, keys, state = setup
    limit = 12
    want, want_steps = _reference(env, policies, seats, keys, state, limit)
    for capacity, gather in ((None, None), (None, (2, 1)), ((2, 2), None)):
        players = rollout.Players(env, tuple(policies), capacity, gather=gather)
        c, aux = jax.jit(lambda s: rollout.play(players, s, keys, seats, limit))(state)
        assert aux is None
        np.testing.assert_array_equal(np.asarray(c.steps), want_steps)
        _assert_same_states(c.state, want)
    assert int(c.it) > limit  # the small capacity made games wait


def test_a_scan_of_step_records_the_games_of_play(env, setup):
    """A caller's `lax.scan` of `rollout.step` (the loop every trainer writes) records
    [T, B] rows of the seat that moved and its action, and plays `play`'s games; its
    ``tally`` sees the same steps."""
    policies, seats, keys, state = setup
    players, T = rollout.Players(env, tuple(policies)), 5

    def one_step(tables, _):
        live = ~tables.state.terminated
        new, moved = rollout.step(players, tables, rollout.per_game_keys(keys, tables.steps), live)
        return new, {"seat": tables.state.current_player, "action": moved.action, "done": new.state.terminated}

    c, rec = jax.jit(lambda s: jax.lax.scan(one_step, rollout.start(s, seats), None, T))(state)
    assert rec["action"].shape == (T, B) and rec["done"].dtype == jnp.bool_
    count = lambda n, tables, moved: n + moved.served  # noqa: E731
    c2, served = jax.jit(lambda s: rollout.play(players, s, keys, seats, T, count, jnp.zeros(B, jnp.int32)))(state)
    assert int(c2.it) == T and (np.asarray(served) == np.asarray(c2.steps)).all()
    _assert_same_states(c.state, c2.state)
    # the record is of the step: the seat that moved, the action it chose (the reference's)
    np.testing.assert_array_equal(np.asarray(rec["seat"][0]), np.asarray(state.current_player))
    one, _ = rollout.play(players, state, keys, seats, 1)
    _assert_same_states(one.state, _reference(env, policies, seats, keys, state, 1)[0])


def test_one_compilation_per_shape(env, setup):
    """New games, keys and seats of the same shapes reuse the compiled loop."""
    policies, seats, keys, state = setup
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(s, k, idx):
        return rollout.play(rollout.Players(env, tuple(policies)), s, k, idx, 4)[0].steps

    for i in range(3):
        s = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(10 + i), B))
        run(s, jax.random.split(jax.random.PRNGKey(i), B), (seats + i) % 2)
    assert run._cache_size() == 1


# ------------------------------------------------------------------ one loop that plays
ROOT = Path(__file__).resolve().parents[1]
OWN_LOOPS = ("coupjax/rollout.py", "coupjax/search/", "coupjax/game/")
# Files that may loop over a step themselves, and why.
EXCEPTIONS = {
    "training/dqn.py": "its scan is the training loop over the single-seat wrapper's step (the learner's), "
                       "which plays the games through `coupjax.rollout`",
}
# Loops still to move onto `coupjax.rollout` (issue 24): none; a new one fails the test.
NOT_YET_PORTED: set = set()
LOOPS = {"scan", "while_loop", "fori_loop"}


def _loops_over_a_step(tree) -> bool:
    """A `lax.scan`/`while_loop`/`fori_loop` call and a call of ``.step(``,
    ``.step_autoreset(``, ``step_b(`` or a name ``env_step`` in one module (a loop of the
    primitive, ``rollout.step(``, is how games are played)."""
    loop = step = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in LOOPS and isinstance(f.value, ast.Attribute | ast.Name) \
                    and (getattr(f.value, "attr", None) == "lax" or getattr(f.value, "id", None) == "lax"):
                loop = True
            if isinstance(f, ast.Attribute) and f.attr in ("step", "step_autoreset") \
                    and getattr(f.value, "id", None) != "rollout":
                step = True
            if isinstance(f, ast.Name) and f.id == "step_b":
                step = True
        if isinstance(node, ast.Name) and node.id == "env_step" or \
                isinstance(node, ast.FunctionDef) and node.name == "env_step":
            step = True
    return loop and step


def _game_loops() -> set:
    found = set()
    for pkg in ("coupjax", "training", "evals"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(OWN_LOOPS) and _loops_over_a_step(ast.parse(path.read_text())):
                found.add(rel)
    return found


def test_games_are_played_through_the_rollout():
    """Outside the primitive, search and the engine, no module loops over a step
    itself, but the named exceptions (at most two) and the loops not yet moved."""
    assert len(EXCEPTIONS) <= 2
    found = _game_loops()
    new = found - set(EXCEPTIONS) - NOT_YET_PORTED
    assert not new, f"{sorted(new)} loop over a step themselves: play through coupjax.rollout.step"
    moved = NOT_YET_PORTED - found
    assert not moved, f"{sorted(moved)} no longer loop over a step: take them off NOT_YET_PORTED"


def test_the_loop_finder_sees_a_loop_over_a_step():
    src = "import jax\ndef f(env, s, k):\n    return jax.lax.scan(lambda c, x: (env.step(c, 0, x), None), s, k)\n"
    assert _loops_over_a_step(ast.parse(src))
    assert not _loops_over_a_step(ast.parse(src.replace("env.step(c, 0, x)", "c")))
    assert not _loops_over_a_step(ast.parse(src.replace("env.step(c, 0, x)", "rollout.step(p, c, x, True)")))


# ------------------------------------------------------------------ the single-seat wrapper
def _keys(key, t):
    k_pol, k_act, k_step = jax.random.split(jax.random.fold_in(key, t), 3)
    return key, jax.random.fold_in(key, -1 - t), k_pol, k_act, k_step


def test_single_seat_stops_at_the_seats_decisions(env, setup):
    """Play-out: every call returns at the outside seat's decision or at the end, and
    the match goes on to its end; auto-reset: every call returns at a decision of the
    seat in a live game, a new game where the last one ended for the seat."""
    from coupjax.wrappers import SingleSeat

    policies = setup[0]
    seats = jnp.asarray([0, 1, 1], jnp.int32)
    seat = 2
    play_out = SingleSeat(env, policies)
    def record(buf, t, s, a):  # who moved at each decision, and how
        return buf.at[t].set(jnp.stack([s.current_player, a]))

    advance = jax.jit(lambda s, k, a, t, b: play_out.advance(s, seat, seats, k, _keys, action=a, steps=t,
                                                             record=record, record_init=b))
    first = jax.jit(lambda s, k, b: play_out.advance(s, seat, seats, k, _keys, record=record, record_init=b))
    key = jax.random.PRNGKey(7)
    out, t, mine = first(env.init(key), key, jnp.full((400, 2), -1, jnp.int32)), 0, []
    while not bool(out.state.terminated):
        assert int(out.state.current_player) == seat
        t += int(out.steps)
        mine.append(int(np.flatnonzero(np.asarray(out.state.legal_action_mask))[0]))
        out = advance(out.state, key, jnp.int32(mine[-1]), jnp.int32(t), out.record)
    t += int(out.steps)
    moves = np.asarray(out.record)[:t]
    assert mine and (moves >= 0).all() and not bool(out.over)
    assert moves[moves[:, 0] == seat, 1].tolist() == mine  # the outside seat's actions, as given

    def new_game(k):
        return env.init(k), jnp.int32(seat), seats

    reset = SingleSeat(env, policies, new_game=new_game)
    step = jax.jit(lambda s, st, k, a: reset.advance(s, st, seats, k, _keys, action=a))
    out = jax.jit(lambda s, k: reset.advance(s, seat, seats, k, _keys))(env.init(key), key)
    ended = 0
    for i in range(200):
        s = out.state
        assert not bool(s.terminated) and int(s.current_player) == int(out.seat)
        action = jnp.int32(np.flatnonzero(np.asarray(s.legal_action_mask))[-1])
        out = step(s, out.seat, jax.random.fold_in(key, i), action)
        if bool(out.over):  # the last state: the game ended, or the seat lost its last card
            ended += 1
            assert bool(out.last.terminated) or not bool(board.alive(out.last)[int(s.current_player)])
            if ended == 2:
                break
    assert ended == 2  # a game ended for the seat and a new one took its place
