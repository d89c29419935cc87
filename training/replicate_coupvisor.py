"""CoupVisor's policy benchmark (VI.F), side by side under both rewards.

    python -m training.replicate_coupvisor --out FILE.json [--seeds 5] [--games 1000]
        [--online-games 200] [--dqn-episodes 200] [--quick] [--quiet]

CoupVisor's setting is offline: logged games, one row per logged decision, and an
environment that steps through the rows of one logged game per episode (B.2).  For
each seed (``--seeds`` of them, seeds 0, 1, ...) this module

1. **logs** ``--games`` 4-player games (rounded up to a multiple of the 100 games
   played in parallel) of the scripted bots (`LOG_TEACHERS`: random, honest, cautious,
   aggressive, bluffer; each seat drawn uniformly per game; ``belief_ev`` is not among
   them, so its match rates are not matches with itself) through the engine.  Every
   decision of every seat (main action, reaction, answer to a block, reveal, exchange
   choice) is a row: the acting seat's observation and
   legal mask, the logged action, the actor, the game, whether the actor wins the game
   (it is the sole remaining player at the end; a game stopped by the turn cap has no
   winner), and the row's shaped reward (B.1, `shaped_row_rewards`: the actor's coin
   change plus the number of its opponents eliminated over the row's transition, which
   runs to the actor's next decision, or to its elimination or the end of the game --
   exactly `training.rewards.shaped` on the actor's own views).  A share
   ``--test-fraction`` of the games (default 0.2) is held out.
2. **BC** (C.6): multinomial logistic regression on the observation features, fitted on
   every training row with `training.bc.fit` (every logged player imitated).
3. **DQN** (C.1-C.5 with `configs/dqn_coupvisor.yaml`: gamma 0.98, Adam 1e-3, batch 64,
   buffer 10,000, warm-up 256, target sync every 200 updates, 2 x 128 ReLU MLP,
   epsilon-greedy 1.0 -> 0.05 over 1,500 steps), trained offline on the logged-row
   environment, one network per reward: ``--dqn-episodes`` episodes (default 200, C.2),
   each a training game drawn uniformly; a step is one row of it, the next state is the
   game's next row (whoever acts there; done at its last row), and the reward is B.2's
   (`training.rewards.action_match_reward`): ``shaped`` = the row's shaped reward + 1 if
   the chosen action is the logged one; ``win`` = 1 if it is the logged one and the
   row's actor wins the game, else 0.  The whole run is one jitted `lax.scan`
   (`training.dqn`'s `td_loss`, `MaskedEpsilonGreedy` and `apply_update` -- the
   optimiser step and target sync -- and `training.buffer`'s replay buffer).
4. **Evaluation** of ``bc``, ``dqn``, ``belief_ev`` and ``random`` on the held-out games.
   Each policy's action at a row: BC and DQN are greedy (argmax over the legal actions
   of the cloned probabilities / of Q); ``belief_ev`` and ``random`` take one sample of
   their logits (``belief_ev`` is deterministic up to uniform ties, ``random`` uniform
   over the legal actions), drawn while the game was logged (`make_player` evaluates
   every seatable policy at every decision anyway, so their choices are recorded).

   * ``reward_per_episode``: the B.2 reward summed over the rows of a held-out game,
     averaged over held-out games;
   * ``winner_action_match``: the share of the eventual winners' rows where the policy
     chooses the logged action;
   * ``win_rate`` (online): the policy in one seat (drawn uniformly) of a 4-player game
     against 3 opponents drawn uniformly from `evals.seat_table.OPPONENTS` (random,
     honest, cautious, aggressive, bluffer, belief_ev), ``--online-games`` games per
     policy and seed (rounded up to a multiple of 100) with common random numbers across
     policies (same deals, seats and opponents); a win is being the sole remaining
     player.  Logging and online play use one compiled player (`make_player`).
   * ``action_match`` (extra): the share of all held-out rows matched.

BC, ``belief_ev`` and ``random`` do not depend on the reward: the same policy is
evaluated in both blocks (its ``winner_action_match`` and ``win_rate`` are identical
there; only the reward differs).  DQN is a different network per block.

Aggregation over seeds: mean and a 95% Student-t interval over the per-seed values
(``mean +- t_{0.975, k-1} * sd / sqrt(k)``, rates clipped to [0, 1]; with one seed the
interval is the point).
The JSON is keyed by reward (``shaped``, ``win``), then policy (``bc``, ``dqn``,
``belief_ev``, ``random``), then metric (``mean``, ``ci95_low``, ``ci95_high``,
``per_seed``), plus ``config``, ``meta`` (per-seed counts, DQN training curves,
timings) and ``comparison`` (CoupVisor's published numbers and which findings match).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from coupjax.env import Env
from coupjax.game import board
from coupjax.inference import masked_policy_logits, mlp_apply
from coupjax.metrics import t_interval
from coupjax.policies import make_policy
from coupjax.policies.pools import OPPONENTS, SCRIPTED_NAMES
from training.bc import fit as bc_fit
from training.buffer import make_replay_buffer
from training.config import BCConfig, ConfigError, DQNConfig, config_to_dict, load_config
from training.dqn import MaskedEpsilonGreedy, apply_update, make_optimizer, masked_greedy, td_loss
from training.learner import Transition
from training.networks import init_params, make_network
from training.rewards import action_match_reward

ROOT = Path(__file__).resolve().parents[1]
DQN_CONFIG = ROOT / "configs" / "dqn_coupvisor.yaml"
LOG_TEACHERS = SCRIPTED_NAMES
POLICIES = ("bc", "dqn", "belief_ev", "random")
REWARDS = ("shaped", "win")
METRICS = ("reward_per_episode", "winner_action_match", "win_rate", "action_match")
# CoupVisor VI.F (reward per episode; winner-action match where published)
PUBLISHED = {
    "shaped": {"bc": {"reward_per_episode": 1.04}, "dqn": {"reward_per_episode": -0.29},
               "random": {"reward_per_episode": -0.60}},
    "win": {"dqn": {"reward_per_episode": 6.74, "winner_action_match": 0.373},
            "belief_ev": {"reward_per_episode": 3.68}, "bc": {"reward_per_episode": 3.38},
            "random": {"reward_per_episode": 1.32}},
}


@dataclasses.dataclass(frozen=True)
class Settings:
    seeds: int = 5
    games: int = 1000  # logged games per seed (rounded up to a multiple of slots)
    test_fraction: float = 0.2
    online_games: int = 200  # online games per policy and seed (rounded up to a multiple of slots)
    dqn_episodes: int = 200  # CoupVisor C.2
    bc_epochs: int = 10
    bc_learning_rate: float = 1e-2
    bc_batch_size: int = 512
    num_players: int = 4
    slots: int = 100  # games played in parallel (logging and online: one compiled player)
    steps_per_call: int = 256  # decisions per slot per jitted call
    dqn_overrides: tuple = ()  # key=value changes to configs/dqn_coupvisor.yaml (diagnostics)


QUICK = Settings(seeds=2, games=32, online_games=8, dqn_episodes=6, bc_epochs=2, slots=8, steps_per_call=128)

# Every policy the player can seat, by index: the first 5 are the logging teachers, the
# first 6 the online opponents (`evals.seat_table.OPPONENTS`, same order), then the
# learned ones (their parameters are arguments of the jitted player).
SEATABLE = (*OPPONENTS, "bc", "dqn_shaped", "dqn_win")
assert SEATABLE[:len(LOG_TEACHERS)] == tuple(LOG_TEACHERS)
NUM_TEACHERS = len(LOG_TEACHERS)
NUM_OPPONENTS = len(OPPONENTS)


def network_policy(params, num_players: int, log_probs: bool):
    """Greedy policy of a network (BC: ``log_probs``; DQN: q-values), common interface."""
    def policy(key, state):
        del key
        values = mlp_apply(params, state.observation, num_players)
        return masked_policy_logits(values, state.legal_action_mask, 0.0, log_probs)
    return policy


def make_player(env: Env, num_slots: int, steps: int):
    """One jitted game player for logging and for the online evaluation.

    ``init(key, cand, pool) -> carry`` and ``run(carry, cand, pool, per_slot, params) ->
    (carry, records [steps, slots, ...])``.  Each of ``num_slots`` slots plays games in
    turn; a game puts policy ``cand`` (an index into `SEATABLE`; -1: none) in one seat
    drawn uniformly and fills the other seats uniformly from the first ``pool`` entries
    of `SEATABLE`.  Game keys and seat draws depend only on (key, slot, game index), so
    calls with the same key and different ``cand`` face the same deals and tables.
    ``params``: {"bc", "dqn_shaped", "dqn_win"} network parameters.

    Records per decision: valid (the slot's game index < ``per_slot``), obs, mask,
    action, actor, game (slot-local index), seat (of ``cand``), coins0/alive0 and
    coins1/alive1 (every seat, before and after the step), done (the game ended), and
    the action that ``belief_ev`` and ``random`` would have taken there (``cf_belief_ev``,
    ``cf_random``: one sample of their logits at the logged state)."""
    n = env.num_players
    fixed = [make_policy(x, env) for x in SEATABLE[:NUM_OPPONENTS]]
    i_bev, i_rand = SEATABLE.index("belief_ev"), SEATABLE.index("random")

    def new_game(key, cand, pool):
        k1, k2, k3 = jax.random.split(key, 3)
        seat = jax.random.randint(k2, (), 0, n, jnp.int32)
        others = jax.random.randint(k3, (n,), 0, pool, jnp.int32)
        return env.init(k1), jnp.where((jnp.arange(n) == seat) & (cand >= 0), cand, others).astype(jnp.int32), seat

    def init_one(base, cand, pool):
        s, idx, seat = new_game(jax.random.fold_in(base, 0), cand, pool)
        return s, idx, seat, jnp.int32(0), jax.random.fold_in(base, 2**31 - 1), base

    @jax.jit
    def init(key, cand, pool):
        return jax.vmap(init_one, in_axes=(0, None, None))(jax.random.split(key, num_slots), cand, pool)

    @jax.jit
    def run(carry, cand, pool, per_slot, params):
        policies = fixed + [network_policy(params["bc"], n, True), network_policy(params["dqn_shaped"], n, False),
                            network_policy(params["dqn_win"], n, False)]

        def step_one(c):
            s, idx, seat, game, key, base = c
            key, k_pol, k_act, k_bev, k_rand, k_step = jax.random.split(key, 6)
            p = s.current_player
            logits = jnp.stack([pol(k_pol, s) for pol in policies])  # what vmap of a switch computes anyway
            a = jax.random.categorical(k_act, logits[idx[p]]).astype(jnp.int32)
            ns = env.step(s, a, k_step)
            rec = {"valid": game < per_slot, "obs": s.observation, "mask": s.legal_action_mask, "action": a,
                   "actor": p, "game": game, "seat": seat, "coins0": board.coins(s), "alive0": board.alive(s),
                   "coins1": board.coins(ns), "alive1": board.alive(ns), "done": ns.terminated,
                   "cf_belief_ev": jax.random.categorical(k_bev, logits[i_bev]).astype(jnp.int32),
                   "cf_random": jax.random.categorical(k_rand, logits[i_rand]).astype(jnp.int32)}
            done = ns.terminated
            fs, fidx, fseat = new_game(jax.random.fold_in(base, game + 1), cand, pool)
            ns = jax.tree.map(lambda x, y: jnp.where(done, x, y), fs, ns)
            return (ns, jnp.where(done, fidx, idx), jnp.where(done, fseat, seat), game + done, key, base), rec

        def body(c, _):
            return jax.vmap(step_one)(c)

        return jax.lax.scan(body, carry, None, steps)

    return init, run


def dummy_params(env: Env, cfg: DQNConfig) -> dict:
    """Zero parameters of the right shapes (logging seats no learned policy)."""
    obs_dim = env.observation_shape[0]
    bc = init_params(make_network(env, ()), jax.random.PRNGKey(0), obs_dim)
    dq = init_params(make_network(env, cfg.hidden_sizes), jax.random.PRNGKey(0), obs_dim)
    zero = lambda t: jax.tree.map(jnp.zeros_like, t)  # noqa: E731
    return {"bc": zero(bc), "dqn_shaped": zero(dq), "dqn_win": zero(dq)}


def play(player, key, cand: int, pool: int, num_games: int, num_slots: int, params) -> dict:
    """Records (numpy) of ``ceil(num_games / num_slots) * num_slots`` complete games,
    ordered by game then time, ``game`` renumbered 0..G-1 (see `make_player`)."""
    init, run = player
    per_slot = -(-num_games // num_slots)
    cand, pool = jnp.int32(cand), jnp.int32(pool)
    carry = init(key, cand, pool)
    parts, t0 = [], 0
    while True:
        carry, rec = run(carry, cand, pool, jnp.int32(per_slot), params)
        rec = jax.device_get(rec)
        valid = rec.pop("valid")
        t_idx, s_idx = np.nonzero(valid)
        part = {k: v[t_idx, s_idx] for k, v in rec.items()}
        part["slot"], part["t"] = s_idx, t_idx + t0
        parts.append(part)
        t0 += valid.shape[0]
        if int(np.asarray(carry[3]).min()) >= per_slot:
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
    """(winner per game: the sole remaining seat, -1 if none; the game's last row index)."""
    last = np.nonzero(d["done"])[0]
    if len(last) != int(d["game"].max()) + 1:
        raise RuntimeError("every played game must end in the records")
    alive_end = d["alive1"][last]
    return np.where(alive_end.sum(axis=1) == 1, np.argmax(alive_end, axis=1), -1).astype(np.int32), last


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
    """Adds winner (per game, -1: none), actor_wins, row_reward, num_legal, first (row of a game)."""
    d = dict(raw)
    winner, _ = game_results(d)
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
    """(train rows, test rows): a random ``test_fraction`` of the games held out whole."""
    G = int(d["game"].max()) + 1
    n_test = min(G - 1, max(1, int(round(G * test_fraction))))
    test_games = np.zeros(G, bool)
    test_games[rng.permutation(G)[:n_test]] = True
    is_test = test_games[d["game"]]
    return take(d, np.nonzero(~is_test)[0]), take(d, np.nonzero(is_test)[0])


def make_network_chooser(env: Env):
    """Jitted ``choose(obs, mask, params) -> int32[3, R]``: greedy actions of bc,
    dqn_shaped, dqn_win (argmax over the legal actions)."""
    n = env.num_players

    @jax.jit
    def choose(obs, mask, params):  # BC's argmax of logits = argmax of its probabilities
        return jnp.stack([masked_greedy(mlp_apply(params[k], obs, n), mask) for k in ("bc", "dqn_shaped", "dqn_win")])

    return choose


def offline_actions(choose, d: dict, params, bucket: int = 4096) -> dict:
    """Each policy's action at every row of ``d``: {bc, dqn_shaped, dqn_win, belief_ev, random}."""
    R = len(d["action"])
    pad = -(-R // bucket) * bucket - R
    obs = np.concatenate([d["obs"], np.repeat(d["obs"][:1], pad, axis=0)])
    mask = np.concatenate([d["mask"], np.repeat(d["mask"][:1], pad, axis=0)])
    nets = np.asarray(choose(obs, mask, params))[:, :R]
    return {"bc": nets[0], "dqn_shaped": nets[1], "dqn_win": nets[2], "belief_ev": d["cf_belief_ev"],
            "random": d["cf_random"]}


# ------------------------------------------------------------------ offline DQN
# The keys of configs/dqn_coupvisor.yaml that the offline DQN (`make_offline_dqn`) reads:
# the only ones ``--dqn-set`` may change (the rest describe the online trainer's run).
OFFLINE_DQN_KEYS = ("gamma", "learning_rate", "max_grad_norm", "batch_size", "buffer_size", "warmup_steps",
                    "target_update_steps", "hidden_sizes", "loss", "double_q", "epsilon_start", "epsilon_end",
                    "epsilon_decay_steps")


def dqn_config(overrides=()) -> DQNConfig:
    """`configs/dqn_coupvisor.yaml` with ``key=value`` overrides (``--dqn-set``) of
    `OFFLINE_DQN_KEYS`; a misspelt key or one the offline DQN does not read is a
    `ConfigError` naming it."""
    cfg = load_config(DQN_CONFIG, tuple(overrides))
    for item in overrides:
        key = str(item).split("=", 1)[0].strip()
        if key not in OFFLINE_DQN_KEYS:
            raise ConfigError(f"{key!r} is not read by the offline DQN; it reads {', '.join(OFFLINE_DQN_KEYS)}")
    return cfg


def episode_sequence(d: dict, episodes: int, rng: np.random.Generator, bucket: int = 4096) -> dict:
    """The logged-row environment unrolled: ``episodes`` training games drawn uniformly
    (with replacement), their rows in order, padded to a multiple of ``bucket`` steps
    (short runs: to a power of two, at least 512; few shapes, few compiles).

    Leaves [S, ...]: obs, mask, logged, row_reward, actor_wins, next_obs, next_mask, done,
    valid (False on padding), episode (index, -1 on padding)."""
    G = int(d["game"].max()) + 1
    starts = np.nonzero(d["first"])[0]
    ends = np.r_[starts[1:], len(d["game"])]
    chosen = rng.integers(0, G, episodes)
    seq = np.concatenate([np.arange(starts[g], ends[g]) for g in chosen])
    ep = np.concatenate([np.full(ends[g] - starts[g], i) for i, g in enumerate(chosen)])
    T = len(seq)
    S = -(-T // bucket) * bucket if T > bucket else max(512, 1 << (T - 1).bit_length())
    pad = S - T
    seq_p = np.r_[seq, np.zeros(pad, np.int64)]
    done = np.r_[d["done"][seq], np.ones(pad, bool)]
    nxt = np.minimum(seq_p + 1, len(d["game"]) - 1)
    return {
        "obs": d["obs"][seq_p], "mask": d["mask"][seq_p], "logged": d["action"][seq_p],
        "row_reward": d["row_reward"][seq_p], "actor_wins": d["actor_wins"][seq_p],
        "next_obs": np.where(done[:, None], 0.0, d["obs"][nxt]).astype(np.float32),
        "next_mask": np.where(done[:, None], True, d["mask"][nxt]),
        "done": done, "valid": np.r_[np.ones(T, bool), np.zeros(pad, bool)], "episode": np.r_[ep, -np.ones(pad, int)],
    }


def make_offline_dqn(env: Env, cfg: DQNConfig):
    """Jitted ``train(key, seq, shaped) -> (params, rewards [S])``: DQN over the unrolled
    logged-row environment ``seq`` (`episode_sequence`) under the B.2 reward (``shaped``
    True: shaped mode, False: win mode), one `lax.scan` step per row.  Padding steps take
    no gradient update."""
    network = make_network(env, cfg.hidden_sizes)
    buf = make_replay_buffer(cfg.buffer_size, 1, cfg.batch_size, cfg.warmup_steps)
    tx = make_optimizer(cfg)
    epsilon = optax.linear_schedule(cfg.epsilon_start, cfg.epsilon_end, cfg.epsilon_decay_steps)
    grad = jax.value_and_grad(lambda p, t, b: td_loss(network, p, t, b, cfg.gamma, cfg.loss, cfg.double_q),
                              has_aux=True)
    obs_dim, A = env.observation_shape[0], env.num_actions

    @jax.jit
    def train(key, seq, shaped):
        k_init, key = jax.random.split(key)
        params = init_params(network, k_init, obs_dim)

        def update(c, k):
            params, target, opt, updates, buffer = c
            _, g = grad(params, target, buf.sample(buffer, k))
            return (*apply_update(tx, cfg.target_update_steps, g, params, target, opt, updates), buffer)

        def step(c, x):
            params, target, opt, updates, buffer, t, key = c
            key, k_act, k_upd = jax.random.split(key, 3)
            q = network.apply({"params": params}, x["obs"])
            a = MaskedEpsilonGreedy(q, x["mask"], epsilon(t)).sample(seed=k_act)
            r = jnp.where(shaped, action_match_reward("shaped", a, x["logged"], x["row_reward"], x["actor_wins"]),
                          action_match_reward("win", a, x["logged"], x["row_reward"], x["actor_wins"]))
            tr = Transition(obs=x["obs"], mask=x["mask"], action=a, reward=r, next_obs=x["next_obs"],
                            next_mask=x["next_mask"], done=x["done"])
            buffer = buf.add(buffer, jax.tree.map(lambda v: v[None], tr))
            inner = (params, target, opt, updates, buffer)
            params, target, opt, updates, _ = jax.lax.cond(x["valid"] & buf.can_sample(buffer), update,
                                                           lambda c_, k_: c_, inner, k_upd)
            return (params, target, opt, updates, buffer, t + x["valid"], key), r

        carry = (params, params, tx.init(params), jnp.int32(0), buf.init(Transition.empty(obs_dim, A)), jnp.int32(0),
                 key)
        xs = {k: seq[k] for k in ("obs", "mask", "logged", "row_reward", "actor_wins", "next_obs", "next_mask",
                                  "done", "valid")}
        (params, *_), rewards = jax.lax.scan(step, carry, xs)
        return params, rewards

    return train


# ------------------------------------------------------------------ online win rate
def online_win_rate(player, key, name: str, num_games: int, num_slots: int, params) -> dict:
    """``name`` (in `SEATABLE`) in one seat against 3 opponents drawn uniformly from the
    first `NUM_OPPONENTS` policies; a win is being the sole remaining player."""
    d = play(player, key, SEATABLE.index(name), NUM_OPPONENTS, num_games, num_slots, params)
    winner, last = game_results(d)
    wins = winner == d["seat"][last]
    return {"wins": int(wins.sum()), "games": int(len(last)), "capped": int((winner < 0).sum()),
            "win_rate": float(wins.mean())}


# ------------------------------------------------------------------ compiled pieces, built once per process
@functools.lru_cache(maxsize=None)
def cached_player(num_players: int, slots: int, steps: int):
    return make_player(Env(num_players), slots, steps)


@functools.lru_cache(maxsize=None)
def cached_chooser(num_players: int):
    return make_network_chooser(Env(num_players))


@functools.lru_cache(maxsize=None)
def cached_dqn(num_players: int, overrides=()):
    return make_offline_dqn(Env(num_players), dqn_config(overrides))


# ------------------------------------------------------------------ statistics
def offline_counts(test: dict, chosen: np.ndarray) -> dict:
    """Counts behind the offline metrics of one policy on the held-out rows."""
    match = chosen == test["action"]
    wins = test["actor_wins"]
    G = int(test["game"].max()) + 1
    return {"test_games": G, "rows": int(len(match)), "matches": int(match.sum()),
            "winner_rows": int(wins.sum()), "winner_matches": int((match & wins).sum()),
            "row_reward_sum": float(test["row_reward"].astype(np.float64).sum()),
            "expected_random_winner_match": float((1.0 / test["num_legal"][wins]).mean()) if wins.any() else 0.0,
            "shaped_reward_sum": float(np.asarray(action_match_reward("shaped", chosen, test["action"],
                                                                      test["row_reward"], wins), np.float64).sum()),
            "win_reward_sum": float(np.asarray(action_match_reward("win", chosen, test["action"],
                                                                   test["row_reward"], wins), np.float64).sum())}


def offline_metrics(c: dict, mode: str) -> dict:
    return {"reward_per_episode": c[f"{mode}_reward_sum"] / c["test_games"],
            "winner_action_match": c["winner_matches"] / max(c["winner_rows"], 1),
            "action_match": c["matches"] / max(c["rows"], 1)}


# ------------------------------------------------------------------ the benchmark
def run_benchmark(settings: Settings = Settings(), progress=None, log=print) -> dict:
    """Every seed, every policy, both rewards; the result dict written as JSON."""
    t_start = time.time()
    s = settings
    env = Env(s.num_players)
    cfg = dqn_config(s.dqn_overrides)
    player = cached_player(s.num_players, s.slots, s.steps_per_call)
    choose = cached_chooser(s.num_players)
    train_dqn = cached_dqn(s.num_players, tuple(s.dqn_overrides))
    bc_cfg = BCConfig(model="logreg", num_players=s.num_players, learning_rate=s.bc_learning_rate,
                      batch_size=s.bc_batch_size, epochs=s.bc_epochs, val_fraction=0.0)
    stages = ("log", "bc", "dqn shaped", "dqn win", "offline eval", "online eval")
    task = progress.add_task("replicate", total=s.seeds * len(stages)) if progress is not None else None
    timings = {k: 0.0 for k in stages}
    per_seed = []
    for seed in range(s.seeds):
        rec = {"seed": seed}
        key = jax.random.PRNGKey(seed)
        k_log, k_bc, k_dqn, k_online = jax.random.split(key, 4)
        rng = np.random.default_rng(seed)

        def stage(name):
            if progress is not None:
                progress.update(task, description=f"seed {seed}: {name}")

        def done(name, t0):
            timings[name] += time.time() - t0
            if progress is not None:
                progress.advance(task)

        t0 = time.time()
        stage("log")
        rows = prepare_rows(play(player, k_log, -1, NUM_TEACHERS, s.games, s.slots, dummy_params(env, cfg)))
        train, test = split_games(rows, s.test_fraction, rng)
        rec["data"] = {"games": int(rows["game"].max()) + 1, "rows": int(len(rows["action"])),
                       "train_games": int(train["game"].max()) + 1, "test_games": int(test["game"].max()) + 1,
                       "train_rows": int(len(train["action"])), "test_rows": int(len(test["action"])),
                       "games_without_winner": int((rows["winner"] < 0).sum()),
                       "mean_rows_per_game": float(len(rows["action"]) / (rows["game"].max() + 1)),
                       "winner_rows_per_game": float(rows["actor_wins"].sum() / (rows["game"].max() + 1)),
                       "row_reward_per_game": float(rows["row_reward"].sum() / (rows["game"].max() + 1))}
        done("log", t0)

        t0 = time.time()
        stage("bc")
        bc_params, hist = bc_fit(bc_cfg, env, {k: train[k] for k in ("obs", "mask", "action")}, k_bc)
        rec["bc_train_match"] = hist[-1]["train_match"] if hist else None
        wins_only = {k: train[k][train["actor_wins"]] for k in ("obs", "mask", "action")}
        bc_winners, _ = bc_fit(bc_cfg, env, wins_only, jax.random.fold_in(k_bc, 1))
        done("bc", t0)

        dqn = {}
        for mode in REWARDS:
            t0 = time.time()
            stage(f"dqn {mode}")
            seq = episode_sequence(train, s.dqn_episodes, np.random.default_rng([seed, 1]))
            params, r = train_dqn(jax.random.fold_in(k_dqn, REWARDS.index(mode)), seq, jnp.bool_(mode == "shaped"))
            dqn[mode] = params
            r = np.asarray(r)
            ep = seq["episode"]
            returns = np.bincount(ep[ep >= 0], weights=r[ep >= 0], minlength=s.dqn_episodes)
            w = max(1, min(20, s.dqn_episodes // 5))
            rec[f"dqn_{mode}_training"] = {"steps": int(seq["valid"].sum()), "window": w,
                                           "first_episodes_mean": float(returns[:w].mean()),
                                           "last_episodes_mean": float(returns[-w:].mean()),
                                           "episode_returns": [round(float(x), 3) for x in returns]}
            done(f"dqn {mode}", t0)

        t0 = time.time()
        stage("offline eval")
        params = {"bc": bc_params, "dqn_shaped": dqn["shaped"], "dqn_win": dqn["win"]}
        acts = offline_actions(choose, test, params)
        names = ("bc", "dqn_shaped", "dqn_win", "belief_ev", "random")
        rec["counts"] = {nm: offline_counts(test, acts[nm]) for nm in names}
        # diagnostic: logistic regression on the eventual winners' rows only (the imitation
        # target that the win-aligned reward singles out)
        rec["counts"]["bc_winners_only"] = offline_counts(test, offline_actions(choose, test,
                                                                                {**params, "bc": bc_winners})["bc"])
        done("offline eval", t0)

        t0 = time.time()
        stage("online eval")
        rec["online"] = {nm: online_win_rate(player, k_online, nm, s.online_games, s.slots, params) for nm in names}
        done("online eval", t0)
        per_seed.append(rec)
        if log is not None:
            parts = [f"{nm} winner-match {offline_metrics(rec['counts'][nm], 'win')['winner_action_match']:.3f} "
                     f"win rate {rec['online'][nm]['win_rate']:.3f}" for nm in names]
            log(f"seed {seed}: " + ", ".join(parts))

    out = {}
    for mode in REWARDS:
        block = {}
        for pol in POLICIES:
            nm = f"dqn_{mode}" if pol == "dqn" else pol
            vals = {m: [] for m in METRICS}
            for rec in per_seed:
                om = offline_metrics(rec["counts"][nm], mode)
                for m in ("reward_per_episode", "winner_action_match", "action_match"):
                    vals[m].append(om[m])
                vals["win_rate"].append(rec["online"][nm]["win_rate"])
            block[pol] = {m: t_interval(vals[m], (-math.inf, math.inf) if m == "reward_per_episode" else (0.0, 1.0))
                          for m in METRICS}
        out[mode] = block
    out["config"] = {"settings": dataclasses.asdict(s), "dqn": config_to_dict(cfg),
                     "bc": config_to_dict(bc_cfg), "log_teachers": list(LOG_TEACHERS),
                     "online_opponents": list(SEATABLE[:NUM_OPPONENTS]),
                     "action_choice": {"bc": "greedy (argmax of the cloned probabilities)",
                                       "dqn": "greedy (argmax of Q)", "belief_ev": "its logits (deterministic up to "
                                       "uniform ties)", "random": "uniform over the legal actions"},
                     "interval": "95% Student-t over seeds: mean +- t(0.975, k-1) * sd / sqrt(k), rates clipped "
                                 "to [0, 1]",
                     "reward_independent": "bc, belief_ev and random are the same policies in both blocks "
                                           "(identical winner_action_match and win_rate); dqn is one network per "
                                           "reward"}
    out["meta"] = {"per_seed": per_seed, "timings_seconds": timings, "wall_seconds": time.time() - t_start,
                   "devices": [str(d) for d in jax.devices()]}
    out["comparison"] = compare(out)
    diag = [offline_metrics(rec["counts"]["bc_winners_only"], "win") for rec in per_seed]
    out["comparison"]["diagnostics"] = {"bc_winners_only": {
        "what": "logistic regression fitted on the eventual winners' training rows only (not one of the four "
                "benchmarked policies)",
        "winner_action_match": t_interval([x["winner_action_match"] for x in diag], (0.0, 1.0)),
        "win_reward_per_episode": t_interval([x["reward_per_episode"] for x in diag])}}
    return out


def leader(block: dict, metric: str = "reward_per_episode") -> str:
    return max(POLICIES, key=lambda p: block[p][metric]["mean"])


def separated_lead(block: dict, pol: str, metric: str = "reward_per_episode") -> bool:
    """``pol``'s interval lies above every other policy's."""
    return all(block[pol][metric]["ci95_low"] > block[q][metric]["ci95_high"] for q in POLICIES if q != pol)


def compare(out: dict) -> dict:
    """CoupVisor's findings next to ours, and which of them hold here."""
    s, w = out["shaped"], out["win"]
    order = lambda b, m="reward_per_episode": sorted(POLICIES, key=lambda p: -b[p][m]["mean"])  # noqa: E731
    return {
        "published": PUBLISHED,
        "shaped_order_published": ["bc", "dqn", "random"], "shaped_order": order(s),
        "win_order_published": ["dqn", "belief_ev", "bc", "random"], "win_order": order(w),
        "bc_leads_shaped": leader(s) == "bc", "bc_leads_shaped_separated": separated_lead(s, "bc"),
        "dqn_leads_win": leader(w) == "dqn", "dqn_leads_win_separated": separated_lead(w, "dqn"),
        "dqn_above_random_shaped": s["dqn"]["reward_per_episode"]["mean"] > s["random"]["reward_per_episode"]["mean"],
        "dqn_win_above_dqn_shaped_winner_match": (w["dqn"]["winner_action_match"]["mean"]
                                                  > s["dqn"]["winner_action_match"]["mean"]),
        "scale_note": "reward per episode is comparable in ranking only: here a row is every decision of a 4-player "
                      "engine game (main actions, reactions, reveals, exchange choices), and the shaped sum adds "
                      "every row's coin change and eliminations, so absolute values differ from CoupVisor's",
    }


# ------------------------------------------------------------------ output
def _fmt(x: dict, digits: int = 3) -> str:
    return f"{x['mean']:.{digits}f} [{x['ci95_low']:.{digits}f}, {x['ci95_high']:.{digits}f}]"


def print_table(out: dict, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=160)
    st = out["config"]["settings"]
    for mode in REWARDS:
        t = Table(title=f"{mode} reward: mean [95% t-interval] over {st['seeds']} seeds "
                        f"({st['games']} logged games/seed, {st['online_games']} online games/policy/seed)")
        for col in ("policy", "reward/episode", "CoupVisor", "winner-action match", "CoupVisor", "win rate",
                    "action match (all rows)"):
            t.add_column(col, justify="left" if col == "policy" else "right")
        for pol in POLICIES:
            r = out[mode][pol]
            pub = PUBLISHED[mode].get(pol, {})
            t.add_row(pol, _fmt(r["reward_per_episode"], 2), f"{pub['reward_per_episode']:+.2f}" if pub else "-",
                      _fmt(r["winner_action_match"]),
                      f"{pub['winner_action_match']:.3f}" if "winner_action_match" in pub else "-",
                      _fmt(r["win_rate"]), _fmt(r["action_match"]))
        console.print(t)
    c = out["comparison"]
    console.print(f"shaped order: {' > '.join(c['shaped_order'])} (CoupVisor: bc > dqn > random); "
                  f"BC leads: {c['bc_leads_shaped']} (its interval above all others: {c['bc_leads_shaped_separated']})")
    console.print(f"win order: {' > '.join(c['win_order'])} (CoupVisor: dqn > belief_ev > bc > random); "
                  f"DQN leads: {c['dqn_leads_win']} (its interval above all others: {c['dqn_leads_win_separated']})")
    d = c["diagnostics"]["bc_winners_only"]["winner_action_match"]
    console.print(f"diagnostic: logistic regression on the winners' rows only: winner-action match {_fmt(d)}")
    console.print(f"wall time {out['meta']['wall_seconds']:.0f} s")


def settings_from_args(args) -> Settings:
    base = QUICK if args.quick else Settings()
    changes = {k: getattr(args, k) for k in ("seeds", "games", "online_games", "dqn_episodes", "test_fraction")
               if getattr(args, k) is not None}
    if args.dqn_set:
        changes["dqn_overrides"] = tuple(args.dqn_set)
    return dataclasses.replace(base, **changes)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.replicate_coupvisor", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="JSON file for the results")
    ap.add_argument("--seeds", type=int, help="number of seeds (0, 1, ...); default 5")
    ap.add_argument("--games", type=int, help="logged games per seed; default 1000")
    ap.add_argument("--online-games", type=int, help="online games per policy and seed; default 200")
    ap.add_argument("--dqn-episodes", type=int, help="DQN training episodes (logged games); default 200")
    ap.add_argument("--test-fraction", type=float, help="held-out share of the logged games; default 0.2")
    ap.add_argument("--dqn-set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a key of configs/dqn_coupvisor.yaml (diagnostics, e.g. gamma=0)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (tests, smoke runs)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    settings = settings_from_args(args)
    try:
        dqn_config(settings.dqn_overrides)
    except ConfigError as e:
        print(f"error: --dqn-set: {e}", file=sys.stderr)
        return 2
    if settings.seeds < 1 or settings.games < 2 or settings.dqn_episodes < 1 or not 0 < settings.test_fraction < 1:
        print("error: need --seeds >= 1, --games >= 2, --dqn-episodes >= 1, 0 < --test-fraction < 1", file=sys.stderr)
        return 2
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    prog = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, disable=args.quiet)
    with prog:
        out = run_benchmark(settings, progress=prog, log=(lambda m: prog.console.print(m)) if not args.quiet else None)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2))
    print_table(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
