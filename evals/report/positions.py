"""Offline metrics on a fixed set of logged positions: action match with the eventual
winner, and one-step regret.

Positions: ``position_games`` 4-player games per condition and seed of the scripted
bots (seats drawn from the condition's weights), every decision of every seat logged
(`make_logger`: observation, legal mask, action, actor) with the game's winner by the
rules (`coupjax.game.board.winner`).  This is data collection, not a table: no result
of a tested policy is counted here (those are `coupjax.seat_tables`'s).

Each policy is then asked for its action distribution at the logged positions (a
policy reads only ``state.observation`` and ``state.legal_action_mask``, so a stand-in
state carrying the logged ones is its whole input):

* ``winner_action_match``: on the eventual winner's decisions, the mean probability
  the policy gives the action the winner took (CoupVisor's winner-action match, as an
  expectation over the policy's own sampling rather than one sample);
* ``one_step_regret`` (coins): on main-action decisions of every seat, ``max_a EV(a) -
  sum_a pi(a) EV(a)`` over the legal main actions, with EV the one-step expected value
  of `coupjax.advice.action_ev.recommend_action` (exact posterior, fitted advisor
  constants) before its bluff-margin penalty.  It measures distance from that one-step
  model, which belief_ev plays (so belief_ev is near 0 by construction, apart from the
  bluffs its margin rejects): a yardstick, not a ground truth.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import seat_tables
from coupjax import rollout
from coupjax import rules
from coupjax.advice.action_ev import REJECTED_BLUFF_PENALTY, recommend_action
from coupjax.game import board
from coupjax.game.tables import tables
from coupjax.policies import make_policy
from coupjax.policies.pools import SCRIPTED_NAMES
from evals.lib.play import condition_weights
from evals.lib.shard import over_devices

MAX_ROWS = 320  # decisions logged per game (a game past it is rare; overflow counted)
ROW_BLOCK = 2048


def make_logger(env, max_rows: int = MAX_ROWS):
    """Jitted ``log(keys [B], seat_idx int32[B, n]) -> dict`` of per-game buffers:
    ``obs`` int16[B, K, obs], ``mask`` bool[B, K, A], ``action``/``actor``/``phase``
    int32[B, K], ``count`` int32[B], ``winner`` int32[B], ``finished`` bool[B]."""
    policies = [make_policy(x, env) for x in SCRIPTED_NAMES]
    K, A = max_rows, env.num_actions
    obs_size = env.observation_shape[0]

    def one(key, seat_idx):
        state = env.init(jax.random.fold_in(key, seat_tables.INIT_STREAM))
        buf = dict(obs=jnp.zeros((K, obs_size), jnp.int16), mask=jnp.zeros((K, A), bool),
                   action=jnp.zeros(K, jnp.int32), actor=jnp.zeros(K, jnp.int32), phase=jnp.zeros(K, jnp.int32))

        def log(b, tables, moved):  # the first K decisions of the game
            s, t, a = jax.tree.map(lambda x: x[0], tables.state), tables.steps[0], moved.action
            i = jnp.minimum(t, K - 1)
            w = t < K
            put = lambda arr, x: arr.at[i].set(jnp.where(w, x, arr[i]))  # noqa: E731
            return dict(obs=put(b["obs"], jnp.round(s.observation).astype(jnp.int16)),
                        mask=put(b["mask"], s.legal_action_mask), action=put(b["action"], a[0]),
                        actor=put(b["actor"], s.current_player), phase=put(b["phase"], board.phase(s)))

        c, buf = rollout.play(rollout.Players(env, tuple(policies)), jax.tree.map(lambda x: x[None], state), key[None],
                              seat_idx[None], seat_tables.MAX_STEPS, log, buf)
        state, count = jax.tree.map(lambda x: x[0], c.state), c.steps[0]
        return dict(buf, count=count, winner=board.winner(state), finished=state.terminated)

    return over_devices(jax.vmap(one))


def log_positions(logger, env, condition: str, games: int, seed: int, batch: int = 500) -> dict:
    """Flattened rows of ``games`` logged games (module doc): obs f32, mask, action,
    actor, phase, game, winner_row (the actor is the game's eventual winner); plus
    ``overflow`` (rows past `MAX_ROWS`) and ``games``."""
    n = env.num_players
    rng = np.random.default_rng([int(seed), n, 2])
    seats = rng.choice(len(SCRIPTED_NAMES), size=(games, n), p=condition_weights(condition))
    keys = seat_tables.game_keys(jax.random.fold_in(jax.random.PRNGKey(seed), 2), 0, games)
    parts, overflow = [], 0
    for start in range(0, games, batch):
        idx = seats[start:start + batch]
        k = keys[start:start + batch]
        real = len(idx)
        idx, k = seat_tables.pad_rows(idx, batch), seat_tables.pad_rows(k, batch)
        rec = jax.tree.map(lambda x: np.asarray(x)[:real], logger(k, jnp.asarray(idx, jnp.int32)))
        if not rec["finished"].all():
            raise RuntimeError("a logged game did not finish")
        K = rec["action"].shape[1]
        overflow += int(np.maximum(rec["count"] - K, 0).sum())
        valid = np.arange(K)[None, :] < np.minimum(rec["count"], K)[:, None]
        game = np.broadcast_to(np.arange(real)[:, None] + start, valid.shape)
        part = {key: rec[key][valid] for key in ("obs", "mask", "action", "actor", "phase")}
        part["game"] = game[valid]
        part["winner_row"] = part["actor"] == np.broadcast_to(rec["winner"][:, None], valid.shape)[valid]
        parts.append(part)
    out = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    out["overflow"], out["games"] = overflow, games
    return out


def stand_in_states(env):
    """Jitted ``(obs [B, obs], mask [B, A]) -> State`` carrying the logged observation and
    mask on a fixed template (all a policy may read)."""
    template = env.init(jax.random.PRNGKey(0))
    return jax.vmap(lambda o, m: template.replace(observation=o, legal_action_mask=m))


def make_row_scorer(env, policy):
    """Jitted ``(keys, obs, mask, action, ev_raw, main) -> (probs, p_action, regret)`` per row."""
    states = stand_in_states(env)

    def f(keys, obs, mask, action, ev_raw, main):
        logits = jax.vmap(policy)(keys, states(obs, mask))
        p = jax.nn.softmax(logits, axis=-1)
        p_action = jnp.take_along_axis(p, action[:, None], axis=1)[:, 0]
        legal_main = mask & jnp.asarray(tables(env.num_players).is_main)[None, :]
        ev = jnp.where(legal_main, ev_raw, 0.0)
        best = jnp.max(jnp.where(legal_main, ev_raw, -jnp.inf), axis=1)
        pm = jnp.where(legal_main, p, 0.0)
        pm = pm / jnp.maximum(pm.sum(axis=1, keepdims=True), 1e-12)
        regret = jnp.where(main, best - (pm * ev).sum(axis=1), 0.0)
        return p, p_action, regret

    return over_devices(f)


def make_ev(env):
    """Jitted ``(obs, mask) -> EV f32[B, A]`` of `recommend_action`, bluff-margin penalty removed."""
    n = env.num_players

    def one(o, m):
        rec = recommend_action(o, m, n)
        return jnp.where(rec["rejected_bluff"], rec["ev"] + REJECTED_BLUFF_PENALTY, rec["ev"])

    return over_devices(jax.vmap(one))


def policy_probs(scorer, obs, mask, block: int = ROW_BLOCK) -> np.ndarray:
    """f32[R, A]: a scorer's action distribution at observations with masks."""
    R_ = len(obs)
    keys = np.asarray(seat_tables.game_keys(jax.random.PRNGKey(0), 0, R_))
    zeros = np.zeros(mask.shape, np.float32)
    return blocks(scorer, [keys, np.asarray(obs, np.float32), np.asarray(mask), np.zeros(R_, np.int32), zeros,
                           np.zeros(R_, bool)], block)[0]


def blocks(fn, arrays: list, block: int = ROW_BLOCK):
    """``fn`` over row blocks of one padded shape; outputs concatenated (NumPy)."""
    R_ = len(arrays[0])
    outs = []
    for start in range(0, R_, block):
        part = [a[start:start + block] for a in arrays]
        real = len(part[0])
        if real < block:
            part = [np.concatenate([a, np.repeat(a[-1:], block - real, axis=0)]) for a in part]
        res = fn(*[jnp.asarray(a) for a in part])
        outs.append(jax.tree.map(lambda x: np.asarray(x)[:real], res))
    return jax.tree.map(lambda *xs: np.concatenate(xs), *outs)


def select_rows(rows: dict, max_rows: int | None, seed: int) -> dict:
    """The rows the metrics use: the winners' rows and the main-action rows (all seats),
    at most ``max_rows`` of them (a seeded subsample, for the expensive policies)."""
    keep = rows["winner_row"] | (rows["phase"] == rules.PH_ACTION)
    idx = np.nonzero(keep)[0]
    if max_rows is not None and len(idx) > max_rows:
        idx = np.sort(np.random.default_rng(seed).choice(idx, max_rows, replace=False))
    return {k: v[idx] for k, v in rows.items() if isinstance(v, np.ndarray)}


def score_policy(env, scorer, rows: dict, ev_raw: np.ndarray, seed: int, block: int = ROW_BLOCK) -> dict:
    """Sums of one policy over the selected rows: ``winner_rows``, ``winner_match``
    (summed probability), ``main_rows``, ``regret`` (summed coins)."""
    keys = np.asarray(seat_tables.game_keys(jax.random.PRNGKey(seed), 0, len(rows["action"])))
    main = rows["phase"] == rules.PH_ACTION
    _, p_action, regret = blocks(scorer, [keys, rows["obs"].astype(np.float32), rows["mask"], rows["action"],
                                          ev_raw, main], block)
    w = rows["winner_row"]
    return {"winner_rows": int(w.sum()), "winner_match": float(p_action[w].sum()), "main_rows": int(main.sum()),
            "regret": float(regret[main].sum())}


