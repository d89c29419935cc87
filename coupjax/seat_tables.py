"""The arena: THE loop that seats policies at tables and counts their results.

Every figure of a policy's strength in this project comes from here: the seat table
(`play_tables`: `evals.seat_table`, training's end-of-run evaluation, the main job,
the advisor evaluation's seat table, the replication's online win rate) and the
scripted bots' rates (`measure_rates`).

The one definition of winning
-----------------------------
A table's result for a seat is its placement by the rules' ranking
(`coupjax.game.board.placements`): the last seat with influence first, then the
eliminated from the most recent elimination to the first; a match ended by the turn
cap ranks its survivors by hidden cards, then coins, then lowest seat.  A *win* is
placement 1.  Over N tables: ``win_rate = wins / N`` with a 95% Wilson interval
(``ci95_low``, ``ci95_high``), the table being the unit; ``mean_placement`` is the
mean placement (1 = first).  Every game is played to its end (the turn cap bounds
it); each game's randomness is keyed by its index alone, so results do not depend on
how the games are split into chunks.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from coupjax import devices as mesh_devices
from coupjax import distributed
from coupjax import rollout
from coupjax.game import board
from coupjax.game.tables import tables
from coupjax.metrics import wilson_interval
from coupjax.policies.common import bluff_actions, policy_entropy
from coupjax.policies.pools import CONDITIONS, OPPONENTS, SCRIPTED_NAMES
from coupjax.policies.spec import resolve_policy

MAX_STEPS = rollout.MAX_STEPS  # enough decisions for any game
INIT_STREAM = 2**31 - 1  # `fold_in` index of a game's deal (its steps use 0, 1, 2, ...)
STAT_NAMES = ("decisions", "bluff_opportunities", "bluffs", "challenge_opportunities", "challenges")


@dataclasses.dataclass(frozen=True)
class ParamPolicy:
    """A policy whose parameters are an argument of the compiled runner (no recompile
    when they change): ``apply(params, key, state) -> logits``."""

    apply: Callable
    params: Any


def count_stats(T, n):
    """The `coupjax.rollout.play` tally of the arena's per game and seat stats (the
    acting seat's decisions, bluffs and challenges with their opportunities, entropy):
    ``tally(stats, tables, moved) -> stats``, ``tables`` before the step."""

    def tally(st, tables, moved):
        s, a, logits, served = tables.state, moved.action, moved.logits, moved.served
        bl = jax.vmap(lambda o, m: bluff_actions(o, m, n))(s.observation, s.legal_action_mask)
        seat = (jnp.arange(n)[None, :] == s.current_player[:, None]) & served[:, None]
        chal_legal = s.legal_action_mask[:, T.challenge_id][:, None]
        bluffed = jnp.take_along_axis(bl, a[:, None], axis=1)
        return {
            "decisions": st["decisions"] + seat,
            "bluff_opportunities": st["bluff_opportunities"] + (seat & bl.any(axis=1, keepdims=True)),
            "bluffs": st["bluffs"] + (seat & bluffed),
            "challenge_opportunities": st["challenge_opportunities"] + (seat & chal_legal),
            "challenges": st["challenges"] + (seat & chal_legal & (a == T.challenge_id)[:, None]),
            "entropy": st["entropy"] + jnp.where(seat, jax.vmap(policy_entropy)(logits)[:, None], 0.0),
        }

    return tally


def as_param_policy(policy):
    """``policy`` as a `ParamPolicy` where it carries its weights apart
    (``.param_apply``, ``.params``: `coupjax.inference.load_policy`'s networks), else as
    it is.  A runner then takes the weights as an argument: networks of one architecture
    compile to one program (the compilation cache serves the next), where weights closed
    over would be folded in as constants, one program per network."""
    if isinstance(policy, ParamPolicy) or not hasattr(policy, "param_apply"):
        return policy
    return ParamPolicy(policy.param_apply, policy.params)


def _branches(entries, params):
    """The policies of ``entries`` with `ParamPolicy` parameters bound (in their order)."""
    out, it = [], iter(params)
    for p in entries:
        if isinstance(p, ParamPolicy):
            prm = next(it)
            out.append(lambda k, s, f=p.apply, prm=prm: f(prm, k, s))
        else:
            out.append(p)
    return out


def make_table_runner(env, policy_list, max_steps: int = MAX_STEPS):
    """A ``run(keys [B], seat_policy_index int32[B, n], step_limit=None, params=None)
    -> (final_state, stats)`` that plays B games to their end.

    Seat s of game b is played by ``policy_list[seat_policy_index[b, s]]``; entries are
    policies or `ParamPolicy`s, whose parameters ``params`` (a tuple in their order;
    default their own) are arguments of the compiled function.  Game b's randomness
    comes from ``keys[b]`` and its own step count alone (`fold_in(keys[b], t)`), so its
    result does not depend on the other games in the batch or on the schedule below.

    Schedule: one jitted `lax.while_loop` over the batch.  Each iteration computes each
    policy only on (at most) ``capacity[p]`` of the games whose seat to move it plays,
    gathered into a compact batch, and steps the games it served; the others wait for
    a later iteration.  The capacities follow the policies' shares of the seats, so a
    table of cheap bots and one expensive policy pays for the expensive one only where
    it acts (a vmapped `lax.switch` would run every policy on every game every step).

    ``stats``, per game and seat [B, n]: ``decisions``, ``bluff_opportunities``
    (main-action decisions with a legal bluff), ``bluffs``, ``challenge_opportunities``
    (decisions with ``challenge`` legal), ``challenges``, ``entropy`` (float32: summed
    entropy in nats of the acting policy's distribution), ``placement`` (1 = first,
    `coupjax.game.board.placements`) and ``wins`` (placement 1 of a finished game);
    per game: ``steps`` and ``finished``.  ``step_limit`` int32[B] stops game b after
    that many decisions (mid-game positions).
    """
    entries = [as_param_policy(p) for p in policy_list]
    if not entries:
        raise ValueError("policy_list is empty")
    n = env.num_players
    T = tables(n)
    param_slots = [i for i, p in enumerate(entries) if isinstance(p, ParamPolicy)]

    def play(keys, idx, limit, params, capacity):
        players = rollout.Players(env, tuple(_branches(entries, params)), capacity)
        state = jax.vmap(lambda k: env.init(jax.random.fold_in(k, INIT_STREAM)))(keys)
        c, stats = rollout.play(players, state, keys, idx, limit, count_stats(T, n), new_stats(keys.shape[0], n))
        state, steps = c.state, c.steps
        placement = jnp.argsort(jax.vmap(board.placements)(state), axis=1).astype(jnp.int32) + 1
        stats = {k: v if k == "entropy" else v.astype(jnp.int32) for k, v in stats.items()}
        stats["placement"] = placement
        stats["wins"] = ((placement == 1) & state.terminated[:, None]).astype(jnp.int32)
        stats["steps"] = steps
        stats["finished"] = state.terminated
        return state, stats

    _run = jax.jit(play, static_argnames="capacity")
    default_params = tuple(entries[i].params for i in param_slots)

    def run(keys, seat_policy_index, step_limit=None, params=None, capacity=None):
        """``capacity``: per policy, games served per iteration (default `capacities`
        of this seat index; pass one for many calls to compile once)."""
        idx = np.asarray(jax.device_get(seat_policy_index), np.int32)
        limit = np.full(idx.shape[0], max_steps, np.int32)
        if step_limit is not None:
            limit = np.minimum(limit, np.asarray(jax.device_get(step_limit), np.int32))
        capacity = capacities(idx, len(entries)) if capacity is None else tuple(int(c) for c in capacity)
        return _run(keys, jnp.asarray(idx), jnp.asarray(limit), default_params if params is None else tuple(params),
                    capacity=capacity)

    return run


class Queue(NamedTuple):
    """The carry of the queue runner's loop: ``slots`` games and the queue."""

    tables: rollout.Tables  # the slots' games
    keys: jax.Array  # [B]: each slot's game key
    game: jax.Array  # int32[B]: the queue index of each slot's game (G: idle)
    next: jax.Array  # int32[]: the next game of the queue
    stats: dict  # `count_stats` of each slot's game so far
    out: dict  # per game of the queue, its results once finished ([G, n] / [G])


def new_stats(B: int, n: int) -> dict:
    """Zero `count_stats` of B games."""
    return dict({name: jnp.zeros((B, n), jnp.int32) for name in STAT_NAMES}, entropy=jnp.zeros((B, n), jnp.float32))


def _finish(q: Queue, max_steps: int) -> Queue:
    """The results of the slots' finished games written to their queue rows; their slots idle."""
    s, t, G = q.tables.state, q.tables.steps, q.out["steps"].shape[0]
    done = (q.game < G) & (s.terminated | (t >= max_steps))
    row = jnp.where(done, q.game, G)
    place = jnp.argsort(jax.vmap(board.placements)(s), axis=1).astype(jnp.int32) + 1
    now = dict(q.stats, placement=place, coins=jax.vmap(board.coins)(s), alive=jax.vmap(board.alive)(s), steps=t,
               finished=s.terminated)
    out = {k: v.at[row].set(now[k], mode="drop") for k, v in q.out.items()}
    return q._replace(game=jnp.where(done, G, q.game), out=out)


def _reload(q: Queue, keys, idx, count, init, reload: int) -> Queue:
    """Up to ``reload`` idle slots take the next games of the queue (``keys``, ``idx``)."""
    B, G = q.game.shape[0], keys.shape[0]
    pick = jnp.nonzero(q.game >= G, size=reload, fill_value=B)[0]
    rank = jnp.arange(reload)
    new_game = jnp.where((pick < B) & (q.next + rank < count), q.next + rank, G).astype(jnp.int32)
    take = new_game < G
    slot = jnp.where(take, pick, B)
    ng = jnp.clip(new_game, 0, G - 1)
    put = lambda x, v: x.at[slot].set(v, mode="drop")  # noqa: E731
    t = q.tables
    tables = rollout.Tables(jax.tree.map(put, t.state, init(keys[ng])), put(t.steps, 0), put(t.seats, idx[ng]), t.it)
    return Queue(tables, put(q.keys, keys[ng]), put(q.game, new_game), q.next + take.sum().astype(jnp.int32),
                 {k: put(v, 0) for k, v in q.stats.items()}, q.out)


def play_queue(players: rollout.Players, keys, idx, count, slots: int, reload: int, max_steps: int) -> dict:
    """The first ``count`` games of the queue (``keys`` [G], ``idx`` [G, n]) played through
    ``slots`` slots, `make_queue_runner`'s loop: its results per game (padding rows zero)."""
    env, G, B = players.env, keys.shape[0], slots
    n, count = env.num_players, jnp.minimum(count, G)
    init = jax.vmap(lambda k: env.init(jax.random.fold_in(k, INIT_STREAM)))
    tally = count_stats(tables(n), n)
    game = jnp.where(jnp.arange(B) < count, jnp.arange(B), G).astype(jnp.int32)
    gi = jnp.clip(game, 0, G - 1)
    out = dict(new_stats(G, n), placement=jnp.zeros((G, n), jnp.int32), coins=jnp.zeros((G, n), jnp.int32),
               alive=jnp.zeros((G, n), bool), steps=jnp.zeros(G, jnp.int32), finished=jnp.zeros(G, bool))
    first = Queue(rollout.start(init(keys[gi]), idx[gi]), keys[gi], game, jnp.minimum(B, count).astype(jnp.int32),
                  new_stats(B, n), out)

    def body(q: Queue) -> Queue:
        t = q.tables
        live = (q.game < G) & ~t.state.terminated & (t.steps < max_steps)
        played, moved = rollout.step(players, t, rollout.per_game_keys(q.keys, t.steps), live)
        q = _finish(q._replace(tables=played, stats=tally(q.stats, t, moved)), max_steps)
        return _reload(q, keys, idx, count, init, reload)

    out = jax.lax.while_loop(lambda q: (q.game < G).any() | (q.next < count), body, first).out
    out["wins"] = ((out["placement"] == 1) & out["finished"][:, None]).astype(jnp.int32)
    return out


def _jit_over_devices(play, devices):
    """``play(keys, idx, params, capacity, count)`` jitted (``capacity`` static); over
    several ``devices`` each plays its contiguous part of the queue (its real games)."""
    devs = list(devices) if devices is not None else []
    if len(devs) <= 1:
        return jax.jit(play, static_argnames="capacity")
    mesh = mesh_devices.data_mesh(devs)

    def sharded(keys, idx, params, capacity, count):
        def local(k, i, prm, c):  # device d plays games d * G/D ...: its real ones
            return play(k, i, prm, capacity, jnp.clip(c - jax.lax.axis_index("data") * k.shape[0], 0))
        return mesh_devices.shard(local, mesh, (P("data"), P("data"), P(), P()), P("data"))(keys, idx, params, count)

    return jax.jit(sharded, static_argnames="capacity")


def make_queue_runner(env, policy_list, slots: int, max_steps: int = MAX_STEPS, reload: int | None = None,
                      devices=None):
    """A ``run(keys [G], seat_policy_index int32[G, n], params=None, capacity=None) -> stats``
    that plays G games through ``slots`` slots (`play_queue`): a slot whose game ends takes
    the next game of the queue (up to ``reload``, default slots / 16, per step), so every
    step serves about ``slots`` live games instead of a batch that waits for its longest.

    The serving and the keys of `make_table_runner` (``capacity`` default: `capacities` of
    the queue's seat index for ``slots`` games; game g's randomness is ``keys[g]`` and its
    own step count alone), so a game's result is that runner's, whichever slot plays it
    and when.  ``stats``: that runner's per game and seat [G, n], plus ``coins`` and
    ``alive`` of the final state (no final states: their slots are reused).

    ``devices`` (default: one): the queue is cut into one contiguous part per device,
    each played by its own ``slots`` slots under `jax.shard_map` (no communication;
    `coupjax.devices.use_host_cores` makes one device per CPU core).
    """
    entries = [as_param_policy(p) for p in policy_list]
    if not entries:
        raise ValueError("policy_list is empty")
    B = int(slots)
    R_ = max(1, B // 16) if reload is None else int(reload)
    param_slots = [i for i, p in enumerate(entries) if isinstance(p, ParamPolicy)]

    def play(keys, idx, params, capacity, count):
        players = rollout.Players(env, tuple(_branches(entries, params)), capacity)
        return play_queue(players, keys, idx, count, B, R_, max_steps)

    devices = list(devices) if devices is not None else []
    _run, D = _jit_over_devices(play, devices), max(len(devices), 1)
    default_params = tuple(entries[i].params for i in param_slots)

    def run(keys, seat_policy_index, params=None, capacity=None, count=None):
        """``count``: only the first ``count`` games are real (the rest pad the queue to a
        compiled shape; their rows are zero): one compilation serves any number of games."""
        idx = np.asarray(jax.device_get(seat_policy_index), np.int32)
        capacity = capacities(idx[:B], len(entries)) if capacity is None else tuple(int(c) for c in capacity)
        capacity = tuple(min(int(c), B) for c in capacity)
        G = idx.shape[0]
        count = G if count is None else min(int(count), G)
        pad = -G % D  # every device holds the same number of games
        keys = jnp.asarray(keys)
        keys, idx = pad_rows(keys, G + pad), pad_rows(idx, G + pad)
        prm = default_params if params is None else tuple(params)
        out = _run(keys, jnp.asarray(idx), prm, capacity=capacity, count=jnp.int32(count))
        return jax.tree.map(lambda x: x[:G], out) if pad else out

    return run


def capacities(seat_policy_index, num_policies: int, slack: float = 1.5) -> tuple:
    """Per policy, how many games an iteration of the runner serves: its share of the
    seats times ``slack``, rounded up to a sixteenth of the batch (few distinct
    compilations), all of them past half the batch, 0 for a policy seated nowhere."""
    idx = np.asarray(seat_policy_index)
    B = idx.shape[0]
    share = np.bincount(idx.ravel(), minlength=num_policies)[:num_policies] / max(idx.size, 1)
    caps = []
    for s in share:
        if s == 0:
            caps.append(0)
            continue
        frac = min(1.0, np.ceil(16 * min(1.0, slack * s + 1.0 / 16)) / 16)
        caps.append(B if frac > 0.5 else max(1, int(np.ceil(frac * B))))
    return tuple(caps)


def bucket_size(count: int, minimum: int = 16) -> int:
    """The batch a runner compiles for ``count`` games: the next power of two (at least
    ``minimum``), so 16, 24 and 30 games share one compilation and a script or a test
    suite that plays many different numbers of games compiles a few shapes only (the
    padding games are played and discarded; every game's randomness is its index's)."""
    return max(int(minimum), 1 << max(int(count) - 1, 0).bit_length())


def pad_rows(x, rows: int):
    """``x`` (a NumPy or JAX array) with its last row repeated up to ``rows`` rows: a short
    last batch padded to the shape already compiled (its extra rows are dropped after)."""
    if len(x) >= rows:
        return x
    xp = np if isinstance(x, np.ndarray) else jnp
    return xp.concatenate([x, xp.repeat(x[-1:], rows - len(x), axis=0)])


def game_keys(seed_or_key, start: int, count: int) -> jax.Array:
    """Keys of games ``start .. start + count - 1``: game g's key is ``fold_in(key, g)``."""
    key = jax.random.PRNGKey(seed_or_key) if isinstance(seed_or_key, (int, np.integer)) else seed_or_key
    return jax.vmap(lambda g: jax.random.fold_in(key, g))(jnp.arange(start, start + count, dtype=jnp.int32))


def draw_seats(key, condition, num_games: int, num_players: int, names=SCRIPTED_NAMES) -> jax.Array:
    """int32[num_games, num_players]: each seat drawn independently from ``condition``.

    ``condition``: a key of `pools.CONDITIONS` or a dict name -> weight; the result
    indexes ``names`` (default `pools.SCRIPTED_NAMES`).
    """
    mix = CONDITIONS[condition] if isinstance(condition, str) else dict(condition)
    names = list(names)
    missing = set(mix) - set(names)
    if missing:
        raise ValueError(f"condition names {sorted(missing)} are not in names {names}")
    w = np.zeros(len(names), np.float64)
    for name, weight in mix.items():
        w[names.index(name)] = weight
    if (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"condition weights must be non-negative with a positive sum, got {mix}")
    logits = jnp.log(jnp.asarray(w / w.sum(), jnp.float32))
    return jax.random.categorical(key, logits, shape=(num_games, num_players)).astype(jnp.int32)


# ------------------------------------------------------------------ results
def summarize(wins, placements, entropy_sum: float = 0.0, decisions: int = 0) -> dict:
    """The one result row of a tested seat over its tables (module doc): ``games``,
    ``wins``, ``win_rate``, ``ci95_low``, ``ci95_high``, ``mean_placement``,
    ``action_entropy`` (mean nats per decision)."""
    wins, placements = np.asarray(wins), np.asarray(placements)
    low, high = wilson_interval(int(wins.sum()), len(wins))
    return {"games": int(len(wins)), "wins": int(wins.sum()), "win_rate": float(wins.mean()) if len(wins) else 0.0,
            "ci95_low": low, "ci95_high": high,
            "mean_placement": float(placements.mean()) if len(placements) else 0.0,
            "action_entropy": float(entropy_sum) / max(int(decisions), 1)}


def draw_tables(num_games: int, num_players: int, seed: int, pool_size: int = len(OPPONENTS)):
    """(seat of the tested policy [N], opponent indices into the pool [N, n-1]): the
    seat uniform, each opponent uniform with replacement, from ``seed``."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, num_players, num_games), rng.integers(0, pool_size, (num_games, num_players - 1))


def seat_index(seats, opponents, tested: int, num_players: int) -> np.ndarray:
    """int32[N, n] policy indices: ``tested`` at the drawn seat, the opponents elsewhere
    in seat order (opponent k of the pool is policy index k)."""
    seats = np.asarray(seats)
    others = np.array([[s for s in range(num_players) if s != t] for t in range(num_players)], np.int32)[seats]
    idx = np.zeros((len(seats), num_players), np.int32)
    np.put_along_axis(idx, others, np.asarray(opponents, np.int32), axis=1)
    idx[np.arange(len(seats)), seats] = tested
    return idx


def make_seat_table(env, specs, *, pool=OPPONENTS, opponents=None, policies: dict | None = None):
    """The seat table of `play_tables`, compiled once: ``play(num_games, seed, chunk=1000,
    progress=None, params=None, split=False) -> spec -> summarize row``.

    Keep ``play`` to replay tables without recompiling; ``params`` (spec -> parameters)
    replaces the parameters of `ParamPolicy` entries (built policies in ``policies``),
    e.g. a learned network's per training seed.  ``split``: the processes of a
    multi-process job (`coupjax.distributed`) each play every P-th chunk of tables and
    pool their rows, so every one of them returns the one-process result exactly.
    """
    n = env.num_players
    built = dict(policies or {})
    seat_pool = [opponents] if opponents is not None else list(pool)
    entries, where = [], {}

    def index_of(spec):
        if spec not in where:
            where[spec] = len(entries)
            entries.append(as_param_policy(built[spec] if spec in built else resolve_policy(spec, env)))
        return where[spec]

    pool_idx = np.asarray([index_of(p) for p in seat_pool], np.int32)
    tested_idx = {spec: index_of(spec) for spec in specs}
    run = make_table_runner(env, entries)
    param_specs = [spec for spec, i in sorted(where.items(), key=lambda kv: kv[1])
                   if isinstance(entries[i], ParamPolicy)]

    def play(num_games: int, seed: int, chunk: int = 1000, progress=None, params: dict | None = None,
             split: bool = False) -> dict:
        unknown = set(params or {}) - set(param_specs)
        if unknown:
            raise ValueError(f"params given for {sorted(map(str, unknown))}, which are no ParamPolicy entries")
        prm = None if params is None else tuple(params.get(s, entries[where[s]].params) for s in param_specs)
        seats, opp = draw_tables(num_games, n, seed, len(seat_pool))
        opp = pool_idx[opp]
        chunk = max(1, min(chunk, bucket_size(num_games)))
        index = {spec: seat_index(seats, opp, tested_idx[spec], n) for spec in specs}
        # one capacity for every row and chunk: one compilation
        capacity = tuple(np.max([capacities(pad_rows(idx[:chunk], chunk), len(entries)) for idx in index.values()],
                                axis=0))
        capacity = tuple(min(int(c), chunk) if c else 0 for c in capacity)
        starts = range(0, num_games, chunk)
        mine = starts[distributed.process_index()::jax.process_count()] if split else starts
        results = {}
        for spec in specs:
            idx_all = index[spec]
            # per chunk: its tables' rows (zero where another process plays it), entropy, decisions
            K = len(starts)
            rows_of = {"wins": np.zeros((K, chunk), np.int32), "places": np.zeros((K, chunk), np.int32),
                       "entropy": np.zeros(K, np.float32), "decisions": np.zeros(K, np.int32)}
            here = sum(min(chunk, num_games - s) for s in mine)
            task = progress.add_task(str(spec), total=here) if progress else None
            for start in mine:
                k = start // chunk
                idx = idx_all[start:start + chunk]
                real = len(idx)
                keys = game_keys(seed, start, chunk)
                idx = pad_rows(idx, chunk)  # pad the last chunk: one compilation for every chunk
                _, stats = run(keys, jnp.asarray(idx), params=prm, capacity=capacity)
                stats = jax.device_get(stats)
                if not np.asarray(stats["finished"])[:real].all():
                    raise RuntimeError("a game did not finish within the arena's step bound")
                seat = seats[start:start + real]
                rows = np.arange(real)
                rows_of["wins"][k, :real] = stats["wins"][rows, seat]
                rows_of["places"][k, :real] = stats["placement"][rows, seat]
                rows_of["entropy"][k] = stats["entropy"][rows, seat].sum()
                rows_of["decisions"][k] = stats["decisions"][rows, seat].sum()
                if progress:
                    progress.advance(task, real)
            if split:
                rows_of = distributed.sum_over_processes(rows_of)
            real = [min(chunk, num_games - s) for s in starts]
            wins = np.concatenate([rows_of["wins"][k, :r] for k, r in enumerate(real)])
            places = np.concatenate([rows_of["places"][k, :r] for k, r in enumerate(real)])
            entropy = 0.0
            for e in rows_of["entropy"]:  # in chunk order, as one process adds them
                entropy += float(e)
            results[spec] = summarize(wins, places, entropy, int(rows_of["decisions"].sum()))
        return results

    return play


def play_tables(env, specs, num_games: int, seed: int, *, pool=OPPONENTS, opponents=None, chunk: int = 1000,
                progress=None, policies: dict | None = None, split: bool = False) -> dict:
    """The seat table: each spec in one seat of ``num_games`` tables (module doc).

    Without ``opponents`` the other seats are drawn uniformly from ``pool`` (names or
    specs); with ``opponents`` (a spec) every other seat plays it (head-to-head).  Every
    spec plays the same tables (seats, opponents, game keys: common random numbers).
    ``policies``: spec -> already built policy, to skip resolving.  ``split``: the
    processes of a multi-process job share the tables (`make_seat_table`).  Returns spec
    -> `summarize` row.
    """
    play = make_seat_table(env, specs, pool=pool, opponents=opponents, policies=policies)
    return play(num_games, seed, chunk, progress, split=split)


def run_games(env, seat_policies, key, num_games: int, max_steps: int = MAX_STEPS):
    """Play ``num_games`` complete games with a fixed policy per seat (a list of n
    policies or specs); returns `make_table_runner`'s (final_state, stats)."""
    n = env.num_players
    chosen = list(seat_policies)
    if len(chosen) != n:
        raise ValueError(f"need {n} seat policies, got {len(chosen)}")
    run = make_table_runner(env, [resolve_policy(p, env) for p in chosen], max_steps)
    idx = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32), (num_games, n))
    return run(game_keys(key, 0, num_games), idx)


