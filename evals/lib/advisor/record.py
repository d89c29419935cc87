"""Stage 1 of the advisor evaluation: play games and record every challengeable claim.

Games: 4 players per game, seats drawn per game with `coupjax.seat_tables.draw_seats` from
each condition of `CONDITIONS` (aggressive_heavy, honest_heavy); every seat plays its
scripted bot.  The advisor watches as an observer: every challengeable claim (a main
action claiming a role, or a block) is recorded ONCE, from the seat with the first
chance to challenge it -- the first live responder clockwise after the actor in the
react window, or the actor answering a block -- with that seat's observation only.

Positive class: the claim is a bluff (the claimant does not hold the role).  The
ground truth is read from the engine's hidden hands (`coupjax.game.deal.hidden_hands`)
by THIS RECORDER ONLY, at the moment of recording; the advisor never sees it.

`QueueRecorder` plays the games in `coupjax.seat_tables`'s serving step (each bot computed
only on the games whose seat to move it plays, in compacted batches) through a fixed
number of slots, a slot taking the next game when its game ends, and appends at every
scored decision (up to `MAX_SCORED` per game; overflow is counted and reported) the
observation (int16), the label, the claim kind and the step index to one flat buffer.
Each game splits its own key at each of its steps, so its claims do not depend on the
slots or the schedule; given several devices (one per CPU core, see
`coupjax.devices`) it cuts each call's games into one part per device.  The advisor runs
afterwards on the recorded rows (`evals.lib.advisor.score`): the posterior costs about 5x
a bot step, and in the loop it would run at every step, not only at the ~30 % of steps
that are scored decisions.  This loop records claims; it counts no results (the
arena's `coupjax.seat_tables` is the one place that does).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from coupjax import seat_tables, rollout
from coupjax import devices as mesh_devices
from coupjax.advice import challenge
from coupjax.env import Env
from coupjax.game.deal import hidden_hands
from coupjax.policies import make_policy
from coupjax.game.tables import tables
from coupjax.policies.pools import CONDITIONS as CONDITIONS_W
from coupjax.policies.pools import SCRIPTED_NAMES

NUM_PLAYERS = 4
MAX_SCORED = 256
MAX_STEPS = seat_tables.MAX_STEPS
CONDITIONS = ("aggressive_heavy", "honest_heavy")


def scored_decision(s, num_players: int):
    """(scored, claimant absolute seat, role, kind) of the decision in state s: a
    challenge decision of the seat with the first chance to challenge (module doc)."""
    n = num_players
    ctx = challenge.challenge_context(s.observation, n)
    v = ctx["view"]
    rel = jnp.arange(n)
    between = (rel > ctx["claimant"]) & v.alive
    first = ctx["answer"] | ~between.any()  # react: no live seat between the actor and us
    scored = ctx["decision"] & first & ~s.terminated
    claimant = (s.current_player + ctx["claimant"]) % n
    return scored, claimant, ctx["role"], ctx["kind"]


class QueueRecorder:
    """Records the claims of G games through ``slots`` slots (module doc):
    ``recorder(game_keys [G], seat_policy_index int32[G, n]) -> dict`` of flat rows
    ``obs`` int16[R, obs], ``label``, ``kind``, ``step``, ``game`` (row order: game, then
    step), and per game ``count`` (scored decisions, may exceed `MAX_SCORED`),
    ``steps``, ``finished``.  ``games_per_call`` games are compiled per call (more are
    split, fewer padded; a padding game is never played, so a short last call cannot fill
    the row buffer with copies of its last game)."""

    def __init__(self, env: Env, policy_list, slots: int = 1000, max_steps: int = MAX_STEPS,
                 max_scored: int = MAX_SCORED, games_per_call: int = 5000, rows_per_game: int = 64,
                 capacity=None, devices=None):
        policies = list(policy_list)
        n = env.num_players
        T = tables(n)
        devs = list(devices) if devices is not None else []
        D = max(len(devs), 1)
        B, K = max(8, int(slots) // D), int(max_scored)
        Q = -(-int(games_per_call) // D) * D  # a multiple of D: each device gets Q / D games
        M = Q // D * rows_per_game  # rows per device
        obs_size = env.observation_shape[0]
        # every bot at its largest share of the conditions' seats, 1.3 x, +8, in eighths of 8
        if capacity is None:
            share = np.max([[CONDITIONS_W[c].get(x, 0.0) for x in SCRIPTED_NAMES] for c in CONDITIONS_W], axis=0)
            capacity = tuple(int(min(B, np.ceil((1.3 * w * B + 8) / 8) * 8)) if w > 0 else 0 for w in share)
        self.capacity = tuple(capacity)
        self.games_per_call = Q
        players = rollout.Players(env, tuple(policies), self.capacity)

        def init_game(gkey):
            k_init, k_run = jax.random.split(gkey)
            return env.init(k_init), k_run

        def play(keys, idx, count):
            # games count .. G-1 pad the call to its compiled shape: never loaded, never recorded
            G = keys.shape[0]
            count = jnp.minimum(count, G)
            game = jnp.where(jnp.arange(B) < count, jnp.arange(B), G).astype(jnp.int32)
            s, run_key = jax.vmap(init_game)(keys[jnp.clip(game, 0, G - 1)])
            st = {name: jnp.zeros((B, n), jnp.int32) for name in seat_tables.STAT_NAMES}
            st["entropy"] = jnp.zeros((B, n), jnp.float32)
            rows = dict(obs=jnp.zeros((M, obs_size), jnp.int16), label=jnp.zeros(M, bool),
                        kind=jnp.zeros(M, jnp.int32), step=jnp.zeros(M, jnp.int32), game=jnp.full(M, G, jnp.int32))
            per = dict(count=jnp.zeros(G, jnp.int32), steps=jnp.zeros(G, jnp.int32), finished=jnp.zeros(G, bool))
            tally_stats = seat_tables.count_stats(T, n)

            def body(carry):
                tables, run_key, x = carry
                live = (x["game"] < G) & ~tables.state.terminated & (tables.steps < max_steps)
                k4 = jax.vmap(lambda k: jax.random.split(k, 4))(run_key)  # each game splits its own key per step
                played, moved = rollout.step(players, tables, rollout.StepKeys(k4[:, 1], k4[:, 2], k4[:, 3]), live)
                x = log(x, tables, moved)
                return reload(played, jnp.where(moved.served[:, None], k4[:, 0], run_key), x)

            def log(x, tables, moved):  # the scored decisions of the served games
                s, t, game, served = tables.state, tables.steps, x["game"], moved.served
                scored, claimant, role, kind = jax.vmap(lambda y: scored_decision(y, n))(s)
                # GROUND TRUTH (recorder only): does the claimant's hidden hand hold the role?
                bluff = ~jnp.any(jax.vmap(lambda y, c_: hidden_hands(y)[c_])(s, claimant) == role[:, None], axis=1)
                obs = jnp.round(s.observation).astype(jnp.int16)
                rows, nrows, cnt = x["rows"], x["nrows"], x["cnt"]
                hit = served & scored
                w = hit & (cnt < K)
                pos = jnp.where(w, nrows + jnp.cumsum(w) - 1, M)
                rows = dict(obs=rows["obs"].at[pos].set(obs, mode="drop"),
                            label=rows["label"].at[pos].set(bluff, mode="drop"),
                            kind=rows["kind"].at[pos].set(kind, mode="drop"),
                            step=rows["step"].at[pos].set(t, mode="drop"),
                            game=rows["game"].at[pos].set(game, mode="drop"))
                return {**x, "st": tally_stats(x["st"], tables, moved), "rows": rows,
                        "nrows": nrows + w.sum().astype(jnp.int32), "cnt": cnt + hit}

            def reload(tables, run_key, x):  # record the finished games, then reload idle slots with the next ones
                s, t = tables.state, tables.steps
                game, nxt, per, cnt = x["game"], x["nxt"], x["per"], x["cnt"]
                done = (game < G) & (s.terminated | (t >= max_steps))
                row = jnp.where(done, game, G)
                per = dict(count=per["count"].at[row].set(cnt, mode="drop"),
                           steps=per["steps"].at[row].set(t, mode="drop"),
                           finished=per["finished"].at[row].set(s.terminated, mode="drop"))
                game = jnp.where(done, G, game)
                R_ = max(1, B // 16)
                pick = jnp.nonzero(game >= G, size=R_, fill_value=B)[0]
                new_game = jnp.where((pick < B) & (nxt + jnp.arange(R_) < count), nxt + jnp.arange(R_),
                                     G).astype(jnp.int32)
                take = new_game < G
                slot = jnp.where(take, pick, B)
                ng = jnp.clip(new_game, 0, G - 1)
                fresh, fkey = jax.vmap(init_game)(keys[ng])
                s = jax.tree.map(lambda y, f: y.at[slot].set(f, mode="drop"), s, fresh)
                x = {**x, "per": per, "game": game.at[slot].set(new_game, mode="drop"),
                     "nxt": nxt + take.sum().astype(jnp.int32), "cnt": cnt.at[slot].set(0, mode="drop")}
                tables = rollout.Tables(s, t.at[slot].set(0, mode="drop"),
                                        tables.seats.at[slot].set(idx[ng], mode="drop"), tables.it)
                return tables, run_key.at[slot].set(fkey, mode="drop"), x

            aux = {"game": game, "nxt": jnp.minimum(B, count).astype(jnp.int32), "st": st, "rows": rows,
                   "nrows": jnp.int32(0), "per": per, "cnt": jnp.zeros(B, jnp.int32)}
            first = (rollout.start(s, idx[jnp.clip(game, 0, G - 1)]), run_key, aux)
            _, _, x = jax.lax.while_loop(lambda c: (c[2]["game"] < G).any() | (c[2]["nxt"] < count), body, first)
            return x["rows"], x["nrows"], x["per"]

        def local(k, i, count):  # rows and their count with a leading device axis
            if D > 1:  # device d plays games d * Q/D ...: its real ones
                count = jnp.clip(count - jax.lax.axis_index("data") * k.shape[0], 0)
            rows, nrows, per = play(k, i, count)
            return jax.tree.map(lambda x: x[None], (rows, nrows)) + (per,)

        if D == 1:
            self._play = jax.jit(local)
        else:
            mesh = mesh_devices.data_mesh(devs)
            self._play = jax.jit(mesh_devices.shard(local, mesh, (P("data"), P("data"), P()), P("data")))
        self.rows_capacity = M
        self.devices = D

    def __call__(self, game_keys, seat_idx) -> dict:
        game_keys, seat_idx = np.asarray(game_keys), np.asarray(seat_idx, np.int32)
        G, Q = len(seat_idx), self.games_per_call
        parts = []
        for start in range(0, G, Q):
            k, idx = game_keys[start:start + Q], seat_idx[start:start + Q]
            real = len(idx)
            k, idx = seat_tables.pad_rows(k, Q), seat_tables.pad_rows(idx, Q)
            rows, nrows, per = jax.device_get(self._play(jnp.asarray(k), jnp.asarray(idx), jnp.int32(real)))
            nrows = np.asarray(nrows).reshape(-1)
            if int(nrows.max()) > self.rows_capacity:
                raise RuntimeError(f"the recorder's row buffer ({self.rows_capacity}) overflowed: raise rows_per_game")
            per_dev = Q // len(nrows)  # device d played games d * per_dev ... of this call
            flat = {key: np.concatenate([np.asarray(v)[d, :int(nrows[d])] for d in range(len(nrows))])
                    for key, v in rows.items()}
            flat["game"] = flat["game"] + np.repeat(np.arange(len(nrows)) * per_dev, nrows.astype(int))
            keep = flat["game"] < real
            flat = {key: v[keep] for key, v in flat.items()}
            order = np.lexsort((flat["step"], flat["game"]))
            flat = {key: v[order] for key, v in flat.items()}
            flat["game"] = flat["game"] + start
            flat.update({key: np.asarray(v)[:real] for key, v in per.items()})
            parts.append(flat)
        return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def game_keys_of(k_play, games: int, chunk: int):
    """Game g's key in `play_condition`: ``split(fold_in(k_play, g // chunk), chunk)[g % chunk]``."""
    chunks = -(-games // chunk)
    keys = jax.vmap(lambda c: jax.random.split(jax.random.fold_in(k_play, c), chunk))(jnp.arange(chunks))
    return np.asarray(keys).reshape(chunks * chunk, -1)[:games]


def play_condition(recorder, key, condition: str, games: int, chunk: int, progress=None, task=None) -> dict:
    """Play ``games`` games of ``condition`` with a `QueueRecorder`; return its records
    plus ``overflow``, ``unfinished`` and ``games``.  Game g's key depends on ``chunk``
    (`game_keys_of`)."""
    k_seats, k_play = jax.random.split(key)
    seats = np.asarray(seat_tables.draw_seats(k_seats, condition, games, NUM_PLAYERS))
    rec = recorder(game_keys_of(k_play, games, chunk), seats)
    out = {k: rec[k] for k in ("label", "kind", "step", "game")}
    out["obs"] = rec["obs"].astype(np.float32)
    out["overflow"] = int(np.maximum(rec["count"] - MAX_SCORED, 0).sum())
    out["unfinished"], out["games"] = int((~rec["finished"]).sum()), games
    if progress is not None:
        progress.advance(task, games)
    return out


def record_conditions(games: int, seed: int, chunk: int, conditions=CONDITIONS, quiet: bool = False) -> dict:
    """condition -> `play_condition` records of ``games`` games; condition i's games are
    keyed by ``fold_in(PRNGKey(seed), i)``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    env = Env(NUM_PLAYERS)
    recorder = QueueRecorder(env, [make_policy(x, env) for x in SCRIPTED_NAMES])
    chunk = max(1, min(chunk, games))
    records = {}
    cols = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*cols, disable=quiet, transient=False) as progress:
        for ci, cond in enumerate(conditions):
            task = progress.add_task(f"{cond} (games)", total=games)
            key = jax.random.fold_in(jax.random.PRNGKey(seed), ci)
            records[cond] = play_condition(recorder, key, cond, games, chunk, progress, task)
    return records
