"""Self-play with a learned belief: the training half of the Ataraxos recipe
("Scalable Decision Making for Games of Imperfect Information") on Coup, PureJaxRL style.

``setup = make_train(config)`` (a `SelfPlayConfig`) returns a `SelfPlaySetup` with

* ``init(key) -> RunnerState`` for ``num_seeds`` training seeds side by side (every
  leaf has a leading seed axis; the seeds run under `vmap`);
* ``train_chunk(runner_state) -> (runner_state, metrics)``: ONE jitted `lax.scan` over
  ``updates_per_chunk`` updates (the driver, `training.train`, calls it per chunk and
  checkpoints, logs and shows progress in between);
* ``train(key) -> (runner_state, metrics)``: the whole run as one pure jitted function
  (``init``, then a `lax.scan` of the chunk over ``num_chunks``).

One update: every game of the batch takes ``rollout_steps`` engine steps
(`training.league.League.play` on `coupjax.rollout`: the seat to move acts with its
league member's policy); the decisions of the current network's seats (one network
for every seat) get per-seat advantages (GAE over each seat's own decisions; a rollout
cut mid-game bootstraps on
the value of each seat's own view, and an eliminated seat on its known loss); then
``num_epochs`` x ``num_minibatches`` Adam steps on

    L = PPO clipped surrogate + value_coef * value loss - entropy_coef * entropy
        + magnet_coef * KL(pi || magnet) + belief_coef * belief cross-entropy
        + search_target_coef * cross-entropy(search policy -> pi)   (expert iteration)

(the last term on a few decisions per update searched with the current networks,
`training.search_targets`; off by default), and the magnet moves towards the policy
(an EMA of its parameters); every ``snapshot_every`` updates the policy joins the
league as a snapshot.  With ``exploring_starts`` > 0, that share of the games then
continues from positions of uniformly random play (`restart_from_random`), so that PPO
also meets the positions self-play seldom reaches.

Why PPO with a magnet, not R-NaD: it is the regulariser Ataraxos trains its move
network with (clipped importance ratios and a reverse KL to a magnet policy), i.e.
magnetic mirror descent in its practical form, which converges to regularised
equilibria in two-player zero-sum games and, with a slowly moving magnet, keeps
self-play from cycling; R-NaD's reward transformation assumes two players whose
policies are all being regularised, while Coup is played four to a table against fixed
bots as well, and the per-seat update above needs no such assumption.

The belief head maps the observation to P(relative opponent k holds role r) and is
trained on the true hands of every decision's game (`coupjax.game.deal.hidden_hands`,
read inside the loop).  Three MLPs (`coupjax.networks.MLP`): policy, value and belief,
the policy reading only the observation; or (``belief_hidden_sizes: []``) the belief as
a second head of the policy MLP (`coupjax.networks.PolicyWithBelief`), so that its loss
shapes the policy's features; or (``policy_reads_belief: true``) the belief MLP inside
the policy's parameters, the policy reading its probabilities beside the observation
(`coupjax.networks.PolicyReadingBelief`: the belief learns from the true hands, a dense
signal, what the policy would hardly learn from rewards; its stop-gradient keeps the
policy's losses out of it), so that snapshots, the magnet and the export carry the
belief each policy reads; or (``policy_reads_posterior: true``) the policy reading the
exact posterior's marginals and the truth of the pending claims beside the observation
(`coupjax.networks.PolicyReadingPosterior`: no parameters, computed from the seat's own
observation; once per decision, in the rollout, and read from the batch by the update:
`Batch.policy_inputs`).  The export is the policy (`coupjax.inference`, kind
``selfplay``) plus the belief as an MLP of its own (``belief.msgpack``).

Data parallel as `training.dqn`: games are sharded over `jax.devices()` (axis ``data``)
with `jax.shard_map`; each device takes its own minibatches and the gradients are
averaged with `lax.pmean`.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import serialization, struct
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from coupjax import rules
from coupjax.devices import data_mesh, shard
from coupjax.env import Env
from coupjax.networks import (MLP, PolicyReadingBelief, PolicyReadingPosterior, PolicyWithBelief, init_params,
                              posterior_features)
from training.config import SelfPlayConfig, config_to_dict, resolve_pool
from training.league import League, Tables, masked_log_softmax, member_label
from training.search_targets import cross_entropy, make_search_targets, random_positions
from training.setup import Setup, default_devices

AXIS = "data"
BELIEF_FILE = "belief.msgpack"
VALUE_FILE = "value.msgpack"
ECE_BINS = 10


@struct.dataclass
class RunnerState:
    params: dict  # {"policy", "value", "belief"}: the three MLPs' parameters (the belief inside the policy's
    #               when the policy reads it or shares its torso)
    magnet: dict  # the magnet policy's parameters (EMA of params["policy"])
    snapshots: dict  # policy parameters of the K snapshots, stacked [K, ...]
    opt_state: optax.OptState
    tables: Tables
    key: jax.Array
    update: jax.Array  # int32 []  updates done
    lr_steps: jax.Array  # int32 []  optimizer steps over which the learning rate anneals (`anneal_lr`)


# ------------------------------------------------------------------ pure pieces
def seat_advantages(seat, learner, value, done, rewards, bootstrap, gamma: float, lam: float):
    """GAE over each seat's own decisions, for one game slot: leaves [T] (``rewards``
    [T, n]); ``bootstrap`` float32[n] the value after the last step per seat.

    Rewards arrive at ``done`` (for every seat); a seat's next value is that of its own
    next decision, so discounting counts its decisions, not the engine's steps.
    Returns advantages float32[T] (0 where ``learner`` is False).
    """
    n = bootstrap.shape[0]

    def back(carry, x):
        nv, na, pend = carry
        s, learn, v, d, r = x
        nv, na, pend = jnp.where(d, 0.0, nv), jnp.where(d, 0.0, na), jnp.where(d, r, pend)
        delta = pend[s] + gamma * nv[s] - v
        adv = delta + gamma * lam * na[s]
        here = learn & (jnp.arange(n) == s)
        return (jnp.where(here, v, nv), jnp.where(here, adv, na), jnp.where(here, 0.0, pend)), \
            jnp.where(learn, adv, 0.0)

    init = (bootstrap, jnp.zeros(n, jnp.float32), jnp.zeros(n, jnp.float32))
    _, adv = jax.lax.scan(back, init, (seat, learner, value, done, rewards), reverse=True)
    return adv


def _wmean(x, w):
    return (x * w).sum() / jnp.maximum(w.sum(), 1.0)


def calibration_sums(p, y, w):
    """float32[3, ECE_BINS]: per probability bin the weight, sum of p and sum of y."""
    b = jnp.clip(jnp.floor(p * ECE_BINS), 0, ECE_BINS - 1).astype(jnp.int32)
    onehot = jax.nn.one_hot(b.ravel(), ECE_BINS) * w.ravel()[:, None]
    return jnp.stack([onehot.sum(0), (onehot * p.ravel()[:, None]).sum(0), (onehot * y.ravel()[:, None]).sum(0)])


def ece_from_sums(sums):
    """Expected calibration error from `calibration_sums` (as `coupjax.metrics.ece`)."""
    return jnp.abs(sums[2] - sums[1]).sum() / jnp.maximum(sums[0].sum(), 1.0)


@struct.dataclass
class Batch:
    obs: jnp.ndarray
    mask: jnp.ndarray
    action: jnp.ndarray
    logp: jnp.ndarray
    adv: jnp.ndarray
    ret: jnp.ndarray
    learner: jnp.ndarray
    belief_target: jnp.ndarray
    belief_weight: jnp.ndarray  # float32 [n-1, 5]
    magnet_logp: jnp.ndarray  # float32 [A]  the magnet's log-probabilities (fixed during an update: computed once)
    policy_inputs: object = None  # what the policy reads beside the observation (`SelfPlaySetup.policy_inputs`)
    #                               as the rollout computed it, or None


def ppo_terms(logp_all, mask, value, action, old_logp, adv, ret, learner, clip_eps: float):
    """PPO's terms over the decisions where ``learner`` holds: the clipped surrogate
    (advantages normalised over them), the value loss, the entropy and two diagnostics."""
    logp = jnp.take_along_axis(logp_all, action[:, None], axis=-1)[:, 0]
    w = learner.astype(jnp.float32)
    mean = _wmean(adv, w)
    adv = (adv - mean) / (jnp.sqrt(_wmean((adv - mean) ** 2, w)) + 1e-8)
    log_ratio = logp - old_logp
    ratio = jnp.exp(log_ratio)
    pg = _wmean(-jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv), w)
    entropy = _wmean(-jnp.where(mask, jnp.exp(logp_all) * logp_all, 0.0).sum(-1), w)
    return {"pg_loss": pg, "value_loss": 0.5 * _wmean((value - ret) ** 2, w), "entropy": entropy,
            "approx_kl": _wmean((ratio - 1) - log_ratio, w),
            "clip_frac": _wmean((jnp.abs(ratio - 1) > clip_eps).astype(jnp.float32), w)}


def on_learner_rows(terms, b: Batch, rows: int):
    """``terms(b)``, a function of weighted means over the rows where ``b.learner`` holds,
    computed on those rows gathered (``rows`` of them, padded with rows of weight 0) while
    they fit, else on every row (a `lax.cond`: one branch outside `vmap`).  The other rows
    weigh 0, so both give the same terms and gradients; the policy and value MLPs then run
    forward and backward on about half a minibatch (the belief still trains on every row)."""
    size = b.learner.shape[0]
    if rows >= size:
        return terms(b)
    count = b.learner.sum()

    def gathered():
        idx = jnp.nonzero(b.learner, size=rows, fill_value=0)[0]
        sub = jax.tree.map(lambda x: x[idx], b)
        return terms(sub.replace(learner=sub.learner & (jnp.arange(rows) < count)))

    return jax.lax.cond(count <= rows, gathered, lambda: terms(b))


def over_seeds(f, num_seeds: int):
    """``f`` over a leading seed axis of its arguments and results: `vmap`, or for one
    seed a plain call on the seed's slice.  Under `vmap` a `lax.cond` whose predicate
    depends on the data runs both branches; unbatched it runs one (`League.new_games`)."""
    if num_seeds > 1:
        return jax.vmap(f)

    def one(*args):
        return jax.tree.map(lambda x: x[None], f(*jax.tree.map(lambda x: x[0], args)))

    return one


# ------------------------------------------------------------------ the setup
@dataclasses.dataclass(frozen=True)
class SelfPlaySetup(Setup):
    """`training.setup.Setup` with self-play's pieces."""

    league: League
    policy_logits: Callable  # (policy params, obs, inputs=None) -> logits
    policy_inputs: Callable | None  # obs -> what the policy reads beside it (the posterior's features), or None
    collect: Callable  # (one seed's RunnerState, key) -> (tables, StepRecord [T, B], Batch [N]): an update's data
    loss: Callable  # (params, Batch) -> (loss, metrics): what each minibatch step descends
    belief_logits: Callable  # (params, obs) -> float32[..., n-1, 5] logits
    value_net: MLP
    lr_steps: int  # the config's learning-rate horizon in optimizer steps (`RunnerState.lr_steps`)

    def for_this_run(self, rs: RunnerState) -> RunnerState:
        """``rs`` with this config's learning-rate horizon: a resumed run may have another
        ``num_chunks`` than its checkpoint, and a saved initial state another run's."""
        steps = jax.jit(lambda x: jnp.full_like(x, self.lr_steps), out_shardings=rs.lr_steps.sharding)  # several
        return rs.replace(lr_steps=steps(rs.lr_steps))  # processes too: a host array cannot go to a global mesh

    def flatten_metrics(self, m: dict) -> dict:
        """Chunk metrics (leaves [S] per seed) -> scalars for logs: the mean over seeds,
        sums for counts, ``seed_K/...`` per seed when there are several, and
        ``league/win_rate_vs_NAME`` per league member (`training.league.member_label`)."""
        m = jax.device_get(m)
        out = {}
        for k, v in m.items():
            v = np.asarray(v)
            if k in ("games_vs", "wins_vs"):
                continue
            out[k] = float(v.sum() if k in COUNTS else v.mean())
            if v.shape[0] > 1:
                out.update({f"seed_{i}/{k}": float(x) for i, x in enumerate(v)})
        games, wins = np.asarray(m["games_vs"]).sum(0), np.asarray(m["wins_vs"]).sum(0)
        for name, g, w in zip(map(member_label, self.league.names), games, wins):
            out[f"league/win_rate_vs_{name}"] = float(w / max(g, 1))
            out[f"league/games_vs_{name}"] = float(g)
        return out


