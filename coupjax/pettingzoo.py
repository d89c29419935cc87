"""PettingZoo AEC adapter: ``coupjax.pettingzoo.env(num_players=4)``.

Agents ``player_0 .. player_{n-1}`` are the seats; ``agent_selection`` is the engine's
``current_player`` (every decision, reactions included, is its own step).  An
observation is ``{"observation": float32[obs], "action_mask": int8[A]}``: the seat's own
view (`coupjax.game.views.observe`, parsed by `coupjax.observation.parse`) and its legal
actions (all zero when it is not the seat to move).  Actions are the engine's ids
(`coupjax.rules`); an id outside the mask forfeits as the rules say (an id outside
``0..A-1`` raises).

Rewards are the engine's: a seat eliminated mid-match is terminated at once with
``-1/(n-1)`` (it cannot place first), and at the end the winner gets ``+1`` and the
other survivors ``-1/(n-1)``, so each agent's total is its `Env` reward.  At the end
every agent's info holds ``placements`` (`coupjax.game.board.placements`).

A match is the one ``Match(num_players, seed=env.match_seed)`` plays with the same
actions (same deal and step keys), so ``env.actions`` (seat, action id) replays it.
Needs the ``pettingzoo`` extra: ``pip install "coupjax[pettingzoo]"`` (from a checkout: ``pip install -e ".[pettingzoo]"``).
"""
from __future__ import annotations

import functools

import jax
import numpy as np

try:
    from gymnasium import logger, spaces
    from pettingzoo import AECEnv
    from pettingzoo.utils.wrappers import OrderEnforcingWrapper
except ImportError as err:  # pragma: no cover - depends on the install
    raise ImportError(f"coupjax.pettingzoo needs PettingZoo: pip install \"coupjax[pettingzoo]\" ({err})") from None

from coupjax import compile_cache
from coupjax import rules
from coupjax.botarena.protocol import OBSERVATION_HIGH, readable, table_text

# Like every coupjax command: compiled functions are kept between processes, so a second
# start of an RL script loads the adapter instead of compiling it (COUPJAX_CACHE_DIR=off
# turns it off; a cache folder the user gave JAX is kept).
compile_cache.enable()
from coupjax.game import board
from coupjax.match import compiled


@functools.lru_cache(maxsize=None)
def _functions(num_players: int):
    """(start, advance, observe) jitted once per table size, keyed like `coupjax.match.Match`."""
    env = compiled(num_players)[0]

    def facts(s):
        return s, (s.current_player, s.terminated, s.rewards, board.alive(s), s.observation, s.legal_action_mask)

    def start(key):
        return facts(env.init(jax.random.fold_in(key, 0)))

    def advance(state, action, key, t):
        return facts(env.step(state, action, jax.random.fold_in(key, t + 1)))

    return jax.jit(start), jax.jit(advance), jax.jit(env.observe)


class CoupAECEnv(AECEnv):
    """Coup for ``num_players`` seats as a PettingZoo AEC environment (module doc)."""

    metadata = {"name": "coup_v1", "render_modes": ["ansi", "human"], "is_parallelizable": False}

    def __init__(self, num_players: int = 4, render_mode: str | None = None):
        super().__init__()
        n = rules.check_num_players(num_players)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None, 'ansi' or 'human', got {render_mode!r}")
        self.num_players, self.render_mode = n, render_mode
        env = compiled(n)[0]
        self.num_actions, obs_size = env.num_actions, env.observation_shape[0]
        self.possible_agents = [f"player_{s}" for s in range(n)]
        self.agent_name_mapping = {a: s for s, a in enumerate(self.possible_agents)}
        self.observation_spaces = {a: spaces.Dict({
            "observation": spaces.Box(0.0, OBSERVATION_HIGH, (obs_size,), np.float32),
            "action_mask": spaces.Box(0, 1, (self.num_actions,), np.int8)}) for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(self.num_actions) for a in self.possible_agents}
        self._start, self._advance, self._observe = _functions(n)
        self._rng = None
        self.match_seed: int | None = None
        self.actions: list[tuple[int, int]] = []

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        self.match_seed = int(self._rng.integers(0, 2**31 - 1))
        self._key = jax.random.PRNGKey(self.match_seed)
        self._state, facts = self._start(self._key)
        self._t, self.actions = 0, []
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._read(facts)
        self.agent_selection = self.possible_agents[self._current]

    def _read(self, facts) -> None:
        current, terminated, rewards, alive, obs, mask = jax.device_get(facts)
        self._current, self._done = int(current), bool(terminated)
        self._final_rewards, self._alive, self._obs, self._mask = rewards, alive, obs, mask

    def observe(self, agent):
        seat = self.agent_name_mapping[agent]
        if seat == self._current and not self._done:
            return {"observation": np.array(self._obs, np.float32), "action_mask": self._mask.astype(np.int8)}
        obs = np.asarray(jax.device_get(self._observe(self._state, np.int32(seat))), np.float32)
        return {"observation": obs, "action_mask": np.zeros(self.num_actions, np.int8)}

    def step(self, action) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        a = int(action)
        if not 0 <= a < self.num_actions:
            raise ValueError(f"action {a} is outside 0..{self.num_actions - 1}")
        seat = self.agent_name_mapping[agent]
        self._state, facts = self._advance(self._state, np.int32(a), self._key, np.int32(self._t))
        self._t += 1
        self.actions.append((seat, a))
        self._read(facts)
        self._cumulative_rewards[agent] = 0.0
        lose = -1.0 / (self.num_players - 1)
        for other in self.agents:
            s = self.agent_name_mapping[other]
            if self._done:
                self.rewards[other] = float(self._final_rewards[s])
                self.terminations[other] = True
            elif not self._alive[s] and not self.terminations[other]:
                self.rewards[other], self.terminations[other] = lose, True
            else:
                self.rewards[other] = 0.0
        if self._done:
            placements = [int(s) for s in self.placements]
            for other in self.agents:
                self.infos[other] = {"placements": placements,
                                     "placement": placements.index(self.agent_name_mapping[other]) + 1}
        else:
            self.agent_selection = self.possible_agents[self._current]
        self._accumulate_rewards()
        self._deads_step_first()

    @property
    def placements(self):
        """Seats in finishing order (`coupjax.game.board.placements`); None before the end."""
        return [int(s) for s in jax.device_get(board.placements(self._state))] if self._done else None

    def render(self):
        """The table from the seat to move, as text: returned (``ansi``) or printed on
        stdout (``human``, as PettingZoo's classic card games do), else None with a warning."""
        if self.render_mode is None:
            logger.warn("render() called without render_mode; use coupjax.pettingzoo.env(render_mode='ansi')")
            return None
        seat = self._current
        obs = readable(self._observe(self._state, np.int32(seat)), seat, self.num_players)
        text = table_text(obs, None if self._done else seat, self.possible_agents)
        text += f"\nover: placements {self.placements}" if self._done else ""
        if self.render_mode == "human":
            print(text, flush=True)
            return None
        return text

    def close(self) -> None:
        pass


def env(num_players: int = 4, render_mode: str | None = None):
    """The AEC environment, wrapped in PettingZoo's order-enforcing wrapper (step and
    observe only after reset); ``.unwrapped`` is the `CoupAECEnv`."""
    return OrderEnforcingWrapper(CoupAECEnv(num_players, render_mode=render_mode))


raw_env = CoupAECEnv
