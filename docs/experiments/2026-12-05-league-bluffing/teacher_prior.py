"""Diagnostic of docs/experiments/2026-12-05-league-bluffing.md: how much of the recipe's
teacher's mass on bluffs comes from its prior (the network, mixed with 0.3 of the uniform
policy) rather than from its rollouts' values: the teacher as configured and with the prior
all but uniform (``search_target_prior_uniform: 0.99``; 1 is not allowed), on the decisions
and with the measures of `teacher_bluff_mix.py` (512 action decisions with a legal bluff and a
legal honest action, from random play and from the network's own games).

    PYTHONPATH=. python docs/experiments/2026-12-05-league-bluffing/teacher_prior.py EXPORT OUT.json
"""
import json
import sys

import jax
import jax.numpy as jnp

from coupjax.env import Env
from coupjax.inference import load_policy
from coupjax.testing import trajectory_positions
from teacher_bluff_mix import measure, network_positions, pick  # beside this script (its folder is on sys.path)
from training.config import config_file, load_config
from training.search_targets import teacher

PRIORS = {"network (as configured)": (), "uniform (0.99)": ("search_target_prior_uniform=0.99",)}

if __name__ == "__main__":
    export, out = sys.argv[1], sys.argv[2]
    env = Env()
    policy = load_policy(export, temperature=1.0, num_players=env.num_players)
    net = lambda k, s: jnp.where(s.legal_action_mask, policy(k, s), -jnp.inf)  # noqa: E731
    pools = {"random play": jax.jit(lambda k: trajectory_positions(env, k, 400, 40))(jax.random.PRNGKey(5)),
             "the network's own games": network_positions(env, load_policy(export, num_players=env.num_players),
                                                          8192, jax.random.PRNGKey(6))}
    decided = {name: jax.jit(teacher(env, load_config(config_file("recipe_cpu.yaml"), overrides), net, None))
               for name, overrides in PRIORS.items()}
    rows = {}
    for where, pool in pools.items():
        states, bluff = pick(env, pool, 0)
        rows[where] = {name: measure(decide, net, states, bluff) for name, decide in decided.items()}
    result = {"export": export, "decisions": 512, "rows": rows}
    print(json.dumps(result, indent=1))
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
