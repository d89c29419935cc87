"""The logged games of the replication: CoupVisor's offline data (B.1, B.2).

`make_logger` plays 4-player games of the scripted bots (`LOG_TEACHERS`, each seat
drawn uniformly per game) in parallel slots with auto-reset, one scan of `coupjax.rollout.step`
per call, and records every decision of every seat (main action, reaction, answer to a
block, reveal, exchange choice) as a row: the acting seat's observation and legal
mask, the logged action, the actor, the game, coins and alive flags of every seat
before and after the step, whether the game ended and its winner (`coupjax.game.board.
winner`: the rules' ranking, also for a game ended by the turn cap), and what
``belief_ev`` and ``random`` would have played there (``cf_belief_ev``,
``cf_random``: one sample of their logits at the logged state), so their offline
choices come with the log.  This is data collection, not a table: no result is
counted here (the online win rate is `coupjax.seat_tables`'s).

`prepare_rows` adds per row whether its actor wins the game and the shaped reward of
B.1 (`shaped_row_rewards`); `split_games` holds out whole games
(`training.bc.held_out_games`, the same split as behaviour cloning's validation).
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rollout
from coupjax.env import Env
from coupjax.game import board
from coupjax.policies import make_policy
from coupjax.policies.pools import SCRIPTED_NAMES
from training.bc import held_out_games

LOG_TEACHERS = SCRIPTED_NAMES


def _where(c, a, b):
    return jax.tree.map(lambda x, y: jnp.where(c.reshape(c.shape + (1,) * (x.ndim - 1)), x, y), a, b)

COUNTERFACTUAL = ("belief_ev", "random")  # recorded choices at every logged row
NUM_TEACHERS = len(LOG_TEACHERS)


def make_logger(env: Env, num_slots: int, steps: int):
    """Jitted ``init(key) -> carry`` and ``run(carry, per_slot) -> (carry, records
    [steps, slots, ...])``: each of ``num_slots`` slots plays games in turn, game g of a
    slot keyed by (key, slot, g) alone; records of a slot's games beyond ``per_slot``
    are marked invalid.

    Records per decision: valid, obs, mask, action, actor, game (slot-local index),
    coins0/alive0 and coins1/alive1 (every seat, before and after the step), done (the
    game ended), game_winner (the rules' winner when done, else -1), cf_belief_ev,
    cf_random.
    """
    n = env.num_players
    names = (*LOG_TEACHERS, *[x for x in COUNTERFACTUAL if x not in LOG_TEACHERS])
    policies = [make_policy(x, env) for x in names]
    i_bev, i_rand = names.index("belief_ev"), names.index("random")

    def new_game(key):
        k1, k2 = jax.random.split(key)
        return env.init(k1), jax.random.randint(k2, (n,), 0, NUM_TEACHERS, jnp.int32)

    def init_one(base):
        s, idx = new_game(jax.random.fold_in(base, 0))
        return s, idx, jnp.int32(0), jax.random.fold_in(base, 2**31 - 1), base

    @jax.jit
    def init(key):
        return jax.vmap(init_one)(jax.random.split(key, num_slots))

    players = rollout.Players(env, tuple(policies[:NUM_TEACHERS]))

    @jax.jit
    def run(carry, per_slot):
        s, idx, game, key, base = carry

        def one_step(c, _):
            tables, key, game = c
            k = jax.vmap(lambda x: jax.random.split(x, 6))(key)  # a slot's carried key split in six, as always
            ns, moved = rollout.step(players, tables, rollout.StepKeys(k[:, 1], k[:, 2], k[:, 5]),
                                     jnp.ones(num_slots, bool))
            row = record(tables.state, k, game, moved.action, ns.state)
            done = ns.state.terminated
            fs, fidx = jax.vmap(new_game)(jax.vmap(jax.random.fold_in)(base, game + 1))
            ns = ns._replace(state=_where(done, fs, ns.state), seats=jnp.where(done[:, None], fidx, ns.seats))
            return (ns, k[:, 0], game + done), row

        def record(st, k, game, a, ns):
            done = ns.terminated
            # what belief_ev and random would have played: the slot's key split as always (policy 1, belief_ev 3,
            # random 4)
            cf = {f"cf_{name}": jax.vmap(lambda kp, kc, x: jax.random.categorical(kc, policies[i](kp, x)))(
                k[:, 1], k[:, j], st).astype(jnp.int32) for name, i, j in (("belief_ev", i_bev, 3),
                                                                          ("random", i_rand, 4))}
            return {"valid": game < per_slot, "obs": st.observation, "mask": st.legal_action_mask, "action": a,
                    "actor": st.current_player, "game": game, "coins0": jax.vmap(board.coins)(st),
                    "alive0": jax.vmap(board.alive)(st), "coins1": jax.vmap(board.coins)(ns),
                    "alive1": jax.vmap(board.alive)(ns), "done": done,
                    "game_winner": jnp.where(done, jax.vmap(board.winner)(ns), -1).astype(jnp.int32), **cf}

        (tables, key, game), rec = jax.lax.scan(one_step, (rollout.start(s, idx), key, game), None, steps)
        return (tables.state, tables.seats, game, key, base), rec

    return init, run


@functools.lru_cache(maxsize=None)
def cached_logger(num_players: int, slots: int, steps: int):
    """`make_logger`, built once per process and shape."""
    return make_logger(Env(num_players), slots, steps)


def play(logger, key, num_games: int, num_slots: int) -> dict:
    """Records (numpy) of ``ceil(num_games / num_slots) * num_slots`` complete games,
    ordered by game then time, ``game`` renumbered 0..G-1 (see `make_logger`)."""
    init, run = logger
    per_slot = -(-num_games // num_slots)
    carry = init(key)
    parts, t0 = [], 0
    while True:
        carry, rec = run(carry, jnp.int32(per_slot))
        rec = jax.device_get(rec)
        valid = rec.pop("valid")
        t_idx, s_idx = np.nonzero(valid)
        part = {k: v[t_idx, s_idx] for k, v in rec.items()}
        part["slot"], part["t"] = s_idx, t_idx + t0
        parts.append(part)
        t0 += valid.shape[0]
        if int(np.asarray(carry[2]).min()) >= per_slot:
            break
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    order = np.lexsort((data["t"], data["game"], data["slot"]))
    data = {k: v[order] for k, v in data.items()}
    gid = data.pop("slot").astype(np.int64) * per_slot + data["game"]
    data.pop("t")
    _, game = np.unique(gid, return_inverse=True)
    data["game"] = game.astype(np.int32)
    return data


def game_results(d: dict) -> tuple[np.ndarray, np.ndarray]:
    """(winner per game, the game's last row index)."""
    last = np.nonzero(d["done"])[0]
    if len(last) != int(d["game"].max()) + 1:
        raise RuntimeError("every played game must end in the records")
    return d["game_winner"][last].astype(np.int32), last


def shaped_row_rewards(game, actor, coins0, alive0, coins1, alive1, done) -> np.ndarray:
    """CoupVisor B.1 per row: the actor's coin change plus the opponents it saw eliminated.

    A row's transition runs from the actor's decision to its next decision in the same
    game (values before that step), or, if it has none, to the step that eliminated it,
    or to the game's last step (values after that step): `training.rewards.shaped` on
    the actor's views."""
    R, n = coins0.shape
    G = int(game.max()) + 1 if R else 0
    last = np.zeros(G, np.int64)
    last[game[done]] = np.nonzero(done)[0]
    end = np.zeros(R, np.int64)
    before = np.zeros(R, bool)
    for p in range(n):
        idx = np.nonzero(actor == p)[0]
        nxt = np.full(len(idx), -1, np.int64)
        if len(idx) > 1:
            same = game[idx[1:]] == game[idx[:-1]]
            nxt[:-1] = np.where(same, idx[1:], -1)
        elim_rows = np.nonzero(alive0[:, p] & ~alive1[:, p])[0]
        elim = np.full(G, -1, np.int64)
        elim[game[elim_rows]] = elim_rows
        g = game[idx]
        fallback = np.where(elim[g] >= 0, elim[g], last[g])
        end[idx] = np.where(nxt >= 0, nxt, fallback)
        before[idx] = nxt >= 0
    rows = np.arange(R)
    coins_end = np.where(before, coins0[end, actor], coins1[end, actor])
    alive_end = np.where(before[:, None], alive0[end], alive1[end])
    opp = np.arange(n)[None, :] != actor[:, None]
    live0 = (alive0 & opp).sum(axis=1)
    live_end = (alive_end & opp).sum(axis=1)
    return ((coins_end - coins0[rows, actor]) + (live0 - live_end)).astype(np.float32)


def prepare_rows(raw: dict) -> dict:
    """Adds winner (per game), actor_wins, row_reward, num_legal, first (row of a game)."""
    d = dict(raw)
    winner, _ = game_results(d)
    del d["game_winner"]
    d["winner"] = winner
    d["actor_wins"] = d["actor"] == winner[d["game"]]
    d["row_reward"] = shaped_row_rewards(d["game"], d["actor"], d["coins0"], d["alive0"], d["coins1"], d["alive1"],
                                         d["done"])
    d["num_legal"] = d["mask"].sum(axis=1).astype(np.int32)
    d["first"] = np.r_[True, d["game"][1:] != d["game"][:-1]]
    return d


def take(d: dict, rows: np.ndarray) -> dict:
    """The given rows; ``game`` renumbered 0..; per-game ``winner`` kept for those games."""
    out = {k: v[rows] for k, v in d.items() if k != "winner"}
    old, game = np.unique(out["game"], return_inverse=True)
    out["game"] = game.astype(np.int32)
    out["winner"] = d["winner"][old]
    return out


def split_games(d: dict, test_fraction: float, rng: np.random.Generator) -> tuple[dict, dict]:
    """(train rows, test rows): a random ``test_fraction`` of the games held out whole
    (`training.bc.held_out_games`)."""
    is_test = held_out_games(d["game"], test_fraction, rng)
    return take(d, np.nonzero(~is_test)[0]), take(d, np.nonzero(is_test)[0])
