"""The batched search: sampled worlds, rollouts of every legal action, one work queue.

Pipeline (one decision; `make_searcher` runs a batch of decisions at once)
-------------------------------------------------------------------------
1. **Worlds.**  ``K = num_worlds`` complete hidden worlds are drawn from the exact
   posterior given ONLY the seat's observation (`beliefs.posterior.sample_worlds`; or
   ``world_sampler``, e.g. a learned belief's, from the same observation alone):
   every opponent's hidden cards, the deck order, and the cards another seat has drawn
   in an exchange.  Each becomes an engine state with `game.deal.replace_hidden`, which
   keeps the public parts of the real state, takes every hidden card from the sample
   and blanks the previous step's event (it holds private fields).  So nothing of the
   true hidden state reaches the search (`coupjax.testing.check_policy`'s scrambling
   leak test runs over every registered policy, these included).
2. **Rollouts.**  For every legal action ``a`` (gathered into ``M = 3n + 1`` slots, the
   most legal actions any decision has: income, foreign aid, tax, exchange and
   coup/assassinate/steal on each of the ``n - 1`` opponents) in every world,
   ``R = rollouts_per_world`` games are played from the world state: the first step is
   ``a``, every later decision of every seat (the searcher's included) is sampled from
   the rollout policy (any registered policy name, or any ``policy(key, state) ->
   logits`` callable, e.g. `coupjax.inference.load_policy`'s; `SearchConfig`'s default
   is ``random``, the registered policies' default budget uses ``scripted_mix``, see
   `DEFAULT_CONFIG`); ``rollout_self_policy`` optionally gives the searcher's own later
   decisions another policy.  A rollout ends at the
   end of the game (value: the searcher's reward, +1 for a win, -1/(n-1) otherwise) or
   after ``max_rollout_steps`` decisions (value: `heuristic_value`, a crude win chance
   from hidden cards and coins, or ``cut_value``, e.g. a trained value head; ``None``
   plays every game to its end).
3. **Values.**  ``q_world[k, a]`` is the mean over the R rollouts; ``q[a]`` the mean over
   the K worlds; ``se[a]`` the standard error of ``q[a]`` with the world as the
   sampling unit (std of ``q_world[:, a]`` / sqrt(K); with K = 1 the std of the R
   rollouts / sqrt(R)), so it counts both the belief's and the rollouts' noise.

Cost and scheduling (measured by ``python -m evals.search_bench``)
------------------------------------------------------------------
Only (decision, world, legal action, rollout) jobs are built -- at the first decision
of a 4-player game 7 of 44 actions are legal, so this is 6x cheaper than masking -- and
decisions with a single legal action outside the main-action phase, and terminated
states, get no jobs at all.  All jobs of all decisions in the batch share one pool of
``lanes`` rollouts in flight (a work queue with continuous refilling rather than
periodic compaction).  A jitted `lax.while_loop`
steps every lane (vmapped `Env.step` plus the rollout policy); a lane whose rollout
ended adds its value to its (world, action) slot and is refilled at once with the next
pending job -- its world state gathered, its first action forced -- so short rollouts
never wait for long ones and no lane steps a finished game while jobs remain.  A step
refills at most ``lanes / 8`` lanes (gathered and scattered, so a refill costs an
eighth of the pool's copies; a select over the whole pool every step doubled the cost
of a step).  Only the tail -- fewer live rollouts than lanes once the queue is empty --
runs partly idle; the step cap bounds it, and the registered policies use
one by default (see `DEFAULT_CONFIG`).

Why this shape: on the benchmark the queue keeps 90-95% of the lane steps live, where one
vmapped loop holding every rollout until the longest ends keeps about a third; one pool of
a few thousand lanes was fastest on CPU (larger pools lose the cache, stepping the pool
in groups costs copies).

Randomness is keyed per job and step (``fold_in(job key, t)``); the job key depends on
the decision's key, the world and the rollout index but not the action (common random
numbers: all actions of a (world, rollout) pair see the same random stream, which
makes their differences less noisy).  So a decision's result
does not depend on which lanes ran it or what else was in the batch: under `jax.vmap`
the registered policies switch (via `jax.custom_batching.custom_vmap`) to this pooled,
batched search and give exactly what one call per state would.  That is what makes the
policies affordable inside `coupjax.seat_tables`'s table runner, whose vmapped
`lax.while_loop` calls a policy on every game at every step.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from coupjax import rules
from coupjax.game import board
from coupjax.search.config import DEFAULT_CONFIG, SearchConfig, max_legal_actions
from coupjax.search.sampled_worlds import heuristic_value, raw_key, rollout_policy, world_states

REFILL_DIVISOR = 8  # a step refills at most 1/8 of the lanes (module doc)


class SearchResult(NamedTuple):
    """Per decision b of a batch (M = `max_legal_actions`, K = num_worlds).

    action_ids int32[B, M]: the legal action ids (ascending) in the first slots;
    valid bool[B, M]: the slot holds a searched legal action;
    q f32[B, M]: value estimate (mean over worlds); se f32[B, M]: its standard error;
    q_world f32[B, K, M]: per-world mean over the R rollouts; rollouts int32[B, M];
    best_share f32[B, M]: share of worlds where the action is best (ties split; on the
    denoised values with ``denoise_worlds``);
    searched bool[B]; rollout_steps int32[]: env steps in all rollouts; iterations
    int32[]: loop iterations (``rollout_steps / (iterations * lanes)`` is the share of
    the lane steps computed that were live); lanes int32[]: the lanes used.
    """

    action_ids: jax.Array
    valid: jax.Array
    q: jax.Array
    se: jax.Array
    q_world: jax.Array
    rollouts: jax.Array
    best_share: jax.Array
    searched: jax.Array
    rollout_steps: jax.Array
    iterations: jax.Array
    lanes: jax.Array


def best_shares(world_values, valid):
    """f32[B, M]: the share of worlds in which each valid action has the highest value
    (``world_values`` f32[B, K, M]; ties split evenly; invalid actions get 0)."""
    qw = jnp.where(valid[:, None, :], world_values, -jnp.inf)
    best = (qw >= qw.max(axis=-1, keepdims=True)) & valid[:, None, :]
    return (best / jnp.maximum(best.sum(axis=-1, keepdims=True), 1)).mean(axis=1)


def denoised_world_values(v, valid):
    """Per-world action values with the rollout noise shrunk out (empirical Bayes).

    ``v`` f32[B, K, M, R]: rollout values; ``valid`` bool[B, M].  Returns f32[B, K, M]
    whose per-world argmax is `thompson`'s "best action in world k".

    A world's raw mean over R rollouts is its true value plus rollout noise, and where
    the actions' true values hardly differ between worlds the raw argmax is mostly noise.
    Within each (world, rollout) the values are centred on the mean over the legal
    actions (a common shift does not change an argmax, and with common random numbers
    it removes the noise the actions share).  For each action the centred world means
    ``e[k]`` are then shrunk towards their mean over worlds ``m``: ``m + lam (e[k] - m)``
    with ``lam = max(0, 1 - (s2 / R) / V)``, where ``s2`` is the pooled within-world
    variance of the centred rollouts (the noise of one rollout) and ``V`` the variance of
    ``e`` across worlds -- the posterior mean of each world's value under a normal prior
    across worlds whose variance is estimated from the data.  Actions whose value
    really depends on the hidden cards (challenging a claim that is a bluff in some
    worlds) keep ``lam`` near 1; noise-only differences get ``lam`` near 0, and the
    share then goes to the action best on average.  Needs K >= 2 and R >= 2; otherwise
    returns the raw world means.
    """
    K, Rr = v.shape[1], v.shape[3]
    q_world = v.mean(axis=-1)
    if K < 2 or Rr < 2:
        return q_world
    w = valid[:, None, :, None].astype(v.dtype)
    centre = (v * w).sum(axis=2, keepdims=True) / jnp.maximum(w.sum(axis=2, keepdims=True), 1.0)
    e_r = v - centre  # [B, K, M, R]
    e = e_r.mean(axis=-1)  # [B, K, M]
    s2 = ((e_r - e[..., None]) ** 2).sum(axis=-1).mean(axis=1) / (Rr - 1)  # [B, M]
    m = e.mean(axis=1)  # [B, M]
    V = ((e - m[:, None]) ** 2).sum(axis=1) / (K - 1)  # [B, M]
    lam = jnp.where(V > 0, jnp.clip(1.0 - (s2 / Rr) / jnp.where(V > 0, V, 1.0), 0.0, 1.0), 0.0)
    return m[:, None] + lam[:, None] * (e - m[:, None])


def make_searcher(env, config: SearchConfig = DEFAULT_CONFIG):
    """``search(keys, states) -> SearchResult`` for a batch of decision states (keys
    [B], states a batched `State`).  Pure and jittable (not jitted)."""
    n, A = env.num_players, env.num_actions
    K, Rr, M = int(config.num_worlds), int(config.rollouts_per_world), max_legal_actions(n)
    cap = 2 ** 30 if config.max_rollout_steps is None else int(config.max_rollout_steps)
    rollout = rollout_policy(env, config.rollout_policy)
    own = None if config.rollout_self_policy is None else rollout_policy(env, config.rollout_self_policy)
    beta = float(config.heuristic_beta)
    if config.cut_value is None:
        cut_value = lambda st, seat: heuristic_value(st, seat, beta)  # noqa: E731
    else:
        cut_value = config.cut_value

    def sample_action(logits, bits):
        u = ((bits >> 8).astype(jnp.float32) + 0.5) * (1.0 / (1 << 24))
        p = jnp.exp(logits - jnp.max(logits))
        c = jnp.cumsum(p)
        return jnp.minimum((c < u * c[-1]).sum(), A - 1).astype(jnp.int32)

    def lane_step(state, key, t, forced, seat):
        # one threefry block per lane and step: the folded key drives the engine step, its
        # words (uniform bits) the action draw; the policy gets its own key (dead code,
        # eliminated by XLA, for the many policies that ignore their key)
        k = jax.random.fold_in(key, t)
        k_pol = jax.random.fold_in(k, 1)
        logits = rollout(k_pol, state)
        if own is not None:
            logits = jnp.where(state.current_player == seat, own(k_pol, state), logits)
        a = jnp.where(forced >= 0, forced, sample_action(logits, k[0] ^ k[1]))
        new = env.step(state, a, k)
        done = new.terminated | (t + 1 >= cap)
        value = jnp.where(new.terminated, new.rewards[seat], cut_value(new, seat))
        return new, done, value

    v_lane_step = jax.vmap(lane_step)

    def run_lanes(L, worlds, world_seat, job_world, job_action, job_slot, job_key, num_jobs):
        """The work queue over L lanes (module doc).  Every job runs exactly once and writes
        its rollout's value to its own slot ``job_slot`` (NaN where no job ran).  Returns
        the values, the rollout steps taken and the loop iterations."""
        S = job_world.shape[0]  # one result slot per possible job (decision, world, action, rollout)
        last = S - 1
        F = max(1, L // REFILL_DIVISOR)

        def job_fields(jid, ok):
            safe = jnp.clip(jid, 0, last)
            src = job_world[safe]
            st = jax.tree.map(lambda x: x[src], worlds)
            ln = dict(job=jnp.where(ok, jid, -1), t=jnp.zeros(jid.shape, jnp.int32), forced=job_action[safe],
                      slot=job_slot[safe], seat=world_seat[src], key=job_key[safe])
            return st, ln

        jid0 = jnp.arange(L, dtype=jnp.int32)
        st0, ln0 = job_fields(jid0, jid0 < num_jobs)
        carry0 = (st0, ln0, jnp.minimum(num_jobs, L), jnp.full(S, jnp.nan, jnp.float32), jnp.int32(0), jnp.int32(0))

        def cond(c):
            return (c[1]["job"] >= 0).any()

        def body(c):
            st, ln, nxt, values, steps, it = c
            active = ln["job"] >= 0
            new, done, value = v_lane_step(st, ln["key"], ln["t"], ln["forced"], ln["seat"])
            done = active & done
            values = values.at[jnp.where(done, ln["slot"], S)].set(value, mode="drop")
            # refill free lanes with the next jobs: the first F free lanes (in lane order)
            # per step, gathered and scattered, so a refill costs F lanes' copies, not L
            free = ~active | done
            lane = jnp.nonzero(free, size=F, fill_value=L)[0]
            jid = nxt + jnp.arange(F, dtype=jnp.int32)
            ok = (lane < L) & (jid < num_jobs)
            st_new, ln_new = job_fields(jid, ok)
            tgt = jnp.where(ok, lane, L)
            ln = dict(ln, job=jnp.where(done, -1, ln["job"]), t=ln["t"] + 1, forced=jnp.full_like(ln["forced"], -1))
            st = jax.tree.map(lambda x, y: x.at[tgt].set(y, mode="drop"), new, st_new)
            ln = {k: ln[k].at[tgt].set(ln_new[k], mode="drop") for k in ln}
            return st, ln, nxt + ok.sum(), values, steps + active.sum(), it + 1

        _, _, _, values, steps, it = jax.lax.while_loop(cond, body, carry0)
        return values, steps, it

    def search(keys, states):
        keys = raw_key(keys)
        B = keys.shape[0]
        ks = jax.vmap(lambda k: jax.random.split(k, 3))(keys)  # worlds, rollouts, (prior: callers)
        mask = states.legal_action_mask
        count = mask.sum(axis=-1)
        in_action = board.phase(states) == rules.PH_ACTION
        searched = ~states.terminated & (count >= 1) & ((count > 1) | in_action)
        ids = jnp.argsort(~mask, axis=-1, stable=True)[:, :M].astype(jnp.int32)
        valid = jnp.take_along_axis(mask, ids, axis=-1) & searched[:, None]

        worlds = jax.vmap(lambda k, s: world_states(env, k, s, K, config.posterior, config.world_sampler))(
            ks[:, 0], states)
        worlds = jax.tree.map(lambda x: x.reshape((B * K,) + x.shape[2:]), worlds)
        world_seat = jnp.repeat(states.current_player, K)

        # jobs (b, k, a, r) for valid (b, a), compacted to the front
        shape = (B, K, M, Rr)
        want = jnp.broadcast_to(valid[:, None, :, None], shape).ravel()
        bb, kk, aa, rr = (x.ravel() for x in jnp.meshgrid(*(jnp.arange(d, dtype=jnp.int32) for d in shape),
                                                           indexing="ij"))
        pos = jnp.where(want, jnp.cumsum(want) - 1, want.shape[0])
        num_jobs = want.sum().astype(jnp.int32)

        def compact(x):
            return jnp.zeros((want.shape[0],) + x.shape[1:], x.dtype).at[pos].set(x, mode="drop")

        job_world = compact(bb * K + kk)
        job_action = compact(ids[bb, aa])
        job_slot = compact(jnp.arange(want.shape[0], dtype=jnp.int32))  # (b, k, a, r) in row-major order
        # common random numbers: the r-th rollout in world k uses the same key for every
        # action (the actions' value differences are less noisy); keys depend only on the
        # decision's own key, never on the batch
        local = kk * Rr + rr
        job_key = compact(jax.vmap(jax.random.fold_in)(ks[bb, 1], local))

        L = min(int(config.lanes), want.shape[0])
        values, steps, it = run_lanes(L, worlds, world_seat, job_world, job_action, job_slot, job_key, num_jobs)

        v = jnp.where(valid[:, None, :, None], values.reshape(shape), 0.0)  # [B, K, M, R] rollout values
        q_world = v.mean(axis=-1)
        q = q_world.mean(axis=1)
        if K > 1:
            var = ((q_world - q[:, None, :]) ** 2).sum(axis=1) / (K - 1)
            se = jnp.sqrt(var / K)
        elif Rr > 1:
            var = ((v[:, 0] - q[:, :, None]) ** 2).sum(axis=-1) / (Rr - 1)
            se = jnp.sqrt(var / Rr)
        else:
            se = jnp.zeros_like(q)
        q = jnp.where(valid, q, 0.0)
        se = jnp.where(valid, se, 0.0)
        share = best_shares(denoised_world_values(v, valid) if config.denoise_worlds else q_world, valid)
        return SearchResult(
            action_ids=ids, valid=valid, q=q, se=se, q_world=jnp.where(valid[:, None, :], q_world, 0.0),
            rollouts=jnp.where(valid, K * Rr, 0).astype(jnp.int32), best_share=share, searched=searched,
            rollout_steps=steps, iterations=it, lanes=jnp.int32(L))

    return search