COUNTS = ("games", "wins", "env_steps", "transitions", "stalls")


def restart_from_random(env, key, tables: Tables, count: int) -> Tables:
    """Exploring starts (``exploring_starts``): ``count`` of the games, drawn at random,
    continue from positions of uniformly random play instead
    (`training.search_targets.random_positions`; where that game ended, the table keeps
    its own).  Self-play seldom reaches a claim that every visible copy makes impossible,
    or a caught bluffer claiming again; random play, with its bluffs and revealed cards,
    reaches them, and PPO learns their values from the games that follow.  The seats keep
    their league members."""
    k_pick, k_pos = jax.random.split(key)
    pos = random_positions(env, k_pos, count)
    idx = jax.random.permutation(k_pick, tables.slot.shape[0])[:count]

    def put(t, p):
        ended = pos.terminated.reshape((-1,) + (1,) * (p.ndim - 1))
        return t.at[idx].set(jnp.where(ended, t[idx], p))

    return tables.replace(state=jax.tree.map(put, tables.state, pos))


def make_train(cfg: SelfPlayConfig, devices=None) -> SelfPlaySetup:
    """Everything for a self-play run of ``cfg`` on ``devices`` (default: the most of
    `jax.devices()` that divide ``num_envs``)."""
    if devices is None:
        devices = default_devices(cfg.num_envs)
    devices = list(devices)
    D = len(devices)
    if cfg.num_envs % D or (cfg.num_envs // D * cfg.rollout_steps) % cfg.num_minibatches:
        raise ValueError(f"num_envs ({cfg.num_envs}) must be a multiple of the number of devices ({D}), and "
                         f"num_minibatches must divide each device's samples")
    mesh = data_mesh(devices, AXIS)
    env = Env(cfg.num_players)
    n, A, obs_dim = env.num_players, env.num_actions, env.observation_shape[0]
    league = League(env, resolve_pool(cfg.opponents, cfg.policy_modules, "opponents"), cfg.num_snapshots,
                    cfg.self_weight, cfg.snapshot_weight, cfg.pool_margin, cfg.table_concentration)
    value_net = MLP(1, n, tuple(cfg.hidden_sizes))
    shared = not cfg.belief_hidden_sizes  # the belief head on the policy's torso
    reads = cfg.policy_reads_belief  # the belief MLP inside the policy's parameters, read by the policy
    if shared:
        policy_net = PolicyWithBelief(A, n, tuple(cfg.hidden_sizes), (n - 1) * rules.NUM_ROLES)
    else:  # the belief MLP: its own parameters, or the policy's sub-tree "belief" when the policy reads it
        if reads:
            policy_net = PolicyReadingBelief(A, n, tuple(cfg.hidden_sizes), tuple(cfg.belief_hidden_sizes),
                                             (n - 1) * rules.NUM_ROLES)
        elif cfg.policy_reads_posterior:  # the exact posterior's marginals beside the observation
            policy_net = PolicyReadingPosterior(A, n, tuple(cfg.hidden_sizes))
        else:
            policy_net = MLP(A, n, tuple(cfg.hidden_sizes))
        belief_net = MLP((n - 1) * rules.NUM_ROLES, n, tuple(cfg.belief_hidden_sizes))
    B, T, S, K = cfg.num_envs // D, cfg.rollout_steps, cfg.num_seeds, cfg.num_snapshots
    N = B * T
    # one seed runs outside vmap (`over_seeds`), where the league's gathered serving is a real branch
    gathered = S == 1
    # the PPO terms on a minibatch's learner rows only (`on_learner_rows`), sized for the share of the
    # decisions the current network makes (its seats' share plus 0.2; 0.40-0.44 measured on selfplay_cpu);
    # not with the belief on the policy's torso, which runs on every row anyway
    share = (1 + (n - 1) * cfg.self_weight) / n + 0.2
    learner_rows = N // cfg.num_minibatches
    if gathered and not shared:
        learner_rows = min(learner_rows, math.ceil(learner_rows * share))
    total_steps = cfg.num_chunks * cfg.updates_per_chunk * cfg.num_epochs * cfg.num_minibatches

    def optimizer(lr_steps):
        """Adam with the learning rate annealed linearly to 0 over ``lr_steps`` (optax's
        `linear_schedule`, written out): the runner state's value, not a constant of the
        program, so that a run of another length (``num_chunks``) reuses the compiled chunk."""
        def lr(count):
            return cfg.learning_rate * (1 - jnp.clip(count, 0, lr_steps) / lr_steps)

        return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm),
                           optax.adam(lr if cfg.anneal_lr else cfg.learning_rate, eps=1e-5))

    tx = optimizer(total_steps)
    lost = -1.0 / (n - 1)

    # the posterior's features cost some twenty times the policy MLP: computed once per decision
    # (`League.play`'s inputs, shared by the current network and its snapshots), then read from the
    # record by the magnet and every epoch's minibatches
    policy_inputs = (lambda obs: posterior_features(obs, n)) if cfg.policy_reads_posterior else None

    def policy_logits(p, obs, inputs=None):
        if cfg.policy_reads_posterior:
            return policy_net.apply({"params": p}, obs, inputs)
        out = policy_net.apply({"params": p}, obs)
        return out[0] if shared or reads else out

    def belief_logits(params, obs):
        if shared:
            out = policy_net.apply({"params": params["policy"]}, obs)[1]
        else:
            out = belief_net.apply({"params": params["policy"]["belief"] if reads else params["belief"]}, obs)
        return out.reshape(out.shape[:-1] + (n - 1, rules.NUM_ROLES))

    def policy_terms(params, b: Batch):
        """PPO's terms and the KL to the magnet: weighted means over the learner's rows."""
        logp_all = masked_log_softmax(policy_logits(params["policy"], b.obs, b.policy_inputs), b.mask)
        value = value_net.apply({"params": params["value"]}, b.obs)[:, 0]
        aux = ppo_terms(logp_all, b.mask, value, b.action, b.logp, b.adv, b.ret, b.learner, cfg.clip_eps)
        kl = _wmean(jnp.where(b.mask, jnp.exp(logp_all) * (logp_all - b.magnet_logp), 0.0).sum(-1),
                    b.learner.astype(jnp.float32))
        return aux, kl

    def loss_fn(params, b: Batch, st=None):
        aux, kl = on_learner_rows(lambda x: policy_terms(params, x), b, learner_rows)
        blog = belief_logits(params, b.obs)
        bce = optax.sigmoid_binary_cross_entropy(blog, b.belief_target)
        b_loss = (bce * b.belief_weight).sum() / jnp.maximum(b.belief_weight.sum(), 1.0)
        total = (aux["pg_loss"] + cfg.value_coef * aux["value_loss"] - cfg.entropy_coef * aux["entropy"]
                 + cfg.magnet_coef * kl + cfg.belief_coef * b_loss)
        out = {**aux, "kl_magnet": kl, "belief_loss": b_loss}
        if st is not None:  # expert iteration: the cross-entropy to the search's policy
            logp = masked_log_softmax(policy_logits(params["policy"], st.obs, st.inputs), st.mask)
            xent, agree = cross_entropy(logp, st)
            total = total + cfg.search_target_coef * xent
            out.update(search_target_xent=xent, search_target_agree=agree)
        return total, out

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    search_targets = None
    if cfg.search_target_coef > 0:
        search_targets = make_search_targets(env, cfg, policy_logits,
                                             lambda p, obs: value_net.apply({"params": p}, obs)[..., 0], policy_inputs)

    # ---------------------------------------------------------- one seed, one device
    def init_one(key, shard):
        k_params, k_env, k_run = jax.random.split(key, 3)
        kp, kv, kb = jax.random.split(k_params, 3)
        params = {"policy": init_params(policy_net, kp, obs_dim), "value": init_params(value_net, kv, obs_dim)}
        if not shared and not reads:
            params["belief"] = init_params(belief_net, kb, obs_dim)
        snaps = jax.tree.map(lambda x: jnp.broadcast_to(x, (K,) + x.shape), params["policy"])
        return RunnerState(params=params, magnet=params["policy"], snapshots=snaps, opt_state=tx.init(params),
                           tables=league.reset(k_env, B, slot_offset=shard * B), key=k_run, update=jnp.int32(0),
                           lr_steps=jnp.int32(total_steps))

    def rollout(rs: RunnerState, key):
        """Returns (tables, StepRecord [T, B, ...], (logp, value, adv)): the network's
        log-probability of the action taken, its value and its advantage at every step
        (its own seats' decisions only count)."""

        def net(params):
            return lambda k, s, *inputs: policy_logits(params, s.observation, *inputs)

        snaps = [net(jax.tree.map(lambda x: x[k], rs.snapshots)) for k in range(K)]
        values_of = lambda s: value_net.apply({"params": rs.params["value"]}, s.observation)[:, 0]  # noqa: E731
        inputs = None if policy_inputs is None else (lambda s: policy_inputs(s.observation))
        tables, rec, values = league.play(rs.tables, jax.random.split(key, T), net(rs.params["policy"]), snaps,
                                          extra=values_of, gathered=gathered, inputs=inputs)
        logp = rec.logp
        seat_obs = league.seat_observations(tables)
        boot = jnp.where(league.alive(tables), value_net.apply({"params": rs.params["value"]}, seat_obs)[..., 0],
                         lost)
        adv = jax.vmap(seat_advantages, in_axes=(1, 1, 1, 1, 1, 0, None, None), out_axes=1)(
            rec.seat, rec.learner, values, rec.done, rec.rewards, boot, cfg.gamma, cfg.gae_lambda)
        return tables, rec, (logp, values, adv)

    def collect(rs: RunnerState, key):
        """The rollout and the batch an update trains on: (tables, StepRecord [T, B], Batch [N])."""
        tables, rec, (logp, value, adv) = rollout(rs, key)
        flat = lambda x: x.reshape((N,) + x.shape[2:])  # noqa: E731
        bw = (rec.hands_valid & rec.stepped[..., None])[..., None] * jnp.ones(rules.NUM_ROLES)
        inputs = jax.tree.map(flat, rec.inputs)
        batch = Batch(obs=flat(rec.obs), mask=flat(rec.mask), action=flat(rec.action), logp=flat(logp),
                      adv=flat(adv), ret=flat(adv + value), learner=flat(rec.learner),
                      belief_target=flat(rec.hands_target), belief_weight=flat(bw).astype(jnp.float32),
                      magnet_logp=masked_log_softmax(policy_logits(rs.magnet, flat(rec.obs), inputs), flat(rec.mask)),
                      policy_inputs=inputs)
        return tables, rec, batch

    restarts = max(1, math.ceil(cfg.exploring_starts * B))

    def update_one(rs: RunnerState, _):
        key, k_roll, k_perm = jax.random.split(rs.key, 3)
        tables, rec, batch = collect(rs, k_roll)
        # the search's targets on the games' next decisions, from the networks before this update
        st = None if search_targets is None else search_targets(rs.params, jax.random.fold_in(k_roll, 1),
                                                                tables.state)
        # the belief's calibration on this rollout, before the update
        blog = belief_logits(rs.params, batch.obs)
        bp = jax.nn.sigmoid(blog)
        wsum = jnp.maximum(batch.belief_weight.sum(), 1.0)
        brier = ((bp - batch.belief_target) ** 2 * batch.belief_weight).sum() / wsum
        cal = calibration_sums(bp, batch.belief_target, batch.belief_weight)

        def epoch(carry, k):
            perm = jax.random.permutation(k, N)
            mbs = jax.tree.map(lambda x: x[perm].reshape((cfg.num_minibatches, -1) + x.shape[1:]), batch)

            def mb_step(c, mb):
                params, opt = c
                (_, aux), grads = grad_fn(params, mb, st)
                grads = jax.lax.pmean(grads, AXIS)
                upd, opt = optimizer(rs.lr_steps).update(grads, opt, params)
                return (optax.apply_updates(params, upd), opt), aux

            return jax.lax.scan(mb_step, carry, mbs)

        (params, opt), aux = jax.lax.scan(epoch, (rs.params, rs.opt_state), jax.random.split(k_perm, cfg.num_epochs))
        magnet = jax.tree.map(lambda m, p: cfg.magnet_ema * m + (1 - cfg.magnet_ema) * p, rs.magnet,
                              params["policy"])
        if cfg.exploring_starts > 0:  # after the rollout's bootstrap: the cut games were truncated, not ended
            tables = restart_from_random(env, jax.random.fold_in(k_roll, 2), tables, restarts)
        update = rs.update + 1
        due = update % cfg.snapshot_every == 0
        ring = (update // cfg.snapshot_every - 1) % K
        snaps = jax.tree.map(lambda s, p: s.at[ring].set(jnp.where(due, p, s[ring])), rs.snapshots,
                             params["policy"])
        new = RunnerState(params=params, magnet=magnet, snapshots=snaps, opt_state=opt, tables=tables, key=key,
                          update=update, lr_steps=rs.lr_steps)
        means = {k: v.mean() for k, v in aux.items()}
        means["belief_brier"] = brier
        means["learner_share"] = rec.learner.mean()
        sums = {"games": rec.done.sum(), "wins": rec.primary_won.sum(), "env_steps": rec.stepped.sum(),
                "transitions": rec.learner.sum(), "stalls": (~rec.stepped).sum(),
                "games_vs": (rec.present & rec.done[..., None]).sum((0, 1)),
                "wins_vs": (rec.present & rec.primary_won[..., None]).sum((0, 1)), "calibration": cal}
        return new, (means, sums)

    def chunk_one(rs: RunnerState):
        rs, (means, sums) = jax.lax.scan(update_one, rs, None, cfg.updates_per_chunk)
        means = jax.lax.pmean({k: v.mean() for k, v in means.items()}, AXIS)
        sums = jax.lax.psum(jax.tree.map(lambda x: x.sum(0), sums), AXIS)
        cal = sums.pop("calibration")
        m = {**means, **sums, "belief_ece": ece_from_sums(cal), "step": rs.update,
             "win_rate": sums["wins"] / jnp.maximum(sums["games"], 1),
             "stall_rate": sums["stalls"] / jnp.maximum(sums["stalls"] + sums["env_steps"], 1)}
        return rs, m

    specs = RunnerState(params=P(), magnet=P(), snapshots=P(), opt_state=P(), tables=P(None, AXIS), key=P(),
                        update=P(), lr_steps=P())

    def init_local(key):
        shard = jax.lax.axis_index(AXIS)
        return jax.vmap(init_one, in_axes=(0, None))(jax.random.split(key, S), shard)

    smap = lambda f, i, o: shard(f, mesh, i, o)  # noqa: E731
    init_sharded = smap(init_local, P(), specs)
    chunk_sharded = smap(over_seeds(chunk_one, S), (specs,), (specs, P()))

    @jax.jit
    def train(key):
        rs = init_sharded(key)
        return jax.lax.scan(lambda r, _: chunk_sharded(r), rs, None, cfg.num_chunks)

    shard_prefix = jax.tree.map(lambda s: NamedSharding(mesh, s), specs, is_leaf=lambda x: isinstance(x, P))
    return SelfPlaySetup(config=cfg, env=env, league=league, policy_logits=policy_logits,
                         policy_inputs=policy_inputs, collect=collect, loss=loss_fn,
                         belief_logits=belief_logits, value_net=value_net, lr_steps=total_steps, optimizer=tx,
                         mesh=mesh, state_sharding=shard_prefix,
                         init=jax.jit(init_sharded), train_chunk=jax.jit(chunk_sharded), train=train)


# ------------------------------------------------------------------ export
def seed_params(rs: RunnerState, seed: int) -> dict:
    """The three MLPs' parameters of training seed ``seed`` (host arrays)."""
    return jax.tree.map(lambda x: np.asarray(x[seed]), jax.device_get(rs.params))


def export(setup: SelfPlaySetup, rs: RunnerState, run_dir) -> Path:
    """``RUN/export`` (seed ``export_seed``) and, with several seeds, ``RUN/exports/seed_K``:
    the policy (`coupjax.inference`, kind ``selfplay``; ``policy_reads_belief``: with the
    belief it reads), the belief MLP and the value MLP (``value_file``, which
    `coupjax.search.selfplay_search` uses to score cut rollouts).  ``seed_index`` in
    policy.json is K, the index among the run's side-by-side seeds; the config's ``seed``
    is in its ``config``."""
    from training import checkpoint

    cfg, env = setup.config, setup.env
    run_dir = Path(run_dir)
    targets = [(cfg.export_seed, run_dir / "export")]
    if cfg.num_seeds > 1:
        targets += [(k, run_dir / "exports" / f"seed_{k}") for k in range(cfg.num_seeds)]
    for seed, d in targets:
        params = seed_params(rs, seed)
        policy = {k: v for k, v in params["policy"].items() if k != "belief_out"}
        reads = {}
        if "belief" in params:
            belief, belief_hidden = params["belief"], cfg.belief_hidden_sizes
            if cfg.policy_reads_posterior:
                reads = {"policy_reads_posterior": True}
        elif cfg.policy_reads_belief:  # the policy holds the belief it reads: the export too
            belief, belief_hidden = params["policy"]["belief"], cfg.belief_hidden_sizes
            reads = {"policy_reads_belief": True}
        else:  # the shared torso with the belief head as its output layer
            belief = {**{k: v for k, v in policy.items() if k != "out"}, "out": params["policy"]["belief_out"]}
            belief_hidden = cfg.hidden_sizes
        checkpoint.write_export(d, policy, kind="selfplay", num_players=env.num_players,
                       hidden_sizes=cfg.hidden_sizes, obs_dim=env.observation_shape[0], num_actions=env.num_actions,
                       temperature=cfg.export_temperature, config=config_to_dict(cfg),
                       extra={"league": setup.league.names, "seed_index": seed, "belief_file": BELIEF_FILE,
                              "belief_hidden_sizes": list(belief_hidden), "value_file": VALUE_FILE,
                              "value_hidden_sizes": list(cfg.hidden_sizes), **reads}, run_dir=run_dir)
        (d / BELIEF_FILE).write_bytes(serialization.msgpack_serialize(belief))
        (d / VALUE_FILE).write_bytes(serialization.msgpack_serialize(params["value"]))
    return run_dir / "export"


def load_belief(path) -> Callable:
    """The learned belief of an export (or run dir) as ``belief(obs) -> float32[n-1, 5]``:
    `coupjax.search.selfplay_search.load_learned_belief`, the one loader of an export's heads."""
    from coupjax.search.selfplay_search import load_learned_belief

    return load_learned_belief(path)
