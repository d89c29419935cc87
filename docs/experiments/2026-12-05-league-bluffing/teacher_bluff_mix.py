"""Diagnostic of docs/experiments/2026-12-05-league-bluffing.md: how the recipe's teacher
values a bluff, with its rollouts played by the scripted mix as configured (the five
scripted bots at equal weights) and by the mix without the two that challenge at random
(`aggressive` and `random` at weight 0 in ``search_target_rollout_mix``), on action
decisions where a bluffed claim (`coupjax.policies.common.bluff_actions`: a role the seat
does not hold) and an honest action are both legal, from random play (the teacher's own
decisions) and from games of four copies of the network (the network's own positions).

    PYTHONPATH=. python docs/experiments/2026-12-05-league-bluffing/teacher_bluff_mix.py EXPORT OUT.json

It runs at commits 13aaa97 to 40f830d: the config key it sets was deleted after variant V
missed its thresholds (the page's "What V says").
"""
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rollout, rules
from coupjax.env import Env
from coupjax.inference import load_policy
from coupjax.policies.common import bluff_actions
from coupjax.seat_tables import INIT_STREAM, game_keys
from coupjax.testing import trajectory_positions
from training.config import config_file, load_config
from training.search_targets import teacher

DECISIONS, MIXES = 512, {"all five (as configured)": (1, 1, 1, 1, 1), "without aggressive, random": (0, 1, 1, 0, 1)}


def network_positions(env, policy, games, key):
    """Positions of games of four copies of ``policy``, each stopped after a uniform number of decisions in 0..40."""
    players = rollout.Players(env, (policy,))
    keys = game_keys(key, 0, games)
    limits = jax.random.randint(jax.random.PRNGKey(3), (games,), 0, 41)
    state = jax.vmap(lambda k: env.init(jax.random.fold_in(k, INIT_STREAM)))(keys)
    final, _ = jax.jit(lambda s, k: rollout.play(players, s, k, jnp.zeros((games, env.num_players), jnp.int32),
                                                  limit=limits))(state, keys)
    return final.state


def pick(env, pool, seed):
    """``DECISIONS`` action decisions of ``pool`` with a legal bluff and a legal honest action, and their bluff masks."""
    n = env.num_players
    bluff = np.asarray(jax.vmap(lambda o, m: bluff_actions(o, m, n))(pool.observation, pool.legal_action_mask))
    legal = np.asarray(pool.legal_action_mask)
    ok = ((np.asarray(pool._phase) == rules.PHASES.index("action")) & ~np.asarray(pool.terminated)
          & bluff.any(1) & (legal & ~bluff).any(1))
    idx = np.random.default_rng(seed).choice(np.flatnonzero(ok), DECISIONS, replace=False)
    return jax.tree.map(lambda x: x[idx], pool), bluff[idx]


def measure(decide, net, states, bluff):
    mass, gaps = [], []
    for k in jax.random.split(jax.random.PRNGKey(1), 4):
        logp, res = decide(jax.random.split(k, DECISIONS), states)
        mass.append((np.exp(np.asarray(logp)) * bluff).sum(1))
        q, ids, valid = np.asarray(res.q), np.asarray(res.action_ids), np.asarray(res.valid)
        isb = np.take_along_axis(bluff, np.clip(ids, 0, bluff.shape[1] - 1), 1) & valid
        gaps.append(np.where(isb, q, -np.inf).max(1) - np.where(valid & ~isb, q, -np.inf).max(1))
    netp = np.asarray(jax.nn.softmax(jax.vmap(net)(jax.random.split(jax.random.PRNGKey(2), DECISIONS), states), -1))
    return {"teacher_bluff": float(np.mean(mass)), "best_bluff_minus_best_honest": float(np.mean(gaps)),
            "network_bluff": float((netp * bluff).sum(1).mean())}


def compare_teachers(export, out, teachers):
    """Measure the recipe's teacher under each ``name -> config overrides`` of ``teachers``
    on the same decisions (random play and the network's own games) and write the JSON."""
    env = Env()
    policy = load_policy(export, temperature=1.0, num_players=env.num_players)
    net = lambda k, s: jnp.where(s.legal_action_mask, policy(k, s), -jnp.inf)  # noqa: E731
    pools = {"random play": jax.jit(lambda k: trajectory_positions(env, k, 400, 40))(jax.random.PRNGKey(5)),
             "the network's own games": network_positions(env, load_policy(export, num_players=env.num_players),
                                                          8192, jax.random.PRNGKey(6))}
    decided = {name: jax.jit(teacher(env, load_config(config_file("recipe_cpu.yaml"), overrides), net, None))
               for name, overrides in teachers.items()}
    rows = {}
    for where, pool in pools.items():
        states, bluff = pick(env, pool, 0)
        rows[where] = {name: measure(decide, net, states, bluff) for name, decide in decided.items()}
    result = {"export": export, "decisions": DECISIONS, "rows": rows}
    print(json.dumps(result, indent=1))
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    compare_teachers(sys.argv[1], sys.argv[2],
                     {mix: (f"search_target_rollout_mix={list(w)}",) for mix, w in MIXES.items()})
