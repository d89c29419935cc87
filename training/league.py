"""The self-play league: who sits at each seat of a batch of tables, and one engine step of them.

Members, by index: 0 is the current network (``self``: its decisions are trained on),
1..K its snapshots (past copies of the policy, a ring refreshed by `training.selfplay`),
then the fixed pool (`training.config.resolve_pool`: the scripted bots, ``belief_ev``, a
DQN or any other export a config names).  Every game has a *primary* seat, drawn
uniformly, played by the current network; each other seat draws a member
independently: ``self`` with ``self_weight``, each snapshot with ``snapshot_weight / K``
and the pool with the rest, split by its weights.  With ``table_concentration`` c > 0
the seats of one table draw from a table mix p ~ Dirichlet(c w) instead (mean w): small
c gives tables dominated by one member (pure self-play, three bluffers, three copies
of ``belief_ev``), large c mixed tables.  A new draw is made whenever a game ends, so
the network meets every member, alone and mixed, and plays against itself and its
past (which keeps it from cycling) without forgetting how to beat the bots.

`League.step` advances every game by one engine step (`Env.step_autoreset`): the seat
to move acts with its member's logits.  The network's and the snapshots' logits come
from the caller (computed for every game: a small MLP); a pool policy is evaluated on
the games whose seat to move it plays.  Under `vmap` a `lax.switch` evaluates every
branch on every game, and ``belief_ev`` costs some thirty engine steps, so with
``pool_margin`` z > 0 each pool policy runs on a fixed number of gathered games only,
``ceil(B p + z sqrt(B p (1 - p)))`` with p its expected share of the decisions; a game
beyond that waits one step (counted as a stall; which games wait depends on the split
of the batch over devices).  With z = 0 every pool policy runs on every game.

A game also ends, for training, when no seat of the current network has influence left
(the rest of it would teach nothing): every seat then gets the loser's reward.
Rewards are the engine's (+1 to the winner, -1/(n-1) to every other seat).  Randomness
of game slot g comes from ``fold_in(key, slot[g])``, with ``slot`` its global index.
"""
from __future__ import annotations

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from coupjax import rules as R
from coupjax.env import Env
from coupjax.game import board
from coupjax.game.deal import hidden_hands
from coupjax.policies import resolve_policy
from coupjax.state import State


@struct.dataclass
class Tables:
    """B games, each with a member per seat."""

    state: State  # [B] the games (never terminated: an ended game is replaced at once)
    member: jnp.ndarray  # int32 [B, n]  league member per seat
    primary: jnp.ndarray  # int32 [B]  the seat whose result is counted (always member 0)
    slot: jnp.ndarray  # int32 [B]  global index of the game slot (key derivation)


@struct.dataclass
class StepRecord:
    """What one engine step of one game leaves for learning and for the metrics."""

    obs: jnp.ndarray  # float32 [obs]  the observation of the seat that moved
    mask: jnp.ndarray  # bool [A]
    action: jnp.ndarray  # int32 []
    seat: jnp.ndarray  # int32 []  the seat that moved
    learner: jnp.ndarray  # bool []  it is a seat of the current network, and it moved
    stepped: jnp.ndarray  # bool []  the game moved (False: a stall)
    done: jnp.ndarray  # bool []  the game ended for training after this step
    rewards: jnp.ndarray  # float32 [n]  the ended game's rewards (0 otherwise)
    primary_won: jnp.ndarray  # bool []  done and the primary seat won
    present: jnp.ndarray  # bool [M]  members at the table's other seats
    hands_target: jnp.ndarray  # float32 [n-1, 5]  opponent k holds role r (relative seats 1..n-1)
    hands_valid: jnp.ndarray  # bool [n-1]  opponent k holds a hidden card


def _tree_where(c, a, b):
    return jax.tree.map(lambda x, y: jnp.where(jnp.reshape(c, c.shape + (1,) * (x.ndim - c.ndim)), x, y), a, b)


