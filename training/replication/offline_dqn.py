"""The replication's offline DQN (CoupVisor C.1-C.5 on the logged-row environment, B.2).

`configs/dqn_coupvisor.yaml` (gamma 0.98, Adam 1e-3, batch 64, buffer 10,000, warm-up
256, target sync every 200 updates, 2 x 128 ReLU MLP, epsilon-greedy 1.0 -> 0.05 over
1,500 steps), trained offline, one network per reward: each episode a training game
drawn uniformly; a step is one row of it, the next state is the game's next row
(whoever acts there; done at its last row), and the reward is B.2's
(`training.rewards.action_match_reward`): ``shaped`` = the row's shaped reward + 1 if
the chosen action is the logged one; ``win`` = 1 if it is the logged one and the row's
actor wins the game, else 0.  The whole run is one jitted `lax.scan` (`training.dqn`'s
`td_loss`, `MaskedEpsilonGreedy` and `apply_update` -- the optimiser step and target
sync -- and `training.buffer`'s replay buffer).
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from coupjax.env import Env
from coupjax.paths import config_path
from training.buffer import make_replay_buffer
from training.config import ConfigError, DQNConfig, load_config
from training.dqn import MaskedEpsilonGreedy, apply_update, make_optimizer, td_loss
from training.learner import Transition
from coupjax.networks import init_params, make_network
from training.rewards import action_match_reward

DQN_CONFIG = config_path("dqn_coupvisor.yaml")
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


@functools.lru_cache(maxsize=None)
def cached_dqn(num_players: int, overrides=()):
    """`make_offline_dqn`, built once per process, table size and ``--dqn-set``."""
    return make_offline_dqn(Env(num_players), dqn_config(overrides))
