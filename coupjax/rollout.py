"""THE play primitive: one step of a batch of tables, and the loop that plays them out.

`step` is the primitive (Pgx's ``step_fn``, PureJaxRL's ``_env_step``): on a batch of
`Tables` it serves the seat to move of every live game with its seat's policy, samples
an action (or takes the one played from outside), and steps the game with the engine
(`Env.step_autoreset` where `Players.autoreset` asks for it).  Every loop of the package
that plays games is a `lax.scan` or `lax.while_loop` of `step` with its own carry: the
single-seat wrapper, the league, the arena's queue, the loggers.  `play` is that loop
for the plain case, every game to its end with per-game keys.

Randomness is the caller's: ``keys`` (`StepKeys`) gives each game its policy, action
and engine-step key for this step; `per_game_keys` is the default scheme (game b's step
t uses ``split(fold_in(key[b], t), 3)``, so its result depends on its own key alone,
not on the batch or the schedule).

Serving (`serve`): each policy runs on (at most) `Players.capacity` [p] of the live
games whose seat to move it plays, gathered into a compact batch (counted from a start
that rotates with `Tables.it`), so a table of cheap bots and one expensive policy pays
for the expensive one only where it acts; the others wait for a later step.  An
unserved game is not stepped and its step count does not move.  `Players.gather` is
the stall-free variant: a policy runs on gathered games while few enough want it, on
every game otherwise (a `lax.cond`: one branch outside `vmap`), so rarely seated
policies cost their games' share without changing a game.  ``inputs`` (`step`):
something every policy reads beside the state, computed once per step for all of
them by the caller (a costly feature several networks read), each game its own row.

It sits right above `coupjax.env` in the layers: it takes policies as arguments and
imports none, so the policies, search and arena above it all build on it.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from coupjax.env import Env
from coupjax.state import State

# Enough decisions for any game: 200 turns of at most 8 decisions each.
MAX_STEPS = 3000


class Tables(NamedTuple):
    """A batch of B games and who plays their seats: the carry of `step`."""

    state: State  # [B]
    steps: jax.Array  # int32[B]: decisions played in each game
    seats: jax.Array  # int32[B, n]: policy index of each seat
    it: jax.Array  # int32[]: steps so far (rotates the start of the serving order)


class StepKeys(NamedTuple):
    """Each game's keys for one step (each [B])."""

    policy: jax.Array
    action: jax.Array
    step: jax.Array


class Moved(NamedTuple):
    """What one step did (each [B])."""

    action: jax.Array  # int32: the action taken (meaningless where not served)
    logits: jax.Array  # float32[B, A]: the acting policy's logits (zero where not served)
    served: jax.Array  # bool: the game was stepped


def sample_categorical(k_act, logits):
    """An action per game from its logits (int32[B])."""
    return jax.vmap(jax.random.categorical)(k_act, logits).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class Players:
    """Who plays (static): the ``policies`` (each ``(key, state) -> logits``, the
    interface of `coupjax.policies.common`), the games each serves per step
    (``capacity``, default every game), how actions are drawn from logits (``sample``),
    whether an ended game restarts in the same step (``autoreset``) and, for policies
    that serve every game, on how many gathered games each is computed while no more
    want it (``gather``, default every game; `serve`)."""

    env: Env
    policies: tuple
    capacity: tuple | None = None
    sample: Callable = sample_categorical
    autoreset: bool = False
    gather: tuple | None = None  # per policy with full capacity: games it runs on when no more want it (module doc)


def per_game_keys(keys, steps) -> StepKeys:
    """Game b's step t draws from ``split(fold_in(keys[b], t), 3)`` (policy, action, step):
    its own key and step count alone, whatever the batch and schedule."""
    k = jax.vmap(lambda key, t: jax.random.split(jax.random.fold_in(key, t), 3))(keys, steps)
    return StepKeys(k[:, 0], k[:, 1], k[:, 2])


def uniform_legal(key, mask):
    """Argmax of uniform noise over the legal actions (one draw of ``mask``'s shape)."""
    u = jax.random.uniform(key, mask.shape)
    return jnp.argmax(jnp.where(mask, u, -1.0), axis=-1).astype(jnp.int32)


def uniform_logits(key, state):
    """The uniform policy over the legal actions (for `uniform_legal` sampling)."""
    return jnp.where(state.legal_action_mask, 0.0, -jnp.inf).astype(jnp.float32)


def tree_where(mask, a, b):
    """``a`` where ``mask`` [B], else ``b`` (pytrees with a leading batch axis)."""
    return jax.tree.map(lambda x, y: jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - mask.ndim)), x, y), a, b)