def opponent_hands(state: State, seat):
    """(float32[n-1, 5] relative opponent k holds role r, bool[n-1] it holds any card):
    the truth a belief about ``seat``'s opponents is scored against."""
    hands = hidden_hands(state)
    n = hands.shape[0]
    rel = hands[(seat + jnp.arange(1, n)) % n]  # [n-1, 2]
    has = (rel[:, :, None] == jnp.arange(R.NUM_ROLES)).any(axis=1)
    return has.astype(jnp.float32), (rel >= 0).any(axis=1)


def member_label(name: str) -> str:
    """A league member's name in metrics: an absolute path's last three parts (a run's
    ``psro/chunk_C/best_response``), any other name as it is."""
    p = Path(name)
    return "/".join(p.parts[-3:]) if p.is_absolute() else name


class League:
    """The members, their weights and the batched tables (module doc).  Pure methods."""

    def __init__(self, env: Env, pool: dict, num_snapshots: int, self_weight: float, snapshot_weight: float,
                 pool_margin: float = 0.0, table_concentration: float = 0.0):
        pool = {k: float(v) for k, v in dict(pool).items() if float(v) > 0}
        self.env = env
        self.n = env.num_players
        self.num_snapshots = int(num_snapshots)
        self.pool_names = list(pool)
        self.policies = [resolve_policy(name, env) for name in self.pool_names]
        self.names = ["self", *(f"snapshot_{k}" for k in range(self.num_snapshots)), *self.pool_names]
        self.first_pool = 1 + self.num_snapshots
        w = np.asarray([pool[x] for x in self.pool_names], np.float64)
        pool_share = max(0.0, 1.0 - self_weight - snapshot_weight)
        snap = np.full(self.num_snapshots, snapshot_weight / max(self.num_snapshots, 1))
        weights = np.concatenate([[self_weight], snap, pool_share * w / w.sum()])
        self.weights = weights / weights.sum()
        with np.errstate(divide="ignore"):
            self.log_weights = np.log(self.weights).astype(np.float32)
        self.pool_margin = float(pool_margin)
        self.table_concentration = float(table_concentration)

    @property
    def num_members(self) -> int:
        return len(self.names)

    def capacity(self, member: int, num_games: int) -> int:
        """Games a pool member's policy is evaluated on per step (module doc)."""
        if self.pool_margin <= 0:
            return num_games
        p = self.weights[member] * (self.n - 1) / self.n
        cap = num_games * p + self.pool_margin * math.sqrt(num_games * p * (1 - p))
        return int(min(num_games, math.ceil(cap) + 1))

    # ------------------------------------------------------------------ seats
    def draw_seats(self, key):
        """(member int32[n], primary int32[]) of a new game."""
        k_primary, k_member, k_mix = jax.random.split(key, 3)
        primary = jax.random.randint(k_primary, (), 0, self.n, jnp.int32)
        logits = jnp.asarray(self.log_weights)
        if self.table_concentration > 0:
            w = jnp.asarray(self.weights, jnp.float32)
            mix = jax.random.dirichlet(k_mix, jnp.where(w > 0, self.table_concentration * w, 1.0))
            logits = jnp.where(w > 0, jnp.log(jnp.maximum(mix, 1e-30)), -jnp.inf)
        member = jax.random.categorical(k_member, logits, shape=(self.n,)).astype(jnp.int32)
        return jnp.where(jnp.arange(self.n) == primary, 0, member), primary

    def _new_game(self, key):
        k_init, k_seats = jax.random.split(key)
        member, primary = self.draw_seats(k_seats)
        return self.env.init(k_init), member, primary

    def reset(self, key, num_envs: int, slot_offset=0) -> Tables:
        slots = jnp.asarray(slot_offset, jnp.int32) + jnp.arange(num_envs, dtype=jnp.int32)
        state, member, primary = jax.vmap(lambda s: self._new_game(jax.random.fold_in(key, s)))(slots)
        return Tables(state=state, member=member, primary=primary, slot=slots)

    # ------------------------------------------------------------------ one step
    def _pool_logits(self, member, keys, states):
        """(logits float32[B, A] of the pool member at each game's seat to move, served bool[B])."""
        B = member.shape[0]
        out = jnp.zeros((B, self.env.num_actions), jnp.float32)
        served = jnp.zeros(B, bool)
        for j, policy in enumerate(self.policies):
            need = member == self.first_pool + j
            cap = self.capacity(self.first_pool + j, B)
            if cap >= B:
                out = jnp.where(need[:, None], jax.vmap(policy)(keys, states), out)
                served = served | need
                continue
            idx = jnp.nonzero(need, size=cap, fill_value=B)[0]
            take = jnp.minimum(idx, B - 1)
            sub = jax.tree.map(lambda x: x[take], states)
            out = out.at[idx].set(jax.vmap(policy)(keys[take], sub), mode="drop")
            served = served.at[idx].set(True, mode="drop")
        return out, served

    def step(self, tables: Tables, key, self_logits, snapshot_logits):
        """One engine step of every game; returns (tables, StepRecord with leaves [B, ...]).

        ``self_logits`` float32[B, A]: the current network's logits at every game's
        observation; ``snapshot_logits`` float32[K, B, A]: each snapshot's (None when K = 0).
        """
        n, B = self.n, tables.slot.shape[0]
        keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(key, tables.slot)
        split = jax.vmap(lambda k: jax.random.split(k, 4))(keys)
        k_pol, k_act, k_env, k_new = (split[:, i] for i in range(4))
        s = tables.state
        seat = s.current_player
        member = jnp.take_along_axis(tables.member, seat[:, None], axis=1)[:, 0]
        pool, served = self._pool_logits(member, k_pol, s)
        if self.num_snapshots:
            which = jnp.clip(member - 1, 0, self.num_snapshots - 1)[None, :, None]
            snap = jnp.take_along_axis(snapshot_logits, which, axis=0)[0]
        else:
            snap = self_logits
        logits = jnp.where((member == 0)[:, None], self_logits,
                           jnp.where((member < self.first_pool)[:, None], snap, pool))
        logits = jnp.where(s.legal_action_mask, logits, -jnp.inf)
        action = jax.vmap(jax.random.categorical)(k_act, logits).astype(jnp.int32)
        stepped = (member < self.first_pool) | served
        target, valid = jax.vmap(opponent_hands)(s, seat)

        ns = jax.vmap(self.env.step_autoreset)(s, action, k_env)
        ended = ns.terminated
        learner_alive = (board.alive(ns) & (tables.member == 0)).any(axis=1)
        abandoned = ~ended & ~learner_alive
        done = (ended | abandoned) & stepped
        lost = jnp.full((B, n), -1.0 / (n - 1), jnp.float32)
        rewards = jnp.where(done[:, None], jnp.where(ended[:, None], ns.rewards, lost), 0.0)
        fresh, f_member, f_primary = jax.vmap(self._new_game)(k_new)
        ns = _tree_where(abandoned, fresh, ns)
        ns = ns.replace(terminated=jnp.zeros_like(ns.terminated), rewards=jnp.zeros_like(ns.rewards))
        new_state = _tree_where(stepped, ns, s)
        new_member = jnp.where(done[:, None], f_member, tables.member)
        new_primary = jnp.where(done, f_primary, tables.primary)

        others = jnp.arange(n)[None, :] != tables.primary[:, None]
        present = ((tables.member[:, :, None] == jnp.arange(self.num_members)) & others[:, :, None]).any(axis=1)
        won = done & (jnp.take_along_axis(rewards, tables.primary[:, None], axis=1)[:, 0] > 0)
        record = StepRecord(obs=s.observation, mask=s.legal_action_mask, action=action, seat=seat,
                            learner=(member == 0) & stepped, stepped=stepped, done=done, rewards=rewards,
                            primary_won=won,
                            present=present, hands_target=target, hands_valid=valid)
        return tables.replace(state=new_state, member=new_member, primary=new_primary), record

    def seat_observations(self, tables: Tables):
        """float32[B, n, obs]: every seat's observation of its game (for bootstrapping)."""
        seats = jnp.arange(self.n)
        return jax.vmap(lambda s: jax.vmap(lambda q: self.env.observe(s, q))(seats))(tables.state)

    def alive(self, tables: Tables):
        """bool[B, n]: the seat has influence."""
        return board.alive(tables.state)
