"""The self-play league: who sits at each seat of a batch of tables, and their games.

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

`League.play` advances every game by a number of engine steps (`Env.step_autoreset`),
a `lax.scan` of `coupjax.rollout.step`, with the members as the rollout's policies and the tables'
``member`` as its seats: the seat to move acts with its member's policy.  The network's
and the snapshots' policies come from the caller (run on every game: a small MLP); a
pool policy is evaluated on the games whose seat to move it plays.  Under `vmap` a
`lax.switch` evaluates every branch on every game, and ``belief_ev`` costs some thirty
engine steps, so with ``pool_margin`` z > 0 each pool policy runs on a fixed number of
gathered games only, ``ceil(B p + z sqrt(B p (1 - p)))`` with p its expected share of
the decisions; a game beyond that waits one step (counted as a stall: the policy serves
the first games that want it, counted from game 0 at every step; which games wait
depends on the split of the batch over devices).  With z = 0 every pool policy runs on
every game.

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

from coupjax import rollout
from coupjax import rules
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
    logp: jnp.ndarray  # float32 []  log-probability of the action under its seat's policy (legal actions)
    inputs: object = None  # what the networks read beside the state (`League.play`'s ``inputs``), or None


def masked_log_softmax(logits, mask):
    """Log-probabilities over the legal actions; illegal ones get about -1e9, not -inf,
    so that products with their zero probability have zero gradients."""
    return jax.nn.log_softmax(jnp.where(mask, logits, -1e9))


def _masked(policy):
    """``policy`` with its illegal actions at -inf (the sampled and recorded logits)."""
    return lambda k, s, *x: jnp.where(s.legal_action_mask, policy(k, s, *x), -jnp.inf)


def opponent_hands(state: State, seat):
    """(float32[n-1, 5] relative opponent k holds role r, bool[n-1] it holds any card):
    the truth a belief about ``seat``'s opponents is scored against."""
    hands = hidden_hands(state)
    n = hands.shape[0]
    rel = hands[(seat + jnp.arange(1, n)) % n]  # [n-1, 2]
    has = (rel[:, :, None] == jnp.arange(rules.NUM_ROLES)).any(axis=1)
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

    def gather_capacity(self, member: int, num_games: int) -> int:
        """Games a snapshot's policy is computed on while no more want it (`play`'s
        ``gathered``): its expected share of the decisions plus 4 sigma and 4 games, so
        that the fallback to every game (a table mix can seat one member thrice) is rare."""
        p = self.weights[member] * (self.n - 1) / self.n
        return int(min(num_games, math.ceil(num_games * p + 4 * math.sqrt(num_games * p)) + 4))

    @staticmethod
    def new_game_capacity(num_games: int) -> int:
        """Games `new_games` draws on per step (gathered): about four times the games that
        end in a step on average (one in 40-45 of ``num_games``, measured at 128), so the
        fallback to every game is rare; it would cost time, not change a game."""
        return max(8, num_games // 8)

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

    # ------------------------------------------------------------------ the games
    def play(self, tables: Tables, keys, self_policy, snapshot_policies=(), extra=None, gathered: bool = False,
             inputs=None):
        """``len(keys)`` engine steps of every game, a `lax.scan` of `coupjax.rollout.step`;
        returns (tables, `StepRecord` with leaves [T, B, ...], ``extra``'s outputs [T, B, ...]).

        ``keys`` [T]: step t's key (game slot g draws from ``fold_in(keys[t], slot[g])``
        split in four: policy, action, engine step, new game).  ``self_policy`` and the K
        ``snapshot_policies``: ``(key, state) -> logits`` of the current network and its
        snapshots, run on every game (a small MLP); a pool policy runs on at most
        `capacity` games per step (the others wait, counted as stalls; module doc).
        ``extra(states [B]) -> pytree``: anything the caller wants of each step's games
        before the step (e.g. the value net's estimates), or None.
        ``gathered``: compute the snapshots' policies (`rollout.Players.gather`,
        `gather_capacity`) and draw the ended games' successors (`new_games`,
        `new_game_capacity`) on gathered games while few enough want them: the same
        games, cheaper; only outside `vmap`, where their `lax.cond` runs one branch.
        ``inputs(states [B]) -> pytree [B, ...]``: what the current network and its
        snapshots read beside the state (the exact posterior's features), computed once
        per step on every game (the current network runs on every game anyway); those
        policies are then ``(key, state, inputs) -> logits`` (`coupjax.rollout.step`),
        and the record keeps it (`StepRecord.inputs`) for the update to reuse.
        """
        B = tables.slot.shape[0]
        if len(snapshot_policies) != self.num_snapshots:
            raise ValueError(f"{len(snapshot_policies)} snapshot policies for {self.num_snapshots} snapshots")
        pool = self.policies if inputs is None else [lambda k, s, x, p=p: p(k, s) for p in self.policies]
        players = rollout.Players(self.env, tuple(_masked(p) for p in (self_policy, *snapshot_policies, *pool)),
                                  capacity=tuple([B] * self.first_pool + [self.capacity(m, B) for m in
                                                                          range(self.first_pool, self.num_members)]),
                                  autoreset=True,
                                  gather=tuple(self.gather_capacity(m, B) if gathered and 0 < m < self.first_pool else B
                                               for m in range(self.num_members)))
        new_game_capacity = self.new_game_capacity(B) if gathered else None

        def one_step(tables: Tables, key):
            k = jax.vmap(lambda slot: jax.random.split(jax.random.fold_in(key, slot), 4))(tables.slot)
            # every step serves a pool policy's first games counted from game 0 (it = 0): the league's schedule
            game = rollout.Tables(tables.state, jnp.zeros(B, jnp.int32), tables.member, jnp.int32(0))
            read = None if inputs is None else inputs(game.state)
            played, moved = rollout.step(players, game, rollout.StepKeys(k[:, 0], k[:, 1], k[:, 2]), jnp.ones(B, bool),
                                         inputs=read)
            tables, record = self._after(tables, played.state, moved, k[:, 3], new_game_capacity)
            record = record.replace(inputs=read)
            return tables, (record, None if extra is None else extra(game.state))

        tables, (record, out) = jax.lax.scan(one_step, tables, keys)
        return tables, record, out

    def new_games(self, keys, done, base, capacity=None):
        """(state, member, primary) [B] with a new game (`_new_game` of its key) wherever
        ``done``, ``base``'s values elsewhere.  With ``capacity`` C < B, while at most C
        games are done the new games are drawn on those C gathered games only (a
        `lax.cond`, else on every game): a game's draw depends on its own key alone, so
        both branches give the same games, and the table draw (a Dirichlet: a rejection
        loop per member) costs C games' instead of B."""
        B = keys.shape[0]

        def every_game():
            return rollout.tree_where(done, jax.vmap(self._new_game)(keys), base)

        if capacity is None or capacity >= B:
            return every_game()

        def gathered():
            idx = jnp.nonzero(done, size=capacity, fill_value=B)[0]
            new = jax.vmap(self._new_game)(keys[jnp.clip(idx, 0, B - 1)])
            return jax.tree.map(lambda b, x: b.at[idx].set(x, mode="drop"), base, new)

        return jax.lax.cond(done.sum() <= capacity, gathered, every_game)

    def _after(self, tables: Tables, state: State, moved: rollout.Moved, new_keys, new_game_capacity=None):
        """The step's record and the tables after it: a game ends for training when it ends
        or no seat of the current network has influence left (module doc); an abandoned
        game is replaced by a new one (an ended one was by `Env.step_autoreset`), and
        every ended game gets new members."""
        n, B = self.n, tables.slot.shape[0]
        s, seat = tables.state, tables.state.current_player
        member = jnp.take_along_axis(tables.member, seat[:, None], axis=1)[:, 0]
        target, valid = jax.vmap(opponent_hands)(s, seat)
        others = jnp.arange(n)[None, :] != tables.primary[:, None]
        present = ((tables.member[:, :, None] == jnp.arange(self.num_members)) & others[:, :, None]).any(axis=1)
        logp_all = masked_log_softmax(moved.logits, s.legal_action_mask)
        logp = jnp.take_along_axis(logp_all, moved.action[:, None], axis=1)
        ended = state.terminated & moved.served
        learner_alive = (board.alive(state) & (tables.member == 0)).any(axis=1)
        abandoned = ~ended & ~learner_alive & moved.served
        done = ended | abandoned
        lost = jnp.full((B, n), -1.0 / (n - 1), jnp.float32)
        rewards = jnp.where(done[:, None], jnp.where(ended[:, None], state.rewards, lost), 0.0)
        won = done & (jnp.take_along_axis(rewards, tables.primary[:, None], axis=1)[:, 0] > 0)
        record = StepRecord(obs=s.observation, mask=s.legal_action_mask, action=moved.action, seat=seat,
                            learner=(member == 0) & moved.served, stepped=moved.served, done=done, rewards=rewards,
                            primary_won=won, present=present, hands_target=target, hands_valid=valid, logp=logp[:, 0])
        fresh, member, primary = self.new_games(new_keys, done, (state, tables.member, tables.primary),
                                                new_game_capacity)
        state = rollout.tree_where(abandoned, fresh, state)
        state = state.replace(terminated=jnp.zeros_like(state.terminated), rewards=jnp.zeros_like(state.rewards))
        return tables.replace(state=state, member=member, primary=primary), record

    def seat_observations(self, tables: Tables):
        """float32[B, n, obs]: every seat's observation of its game (for bootstrapping)."""
        seats = jnp.arange(self.n)
        return jax.vmap(lambda s: jax.vmap(lambda q: self.env.observe(s, q))(seats))(tables.state)

    def alive(self, tables: Tables):
        """bool[B, n]: the seat has influence."""
        return board.alive(tables.state)
