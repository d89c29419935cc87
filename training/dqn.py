"""DQN on the learner's view (CoupVisor C.1-C.5), PureJaxRL style.

``setup = make_train(config)`` builds everything from a `DQNConfig` and returns a
`DQNSetup` with

* ``init(key) -> RunnerState``: parameters, target parameters (a copy), Adam state,
  an empty replay buffer, B games at a learner decision, the RNG key and counters;
* ``train_chunk(runner_state) -> (runner_state, metrics)``: ONE jitted `lax.scan` over
  ``updates_per_chunk`` iterations; Python calls the same compiled function once per
  chunk and logs, shows progress and checkpoints in between;
* ``train(key) -> (runner_state, metrics)``: the whole run as one pure jitted
  function (``init`` then a `lax.scan` of the chunk over ``num_chunks``).

One iteration: the Q-network scores the B learners' observations; actions are
sampled from the exploration distribution (a distrax distribution, see
`exploration_distribution`); `Learner.step` advances the B games to the learners'
next decisions; the B transitions are added to the replay buffer; then, once the
buffer holds ``max(warmup_steps, batch_size)`` transitions, ``gradient_steps`` Adam
updates on sampled batches of the one-step Bellman loss, with the target network
copied from the online network after every ``target_update_steps``-th update.

Data parallel: the iteration runs under `jax.shard_map` over a 1-D mesh of
``jax.devices()`` (axis ``data``).  Each device holds ``num_envs / D`` games and
their buffer columns and draws ``batch_size / D`` samples from them; gradients and
metrics are averaged with `lax.pmean`.  Parameters, optimiser state, key and counters
are replicated.  Game slots and samples derive their randomness from their global
index, so D devices compute what one device computes (up to float rounding).
"""
from __future__ import annotations

import dataclasses

import distrax
import jax
import jax.numpy as jnp
import optax
from flax import struct
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from coupjax.devices import data_mesh, shard
from coupjax.env import Env
from coupjax.networks import MLP, init_params, make_network
from training.buffer import BufferState, ReplayBuffer, make_replay_buffer
from training.config import DQNConfig, config_to_dict, resolve_pool
from training.learner import Learner, LearnerState, Transition
from training.setup import Setup, default_devices

AXIS = "data"


@struct.dataclass
class RunnerState:
    params: dict
    target_params: dict
    opt_state: optax.OptState
    buffer: BufferState
    learner: LearnerState
    key: jax.Array
    step: jax.Array  # int32 []  iterations done (env steps of the batch)
    updates: jax.Array  # int32 []  gradient updates done


# ------------------------------------------------------------------ pure pieces
def bellman_target(reward, done, next_q, next_mask, gamma, next_q_online=None):
    """``r + gamma * (1 - done) * max_{a' legal} Q_target(s', a')``.

    Illegal next actions are excluded from the max (masked to -inf), whatever their
    value.  With ``next_q_online`` (double DQN) the legal argmax of the online network
    picks the action whose target value is used.  A done transition never bootstraps
    (its next value is taken as 0, so a -inf or NaN there cannot leak in).
    """
    masked = jnp.where(next_mask, next_q, -jnp.inf)
    if next_q_online is None:
        best = masked.max(axis=-1)
    else:
        a = jnp.argmax(jnp.where(next_mask, next_q_online, -jnp.inf), axis=-1)
        best = jnp.take_along_axis(next_q, a[..., None], axis=-1)[..., 0]
    best = jnp.where(done | ~next_mask.any(axis=-1), 0.0, best)
    return reward + gamma * best


def masked_greedy(q, mask):
    """The legal action of highest value (first on ties)."""
    return jnp.argmax(jnp.where(mask, q, -jnp.inf), axis=-1).astype(jnp.int32)


class MaskedEpsilonGreedy(distrax.EpsilonGreedy):
    """`distrax.EpsilonGreedy` restricted to the legal actions.

    With probability ``1 - epsilon`` a legal action of highest preference (ties
    uniform), else a uniform legal action; illegal actions have probability 0.  So the
    greedy action has probability ``1 - eps + eps / num_legal`` (CoupVisor C.4 with
    the legal set as the action set) and the entropy comes from `distrax.Categorical`.
    """

    def __init__(self, preferences, mask, epsilon, dtype=jnp.int32):
        mask = jnp.asarray(mask, bool)
        masked = jnp.where(mask, preferences, -jnp.inf)
        greedy = (masked == masked.max(axis=-1, keepdims=True)) & mask
        greedy = greedy / greedy.sum(axis=-1, keepdims=True)
        uniform = mask / mask.sum(axis=-1, keepdims=True)
        self._preferences = masked
        self._epsilon = epsilon
        distrax.Categorical.__init__(self, probs=(1.0 - epsilon) * greedy + epsilon * uniform, dtype=dtype)


