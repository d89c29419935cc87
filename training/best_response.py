"""Best responses: a learner trained against one frozen policy spec, or a search.

A best response here is training's DQN (`training.dqn`; ``configs/dqn_cpu.yaml``'s
budget by default) learning in one seat of tables whose other seats all play one frozen
policy spec (its single-policy ``opponents`` pool).  `evals.exploit` reports how much it
wins: the exploitability proxy.  One learner can be learned to, so `evals.exploit` also
tries learners of other families:

* a PPO best response (`ppo_best_response_config`): the self-play code
  (`training.selfplay`, ``configs/selfplay_cpu.yaml``) with a league whose fixed pool is
  the frozen policy alone.  The league always has a ``self`` member and at least one
  snapshot, so they are given weight 0 (``self_weight``, ``snapshot_weight``;
  ``num_snapshots`` 1, never drawn): every seat but the trained one plays the frozen
  policy;
* a search best response (`search_best_response`): no training, the search of
  `coupjax.search` choosing the action of highest expected value (mode ``expected``)
  in rollouts where every seat plays the agent's own policy (greedy or at temperature
  1), i.e. a best response to that model of the opponents, one decision deep.

The learners train through the one chunk driver, `training.train.run_training` (`train`).
"""
from __future__ import annotations

from training.config import ConfigError, DQNConfig, config_file, config_from_dict, config_to_dict, load_config

PPO_CONFIG = "selfplay_cpu.yaml"


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
             table_concentration=0.0, num_seeds=1, export_seed=0)
    if budget:
        d["num_chunks"] = int(budget)
    d["checkpoint_every"] = d["num_chunks"]
    return config_from_dict(d)


def train(cfg, run_dir, setup=None) -> dict:
    """Train the best response of ``cfg`` with `training.train.run_training` into
    ``run_dir`` (a new directory: its export is ``run_dir/export``; the progress bar on
    stderr, no W&B).  Returns ``train_seconds`` (chunks only), ``compile_seconds``,
    ``train_win_rate`` (the last chunk's) and ``curve``: the win rate per chunk, against
    the frozen copies as it explores, to show whether it stopped rising.  ``setup``: a
    prebuilt ``make_train(cfg)`` (tests reuse compiles)."""
    from training.train import run_training

    summary = run_training(cfg, run_dir, use_wandb=False, setup=setup)
    curve = [float(h["win_rate"]) for h in summary["history"]]
    return {"train_seconds": summary["train_seconds"], "compile_seconds": summary["compile_seconds"],
            "train_win_rate": curve[-1] if curve else None, "curve": curve}


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
