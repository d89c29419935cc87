"""Per-transition rewards of the learning seat (CoupVisor Appendix B).

A transition runs from one decision of the learning seat to its next decision, or to
the end of its game (the game ends, or the learning seat is eliminated).  Every
reward reads only what the learner can see: its own observation before the decision
(``obs``), its own observation at the end of the transition (``next_obs``; at a done
transition, its view of the final state), and the game result.

``shaped`` (CoupVisor B.1): the learner's coin change over the transition plus the
number of opponents eliminated during it.  Dense, but not aligned with winning
(CoupVisor VI.F: shaped DQN did not learn to win).

``win`` (win-aligned): 0 on every step; at the done transition +1 if the learning
seat won the game, else 0.  (CoupVisor's win mode labels each logged transition by
whether the acting player finally wins; online, that label arrives at the end.)

``engine``: the engine's terminal reward, +1 for the winner and -1/(n-1) for every
other seat (a learner eliminated before the end gets -1/(n-1) at its elimination).
"""
from __future__ import annotations

from typing import Callable

import jax.numpy as jnp
from flax import struct

from coupjax import rules
from coupjax.observation import parse


@struct.dataclass
class RewardInputs:
    obs: jnp.ndarray  # float32[obs]   learner's view at its decision
    next_obs: jnp.ndarray  # float32[obs]   learner's view at the end of the transition
    done: jnp.ndarray  # bool []  the learner's game is over for it
    won: jnp.ndarray  # bool []  the game ended and the learner is the winner
    engine_reward: jnp.ndarray  # float32 []  engine reward of the learner if done, else 0


def seat_summary(obs, num_players: int):
    """(learner coins, live opponents) from one observation of the learner."""
    v = parse(obs, num_players)
    return v.coins[0], v.alive[1:].sum()


def shaped(x: RewardInputs, num_players: int):
    coins0, live0 = seat_summary(x.obs, num_players)
    coins1, live1 = seat_summary(x.next_obs, num_players)
    return ((coins1 - coins0) + (live0 - live1)).astype(jnp.float32)


def win(x: RewardInputs, num_players: int):
    del num_players
    return jnp.where(x.done & x.won, 1.0, 0.0).astype(jnp.float32)


def engine(x: RewardInputs, num_players: int):
    del num_players
    return jnp.where(x.done, x.engine_reward, 0.0).astype(jnp.float32)


REWARDS: dict[str, Callable] = {"shaped": shaped, "win": win, "engine": engine}


def make_reward(name: str, num_players: int) -> Callable[[RewardInputs], jnp.ndarray]:
    """``fn(RewardInputs) -> float32 []`` for ``name`` in `REWARDS`."""
    if name not in REWARDS:
        raise ValueError(f"unknown reward {name!r}; known: {', '.join(REWARDS)}")
    rules.check_num_players(num_players)
    fn = REWARDS[name]
    return lambda x: fn(x, num_players)


# ------------------------------------------------------------------ offline (logged-row) rewards
# CoupVisor B.2: an environment that steps through logged decisions ("rows").  At each
# row the policy chooses an action; the logged action is what the logged player did.
# The reward depends on the chosen action only through the match indicator.
OFFLINE_REWARDS = ("shaped", "win")


def action_match_reward(mode: str, chosen, logged, row_reward, actor_wins):
    """CoupVisor B.2 reward of choosing ``chosen`` at a logged row (arrays broadcast).

    ``shaped``: the row's shaped reward (B.1: the actor's coin change plus opponents
    eliminated over the row's transition -- it does not depend on ``chosen``) plus 1 if
    ``chosen == logged`` (imitating every logged player).
    ``win``: 1 if ``chosen == logged`` and the row's actor later wins the game, else 0
    (the per-step term is zero, so the reward is exactly this indicator).
    """
    match = jnp.asarray(chosen) == jnp.asarray(logged)
    if mode == "shaped":
        return (jnp.asarray(row_reward, jnp.float32) + match).astype(jnp.float32)
    if mode == "win":
        return (match & jnp.asarray(actor_wins, bool)).astype(jnp.float32)
    raise ValueError(f"unknown offline reward {mode!r}; known: {', '.join(OFFLINE_REWARDS)}")
