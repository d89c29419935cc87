"""THE play primitive: seated policies move a batch of games, one jitted loop.

Every loop of the package that plays games is `play` with its own choices:

* the seats: ``policies`` (each ``(key, state) -> logits``, the interface of
  `coupjax.policies.common`) and ``seats`` int32[B, n], the policy of each seat of each
  game (default: policy s at seat s; one policy plays every seat);
* the batch ``state`` [B] and its key(s): ``step_keys(key, steps, live) -> (key,
  (k_pol, k_act, k_step))`` says how a step draws its randomness (default
  `per_game_keys`: game b's step t uses ``split(fold_in(key[b], t), 3)``, so a game's
  result depends on its own key alone, not on the batch or the schedule);
* how long: ``num_steps`` iterations (a `lax.scan`; ``record`` stacks [T, B, ...])
  or, by default, until no game is live (a `lax.while_loop`; a per-game step count
  bounded by ``limit``, default `MAX_STEPS`);
* what to keep: ``record(tables, action, new_state) -> pytree`` per step (stacked;
  ``tables``: the carry before the step)
  and ``tally(aux, tables, action, logits, served) -> aux`` (folded into the carry);
  ``reset(tables) -> tables`` after each step replaces games (auto-reset, a queue's
  next game).

A step serves the live games: each policy runs on (at most) ``capacity[p]`` of the
games whose seat to move it plays, gathered into a compact batch (counted from a start
that rotates every iteration), so a table of cheap bots and one expensive policy pays
for the expensive one only where it acts; the others wait for a later iteration.  An
unserved game is not stepped and its step count does not move.

It sits right above `coupjax.env` in the layers: it takes policies as arguments and
imports none, so the policies, search and arena above it all build on it.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

# Enough decisions for any game: 200 turns of at most 8 decisions each.
MAX_STEPS = 3000


class Tables(NamedTuple):
    """The loop's carry: the games and what the loop keeps about them."""

    state: Any  # State [B]
    steps: jax.Array  # int32[B]: decisions played in each game
    key: Any  # whatever ``step_keys`` carries (per-game keys [B] by default)
    seats: jax.Array  # int32[B, n]: policy index of each seat
    aux: Any  # the ``tally``'s and ``reset``'s own carry
    it: jax.Array  # int32[]: loop iterations so far


def per_game_keys(keys, steps, live):
    """Game b's step t draws from ``split(fold_in(keys[b], t), 3)`` (policy, action, step):
    its own key and step count alone, whatever the batch and schedule."""
    k = jax.vmap(lambda key, t: jax.random.split(jax.random.fold_in(key, t), 3))(keys, steps)
    return keys, (k[:, 0], k[:, 1], k[:, 2])


def sample_categorical(k_act, logits):
    """An action per game from its logits (int32[B])."""
    return jax.vmap(jax.random.categorical)(k_act, logits).astype(jnp.int32)


def uniform_legal(key, mask):
    """Argmax of uniform noise over the legal actions (one draw of ``mask``'s shape)."""
    u = jax.random.uniform(key, mask.shape)
    return jnp.argmax(jnp.where(mask, u, -1.0), axis=-1).astype(jnp.int32)


def uniform_logits(key, state):
    """The uniform policy over the legal actions (for `uniform_legal` sampling)."""
    return jnp.where(state.legal_action_mask, 0.0, -jnp.inf).astype(jnp.float32)


def serve(policies, seats, state, k_pol, live, capacity, it, num_actions: int):
    """Logits [B, A] of the live games whose seat to move each policy serves this
    iteration (at most ``capacity[p]`` of them for policy p; module doc), and which
    games were served (bool[B]); unserved rows are zero (any finite logits)."""
    B = state.current_player.shape[0]
    games = jnp.arange(B)
    acting = jnp.take_along_axis(seats, state.current_player[:, None], axis=1)[:, 0]
    logits = jnp.full((B, num_actions), -jnp.inf, jnp.float32)
    served = jnp.zeros(B, bool)
    seated = [p for p, cap in enumerate(capacity) if cap]
    if B == 1 and seated:  # one game (a single-seat wrapper's): compute only the acting seat's policy
        branches = [policies[p] for p in seated]
        which = jnp.searchsorted(jnp.asarray(seated), acting[0])
        out = (branches[0](k_pol[0], jax.tree.map(lambda x: x[0], state)) if len(branches) == 1 else
               jax.lax.switch(which, branches, k_pol[0], jax.tree.map(lambda x: x[0], state)))
        served = live & jnp.isin(acting, jnp.asarray(seated))
        return jnp.where(served[:, None], out[None], 0.0), served
    for p, cap in enumerate(capacity):
        if cap == 0:
            continue
        want = live & (acting == p)
        if cap >= B:
            out = jax.vmap(policies[p])(k_pol, state)
            logits = jnp.where(want[:, None], out, logits)
            served = served | want
            continue
        # the first `cap` games wanting p, counted from a start that rotates
        start = (it * cap) % B
        order = (games + start) % B
        pick = jnp.nonzero(want[order], size=cap, fill_value=B)[0]
        sel = jnp.where(pick < B, order[jnp.clip(pick, 0, B - 1)], B)
        safe = jnp.clip(sel, 0, B - 1)
        out = jax.vmap(policies[p])(k_pol[safe], jax.tree.map(lambda x: x[safe], state))
        logits = logits.at[sel].set(out, mode="drop")
        served = served.at[sel].set(True, mode="drop")
    return jnp.where(served[:, None], logits, 0.0), served


