"""Diagnostic of docs/experiments/2026-12-06-regularised-league.md: whom three copies aim at.

    PYTHONPATH=. python docs/experiments/2026-12-06-regularised-league/target_choice.py OUT.json \
        LABEL OUTSIDER_SPEC COPIES_SPEC [LABEL OUTSIDER_SPEC COPIES_SPEC ...]

`evals.outsider` counts the copies' targeted main actions while three seats are left
(``targeted_at_outsider``: 0.5 is no preference).  This splits those same actions (same
tables, seeds and keys: `evals.outsider.outsider_seats`, `coupjax.seat_tables.game_keys`,
development seed 7, 1,000 tables) by what the chooser sees of its two candidates, the
outsider O and the other copy C: their hidden cards (O fewer, equal, more), their coins
(O fewer, equal, more), the action (coup, assassinate, steal) and whether each candidate
has claimed a role that blocks it since its hand was renewed (contessa for an
assassination; captain or ambassador, as an action or a block, for a steal; nothing for a
coup), how many claims (actions and blocks of any role since the renewal) each has made
(O fewer, equal, more) and whether O is the chooser's next seat clockwise among the
living.  Each cell holds how many of the copies' actions went at O and at C.
"""
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rules
from coupjax.env import Env
from coupjax.game import board
from coupjax.game.tables import tables
from coupjax.seat_tables import game_keys
from evals.outsider import COPY, OUTSIDER, outsider_runner, outsider_seats

SEED, GAMES = 7, 1000
KINDS = ("coup", "assassinate", "steal")
CMP = ("O fewer", "equal", "O more")
CLAIMED = ("neither", "O only", "C only", "both")
POSITION = ("O next", "C next")
# kind, hidden cmp, coins cmp, blocker claimed, claims cmp, position, (at O, at C)
SHAPE = (len(KINDS), 3, 3, len(CLAIMED), 3, 2, 2)


def _blocker_claims(s, seat):
    """bool[3]: ``seat`` has claimed a role that blocks a coup (never), an assassination, a steal."""
    c, b = s._claims[seat], s._blocks[seat]
    contessa = (c[rules.CONTESSA] + b[rules.CONTESSA]) > 0
    steal = (c[rules.CAPTAIN] + b[rules.CAPTAIN] + c[rules.AMBASSADOR] + b[rules.AMBASSADOR]) > 0
    return jnp.stack([jnp.zeros((), bool), contessa, steal])


def target_tally(n):
    """A `coupjax.rollout.play` tally of int32 `SHAPE` counts: each copy's targeted main
    action while three seats, the outsider's among them, are left, added to its cell (``one``
    gives a game's cell and whether it counts)."""
    T = tables(n)
    offset, kind_of = jnp.asarray(T.target_offset), jnp.asarray(T.main_kind)

    def one(s, seats, a, served):
        me = s.current_player
        outsider = jnp.argmax(seats == OUTSIDER)
        alive = board.alive(s)
        kind = kind_of[a] - rules.MAIN_ACTIONS.index("coup")
        aimed = served & (kind >= 0) & (offset[a] >= 0) & (seats[me] == COPY)
        aimed = aimed & (alive.sum() == 3) & alive[outsider]
        target = (me + offset[a]) % n
        other = jnp.argmax(alive & (jnp.arange(n) != me) & (jnp.arange(n) != outsider))
        hid, coins = board.hidden_counts(s), board.coins(s)
        hcmp = jnp.sign(hid[outsider] - hid[other]) + 1
        ccmp = jnp.sign(coins[outsider] - coins[other]) + 1
        k = jnp.clip(kind, 0, 2)
        co, cc = _blocker_claims(s, outsider)[k], _blocker_claims(s, other)[k]
        claimed = co.astype(jnp.int32) + 2 * cc.astype(jnp.int32)
        made = s._claims.sum(-1) + s._blocks.sum(-1)
        mcmp = jnp.sign(made[outsider] - made[other]) + 1
        c_next = (board.next_alive_after(s, me, me)[0] != outsider).astype(jnp.int32)
        at_c = (target != outsider).astype(jnp.int32)
        return (k, hcmp, ccmp, claimed, mcmp, c_next, at_c), aimed.astype(jnp.int32)

    def tally(counts, tables_before, moved):
        cell, aimed = jax.vmap(one)(tables_before.state, tables_before.seats, moved.action, moved.served)
        return counts.at[cell].add(aimed)  # one scatter of the batch's cells, not a SHAPE array per game

    return tally


def choices(env, outsider_spec, copies_spec):
    """The `SHAPE` counts of `evals.outsider`'s tables with ``outsider_spec`` in one seat."""
    n = env.num_players
    run = outsider_runner(env, outsider_spec, copies_spec, target_tally(n),
                          start=lambda B: jnp.zeros(SHAPE, jnp.int32), finish=lambda final, aux: aux)
    _, seats = outsider_seats(SEED, n, GAMES)
    keys = np.asarray(game_keys(SEED, 0, GAMES))
    return np.asarray(jax.device_get(run(jnp.asarray(keys), jnp.asarray(seats))))


def summary(c):
    """Shares aimed at O by each split, with the count of actions behind each."""
    def share(x):
        tot = int(x.sum())
        return {"at_outsider": round(float(x[..., 0].sum() / tot), 3) if tot else None, "actions": tot}
    return {"all": share(c),
            "by_action": {k: share(c[i]) for i, k in enumerate(KINDS)},
            "by_hidden": {k: share(c[:, i]) for i, k in enumerate(CMP)},
            "by_coins": {k: share(c[:, :, i]) for i, k in enumerate(CMP)},
            "by_claims_made": {k: share(c[:, :, :, :, i]) for i, k in enumerate(CMP)},
            "by_position": {k: share(c[:, :, :, :, :, i]) for i, k in enumerate(POSITION)},
            "by_claimed_blocker": {KINDS[j]: {k: share(c[j, :, :, i]) for i, k in enumerate(CLAIMED)} for j in (1, 2)},
            "counts": c.tolist()}


if __name__ == "__main__":
    out, rest = sys.argv[1], sys.argv[2:]
    env = Env(4)
    result = {"seed": SEED, "games": GAMES, "shape": ["action", "hidden", "coins", "blocker claimed", "claims made", "position", "at O / at C"]}
    for label, o, c in zip(rest[0::3], rest[1::3], rest[2::3]):
        result[label] = {"outsider": o, "copies": c, **summary(choices(env, o, c))}
        print(label, json.dumps({k: v for k, v in result[label].items() if k != "counts"}))
    json.dump(result, open(out, "w"), indent=1)
