"""Batched self-play simulation: many complete matches in one jitted loop, with figures."""
from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rollout
from coupjax import rules
from coupjax.env import Env
from coupjax.game import board


def uniform_legal_action(key, mask):
    """One batch-wide uniform draw: argmax of uniform noise over the legal actions."""
    return rollout.uniform_legal(key, mask)


def make_simulation(env: Env, num_games: int, max_steps: int = 5000):
    """A jitted ``run(key)`` playing ``num_games`` uniform-random matches to the end.

    Returns final states, the number of batched steps, per-game step counts and a
    histogram of main actions declared.
    """
    lay = env.layout
    main_kind = jnp.asarray(lay.main_kind)

    def sample(ka, logits):  # every game is served: its logits are finite exactly where legal
        return uniform_legal_action(ka, jnp.isfinite(logits))

    players = rollout.Players(env, (rollout.uniform_logits,), sample=sample)
    every = jnp.ones(num_games, bool)  # every game steps every iteration (`env.step` leaves a finished one as it is)

    def body(carry):
        tables, key, lengths, hist = carry
        key, ka, ks = jax.random.split(key, 3)  # one key for the batch, split every step
        k_step = jax.random.split(ks, num_games)
        s = tables.state
        tables, moved = rollout.step(players, tables, rollout.StepKeys(k_step, ka, k_step), every)
        declared = (board.phase(s) == rules.PH_ACTION) & ~s.terminated
        kinds = jnp.where(declared, main_kind[moved.action], -1)
        hist = hist + (kinds[:, None] == jnp.arange(rules.NUM_MAIN_ACTIONS)).sum(0)
        return tables, key, lengths + ~s.terminated, hist

    @jax.jit
    def run(key):
        k0, key = jax.random.split(key)
        states = jax.vmap(env.init)(jax.random.split(k0, num_games))
        first = (rollout.start(states, jnp.zeros((num_games, env.num_players), jnp.int32)), key,
                 jnp.zeros(num_games, jnp.int32), jnp.zeros(rules.NUM_MAIN_ACTIONS, jnp.int32))
        tables, key, lengths, hist = jax.lax.while_loop(
            lambda c: (~c[0].state.terminated.all()) & (c[0].it < max_steps), body, first)
        return tables.state, key, tables.it, lengths, hist

    return run


def simulate(num_players: int = 4, num_games: int = 4096, seed: int = 0) -> dict:
    """Play ``num_games`` random matches; return JSON-able figures."""
    env = Env(num_players)
    run = make_simulation(env, num_games)
    key = jax.random.PRNGKey(seed)
    t0 = time.perf_counter()
    jax.block_until_ready(run(key))
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    s, _, steps, lengths, hist = jax.block_until_ready(run(jax.random.fold_in(key, 1)))
    wall = time.perf_counter() - t0
    winners = np.asarray(jax.vmap(board.winner)(s))
    lengths = np.asarray(lengths)
    turns = np.asarray(board.turn(s))
    return {
        "num_players": num_players, "games": num_games, "seed": seed,
        "first_run_s_incl_compile": round(compile_s, 2), "wall_s": round(wall, 3),
        "decisions": int(lengths.sum()), "decisions_per_s": round(float(lengths.sum()) / wall),
        "games_per_s": round(num_games / wall, 1),
        "mean_decisions_per_game": round(float(lengths.mean()), 2), "mean_turns_per_game": round(float(turns.mean()), 2),
        "capped_share": round(float((turns >= rules.TURN_CAP).mean()), 4),
        "win_rate_by_seat": [round(float((winners == p).mean()), 4) for p in range(num_players)],
        "main_action_share": {rules.MAIN_ACTIONS[k]: round(float(v) / max(1, int(np.sum(hist))), 4)
                              for k, v in enumerate(np.asarray(hist))},
    }
