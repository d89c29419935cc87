"""Every caller of the play primitive plays the games it played before, bit for bit.

Each test runs one caller of `coupjax.rollout` on a tiny fixed input and compares a
SHA-256 digest of everything it returns with the digest pinned on the code before the
primitive was rewritten (issue 42): a change of a key scheme, a schedule, a reset or a
record shows as a different digest.  The league's own pinned figures are in
tests/test_selfplay.py, the logger's in tests/test_replicate.py.
"""
from __future__ import annotations

import hashlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import seat_tables
from coupjax.env import Env
from coupjax.policies import make_policy

N = 3
BOTS = ("random", "honest", "aggressive", "bluffer")


def digest(tree) -> str:
    """SHA-256 of a pytree's leaves (dtype, shape and bytes, in tree order), first 16 hex digits."""
    h = hashlib.sha256()
    for x in jax.tree.leaves(jax.device_get(tree)):
        x = np.asarray(x)
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = np.asarray(jax.random.key_data(x))
        h.update(f"{x.dtype}{x.shape}".encode())
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()[:16]


@pytest.fixture(scope="module")
def env():
    return Env(N)


@pytest.fixture(scope="module")
def bots(env):
    return [make_policy(x, env) for x in BOTS]


def test_table_and_queue_runners_play_the_games_they_played_before(env, bots):
    """The arena's two runners, with every game served and with games waiting."""
    G = 20
    idx = np.random.default_rng(0).integers(0, 4, (G, N)).astype(np.int32)
    keys = seat_tables.game_keys(3, 0, G)
    table = seat_tables.make_table_runner(env, bots)
    queue = seat_tables.make_queue_runner(env, bots, slots=6)
    got = {"table": digest(table(keys, idx)), "table_waits": digest(table(keys, idx, capacity=(3, 3, 3, 3))),
           "queue": digest(queue(keys, idx)), "queue_waits": digest(queue(keys, idx, capacity=(2, 2, 2, 2), count=17))}
    assert got == {"table": "cd18a48dd47a06b1", "table_waits": "cd18a48dd47a06b1", "queue": "5c33dc00d87f74b8",
                   "queue_waits": "8bb3cac90922f66f"}


def test_single_seat_plays_the_games_it_played_before(env, bots):
    """The learner's auto-reset (a batch of learner slots, three steps) and the Gymnasium
    adapter's play-out (one match to its end, its record of every decision)."""
    from training.learner import Learner
    from coupjax.gymnasium import _builder, _vector_step

    learner = Learner(env, {"random": 1.0, "honest": 2.0, "bluffer": 1.0})
    key = jax.random.PRNGKey(11)

    reset, step = jax.jit(learner.reset, static_argnums=1), jax.jit(learner.step)  # one step compiled, not three

    def run(key):
        ls = reset(key, 5)
        out = [ls]
        for i in range(3):
            action = jnp.argmax(ls.env_state.legal_action_mask, axis=1)
            ls, tr = step(ls, action, jax.random.fold_in(key, i))
            out.append((ls, tr))
        return out

    start, advance, _, _ = _builder(N, 1, ("honest", "random"))
    start, advance = jax.jit(start), jax.jit(advance)
    carry, obs = start(jax.random.PRNGKey(2), jax.random.PRNGKey(3))
    trail = [obs]
    for t in range(60):
        if bool(obs[2]):
            break
        carry, obs = advance(carry, jnp.argmax(obs[1]).astype(jnp.int32), jax.random.fold_in(jax.random.PRNGKey(3), t))
        trail.append(obs)
    vector_step, empty = _vector_step(N, 1, ("honest", "random"))
    vc, pk = empty(3), jnp.zeros((3, 2), jnp.uint32)
    restart, vtrail = np.ones(3, bool), []
    for t in range(6):  # every game restarted at the first call, game 1 again at the fourth
        vc, pk, out = vector_step(vc, pk, jnp.asarray(np.argmax(np.asarray(out[1]), 1) if t else np.zeros(3), jnp.int32),
                                  jnp.asarray(restart), jnp.arange(3) + 10 * t, jnp.arange(3) + 5)
        vtrail.append(out)
        restart = np.asarray(out[2]) | (np.arange(3) == 1) & (t == 2)
    got = {"learner": digest(run(key)), "adapter": digest((carry, trail)), "vector": digest((vc, vtrail))}
    assert got == {"learner": "ca6a1f3f2de986f3", "adapter": "85d711d94ccc528b", "vector": "62f34ee711445f25"}


