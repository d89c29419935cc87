"""Stage 1 of the advisor evaluation: play games and record every challengeable claim.

Games: 4 players per game, seats drawn per game with `coupjax.arena.draw_seats` from
each condition of `CONDITIONS` (aggressive_heavy, honest_heavy); every seat plays its
scripted bot.  The advisor watches as an observer: every challengeable claim (a main
action claiming a role, or a block) is recorded ONCE, from the seat with the first
chance to challenge it -- the first live responder clockwise after the actor in the
react window, or the actor answering a block -- with that seat's observation only.

Positive class: the claim is a bluff (the claimant does not hold the role).  The
ground truth is read from the engine's hidden hands (`coupjax.game.deal.hidden_hands`)
by THIS RECORDER ONLY, at the moment of recording; the advisor never sees it.

One vmapped `lax.while_loop` per chunk of games plays them and records, at every
scored decision (up to `MAX_SCORED` per game; overflow is counted and reported), the
observation (int16), the label, the claim kind and the step index.  The advisor runs
afterwards on the recorded rows (`evals.advisor.score`): the posterior costs about 5x
a bot step, and in the loop it would run at every step, not only at the ~30 % of steps
that are scored decisions.  This loop records claims; it counts no results (the
arena's `coupjax.arena` is the one place that does).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import arena
from coupjax.advice import challenge as A
from coupjax.env import Env
from coupjax.game.deal import hidden_hands
from coupjax.policies import make_policy
from coupjax.policies.pools import SCRIPTED_NAMES

NUM_PLAYERS = 4
MAX_SCORED = 256
MAX_STEPS = arena.MAX_STEPS
CONDITIONS = ("aggressive_heavy", "honest_heavy")


def make_recorder(env: Env, policy_list, max_steps: int = MAX_STEPS, max_scored: int = MAX_SCORED):
    """Jitted ``record(key, seat_policy_index int32[B, n]) -> dict`` (module doc).

    Returned arrays: ``obs`` int16[B, K, obs], ``label`` bool[B, K] (bluff), ``kind``
    int32[B, K], ``step`` int32[B, K], ``count`` int32[B] (scored decisions, may exceed
    K: overflow), ``steps`` int32[B], ``finished`` bool[B].
    """
    policies = list(policy_list)
    n = env.num_players
    K = max_scored
    obs_size = env.observation_shape[0]

    def scored_decision(s):
        """(scored, claimant absolute seat, role, kind) of the decision in state s."""
        ctx = A.challenge_context(s.observation, n)
        v = ctx["view"]
        rel = jnp.arange(n)
        between = (rel > ctx["claimant"]) & v.alive
        first = ctx["answer"] | ~between.any()  # react: no live seat between the actor and us
        scored = ctx["decision"] & first & ~s.terminated
        claimant = (s.current_player + ctx["claimant"]) % n
        return scored, claimant, ctx["role"], ctx["kind"]

    def one(key, seat_idx):
        k_init, key = jax.random.split(key)
        state = env.init(k_init)
        bufs = dict(obs=jnp.zeros((K, obs_size), jnp.int16), label=jnp.zeros(K, bool),
                    kind=jnp.full(K, -1, jnp.int32), step=jnp.full(K, -1, jnp.int32))

        def cond(c):
            s, t, _, _, _ = c
            return ~s.terminated & (t < max_steps)

        def body(c):
            s, t, b, count, k = c
            k, k_pol, k_act, k_step = jax.random.split(k, 4)
            scored, claimant, role, kind = scored_decision(s)
            # GROUND TRUTH (recorder only): does the claimant's hidden hand hold the role?
            bluff = ~jnp.any(hidden_hands(s)[claimant] == role)
            i = jnp.minimum(count, K - 1)
            w = scored & (count < K)
            b = dict(
                obs=b["obs"].at[i].set(jnp.where(w, jnp.round(s.observation).astype(jnp.int16), b["obs"][i])),
                label=b["label"].at[i].set(jnp.where(w, bluff, b["label"][i])),
                kind=b["kind"].at[i].set(jnp.where(w, kind, b["kind"][i])),
                step=b["step"].at[i].set(jnp.where(w, t, b["step"][i])),
            )
            logits = jax.lax.switch(seat_idx[s.current_player], policies, k_pol, s)
            a = jax.random.categorical(k_act, logits).astype(jnp.int32)
            return env.step(s, a, k_step), t + 1, b, count + scored, k

        state, steps, bufs, count, _ = jax.lax.while_loop(cond, body, (state, jnp.int32(0), bufs, jnp.int32(0), key))
        return dict(bufs, count=count, steps=steps, finished=state.terminated)

    return jax.jit(lambda key, idx: jax.vmap(one)(jax.random.split(key, idx.shape[0]), idx))


def flatten_records(rec) -> dict:
    """Host-side: the valid scored rows of a recorder output, flattened (NumPy); ``game``
    is the row's game index within the batch."""
    rec = {k: np.asarray(v) for k, v in rec.items()}
    B, K = rec["label"].shape
    valid = np.arange(K)[None, :] < np.minimum(rec["count"], K)[:, None]
    game = np.broadcast_to(np.arange(B)[:, None], (B, K))
    return {"obs": rec["obs"][valid].astype(np.float32), "label": rec["label"][valid], "kind": rec["kind"][valid],
            "step": rec["step"][valid], "game": game[valid]}


def play_condition(recorder, key, condition: str, games: int, chunk: int, progress=None, task=None) -> dict:
    """Play ``games`` games of ``condition`` in chunks; return the flattened records plus
    ``overflow``, ``unfinished`` and ``games``."""
    k_seats, k_play = jax.random.split(key)
    seats = np.asarray(arena.draw_seats(k_seats, condition, games, NUM_PLAYERS))
    parts, overflow, unfinished = [], 0, 0
    for c, start in enumerate(range(0, games, chunk)):
        idx = seats[start:start + chunk]
        size = idx.shape[0]
        if size < chunk:  # pad to one compiled shape; padded games are dropped
            idx = np.concatenate([idx, np.repeat(idx[-1:], chunk - size, axis=0)])
        rec = recorder(jax.random.fold_in(k_play, c), jnp.asarray(idx))
        rec = jax.tree.map(lambda x: np.asarray(x)[:size], rec)
        overflow += int(np.maximum(rec["count"] - MAX_SCORED, 0).sum())
        unfinished += int((~rec["finished"]).sum())
        flat = flatten_records(rec)
        flat["game"] = flat["game"] + start
        parts.append(flat)
        if progress is not None:
            progress.advance(task, size)
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    out["overflow"], out["unfinished"], out["games"] = overflow, unfinished, games
    return out


def record_conditions(games: int, seed: int, chunk: int, conditions=CONDITIONS, quiet: bool = False) -> dict:
    """condition -> `play_condition` records of ``games`` games; condition i's games are
    keyed by ``fold_in(PRNGKey(seed), i)``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    env = Env(NUM_PLAYERS)
    recorder = make_recorder(env, [make_policy(x, env) for x in SCRIPTED_NAMES])
    chunk = max(1, min(chunk, games))
    records = {}
    cols = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*cols, disable=quiet, transient=False) as progress:
        for ci, cond in enumerate(conditions):
            task = progress.add_task(f"{cond} (games)", total=games)
            key = jax.random.fold_in(jax.random.PRNGKey(seed), ci)
            records[cond] = play_condition(recorder, key, cond, games, chunk, progress, task)
    return records