def measure_rates(env, key, num_games: int = 2000, names=SCRIPTED_NAMES, condition=None,
                  max_steps: int = MAX_STEPS):
    """Per bot: pooled bluff and challenge rates, their counts and win rate over
    ``num_games`` games with seats drawn from ``condition`` (default uniform over
    ``names``).  Returns (rates name -> dict, stats, seat index)."""
    names = list(names)
    condition = {x: 1.0 for x in names} if condition is None else condition
    k_seats, k_run = jax.random.split(key)
    idx = draw_seats(k_seats, condition, num_games, env.num_players, names)
    run = make_table_runner(env, [resolve_policy(x, env) for x in names], max_steps)
    _, stats = run(game_keys(k_run, 0, num_games), idx)
    idx = np.asarray(idx)
    st = {k: np.asarray(v) for k, v in stats.items()}
    rates = {}
    for i, name in enumerate(names):
        sel = idx == i
        tot = {k: int(st[k][sel].sum()) for k in (*STAT_NAMES, "wins")}
        rates[name] = {
            "bluff": tot["bluffs"] / max(tot["bluff_opportunities"], 1),
            "challenge": tot["challenges"] / max(tot["challenge_opportunities"], 1),
            "win": tot["wins"] / max(int(sel.sum()), 1),
            "seats": int(sel.sum()), **tot,
        }
    return rates, stats, idx
