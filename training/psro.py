"""Best responses, and PSRO inside a self-play run.

A best response here is training's DQN (`training.dqn`; ``configs/dqn_cpu.yaml``'s
budget by default) learning in one seat of tables whose other seats all play one frozen
policy spec (its single-policy ``opponents`` pool).  `evals.exploit` reports how much it
wins: the exploitability proxy.  One learner can be learned to (PSRO hardens an agent
with this very DQN), so `evals.exploit` also tries learners of other families:

* a PPO best response (`ppo_best_response_config`, `train_ppo_best_response`): the
  self-play code (`training.selfplay`, ``configs/selfplay_cpu.yaml``) with a league
  whose fixed pool is the frozen policy alone.  The league always has a ``self``
  member and at least one snapshot, so they are given weight 0 (``self_weight``,
  ``snapshot_weight``; ``num_snapshots`` 1, never drawn) and no PSRO:
  every seat but the trained one plays the frozen policy;
* a search best response (`search_best_response`): no training, the search of
  `coupjax.search` choosing the action of highest expected value (mode ``expected``)
  in rollouts where every seat plays the agent's own policy (greedy or at temperature
  1), i.e. a best response to that model of the opponents, one decision deep.

A self-play run with ``psro_every`` k > 0 fits one to its own network after every k-th
chunk (not after the last) and puts it, frozen, into its league's fixed pool with weight
``psro_weight`` for the rest of the run, beside the earlier ones: Policy-Space Response
Oracles ("A Unified Game-Theoretic Approach to Multiagent Reinforcement Learning") with
the league's fixed weights as the meta-strategy, inside one run, so that every training
seed is hardened against the exploits of its own network.  With ``psro_reset`` the run
then starts again from its initial state (same key) in the larger league, with a
learning-rate schedule that spans one pass of k chunks: PSRO's new response to the
meta-strategy, trained from scratch, so each pass meets the best responses from its
first update on.  Otherwise training carries on (a pool member has no state).  The
chunk driver (`training.train.run_training`) calls `iterate` between chunks.

Files of the iteration after chunk C, in the run directory: ``psro/chunk_C/export`` (the
network's export then, greedy as ``RUN/export``; the directory loads as a run),
``psro/chunk_C/best_response`` (the DQN's export) and ``psro/chunk_C/iteration.json``
(figures).  The DQN's key is ``1000 * seed + C``: a training key, never reported on.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from training.config import (ConfigError, DQNConfig, config_from_dict, config_to_dict, config_file, load_config,
                             resolve_pool)

ITERATION_FILE = "iteration.json"


# ------------------------------------------------------------------ one best response
def best_response_config(spec: str, seed: int, budget: int | None = None, config="dqn_cpu.yaml",
                         overrides=()) -> DQNConfig:
    """The DQN config of a best response to ``spec``: ``config`` with ``overrides``
    (``key=value``), ``opponents = spec`` (every other seat plays it), ``seed``,
    ``num_chunks = budget`` (if given), no end-of-run evaluation, and checkpoints that
    never fire before the end."""
    cfg = load_config(config_file(config), overrides)
    if cfg.algo != "dqn":
        raise ConfigError(f"the best response is trained by the DQN; the config has algo {cfg.algo!r}")
    d = config_to_dict(cfg)
    d.update(opponents=spec, seed=int(seed), eval_games=0)
    if budget:
        d["num_chunks"] = int(budget)
    d["checkpoint_every"] = d["num_chunks"]
    return config_from_dict(d)


def train_best_response(cfg: DQNConfig, setup=None, log=None):
    """Train the DQN of ``cfg`` (`best_response_config`): returns (setup, initial runner
    state, final runner state, info) with ``train_seconds`` (chunks only),
    ``compile_seconds`` and ``train_win_rate`` (the last chunk's).  ``setup``: a prebuilt
    `training.dqn.make_train(cfg)` (tests reuse compiles)."""
    import jax

    from training.dqn import make_train

    if setup is not None and setup.config != cfg:
        raise ValueError("the prebuilt setup was made for another config")
    setup = make_train(cfg) if setup is None else setup
    rs0 = setup.init(jax.random.PRNGKey(cfg.seed))
    t0 = time.time()
    chunk = setup.train_chunk.lower(rs0).compile()
    compile_s = time.time() - t0
    rs, train_s, curve = rs0, 0.0, []
    for c in range(cfg.num_chunks):
        t1 = time.time()
        rs, m = chunk(rs)
        curve.append(float(jax.device_get(m)["win_rate"]))
        train_s += time.time() - t1
        if log:
            log(f"chunk {c + 1}/{cfg.num_chunks}: training win rate {curve[-1]:.3f}, {train_s:.0f} s")
    return setup, rs0, rs, _train_info(train_s, compile_s, curve)


def _train_info(train_s: float, compile_s: float, curve: list) -> dict:
    """The figures of a best response's training: ``curve`` is its win rate per chunk
    (against the frozen copies, as it explores), to show whether it stopped rising."""
    return {"train_seconds": train_s, "compile_seconds": compile_s,
            "train_win_rate": curve[-1] if curve else None, "curve": curve}


# ------------------------------------------------------------------ other families
PPO_CONFIG = "selfplay_cpu.yaml"


def ppo_best_response_config(spec: str, seed: int, budget: int | None = None, config=PPO_CONFIG,
                             overrides=()):
    """The self-play config of a PPO best response to ``spec`` (module doc): ``config``
    with ``overrides``, every seat but the trained one playing ``spec``, one training
    seed ``seed``, ``num_chunks = budget`` (if given), no evaluation."""
    cfg = load_config(config_file(config), overrides)
    if cfg.algo != "selfplay":
        raise ConfigError(f"the PPO best response is trained by the self-play code; the config has algo {cfg.algo!r}")
    d = config_to_dict(cfg)
    d.update(opponents=spec, seed=int(seed), eval_games=0, self_weight=0.0, snapshot_weight=0.0, num_snapshots=1,
             table_concentration=0.0, psro_every=0, num_seeds=1, export_seed=0)
    if budget:
        d["num_chunks"] = int(budget)
    d["checkpoint_every"] = d["num_chunks"]
    return config_from_dict(d)


def train_ppo_best_response(cfg, log=None):
    """Train the self-play run of ``cfg`` (`ppo_best_response_config`): returns (setup,
    final runner state, info) as `train_best_response`'s info."""
    import jax

    from training.selfplay import make_train

    setup = make_train(cfg)
    rs = setup.init(jax.random.PRNGKey(cfg.seed))
    t0 = time.time()
    chunk = setup.train_chunk.lower(rs).compile()
    compile_s = time.time() - t0
    train_s, curve = 0.0, []
    for c in range(cfg.num_chunks):
        t1 = time.time()
        rs, m = chunk(rs)
        curve.append(float(jax.device_get(m)["win_rate"].mean()))
        train_s += time.time() - t1
        if log:
            log(f"ppo chunk {c + 1}/{cfg.num_chunks}: training win rate {curve[-1]:.3f}, {train_s:.0f} s")
    return setup, rs, _train_info(train_s, compile_s, curve)


def opponent_model(env, spec: str, temperature: float):
    """The agent ``spec`` as the search's model of every seat: an export at
    ``temperature`` (0: greedy), any other policy greedy over its logits (temperature 0)
    or as it plays (temperature 1)."""
    import jax.numpy as jnp

    from coupjax.inference import load_policy
    from coupjax.policies.common import masked_logits
    from coupjax.policies.spec import describe_spec, locate, resolve_policy

    if describe_spec(spec) == "path":
        return load_policy(locate(spec), temperature=temperature, num_players=env.num_players)
    policy = resolve_policy(spec, env)
    if temperature == 1.0:
        return policy
    if temperature != 0.0:
        raise ValueError(f"a {spec!r} model is greedy (0) or as it plays (1), not temperature {temperature}")

    def greedy(key, state):
        mask = state.legal_action_mask
        best = jnp.argmax(jnp.where(mask, policy(key, state), -jnp.inf))
        return masked_logits(jnp.arange(mask.shape[-1]) == best, mask)

    return greedy


def search_best_response(env, spec: str, temperature: float, **budget):
    """The search best response to ``spec`` (module doc): `coupjax.search`'s default
    budget (``budget``: `SearchConfig` fields over it), mode ``expected``, rollouts
    played by `opponent_model`."""
    import dataclasses

    from coupjax.search import DEFAULT_CONFIG, make_search_policy

    model = opponent_model(env, spec, temperature)
    return make_search_policy(env, "expected", dataclasses.replace(DEFAULT_CONFIG, rollout_policy=model, **budget))


# ------------------------------------------------------------------ PSRO in a self-play run
def iteration_chunks(cfg) -> list[int]:
    """The chunks after which a run of ``cfg`` fits a best response (none without PSRO)."""
    k = getattr(cfg, "psro_every", 0)
    return list(range(k, cfg.num_chunks, k)) if k > 0 else []


def update_offset(cfg, chunks_done: int) -> int:
    """Updates made before the current pass (``psro_reset``: before its last reset), which
    the logs add to the runner state's update count so that their steps keep growing."""
    resets = [c for c in iteration_chunks(cfg) if c <= chunks_done] if getattr(cfg, "psro_reset", False) else []
    return resets[-1] * cfg.updates_per_chunk if resets else 0


def iteration_dir(run_dir, chunk: int) -> Path:
    return Path(run_dir) / "psro" / f"chunk_{chunk}"


def best_response_path(run_dir, chunk: int) -> Path:
    return iteration_dir(run_dir, chunk) / "best_response"


def league_config(cfg, run_dir, chunks_done: int):
    """``cfg`` with the best responses of the iterations up to ``chunks_done`` added to its
    pool (absolute paths, weight ``psro_weight``); ``cfg`` itself without PSRO."""
    fitted = [c for c in iteration_chunks(cfg) if c <= chunks_done]
    if not fitted:
        return cfg
    pool = dict(resolve_pool(cfg.opponents, cfg.policy_modules, "opponents"))
    for c in fitted:
        pool[str(best_response_path(run_dir, c).resolve())] = cfg.psro_weight
    return config_from_dict({**config_to_dict(cfg), "opponents": pool})


def fitted(run_dir, chunk: int) -> bool:
    """The iteration after ``chunk`` is complete (its figures are written last)."""
    return (iteration_dir(run_dir, chunk) / ITERATION_FILE).is_file()


def read_iteration(run_dir, chunk: int) -> dict:
    """The figures of the finished iteration after ``chunk``."""
    return json.loads((iteration_dir(run_dir, chunk) / ITERATION_FILE).read_text())


def read_iterations(run_dir, cfg, chunks_done: int) -> list[dict]:
    """The figures of the iterations up to ``chunks_done`` (a resumed run's earlier ones);
    an error names an iteration whose best response is missing."""
    out = []
    for c in iteration_chunks(cfg):
        if c > chunks_done:
            break
        if not fitted(run_dir, c):
            raise FileNotFoundError(f"the run in {str(run_dir)!r} has no best response for chunk {c} "
                                    f"({iteration_dir(run_dir, c) / ITERATION_FILE} is missing): it cannot be "
                                    f"resumed; start a new run")
        out.append(read_iteration(run_dir, c))
    return out


def iterate(cfg, setup, rs, run_dir, chunk: int, make_train):
    """The iteration after ``chunk`` of a run of ``cfg`` whose runner state is ``rs`` (of
    ``setup``): fitted (or, when a resumed run finished it before, read back), then
    ``(setup of the league with its best response, runner state to go on from, figures)``."""
    row = read_iteration(run_dir, chunk) if fitted(run_dir, chunk) else fit_iteration(setup, rs, run_dir, chunk)
    setup = make_train(league_config(cfg, run_dir, chunk))
    if cfg.psro_reset:
        import jax

        rs = setup.init(jax.random.PRNGKey(cfg.seed))
    return setup, rs, row


def fit_iteration(setup, rs, run_dir, chunk: int, log=None) -> dict:
    """One PSRO iteration after ``chunk``: export the network of ``rs`` (seed 0) to
    ``psro/chunk_C``, train a DQN best response against three frozen copies of it and
    export that to ``psro/chunk_C/best_response``; returns (and writes) its figures."""
    from training.dqn import export_dqn
    from training.selfplay import export

    cfg = setup.config
    t0 = time.time()
    d = iteration_dir(run_dir, chunk)
    export(setup, rs, d)
    br_cfg = best_response_config(str(d.resolve()), 1000 * cfg.seed + chunk, cfg.psro_budget or None,
                                  cfg.psro_config)
    br_setup, _, br_rs, info = train_best_response(br_cfg, log=log)
    export_dqn(br_setup, br_rs.params, best_response_path(run_dir, chunk))
    row = {"after_chunk": chunk, "agent": str(d / "export"), "best_response": str(best_response_path(run_dir, chunk)),
           "best_response_seed": br_cfg.seed, "transitions": br_cfg.num_chunks * br_cfg.updates_per_chunk
           * br_cfg.num_envs, **info, "seconds": time.time() - t0}
    (d / ITERATION_FILE).write_text(json.dumps(row, indent=2))
    return row