def serve(policies, capacity, tables: Tables, k_pol, live, num_actions: int, gather=None, inputs=None):
    """Logits [B, A] of the live games whose seat to move each policy serves this
    step (at most ``capacity[p]`` of them for policy p; module doc), and which games
    were served (bool[B]); unserved rows are zero (any finite logits).  ``gather[p]`` < B
    for a policy of full capacity: it is computed on that many gathered games when no
    more want it, on every game otherwise; either way it serves every game that wants it.
    ``inputs``: a pytree [B, ...] the policies read as a third argument, game b's row
    with game b (None: the policies take ``(key, state)``)."""
    state, seats, it = tables.state, tables.seats, tables.it
    extra = () if inputs is None else (inputs,)
    B = state.current_player.shape[0]
    games = jnp.arange(B)
    acting = jnp.take_along_axis(seats, state.current_player[:, None], axis=1)[:, 0]
    logits = jnp.full((B, num_actions), -jnp.inf, jnp.float32)
    served = jnp.zeros(B, bool)
    seated = [p for p, cap in enumerate(capacity) if cap]
    if B == 1 and seated:  # one game (a single-seat wrapper's): compute only the acting seat's policy
        branches = [policies[p] for p in seated]
        which = jnp.searchsorted(jnp.asarray(seated), acting[0])
        args = (k_pol[0], *jax.tree.map(lambda x: x[0], (state, *extra)))
        out = branches[0](*args) if len(branches) == 1 else jax.lax.switch(which, branches, *args)
        served = live & jnp.isin(acting, jnp.asarray(seated))
        return jnp.where(served[:, None], out[None], 0.0), served
    def every_game(p, want, logits, served):
        out = jax.vmap(policies[p])(k_pol, state, *extra)
        return jnp.where(want[:, None], out, logits), served | want

    def first_games(p, want, logits, served, cap, start):
        """The first ``cap`` games wanting p, counted from ``start``."""
        order = (games + start) % B
        pick = jnp.nonzero(want[order], size=cap, fill_value=B)[0]
        sel = jnp.where(pick < B, order[jnp.clip(pick, 0, B - 1)], B)
        safe = jnp.clip(sel, 0, B - 1)
        out = jax.vmap(policies[p])(k_pol[safe], *jax.tree.map(lambda x: x[safe], (state, *extra)))
        return logits.at[sel].set(out, mode="drop"), served.at[sel].set(True, mode="drop")

    for p, cap in enumerate(capacity):
        if cap == 0:
            continue
        want = live & (acting == p)
        g = B if gather is None else min(gather[p], B)
        if cap >= B and g < B:  # every game that wants p fits in g: the same logits, fewer computed
            logits, served = jax.lax.cond(want.sum() <= g, lambda *a, p=p, g=g: first_games(p, *a, g, 0),
                                          lambda *a, p=p: every_game(p, *a), want, logits, served)
        elif cap >= B:
            logits, served = every_game(p, want, logits, served)
        else:  # the first `cap` games wanting p, counted from a start that rotates
            logits, served = first_games(p, want, logits, served, cap, (it * cap) % B)
    return jnp.where(served[:, None], logits, 0.0), served


def step(players: Players, tables: Tables, keys: StepKeys, live, action=None, inputs=None) -> tuple[Tables, Moved]:
    """One step of the ``live`` games of ``tables`` (module doc): the tables after it and
    what moved.  ``action`` int32[B]: actions played from outside (a learner's, a
    user's) in place of the sampled ones where >= 0.  ``inputs``: a pytree [B, ...]
    every policy reads as a third argument (`serve`)."""
    B = tables.state.current_player.shape[0]
    capacity = (B,) * len(players.policies) if players.capacity is None else players.capacity
    logits, served = serve(players.policies, capacity, tables, keys.policy, live, players.env.num_actions,
                           players.gather, inputs)
    a = players.sample(keys.action, logits)
    if action is not None:
        a = jnp.where(action >= 0, action, a)
    env_step = players.env.step_autoreset if players.autoreset else players.env.step
    new = jax.vmap(env_step)(tables.state, a, keys.step)
    state = tree_where(served, new, tables.state)
    return Tables(state, tables.steps + served, tables.seats, tables.it + 1), Moved(a, logits, served)


def start(state: State, seats) -> Tables:
    """`Tables` of the games ``state`` [B] at their first step, seats int32[B, n]."""
    B = state.current_player.shape[0]
    return Tables(state, jnp.zeros(B, jnp.int32), jnp.asarray(seats, jnp.int32), jnp.int32(0))


def play(players: Players, state: State, keys, seats=None, limit=MAX_STEPS, tally: Callable | None = None, aux=None):
    """Every game of ``state`` [B] played to its end or ``limit`` decisions (a scalar or
    int32[B]) with `per_game_keys` of ``keys`` [B]; ``seats`` int32[B, n] (default:
    policy s at seat s).  ``tally(aux, tables, moved) -> aux`` folds each step into
    ``aux`` (``tables``: before the step).  Returns (the final `Tables`, ``aux``)."""
    B, n = state.current_player.shape[0], players.env.num_players
    if seats is None:
        seats = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32) % len(players.policies), (B, n))

    def live(tables):
        return ~tables.state.terminated & (tables.steps < limit)

    def body(carry):
        tables, aux = carry
        new, moved = step(players, tables, per_game_keys(keys, tables.steps), live(tables))
        return new, (aux if tally is None else tally(aux, tables, moved))

    return jax.lax.while_loop(lambda carry: live(carry[0]).any(), body, (start(state, seats), aux))