def exploration_distribution(q, mask, kind: str, epsilon=0.0, temperature=1.0) -> distrax.Categorical:
    """The behaviour policy over masked q-values: ``epsilon_greedy`` or ``boltzmann``
    (`distrax.Softmax` of the q-values with illegal ones at -inf)."""
    if kind == "epsilon_greedy":
        return MaskedEpsilonGreedy(q, mask, epsilon)
    if kind == "boltzmann":
        return distrax.Softmax(jnp.where(mask, q, -jnp.inf), temperature, dtype=jnp.int32)
    raise ValueError(f"unknown exploration {kind!r}")


def td_loss(network: MLP, params, target_params, batch: Transition, gamma: float, loss: str = "mse",
            double_q: bool = False):
    """Mean one-step TD loss of a batch; returns (loss, (mean Q(s,a), mean target))."""
    q = network.apply({"params": params}, batch.obs)
    q_sa = jnp.take_along_axis(q, batch.action[:, None], axis=-1)[:, 0]
    next_q = network.apply({"params": target_params}, batch.next_obs)
    next_online = network.apply({"params": params}, batch.next_obs) if double_q else None
    y = jax.lax.stop_gradient(bellman_target(batch.reward, batch.done, next_q, batch.next_mask, gamma, next_online))
    td = q_sa - y
    value = optax.huber_loss(td).mean() if loss == "huber" else jnp.mean(td ** 2)
    return value, (q_sa.mean(), y.mean())


def make_optimizer(cfg: DQNConfig) -> optax.GradientTransformation:
    adam = optax.adam(cfg.learning_rate)
    return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), adam) if cfg.max_grad_norm > 0 else adam


def sync_target(updates, target_update_steps: int, params, target_params):
    """Copy the online parameters into the target after every N-th update."""
    due = (updates % target_update_steps) == 0
    return jax.tree.map(lambda p, t: jnp.where(due, p, t), params, target_params)


def apply_update(tx: optax.GradientTransformation, target_update_steps: int, grads, params, target_params,
                 opt_state, updates):
    """One optimiser step on ``grads``, then the target sync: (params, target, opt_state, updates)."""
    upd, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, upd)
    updates = updates + 1
    return params, sync_target(updates, target_update_steps, params, target_params), opt_state, updates


# ------------------------------------------------------------------ the setup
@dataclasses.dataclass(frozen=True)
class DQNSetup(Setup):
    """`training.setup.Setup` with DQN's pieces."""

    learner: Learner
    network: MLP
    buffer: ReplayBuffer


