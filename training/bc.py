"""Behaviour cloning of the scripted players (CoupVisor IV.M, C.6).

Games are logged through the engine by policies drawn per seat from the ``teachers``
pool (`collect`: a scan of `coupjax.rollout.step` on B games with auto-reset, recording every
decision as ``(obs, mask, action, teacher, game)``).  As in CoupVisor every logged
player is imitated, unless ``imitate`` names a subset of teachers.

Validation holds out whole games (`held_out_games`, also the replication's train/test
split): the rows of one game are strongly correlated (the same hands, the same
history), so a row split would leak each validation game into training.

Two heads on the same observation features (`coupjax.networks.MLP`): ``logreg``
(multinomial logistic regression: no hidden layer) and ``mlp`` (``hidden_sizes``).
Both are fitted with Optax AdamW on the cross-entropy of the logged action under the
masked softmax (illegal actions at -inf), and exported like DQN (``bc_logreg`` /
``bc_mlp``), for `coupjax.inference.load_policy`.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from coupjax import rollout
from coupjax.env import Env
from coupjax.policies import resolve_policy
from training.config import BCConfig, config_to_dict, resolve_pool
from coupjax.networks import init_params, make_network


def make_collector(env: Env, pool: dict, num_envs: int, steps: int):
    """Jitted ``collect(key) -> (data, games_finished)``: ``steps`` decisions of
    ``num_envs`` games; data leaves [steps * num_envs, ...]: obs, mask, action, teacher
    (index into ``list(pool)``), game (``env + num_envs * k`` for the k-th game of lane
    ``env``: unique within one call)."""
    names = list(pool)
    policies = [resolve_policy(x, env) for x in names]
    w = np.asarray([pool[x] for x in names], np.float64)
    logw = jnp.log(jnp.asarray(w / w.sum(), jnp.float32))
    n = env.num_players

    def new_game(key):
        k1, k2 = jax.random.split(key)
        return env.init(k1), jax.random.categorical(k2, logw, shape=(n,)).astype(jnp.int32)

    players = rollout.Players(env, tuple(policies))

    def one_step(carry, step_key):  # one key per step, split per game: policy, action, step, new game
        tables, game, games = carry
        k = jax.vmap(lambda kk: jax.random.split(kk, 4))(jax.random.split(step_key, num_envs))
        s = tables.state
        teacher = jnp.take_along_axis(tables.seats, s.current_player[:, None], axis=1)[:, 0]
        tables, moved = rollout.step(players, tables, rollout.StepKeys(k[:, 0], k[:, 1], k[:, 2]),
                                     jnp.ones(num_envs, bool))
        row = {"obs": s.observation, "mask": s.legal_action_mask, "action": moved.action, "teacher": teacher,
               "game": game}
        done = tables.state.terminated  # a finished game is replaced at once by a new one (new teachers)
        fs, fseats = jax.vmap(new_game)(k[:, 3])
        tables = tables._replace(state=rollout.tree_where(done, fs, tables.state),
                                 seats=jnp.where(done[:, None], fseats, tables.seats))
        return (tables, game + done * num_envs, games + done.sum()), row

    @jax.jit
    def collect(key):
        k0, key = jax.random.split(key)
        s, seats = jax.vmap(new_game)(jax.random.split(k0, num_envs))
        first = (rollout.start(s, seats), jnp.arange(num_envs, dtype=jnp.int32), jnp.int32(0))
        (_, _, games), data = jax.lax.scan(one_step, first, jax.random.split(key, steps))
        return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), data), games

    return collect


def collect_dataset(env: Env, pool: dict, num_games: int, key, num_envs: int = 256, steps: int = 128) -> dict:
    """Numpy arrays of at least ``num_games`` games' decisions (calls ``collect`` until
    enough finish); ``game`` numbers the games 0, 1, ... across calls."""
    num_envs = min(num_envs, max(num_games, 1))
    collect = make_collector(env, pool, num_envs, steps)
    parts, games, offset = [], 0, 0
    while games < num_games:
        key, k = jax.random.split(key)
        data, g = collect(k)
        data = jax.device_get(data)
        _, local = np.unique(data["game"], return_inverse=True)
        data["game"] = (offset + local).astype(np.int32)
        offset = int(data["game"].max()) + 1
        parts.append(data)
        games += int(g)
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def held_out_games(game, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """bool[R]: the rows of a random ``fraction`` of the games (``game``: each row's game
    id), held out whole -- at least one game and at most all but one when ``fraction`` > 0,
    none when it is 0."""
    ids, row_game = np.unique(np.asarray(game), return_inverse=True)
    G = len(ids)
    held = np.zeros(G, bool)
    if fraction > 0:
        if G < 2:
            raise ValueError(f"holding out a share of the games needs at least 2 games, got {G}")
        held[rng.permutation(G)[:min(G - 1, max(1, int(round(G * fraction))))]] = True
    return held[row_game.reshape(-1)]


def bc_loss(network, params, obs, mask, action):
    """Mean cross-entropy of ``action`` under the masked softmax, and the action-match rate."""
    logits = jnp.where(mask, network.apply({"params": params}, obs), -jnp.inf)
    logp = jax.nn.log_softmax(logits)
    nll = -jnp.take_along_axis(logp, action[:, None], axis=-1)[:, 0]
    acc = (jnp.argmax(logits, axis=-1) == action).mean()
    return nll.mean(), acc


def split_rows(data: dict, val_fraction: float, key) -> tuple[np.ndarray, np.ndarray]:
    """(train rows, validation rows): ``val_fraction`` of the games (``data["game"]``)
    held out whole (`held_out_games`); every row trains when ``val_fraction`` is 0."""
    N = len(data["action"])
    if val_fraction <= 0:
        return np.arange(N), np.arange(0)
    if "game" not in data:
        raise ValueError("validation holds out whole games: the data need a 'game' id per row")
    seed = np.asarray(jax.random.randint(key, (2,), 0, np.iinfo(np.int32).max))
    val = held_out_games(data["game"], val_fraction, np.random.default_rng(seed))
    return np.nonzero(~val)[0], np.nonzero(val)[0]


def fit(cfg: BCConfig, env: Env, data: dict, key, log=None):
    """Fit the head of ``cfg.model`` on ``data`` (obs, mask, action, and game when
    ``cfg.val_fraction`` > 0: `split_rows`); returns (params, history list of per-epoch
    dicts: train loss and match, and on the held-out games val loss and match)."""
    hidden = () if cfg.model == "logreg" else tuple(cfg.hidden_sizes)
    network = make_network(env, hidden)
    k_init, k_split, key = jax.random.split(key, 3)
    params = init_params(network, k_init, env.observation_shape[0])
    tx = optax.adamw(cfg.learning_rate, weight_decay=cfg.weight_decay)
    opt = tx.init(params)
    tr, val = split_rows(data, cfg.val_fraction, k_split)
    n_val = len(val)
    arrays = {k: jnp.asarray(data[k]) for k in ("obs", "mask", "action")}
    bs = min(cfg.batch_size, len(tr))
    steps = len(tr) // bs
    tr_idx = jnp.asarray(tr)
    grad = jax.value_and_grad(lambda p, o, m, a: bc_loss(network, p, o, m, a), has_aux=True)

    # the data are arguments, not constants captured by the traced functions
    @jax.jit
    def epoch(params, opt, key, arrays, tr_idx):
        order = jax.random.permutation(key, tr_idx)[: steps * bs].reshape(steps, bs)

        def body(c, idx):
            params, opt = c
            (loss, acc), g = grad(params, arrays["obs"][idx], arrays["mask"][idx], arrays["action"][idx])
            upd, opt = tx.update(g, opt, params)
            return (optax.apply_updates(params, upd), opt), jnp.stack([loss, acc])

        (params, opt), m = jax.lax.scan(body, (params, opt), order)
        return params, opt, m.mean(axis=0)

    @jax.jit
    def evaluate(params, arrays, idx):
        return bc_loss(network, params, arrays["obs"][idx], arrays["mask"][idx], arrays["action"][idx])

    history = []
    val_idx = jnp.asarray(val)
    for e in range(cfg.epochs):
        key, k = jax.random.split(key)
        params, opt, m = epoch(params, opt, k, arrays, tr_idx)
        row = {"epoch": e + 1, "train_loss": float(m[0]), "train_match": float(m[1])}
        if n_val:
            vl, va = evaluate(params, arrays, val_idx)
            row.update(val_loss=float(vl), val_match=float(va))
        history.append(row)
        if log is not None:
            log(row, e + 1)
    return params, history


def run_bc(cfg: BCConfig, run_dir, use_wandb: bool = True, quiet: bool = False) -> dict:
    """Collect, fit, export to ``run_dir/export``; returns the summary (also in summary.json)."""
    from training import checkpoint
    from training.runs import evaluate_run, init_wandb

    t0 = time.time()
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    env = Env(cfg.num_players)
    pool = resolve_pool(cfg.teachers, cfg.policy_modules, "teachers")
    key = jax.random.PRNGKey(cfg.seed)
    k_data, k_fit = jax.random.split(key)
    data = collect_dataset(env, pool, cfg.num_games, k_data)
    if cfg.imitate:
        names = list(pool)
        keep = np.isin(data["teacher"], [names.index(x) for x in cfg.imitate])
        data = {k: v[keep] for k, v in data.items()}
    collect_s = time.time() - t0
    wb = init_wandb(cfg, run_dir, use_wandb, False)

    def log(row, step):
        if not quiet:
            print(json.dumps(row))
        if wb is not None:
            wb.log(row, step=step)

    params, history = fit(cfg, env, data, k_fit, log)
    kind = "bc_logreg" if cfg.model == "logreg" else "bc_mlp"
    hidden = () if cfg.model == "logreg" else cfg.hidden_sizes
    checkpoint.write_export(run_dir / "export", params, kind=kind, num_players=env.num_players, hidden_sizes=hidden,
                   obs_dim=env.observation_shape[0], num_actions=env.num_actions,
                   temperature=cfg.export_temperature, config=config_to_dict(cfg), extra={"teachers": list(pool)})
    summary = {"samples": int(len(data["action"])), "collect_seconds": collect_s, "history": history,
               "final": history[-1] if history else {}}
    if cfg.eval_games > 0:
        summary["eval"] = evaluate_run(env, run_dir, cfg.eval_games)
    summary["wall_seconds"] = time.time() - t0
    (run_dir / "config.json").write_text(json.dumps(config_to_dict(cfg), indent=2))
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    if wb is not None:
        wb.finish()
    return summary