@pytest.mark.slow
def test_simulation_positions_collector_and_rates_play_the_games_they_played_before(env, bots):
    """The simulation, the test positions, the behaviour-cloning collector and the
    reaction-rate runner, each with its own key scheme, liveness and reset.  Quick twin:
    test_a_scan_of_step_records_the_games_of_play (tests/test_rollout.py)."""
    from coupjax.simulate import make_simulation
    from coupjax.testing import sample_positions
    from evals.lib.reactions import make_rate_runner
    from training.bc import make_collector

    G = 8
    idx = np.random.default_rng(1).integers(0, 4, (G, N)).astype(np.int32)
    got = {"simulation": digest(make_simulation(env, G)(jax.random.PRNGKey(0))),
           "positions": digest(sample_positions(env, num_states=G, seed=3, max_decisions=12)),
           "collector": digest(make_collector(env, {"random": 1.0, "honest": 1.0}, 4, 16)(jax.random.PRNGKey(5))),
           "rates": digest(make_rate_runner(env, bots)(seat_tables.game_keys(4, 0, G), jnp.asarray(idx),
                                                       capacity=(4, 4, 4, 4)))}
    assert got == {"simulation": "cd49b584327a7fe7", "positions": "ae1fe47d4a582cc3", "collector": "3ea55c5182abf6ce",
                   "rates": "c029334fdf5a1a91"}


def test_league_plays_the_games_it_played_before(env):
    """`League.play` with a pool that waits (capacity below the batch: stalls) and an ``extra``."""
    from training.league import League

    league = League(env, {"random": 1.0, "honest": 1.0, "bluffer": 1.0}, num_snapshots=1, self_weight=0.05,
                    snapshot_weight=0.05, pool_margin=0.3)
    B, T = 12, 24
    assert [league.capacity(m, B) for m in range(league.first_pool, league.num_members)] == [4, 4, 4]
    uniform = lambda k, s: jnp.zeros(s.legal_action_mask.shape, jnp.float32)  # noqa: E731
    greedy = lambda k, s: s.legal_action_mask.astype(jnp.float32)  # noqa: E731

    @jax.jit
    def run(key):
        tables = league.reset(key, B, slot_offset=3)
        keys = jax.random.split(jax.random.fold_in(key, 1), T)
        return league.play(tables, keys, uniform, [greedy], extra=lambda s: s.current_player)

    out = run(jax.random.PRNGKey(9))
    assert int((~out[1].stepped).sum()) == 4 and digest(out) == "d5ce5ed2a064189f"


@pytest.mark.slow
def test_report_loggers_record_the_games_they_recorded_before(env):
    """The report's position logger (one game per `play`, `vmap`-ed) and the advisor's
    claim recorder (its own queue of slots).  Quick twin:
    test_table_and_queue_runners_play_the_games_they_played_before."""
    from coupjax.policies.pools import SCRIPTED_NAMES
    from evals.lib.advisor.record import QueueRecorder, play_condition
    from evals.report.positions import make_logger

    idx = np.random.default_rng(2).integers(0, len(SCRIPTED_NAMES), (4, N)).astype(np.int32)
    rec = play_condition(QueueRecorder(env, [make_policy(x, env) for x in SCRIPTED_NAMES], slots=8, games_per_call=12),
                         jax.random.PRNGKey(5), "aggressive_heavy", 12, 25)
    got = {"positions": digest(make_logger(env, max_rows=40)(seat_tables.game_keys(6, 0, 4), idx)),
           "recorder": digest({k: np.asarray(v) for k, v in rec.items() if not isinstance(v, (int, float))})}
    assert got == {"positions": "195507b96908c5af", "recorder": "23150ede151fb689"}
