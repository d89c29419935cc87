"""Challenge and block rates per claimed role: the counting behind ``python -m
evals.reaction_rates`` (its module doc defines every count), here so that the report
(`evals.report.suite`) counts with the same functions."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from coupjax import rollout, rules
from coupjax.devices import data_mesh, shard
from coupjax.game.tables import tables
from coupjax.observation import parse
from coupjax.policies.spec import resolve_policy
from coupjax.seat_tables import INIT_STREAM, bucket_size, capacities, game_keys, pad_rows, seat_index
from evals.lib.paired import condition_tables
from evals.lib.play import interleave

COUNTS = ("challenge_opportunities", "challenges", "block_opportunities", "blocks", "bluff_blocks")


def reaction_tally(T, n: int):
    """A `coupjax.rollout.play` tally of the counts of the module doc, per game, seat and
    role [B, n, 5], for the seat to move."""
    block_role = jnp.asarray(T.action_block_role)
    blocks_as = jax.nn.one_hot(block_role, rules.NUM_ROLES, dtype=jnp.int32)  # [A, 5] (-1: no row)

    def tally(st, tables, moved):
        s, a, served = tables.state, moved.action, moved.served
        v = jax.vmap(lambda o: parse(o, n))(s.observation)
        seat = ((jnp.arange(n)[None, :] == s.current_player[:, None]) & served[:, None])[:, :, None]  # [B, n, 1]
        mask = s.legal_action_mask
        claimed = jnp.where(v.phase == rules.PH_ANSWER_BLOCK, v.block_role, v.claim)
        c_opp = (mask[:, T.challenge_id][:, None] & (claimed >= 0)[:, None]
                 & (jnp.arange(rules.NUM_ROLES)[None, :] == claimed[:, None]))  # [B, 5]
        b_opp = (mask.astype(jnp.int32) @ blocks_as) > 0  # [B, 5]
        chosen = blocks_as[a] > 0  # [B, 5]: the role it blocked with
        bluffed = chosen & (v.own_counts == 0)
        add = {"challenge_opportunities": c_opp, "challenges": c_opp & (a == T.challenge_id)[:, None],
               "block_opportunities": b_opp, "blocks": chosen & b_opp, "bluff_blocks": bluffed & b_opp}
        return {k: st[k] + (seat & add[k][:, None, :]).astype(jnp.int32) for k in COUNTS}

    return tally


def make_rate_runner(env, policy_list, devices=None):
    """``run(keys [B], seat_policy_index [B, n], capacity) -> (counts {name: [B, n, 5]},
    finished [B])`` of B complete games (`reaction_tally`); ``capacity`` (static, per
    policy: `coupjax.seat_tables.capacities`) lets a policy seated nowhere cost nothing.
    ``devices`` (default one): the games split into one contiguous part per device
    (`coupjax.devices.shard`; ``capacity`` is then per device's part); a game's counts
    depend on its key and seats alone, so they do not change."""
    n = env.num_players
    T = tables(n)

    def _run(keys, idx, capacity):
        state = jax.vmap(lambda k: env.init(jax.random.fold_in(k, INIT_STREAM)))(keys)
        zeros = {k: jnp.zeros((keys.shape[0], n, rules.NUM_ROLES), jnp.int32) for k in COUNTS}
        c, counts = rollout.play(rollout.Players(env, tuple(policy_list), capacity), state, keys, idx,
                                 tally=reaction_tally(T, n), aux=zeros)
        return counts, c.state.terminated

    devs = list(devices or [])
    if len(devs) <= 1:
        return jax.jit(_run, static_argnames="capacity")
    mesh = data_mesh(devs)

    def sharded(keys, idx, capacity):
        return shard(functools.partial(_run, capacity=capacity), mesh, P("data"), P("data"))(keys, idx)

    return jax.jit(sharded, static_argnames="capacity")


def summarize(counts: dict) -> dict:
    """role -> the counts (summed) and their rates (module doc)."""
    out = {}
    for r, role in enumerate(rules.ROLES):
        row = {k: int(np.asarray(counts[k])[..., r].sum()) for k in COUNTS}
        row["challenge_rate"] = row["challenges"] / row["challenge_opportunities"] if row["challenge_opportunities"] else None
        row["block_rate"] = row["blocks"] / row["block_opportunities"] if row["block_opportunities"] else None
        out[role] = row
    return out


def reaction_rates(env, specs: list[str], games: int, seed: int, opponents: str | None = None,
                   chunk: int = 1000) -> dict:
    """spec -> role -> counts and rates (module doc), every spec in the same seat of the
    same ``games`` tables of ``seed``.

    Every spec's tables are played interleaved (`evals.lib.play.interleave`) in calls
    of ``chunk`` games split over `jax.devices()`: one compilation for all specs, both
    cores busy, each policy computed only where it sits."""
    n = env.num_players
    seats, opp, opp_specs = condition_tables(games, n, seed, opponents)
    entries = list(dict.fromkeys(list(opp_specs) + list(specs)))
    devices = jax.devices()
    D = len(devices)
    run = make_rate_runner(env, [resolve_policy(s, env) for s in entries], devices)
    keys_all = np.asarray(game_keys(seed, 0, games))
    opp_idx = np.asarray([entries.index(x) for x in opp_specs], np.int32)[opp]
    groups = [seat_index(seats, opp_idx, entries.index(spec), n) for spec in specs]
    order = interleave(groups)  # (spec, table) rows
    idx = np.stack([groups[g][r] for g, r in order])
    keys = keys_all[order[:, 1]]
    rows = len(order)
    chunk = -(-min(chunk, bucket_size(rows)) // D) * D  # every device the same number of games
    part = chunk // D
    capacity = tuple(int(c) for c in np.max([capacities(pad_rows(idx[s:s + part], part), len(entries))
                                             for s in range(0, rows, part)], axis=0))
    totals = [{k: np.zeros(rules.NUM_ROLES, np.int64) for k in COUNTS} for _ in specs]
    for start in range(0, rows, chunk):
        at = slice(start, min(start + chunk, rows))
        real = at.stop - at.start
        k, i = pad_rows(keys[at], chunk), pad_rows(idx[at], chunk)
        counts, done = jax.device_get(run(jnp.asarray(k), jnp.asarray(i), capacity))
        if not np.asarray(done)[:real].all():
            raise RuntimeError("a game did not finish within the arena's step bound")
        spec_of, seat = order[at, 0], seats[order[at, 1]]
        for key in COUNTS:
            mine = np.asarray(counts[key])[np.arange(real), seat]  # [real, 5]: the tested seat's
            for g in range(len(specs)):
                totals[g][key] += mine[spec_of == g].sum(axis=0)
    return {spec: summarize(totals[g]) for g, spec in enumerate(specs)}