def step_tables(env, policies, c: Tables, live, *, capacity, step_keys=per_game_keys, sample=sample_categorical,
                tally=None, step=None, forced=None):
    """One iteration of `play` on the carry ``c`` with ``live`` games: returns (the carry
    after the step, (action, logits, served, the carry before the step))."""
    B = c.state.current_player.shape[0]
    step = jax.vmap(env.step) if step is None else step
    key, (k_pol, k_act, k_step) = step_keys(c.key, c.steps, live)
    logits, served = serve(policies, c.seats, c.state, k_pol, live, capacity, c.it, env.num_actions)
    a = sample(k_act, logits)
    if forced is not None:
        a = forced(c, a)
    aux = c.aux if tally is None else tally(c.aux, c, a, logits, served)
    new = step(c.state, a, k_step)
    s = jax.tree.map(lambda x, y: jnp.where(served.reshape((B,) + (1,) * (x.ndim - 1)), x, y), new, c.state)
    return Tables(s, c.steps + served, key, c.seats, aux, c.it + 1), (a, logits, served, c)


def not_finished(limit):
    """The default liveness: not terminated and under ``limit`` decisions."""
    return lambda c: ~c.state.terminated & (c.steps < limit)


def play(env, policies, state, key, *, seats=None, num_steps: int | None = None, limit=MAX_STEPS,
         record: Callable | None = None, tally: Callable | None = None, aux=None, capacity=None,
         step_keys: Callable = per_game_keys, sample: Callable = sample_categorical, reset: Callable | None = None,
         live: Callable | None = None, cond: Callable | None = None, step: Callable | None = None,
         forced: Callable | None = None, steps=None):
    """Play the games ``state`` [B] with the seated ``policies`` (module doc).

    ``live(tables) -> bool[B]``: the games to serve (default: not terminated and under
    ``limit`` decisions, a scalar or int32[B]); ``cond(tables) -> bool`` (while-loop
    mode): go on (default: any game live).  ``capacity``: per policy, games served per
    iteration (static; default every game).  ``step``: the batched step (default the
    vmapped ``env.step``).  ``forced(tables, sampled) -> actions``: the actions of
    seats played from outside (a learner's, a user's) in place of the sampled ones.
    ``steps``: the games' decision counts so far (int32[B]; default zeros).

    Returns (final `Tables`, records or None): the stacked ``record`` outputs [num_steps, B, ...] in scan mode; without ``num_steps`` the
    records of iteration i are row i of a buffer of ``limit`` rows (zeros after the end).
    """
    policies = list(policies) if isinstance(policies, (list, tuple)) else [policies]
    B = state.current_player.shape[0]
    n = env.num_players
    if seats is None:
        seats = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32) % len(policies), (B, n))
    capacity = (B,) * len(policies) if capacity is None else tuple(int(x) for x in capacity)
    live = not_finished(limit) if live is None else live
    steps = jnp.zeros(B, jnp.int32) if steps is None else jnp.broadcast_to(jnp.asarray(steps, jnp.int32), (B,))
    c = Tables(state, steps, key, jnp.asarray(seats, jnp.int32), aux, jnp.int32(0))

    def body(c):
        c, (a, _, _, before) = step_tables(env, policies, c, live(c), capacity=capacity, step_keys=step_keys,
                                           sample=sample, tally=tally, step=step, forced=forced)
        rec = None if record is None else record(before, a, c.state)
        return (c if reset is None else reset(c)), rec

    if num_steps is not None:
        return jax.lax.scan(lambda c, _: body(c), c, None, int(num_steps))
    cond = (lambda c: live(c).any()) if cond is None else cond
    if record is None:
        return jax.lax.while_loop(cond, lambda c: body(c)[0], c), None
    rows = int(limit) if isinstance(limit, int) else MAX_STEPS
    shape = jax.eval_shape(lambda c: body(c)[1], c)
    buf = jax.tree.map(lambda x: jnp.zeros((rows,) + x.shape, x.dtype), shape)

    def body_rec(cb):
        c, buf = cb
        it = c.it
        c, rec = body(c)
        return c, jax.tree.map(lambda b, r: b.at[it].set(r, mode="drop"), buf, rec)

    return jax.lax.while_loop(lambda cb: cond(cb[0]), body_rec, (c, buf))
