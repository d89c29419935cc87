"""Diagnostic of docs/experiments/2026-12-05-league-bluffing.md: does a network bluff less
once a challenge has happened at its table?  One seat of POLICY against three OPPONENTS
(`evals.outsider`'s tables and seats), the outsider's bluff rate at its main-action
decisions with a legal bluff, split by whether any challenge has been made at the table
so far (the observation's challenges won, summed over the seats).

    PYTHONPATH=. python docs/experiments/2026-12-05-league-bluffing/bluff_after_challenge.py \
        POLICY OUT.json OPPONENTS [OPPONENTS ...]
"""
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rollout
from coupjax.env import Env
from coupjax.observation import parse
from coupjax.policies import resolve_policy
from coupjax.policies.common import bluff_actions
from coupjax.seat_tables import INIT_STREAM, game_keys
from evals.outsider import OUTSIDER, outsider_seats

GAMES, SEED = 500, 7


def split_tally(n):
    """Per game: [bluff chances, bluffs] of the outsider, before and after the table's first challenge."""
    def tally(carry, tables_before, moved):
        s, a = tables_before.state, moved.action
        rows = jnp.arange(a.shape[0])
        mover_is_outsider = moved.served & (tables_before.seats[rows, s.current_player] == OUTSIDER)
        bl = jax.vmap(lambda o, m: bluff_actions(o, m, n))(s.observation, s.legal_action_mask)
        chance = mover_is_outsider & bl.any(axis=1)
        bluffed = chance & bl[rows, a]
        seen = jax.vmap(lambda o: parse(o, n).challenges_won.sum() > 0)(s.observation)
        add = jnp.stack([chance & ~seen, bluffed & ~seen, chance & seen, bluffed & seen], axis=-1)
        return carry + add.astype(jnp.int32)
    return tally


def run(env, spec, opponents):
    n = env.num_players
    players = rollout.Players(env, (resolve_policy(spec, env), resolve_policy(opponents, env)))
    _, seats = outsider_seats(SEED, n, GAMES)
    keys = game_keys(SEED, 0, GAMES)

    @jax.jit
    def play(keys, seats):
        state = jax.vmap(lambda k: env.init(jax.random.fold_in(k, INIT_STREAM)))(keys)
        _, counts = rollout.play(players, state, keys, seats, tally=split_tally(n),
                                 aux=jnp.zeros((keys.shape[0], 4), jnp.int32))
        return counts.sum(axis=0)

    c = np.asarray(play(keys, jnp.asarray(seats)))
    return {"before_chances": int(c[0]), "before_bluff_rate": float(c[1] / max(c[0], 1)),
            "after_chances": int(c[2]), "after_bluff_rate": float(c[3] / max(c[2], 1))}


if __name__ == "__main__":
    spec, out, opponents = sys.argv[1], sys.argv[2], sys.argv[3:]
    env = Env()
    result = {"policy": spec, "games": GAMES, "seed": SEED, "opponents": {o: run(env, spec, o) for o in opponents}}
    print(json.dumps(result, indent=1))
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
