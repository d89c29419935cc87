"""Challenge and block rates per claimed role: the counting behind ``python -m
evals.reaction_rates`` (its module doc defines every count), here so that the report
(`evals.report.suite`) counts with the same functions."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rollout, rules
from coupjax.game.tables import tables
from coupjax.observation import parse
from coupjax.policies.spec import resolve_policy
from coupjax.seat_tables import INIT_STREAM, bucket_size, capacities, game_keys, pad_rows, seat_index
from evals.lib.paired import condition_tables

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


def make_rate_runner(env, policy_list):
    """``run(keys [B], seat_policy_index [B, n], capacity) -> (counts {name: [B, n, 5]},
    finished [B])`` of B complete games (`reaction_tally`); ``capacity`` (static, per
    policy: `coupjax.seat_tables.capacities`) lets a policy seated nowhere cost nothing."""
    n = env.num_players
    T = tables(n)

    def _run(keys, idx, capacity):
        state = jax.vmap(lambda k: env.init(jax.random.fold_in(k, INIT_STREAM)))(keys)
        zeros = {k: jnp.zeros((keys.shape[0], n, rules.NUM_ROLES), jnp.int32) for k in COUNTS}
        c, counts = rollout.play(rollout.Players(env, tuple(policy_list), capacity), state, keys, idx,
                                 tally=reaction_tally(T, n), aux=zeros)
        return counts, c.state.terminated

    return jax.jit(_run, static_argnames="capacity")


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
    same ``games`` tables of ``seed``."""
    n = env.num_players
    seats, opp, opp_specs = condition_tables(games, n, seed, opponents)
    entries = list(dict.fromkeys(list(opp_specs) + list(specs)))
    run = make_rate_runner(env, [resolve_policy(s, env) for s in entries])
    chunk = min(chunk, bucket_size(games))
    keys_all = np.asarray(game_keys(seed, 0, games))
    opp_idx = np.asarray([entries.index(x) for x in opp_specs], np.int32)[opp]
    out = {}
    for spec in specs:
        idx = seat_index(seats, opp_idx, entries.index(spec), n)
        starts = range(0, games, chunk)
        capacity = tuple(np.max([capacities(pad_rows(idx[s:s + chunk], chunk), len(entries)) for s in starts], axis=0))
        totals = {k: np.zeros(rules.NUM_ROLES, np.int64) for k in COUNTS}
        for start in starts:
            rows = slice(start, min(start + chunk, games))
            real = rows.stop - rows.start
            k, i = pad_rows(keys_all[rows], chunk), pad_rows(idx[rows], chunk)
            counts, done = jax.device_get(run(jnp.asarray(k), jnp.asarray(i), tuple(int(c) for c in capacity)))
            if not np.asarray(done)[:real].all():
                raise RuntimeError("a game did not finish within the arena's step bound")
            at = np.arange(real)
            for key in COUNTS:
                totals[key] += np.asarray(counts[key])[at, seats[rows]].sum(axis=0)
        out[spec] = summarize(totals)
    return out