def make_train(cfg: DQNConfig, devices=None) -> DQNSetup:
    """Everything for a DQN run of ``cfg`` on ``devices``.

    Default: the first D of `jax.devices()`, D the largest count that divides both
    ``num_envs`` and ``batch_size`` (all of them in the usual case).
    """
    if devices is None:  # all devices, or the most that divide the batch and the game slots evenly
        devices = default_devices(cfg.num_envs, cfg.batch_size)
    devices = list(devices)
    D = len(devices)
    if cfg.num_envs % D or cfg.batch_size % D:
        raise ValueError(f"num_envs ({cfg.num_envs}) and batch_size ({cfg.batch_size}) must be multiples of the "
                         f"number of devices ({D})")
    mesh = data_mesh(devices, AXIS)
    env = Env(cfg.num_players)
    pool = resolve_pool(cfg.opponents, cfg.policy_modules, "opponents")
    learner = Learner(env, pool, reward=cfg.reward, max_inner_steps=cfg.max_inner_steps)
    network = make_network(env, cfg.hidden_sizes)
    buf = make_replay_buffer(cfg.buffer_size, cfg.num_envs, cfg.batch_size, cfg.warmup_steps, num_shards=D)
    tx = make_optimizer(cfg)
    B_local = cfg.num_envs // D
    obs_dim = env.observation_shape[0]
    A = env.num_actions
    epsilon = optax.linear_schedule(cfg.epsilon_start, cfg.epsilon_end, cfg.epsilon_decay_steps)
    loss_fn = jax.value_and_grad(
        lambda p, t, b: td_loss(network, p, t, b, cfg.gamma, cfg.loss, cfg.double_q), has_aux=True)

    specs = RunnerState(params=P(), target_params=P(), opt_state=P(), buffer=BufferState(data=P(None, AXIS),
                        index=P(), size=P()), learner=P(AXIS), key=P(), step=P(), updates=P())

    # ---------------------------------------------------------- per-shard functions
    def init_local(key):
        shard = jax.lax.axis_index(AXIS)
        k_params, k_env, k_run = jax.random.split(key, 3)
        params = init_params(network, k_params, obs_dim)
        ls = learner.reset(k_env, B_local, slot_offset=shard * B_local)
        return RunnerState(params=params, target_params=params, opt_state=tx.init(params),
                           buffer=buf.init(Transition.empty(obs_dim, A)),
                           learner=ls, key=k_run, step=jnp.int32(0), updates=jnp.int32(0))

    def update(carry, key, buffer, shard):
        params, target, opt, updates = carry
        batch = buf.sample(buffer, key, shard)
        (loss, (q_mean, y_mean)), grads = loss_fn(params, target, batch)
        grads = jax.lax.pmean(grads, AXIS)
        loss, q_mean, y_mean = jax.lax.pmean((loss, q_mean, y_mean), AXIS)
        params, target, opt, updates = apply_update(tx, cfg.target_update_steps, grads, params, target, opt, updates)
        return (params, target, opt, updates), jnp.stack([loss, q_mean, y_mean, 1.0])

    def iteration(rs: RunnerState, _):
        shard = jax.lax.axis_index(AXIS)
        key, k_act, k_env, k_upd = jax.random.split(rs.key, 4)
        obs, mask = learner.observe(rs.learner)
        q = network.apply({"params": rs.params}, obs)
        eps = epsilon(rs.step)

        def act(q_row, m, k):
            dist = exploration_distribution(q_row, m, cfg.exploration, eps, cfg.temperature)
            return dist.sample(seed=k), dist.entropy()

        keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(k_act, rs.learner.slot)
        actions, entropy = jax.vmap(act)(q, mask, keys)
        greedy_share = (actions == masked_greedy(q, mask)).mean()
        ls, tr = learner.step(rs.learner, actions, k_env)
        buffer = buf.add(rs.buffer, tr)

        def one(carry, k):
            return jax.lax.cond(buf.can_sample(buffer), lambda c: update(c, k, buffer, shard),
                                lambda c: (c, jnp.zeros(4)), carry)

        carry = (rs.params, rs.target_params, rs.opt_state, rs.updates)
        (params, target, opt, updates), um = jax.lax.scan(one, carry, jax.random.split(k_upd, cfg.gradient_steps))
        new = RunnerState(params=params, target_params=target, opt_state=opt, buffer=buffer, learner=ls, key=key,
                          step=rs.step + 1, updates=updates)
        local = jnp.stack([entropy.mean(), greedy_share, tr.reward.mean(), tr.done.mean()])
        hist = jnp.zeros(A, jnp.int32).at[actions].add(1)
        syncs = (updates // cfg.target_update_steps) - (rs.updates // cfg.target_update_steps)
        return new, (um.sum(axis=0), local, hist, eps, syncs)

    def chunk_local(rs: RunnerState):
        before = rs.learner
        rs, (um, local, hist, eps, syncs) = jax.lax.scan(iteration, rs, None, cfg.updates_per_chunk)
        um = um.sum(axis=0)
        n_upd = jnp.maximum(um[3], 1.0)
        local = jax.lax.pmean(local.mean(axis=0), AXIS)
        after = rs.learner
        games = jax.lax.psum((after.games - before.games).sum(), AXIS)
        wins = jax.lax.psum((after.wins - before.wins).sum(), AXIS)
        ret = jax.lax.psum((after.return_sum - before.return_sum).sum(), AXIS)
        env_steps = jax.lax.psum((after.env_steps - before.env_steps).sum(), AXIS)
        metrics = {
            "loss": um[0] / n_upd, "q_mean": um[1] / n_upd, "target_mean": um[2] / n_upd, "updates_in_chunk": um[3],
            "entropy": local[0], "greedy_share": local[1], "reward_mean": local[2], "done_rate": local[3],
            "epsilon": eps[-1], "target_syncs": syncs.sum(), "games": games, "wins": wins,
            "win_rate": wins / jnp.maximum(games, 1), "episode_return": ret / jnp.maximum(games, 1),
            "env_steps": env_steps, "transitions": jnp.int32(cfg.updates_per_chunk * cfg.num_envs),
            "step": rs.step, "updates": rs.updates, "buffer_rows": rs.buffer.size,
            "action_hist": jax.lax.psum(hist.sum(axis=0), AXIS),
        }
        return rs, metrics

    smap = lambda f, i, o: shard(f, mesh, i, o)  # noqa: E731
    init_sharded = smap(init_local, P(), specs)
    chunk_sharded = smap(chunk_local, (specs,), (specs, P()))
    init = jax.jit(init_sharded)
    train_chunk = jax.jit(chunk_sharded)

    @jax.jit
    def train(key):
        rs = init_sharded(key)
        return jax.lax.scan(lambda r, _: chunk_sharded(r), rs, None, cfg.num_chunks)

    shard_prefix = jax.tree.map(lambda s: NamedSharding(mesh, s), specs, is_leaf=lambda x: isinstance(x, P))
    return DQNSetup(config=cfg, env=env, learner=learner, network=network, buffer=buf, optimizer=tx, mesh=mesh,
                    state_sharding=shard_prefix, init=init, train_chunk=train_chunk, train=train)


def export_dqn(setup: DQNSetup, params, export_dir):
    """``export_dir``: the Q-network ``params`` of a DQN run (`coupjax.inference`, kind ``dqn``)."""
    from training import checkpoint

    cfg, env = setup.config, setup.env
    return checkpoint.write_export(export_dir, params, kind="dqn", num_players=env.num_players,
                          hidden_sizes=cfg.hidden_sizes, obs_dim=env.observation_shape[0],
                          num_actions=env.num_actions, temperature=cfg.export_temperature,
                          config=config_to_dict(cfg), extra={"opponents": setup.learner.names})
