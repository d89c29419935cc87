"""The learner's view: one learning seat per game, the other seats played by a pool.

`Learner` turns the multi-agent engine into a batched single-agent environment::

    learner = Learner(env, {"honest": 1, "bluffer": 1}, reward="win")
    ls = learner.reset(key, num_envs=B)                # every game at a learner decision
    obs, mask = learner.observe(ls)                    # the learner's view and legal mask
    ls, tr = learner.step(ls, actions, key)            # Transition with leaves [B, ...]

``step`` applies the learner's action, then advances the other seats with their
policies (`coupjax.wrappers.SingleSeat`, on `coupjax.rollout.step`) until it is the learner's turn again, or its game is
over (the game ended, or the learning seat was eliminated -- its later turns would
never come).  A finished game is replaced at once by a fresh ``env.init`` (auto-reset);
the learning seat of the new game is drawn uniformly from the n seats and each other
seat's policy independently from the pool's weights, and the loop goes on in the new
game until the learner's first decision.  So every game slot is always at a learner
decision, and a transition ``(obs, mask, action, reward, next_obs, next_mask, done)``
is emitted for every slot at every step; at ``done`` the ``next_obs`` is the
learner's view of the final state and ``next_mask`` is all True (never bootstrapped).

Randomness: game slot ``g`` uses ``fold_in(key, slot[g])``, where ``slot`` is the
slot's global index stored in the state, so a batch split over devices draws exactly
what the unsplit batch draws.  Under `vmap` the while loop runs until every game in the
batch is at a learner decision.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from coupjax.env import Env
from coupjax.game import board
from coupjax.policies import resolve_policy
from coupjax.state import State
from coupjax.wrappers import SingleSeat
from training.rewards import RewardInputs, make_reward


@struct.dataclass
class Transition:
    obs: jnp.ndarray  # float32[obs]
    mask: jnp.ndarray  # bool[A]
    action: jnp.ndarray  # int32 []
    reward: jnp.ndarray  # float32 []
    next_obs: jnp.ndarray  # float32[obs]
    next_mask: jnp.ndarray  # bool[A]
    done: jnp.ndarray  # bool []

    @classmethod
    def empty(cls, obs_dim: int, num_actions: int) -> "Transition":
        """One all-zero transition: the example a replay buffer is initialised from."""
        return cls(obs=jnp.zeros(obs_dim, jnp.float32), mask=jnp.zeros(num_actions, bool), action=jnp.int32(0),
                   reward=jnp.float32(0), next_obs=jnp.zeros(obs_dim, jnp.float32),
                   next_mask=jnp.zeros(num_actions, bool), done=jnp.array(False))


@struct.dataclass
class LearnerState:
    env_state: State  # the game of each slot, always at a learner decision
    seat: jnp.ndarray  # int32 []  learning seat
    opponents: jnp.ndarray  # int32 [n]  index into `Learner.names` per seat (the learner's own entry unused)
    slot: jnp.ndarray  # int32 []  global index of the game slot (key derivation)
    episode_return: jnp.ndarray  # float32 []  return of the running game so far
    episode_decisions: jnp.ndarray  # int32 []  learner decisions in the running game
    games: jnp.ndarray  # int32 []  games finished in this slot
    wins: jnp.ndarray  # int32 []  of which the learner won
    return_sum: jnp.ndarray  # float32 []  sum of finished games' returns
    env_steps: jnp.ndarray  # int32 []  engine steps taken in this slot (all seats)


class Learner:
    """Batched single-agent wrapper; see the module doc.  Pure methods, jit/vmap-able."""

    def __init__(self, env: Env, pool: dict, reward: str = "win", max_inner_steps: int = 4096):
        pool = {k: float(v) for k, v in dict(pool).items() if float(v) > 0}
        if not pool:
            raise ValueError("the opponent pool is empty")
        self.env = env
        self.n = env.num_players
        self.names = list(pool)
        self.policies = [resolve_policy(name, env) for name in self.names]
        w = np.asarray([pool[x] for x in self.names], np.float64)
        self.log_weights = jnp.asarray(np.log(w / w.sum()), jnp.float32)
        self.reward_name = reward
        self.reward_fn = make_reward(reward, self.n)
        self.max_inner_steps = int(max_inner_steps)
        self.seat = SingleSeat(env, self.policies, self.max_inner_steps, new_game=self._new_game)

    # ------------------------------------------------------------------ one game
    def _new_game(self, key):
        k_init, k_seat, k_opp = jax.random.split(key, 3)
        s = self.env.init(k_init)
        seat = jax.random.randint(k_seat, (), 0, self.n, jnp.int32)
        opp = jax.random.categorical(k_opp, self.log_weights, shape=(self.n,)).astype(jnp.int32)
        return s, seat, opp

    @staticmethod
    def _keys(key, t):
        """A carried key split at every engine step (new game, action, step)."""
        key, k_new, k_act, k_step = jax.random.split(key, 4)
        k_pol, k_act = jax.random.split(k_act)
        return key, k_new, k_pol, k_act, k_step

    def _advance(self, s, seat, opp, key, action=None):
        """Engine steps (with auto-reset) until a live game is at a decision of its learner:
        `coupjax.wrappers.SingleSeat.advance` (one loop holds the only `env.step` of the
        program, to keep compiles short).

        ``action``: the learner's action, applied by the first step (the game must be at
        a learner decision); None applies none.  Every other step is an opponent's.

        Returns (state, seat, opp, recorded, term_state, steps): ``recorded`` tells that
        the learner's game at entry ended for it (the game ended or the learner was
        eliminated); then ``term_state`` is that game's last state and ``state`` a new
        game.  ``steps`` counts the engine steps taken in live games.
        """
        out = self.seat.advance(s, seat, opp, key, self._keys, action=action)
        return out.state, out.seat, out.seats, out.over, out.last, out.steps

    def _reset_one(self, key, slot):
        k_new, k_adv = jax.random.split(jax.random.fold_in(key, slot))
        s, seat, opp = self._new_game(k_new)
        s, seat, opp, _, _, steps = self._advance(s, seat, opp, k_adv)
        z = jnp.int32(0)
        return LearnerState(env_state=s, seat=seat, opponents=opp, slot=jnp.asarray(slot, jnp.int32),
                            episode_return=jnp.float32(0), episode_decisions=z, games=z, wins=z,
                            return_sum=jnp.float32(0), env_steps=steps)

    def _step_one(self, ls: LearnerState, action, key):
        s0 = ls.env_state
        s, seat, opp, done, term, steps = self._advance(s0, ls.seat, ls.opponents,
                                                        jax.random.fold_in(key, ls.slot), action)
        term_obs = self.env.observe(term, ls.seat)
        next_obs = jnp.where(done, term_obs, s.observation)
        next_mask = jnp.where(done, True, s.legal_action_mask)
        won = done & term.terminated & (board.winner(term) == ls.seat)
        engine_r = jnp.where(term.terminated, term.rewards[ls.seat], -1.0 / (self.n - 1))
        reward = self.reward_fn(RewardInputs(obs=s0.observation, next_obs=next_obs, done=done, won=won,
                                             engine_reward=engine_r.astype(jnp.float32)))
        tr = Transition(obs=s0.observation, mask=s0.legal_action_mask, action=jnp.asarray(action, jnp.int32),
                        reward=reward, next_obs=next_obs, next_mask=next_mask, done=done)
        ep_ret = ls.episode_return + reward
        new = ls.replace(
            env_state=s, seat=seat, opponents=opp,
            episode_return=jnp.where(done, 0.0, ep_ret),
            episode_decisions=jnp.where(done, 0, ls.episode_decisions + 1),
            games=ls.games + done, wins=ls.wins + won,
            return_sum=ls.return_sum + jnp.where(done, ep_ret, 0.0),
            env_steps=ls.env_steps + steps,
        )
        return new, tr

    # ------------------------------------------------------------------ batched API
    def reset(self, key, num_envs: int, slot_offset=0) -> LearnerState:
        """``num_envs`` games (slots ``slot_offset + 0..num_envs-1``), each at a learner decision."""
        slots = jnp.asarray(slot_offset, jnp.int32) + jnp.arange(num_envs, dtype=jnp.int32)
        return jax.vmap(self._reset_one, in_axes=(None, 0))(key, slots)

    def step(self, ls: LearnerState, action, key):
        """Apply the learners' actions (int32[B]); returns (state, Transition with leaves [B, ...])."""
        return jax.vmap(self._step_one, in_axes=(0, 0, None))(ls, jnp.asarray(action, jnp.int32), key)

    @staticmethod
    def observe(ls: LearnerState):
        """(observations float32[B, obs], legal masks bool[B, A]) of the learners at their decisions."""
        return ls.env_state.observation, ls.env_state.legal_action_mask
