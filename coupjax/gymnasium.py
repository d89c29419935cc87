"""Gymnasium single-seat wrapper: ``coupjax.gymnasium.env(num_players=4, seat=0, opponents=[...])``.

The agent plays one seat; the other seats are played by our policies (any policy specs,
`coupjax.policies.resolve_policy`: one per other seat in seat order, or one for all).
Each ``step(action)`` applies the agent's action and then the opponents' decisions, all
in one compiled loop (`coupjax.wrappers.SingleSeat`, the learner's too), until the agent must decide again (its turn, or a reaction,
block answer, card loss or exchange choice) or the match ends; an agent knocked out
watches the match to its end in that same call, so every episode is a whole match.

Observation: the seat's float32 view (`coupjax.game.views.observe`); the legal actions
are in ``info["action_mask"]`` (int8; all ones once the match is over, as in the
engine).  An action outside the mask forfeits as the rules say (the seat is
eliminated).  Reward: the engine's, at the end only (+1 for first place, -1/(n-1)
otherwise); at the end ``info["placements"]`` (`coupjax.game.board.placements`).

A match is the one ``Match(num_players, seed=env.match_seed)`` plays with the actions
``env.actions`` (seat, action id), opponents' included.  ``render_mode="ansi"`` shows the
table from the agent's seat.  Importing this module registers ``gymnasium.make(ENV_ID,
num_players=4, seat=0, opponents=[...])`` (in a fresh process, name the module in the
id: ``gymnasium.make("coupjax.gymnasium:coupjax/Coup-v1", ...)``).

``vector_env(num_envs, ...)``: ``num_envs`` such games stepped together in one compiled
call (`CoupVectorEnv`, a ``gymnasium.vector.VectorEnv`` with next-step autoreset, also
``gymnasium.make_vec(ENV_ID, num_envs=...)``): the same results as
``gymnasium.vector.SyncVectorEnv`` of single envs with the same seeds, faster
(``python -m evals.bench_adapters --only-vector``).  Needs the ``gymnasium`` extra:
``pip install "coupjax[gymnasium]"`` (from a checkout: ``pip install -e ".[gymnasium]"``).
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

try:
    import gymnasium as gym
    from gymnasium import spaces
except ImportError as err:  # pragma: no cover - depends on the install
    raise ImportError(f"coupjax.gymnasium needs Gymnasium: pip install \"coupjax[gymnasium]\" ({err})") from None

from coupjax import compile_cache
from coupjax import rules
from coupjax.seat_tables import MAX_STEPS

# Like every coupjax command: compiled functions are kept between processes, so a second
# start of an RL script loads the adapter instead of compiling it (COUPJAX_CACHE_DIR=off
# turns it off; a cache folder the user gave JAX is kept).
compile_cache.enable()
from coupjax.botarena.protocol import OBSERVATION_HIGH, readable, table_text
from coupjax.game import board
from coupjax.match import compiled
from coupjax.policies.spec import resolve_policy
from coupjax.wrappers import SingleSeat


def _opponent_specs(opponents, num_players: int, seat: int) -> tuple:
    specs = [opponents] if isinstance(opponents, str) or callable(opponents) else list(opponents)
    if len(specs) == 1:
        specs = specs * (num_players - 1)
    if len(specs) != num_players - 1:
        raise ValueError(f"opponents: one policy spec for every other seat ({num_players - 1}), or one for all; "
                         f"got {len(specs)}")
    return tuple(specs)


def _builder(num_players: int, seat: int, specs: tuple, keep_actions: bool = True):
    """(start, advance, restart_or_advance) for one game, not yet compiled: the opponents'
    loop of both envs (`coupjax.wrappers.SingleSeat`, play-out)."""
    env = compiled(num_players)[0]
    distinct = list(dict.fromkeys(specs))
    policies = [resolve_policy(spec, env) for spec in distinct]
    others = [s for s in range(num_players) if s != seat]
    index = np.zeros(num_players, np.int32)
    index[others] = [distinct.index(spec) for spec in specs]
    index = jnp.asarray(index)

    single = SingleSeat(env, policies, MAX_STEPS)  # play-out: an episode is a whole match
    size = MAX_STEPS if keep_actions else 1  # the vector env keeps no action list

    def keys(key, t):  # the policy key folds in the decision; the step key the next decision
        deal_key, pol_key = key
        k_pol, k_act = jax.random.split(jax.random.fold_in(pol_key, t))
        k_step = jax.random.fold_in(deal_key, t + 1)
        return key, k_step, k_pol, k_act, k_step

    def record(buf, t, s, action):
        acts, seats = buf
        return acts.at[t].set(action), seats.at[t].set(s.current_player)

    def opponents_until_our_turn(carry, pol_key, action=None, pending=None):
        s, t, acts, seats, deal_key = carry
        out = single.advance(s, seat, index, (deal_key, pol_key), keys, action=action, steps=t,
                             record=record if keep_actions else None, record_init=(acts, seats), pending=pending)
        s, t = out.state, t + out.steps
        if keep_actions:
            acts, seats = out.record
        carry = (s, t, acts, seats, deal_key)
        return carry, (env.observe(s, seat), s.legal_action_mask, s.terminated, s.rewards[seat], board.placements(s), t)

    def fresh(deal_key):
        buf = jnp.full(size, -1, jnp.int32)
        return env.init(jax.random.fold_in(deal_key, 0)), jnp.int32(0), buf, buf, deal_key

    def start(deal_key, pol_key):
        return opponents_until_our_turn(fresh(deal_key), pol_key)

    def advance(carry, action, pol_key):
        return opponents_until_our_turn(carry, pol_key, action)

    def restart_or_advance(carry, action, pol_key, restart, deal_key):
        """``start`` where ``restart`` (the action is ignored), else ``advance``."""
        carry = jax.tree.map(lambda new, old: jnp.where(restart, new, old), fresh(deal_key), carry)
        return opponents_until_our_turn(carry, pol_key, action, pending=~restart)

    return start, advance, restart_or_advance, fresh


@functools.lru_cache(maxsize=32)
def _functions(num_players: int, seat: int, specs: tuple):
    """(start, advance) compiled once per table size, seat and opponents."""
    start, advance, _, _ = _builder(num_players, seat, specs)
    return jax.jit(start), jax.jit(advance)


@functools.lru_cache(maxsize=32)
def _vector_step(num_players: int, seat: int, specs: tuple):
    """One compiled call for a batch of games: ``(carry, pol_keys, actions, restart,
    deal_seeds, pol_seeds) -> (carry, pol_keys, out)``, each game restarted from its seeds
    (`CoupSeatEnv.reset`'s keys) where ``restart``, else advanced by its action; and
    ``empty(num_envs)``, a first carry (every game is restarted at the first call)."""
    _, _, restart_or_advance, fresh = _builder(num_players, seat, specs, keep_actions=False)
    one = jax.vmap(restart_or_advance)

    def step(carry, pol_keys, actions, restart, deal_seeds, pol_seeds):
        new_pol = jax.vmap(jax.random.PRNGKey)(pol_seeds)
        pol_keys = jnp.where(restart[:, None], new_pol, pol_keys)
        carry, out = one(carry, actions, pol_keys, restart, jax.vmap(jax.random.PRNGKey)(deal_seeds))
        return carry, pol_keys, out

    def empty(num_envs: int):
        """A carry of the right shapes for ``num_envs`` games (zeros), to be restarted."""
        keys = jax.eval_shape(jax.vmap(jax.random.PRNGKey), jax.ShapeDtypeStruct((num_envs,), jnp.int32))
        return jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), jax.eval_shape(jax.vmap(fresh), keys))

    return jax.jit(step), empty


class CoupSeatEnv(gym.Env):
    """One seat of a Coup table against our policies (module doc)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, num_players: int = 4, seat: int = 0, opponents=("random",), render_mode: str | None = None):
        n = rules.check_num_players(num_players)
        if not (isinstance(seat, (int, np.integer)) and 0 <= seat < n):
            raise ValueError(f"seat must be 0..{n - 1}, got {seat!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.num_players, self.seat, self.render_mode = n, int(seat), render_mode
        self.opponents = _opponent_specs(opponents, n, self.seat)
        env = compiled(n)[0]
        self.num_actions = env.num_actions
        self.observation_space = spaces.Box(0.0, OBSERVATION_HIGH, env.observation_shape, np.float32)
        self.action_space = spaces.Discrete(self.num_actions)
        self._start, self._advance = _functions(n, self.seat, self.opponents)
        self._carry = None
        self.match_seed: int | None = None

    def _out(self, out):
        obs, mask, terminated, reward, placements, t = jax.device_get(out)
        self._terminated, self._obs = bool(terminated), np.asarray(obs, np.float32)
        self._mask = np.asarray(mask, bool)
        info = {"action_mask": self._mask.astype(np.int8)}
        if self._terminated:
            self.placements = [int(s) for s in placements]
            info["placements"] = list(self.placements)
        return np.array(self._obs), float(reward) if self._terminated else 0.0, self._terminated, info

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        deal_seed, pol_seed = (int(x) for x in self.np_random.integers(0, 2**31 - 1, size=2))
        self.match_seed, self.placements = deal_seed, None
        self._pol_key = jax.random.PRNGKey(pol_seed)
        self._carry, out = self._start(jax.random.PRNGKey(deal_seed), self._pol_key)
        obs, _, _, info = self._out(out)
        return obs, info

    def step(self, action):
        if self._carry is None:
            raise RuntimeError("call reset() before step()")
        if self._terminated:
            raise RuntimeError("the match is over: call reset()")
        a = int(action)
        if not 0 <= a < self.num_actions:
            raise ValueError(f"action {a} is outside 0..{self.num_actions - 1}")
        self._carry, out = self._advance(self._carry, np.int32(a), self._pol_key)
        obs, reward, terminated, info = self._out(out)
        return obs, reward, terminated, False, info

    def action_masks(self) -> np.ndarray:
        """bool[num_actions]: the legal actions now, as sb3-contrib's ``MaskablePPO`` (and
        other maskable learners) ask for them; the same as ``info["action_mask"]``."""
        if self._carry is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._mask.copy()

    @property
    def actions(self) -> list[tuple[int, int]]:
        """(seat, action id) of every decision of the match so far, opponents' included."""
        if self._carry is None:
            return []
        _, t, acts, seats, _ = jax.device_get(self._carry)
        return [(int(s), int(a)) for s, a in zip(seats[:t], acts[:t])]

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without render_mode; use coupjax.gymnasium.env(render_mode='ansi')")
            return None
        if self._carry is None:
            return "(not started: call reset())"
        obs = readable(self._obs, self.seat, self.num_players)
        text = table_text(obs, None if self._terminated else self.seat, own_cards=True)
        return text + (f"\nover: placements {self.placements}" if self._terminated else "")


class CoupVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` copies of `CoupSeatEnv` in one compiled, batched call (`vector_env`)."""

    metadata = {"render_modes": [], "autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int, num_players: int = 4, seat: int = 0, opponents=("random",)):
        if not (isinstance(num_envs, (int, np.integer)) and num_envs >= 1):
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        single = CoupSeatEnv(num_players, seat, opponents)  # checks the arguments; the spaces
        self.num_envs, self.num_players, self.seat = int(num_envs), single.num_players, single.seat
        self.opponents, self.num_actions, self.render_mode = single.opponents, single.num_actions, None
        self.single_observation_space, self.single_action_space = single.observation_space, single.action_space
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self._step, empty = _vector_step(self.num_players, self.seat, self.opponents)
        self._carry, self._pol_keys = empty(self.num_envs), None
        self._rngs = [None] * self.num_envs
        self._autoreset = np.zeros(self.num_envs, bool)
        self._mask = None

    def _seeds(self, which) -> tuple[np.ndarray, np.ndarray]:
        """(deal, policy) seeds of each game restarted now, drawn as `CoupSeatEnv.reset` draws."""
        deal, pol = np.zeros(self.num_envs, np.int32), np.zeros(self.num_envs, np.int32)
        for i in np.flatnonzero(which):
            deal[i], pol[i] = self._rngs[i].integers(0, 2**31 - 1, size=2)
        return deal, pol

    def _run(self, actions, restart):
        if self._pol_keys is None:
            self._pol_keys = jnp.zeros((self.num_envs, *jax.random.PRNGKey(0).shape), jax.random.PRNGKey(0).dtype)
        deal, pol = self._seeds(restart)
        self._carry, self._pol_keys, out = self._step(self._carry, self._pol_keys, actions, restart, deal, pol)
        obs, mask, terminated, reward, placements, _ = jax.device_get(out)
        self._mask = np.asarray(mask, bool)
        info = {"action_mask": self._mask.astype(np.int8), "_action_mask": np.ones(self.num_envs, bool)}
        terminated = np.asarray(terminated, bool) & ~restart
        if terminated.any():
            info["placements"] = np.full(self.num_envs, None, object)
            for i in np.flatnonzero(terminated):
                info["placements"][i] = [int(s) for s in placements[i]]
            info["_placements"] = terminated.copy()
        rewards = np.where(terminated, np.asarray(reward, np.float64), 0.0)
        return np.asarray(obs, np.float32), rewards, terminated, info

    def reset(self, *, seed=None, options: dict | None = None):
        """Every game restarted; ``seed``: an int (game i gets ``seed + i``, as in
        `gymnasium.vector.SyncVectorEnv`), a list of one per game, or None."""
        seeds = [None] * self.num_envs if seed is None else (
            [seed + i for i in range(self.num_envs)] if isinstance(seed, (int, np.integer)) else list(seed))
        if len(seeds) != self.num_envs:
            raise ValueError(f"reset(seed=...): one seed per game ({self.num_envs}), got {len(seeds)}")
        for i, s in enumerate(seeds):
            if s is not None or self._rngs[i] is None:
                self._rngs[i], _ = gym.utils.seeding.np_random(s)
        if seed is not None:
            self._np_random, self._np_random_seed = gym.utils.seeding.np_random(seeds[0])
        restart = np.ones(self.num_envs, bool)
        obs, _, _, info = self._run(np.zeros(self.num_envs, np.int32), restart)
        self._autoreset = np.zeros(self.num_envs, bool)
        return obs, info

    def step(self, actions):
        """Every game takes its action; a game that ended at the previous step is restarted
        instead (its action ignored; Gymnasium's next-step autoreset)."""
        if self._mask is None:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions).reshape(-1)
        if actions.shape != (self.num_envs,):
            raise ValueError(f"step(actions): one action per game ({self.num_envs}), got shape {actions.shape}")
        restart = self._autoreset.copy()
        bad = ~restart & ((actions < 0) | (actions >= self.num_actions))
        if bad.any():
            raise ValueError(f"action {int(actions[bad][0])} is outside 0..{self.num_actions - 1}")
        obs, rewards, terminated, info = self._run(actions.astype(np.int32), restart)
        self._autoreset = terminated.copy()
        return obs, rewards, terminated, np.zeros(self.num_envs, bool), info

    def action_masks(self) -> np.ndarray:
        """bool[num_envs, num_actions]: the legal actions of every game now (``info["action_mask"]``)."""
        if self._mask is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._mask.copy()


def vector_env(num_envs: int, num_players: int = 4, seat: int = 0, opponents=("random",)) -> CoupVectorEnv:
    """``num_envs`` games of `CoupSeatEnv` stepped together in one compiled call
    (`CoupVectorEnv`, a `gymnasium.vector.VectorEnv` with next-step autoreset): the same
    games, rewards and infos as ``gymnasium.vector.SyncVectorEnv`` of ``num_envs`` single
    envs reset with the same seeds, much faster (docs/adapters.md)."""
    return CoupVectorEnv(num_envs, num_players, seat, opponents)


ENV_ID = "coupjax/Coup-v1"
if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=f"{__name__}:CoupSeatEnv", vector_entry_point=f"{__name__}:CoupVectorEnv")


def env(num_players: int = 4, seat: int = 0, opponents=("random",), render_mode: str | None = None) -> CoupSeatEnv:
    """The single-seat environment (module doc)."""
    return CoupSeatEnv(num_players, seat, opponents, render_mode)
