"""The PettingZoo AEC adapter and the Gymnasium single-seat wrapper: each passes its
library's own checker, and random games through each (illegal actions included) end
with the placements the engine gives when `Match` replays the same actions."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

from coupjax import rules
from coupjax.match import Match

pettingzoo_test = pytest.importorskip("pettingzoo.test")
gym = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env  # noqa: E402

from coupjax import gymnasium as cg  # noqa: E402
from coupjax import pettingzoo as cp  # noqa: E402

# What api_test says of every env whose observation is the {"observation", "action_mask"}
# dict PettingZoo asks for, unless the env is one of its own classic games (by name).
DICT_OBSERVATION_NOTES = ("Observation is not a NumPy array",
                          "Observation space for each agent probably should be gymnasium.spaces.box")


def replay(num_players: int, match_seed: int, actions) -> Match:
    """The engine's own match: `Match` with the adapter's seed, playing the same actions by name."""
    m = Match(num_players, seed=match_seed)
    for seat, a in actions:
        assert m.current_player == seat
        m.play(rules.action_name(a, seat, num_players))
    return m


def pick(rng, mask, illegal_rate):
    legal = np.flatnonzero(mask)
    if rng.random() < illegal_rate:
        return int(rng.choice(np.flatnonzero(~mask.astype(bool))))
    return int(rng.choice(legal))


# ------------------------------------------------------------------ PettingZoo
def test_pettingzoo_api_test_passes_without_other_warnings():
    env = cp.env(num_players=4, render_mode="ansi")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pettingzoo_test.api_test(env, num_cycles=400)
    other = [m for m in {str(w.message) for w in caught} if not m.startswith(DICT_OBSERVATION_NOTES)]
    assert not other, other
    env.reset(seed=1)
    text = env.render()
    assert "player_0 to move" in text and text.count("coins") == 4


@pytest.mark.parametrize("num_players", [4, pytest.param(3, marks=pytest.mark.slow)])
def test_pettingzoo_games_end_as_the_engine_says(num_players):
    """100 random games at 4 players (30 at 3), 2% of the moves illegal (forfeits): each
    agent's total reward is the engine's reward of its seat, the agents leave when
    eliminated, and the placements are those of the replayed match."""
    env = cp.env(num_players=num_players)
    rng = np.random.default_rng(0)
    games, forfeits = (100 if num_players == 4 else 30), 0
    for g in range(games):
        env.reset(seed=g)
        totals = dict.fromkeys(env.possible_agents, 0.0)
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            totals[agent] += reward
            if terminated or truncated:
                env.step(None)
                continue
            assert obs["action_mask"].any() and env.unwrapped.agent_name_mapping[agent] == int(agent.split("_")[1])
            env.step(pick(rng, obs["action_mask"], 0.02))
        raw = env.unwrapped
        m = replay(num_players, raw.match_seed, raw.actions)
        assert m.done and raw.placements == m.placements() == info["placements"]
        forfeits += sum(e["forfeit"] for e in m.events)
        engine = np.asarray(m.state.rewards)
        for agent, total in totals.items():
            seat = raw.agent_name_mapping[agent]
            assert total == pytest.approx(float(engine[seat])), (g, agent)
        assert totals[f"player_{m.placements()[0]}"] == pytest.approx(1.0)
    assert forfeits > 0


def test_pettingzoo_same_seed_same_match():
    env = cp.env()
    a = []
    for _ in range(2):
        env.reset(seed=5)
        for agent in env.agent_iter(20):
            obs, *_ = env.last()
            env.step(int(np.flatnonzero(obs["action_mask"])[0]) if obs["action_mask"].any() else None)
        a.append((env.unwrapped.match_seed, list(env.unwrapped.actions)))
    assert a[0] == a[1]


# ------------------------------------------------------------------ Gymnasium
SEAT, OPPONENTS = 1, ("random", "honest", "random")  # one compiled loop for the tests below


def test_gymnasium_check_env_passes_without_warnings():
    env = gym.make(cg.ENV_ID, num_players=4, seat=SEAT, opponents=list(OPPONENTS))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)  # with its spec: render modes and close checked too
    assert not [str(w.message) for w in caught]


def test_gymnasium_games_end_as_the_engine_says():
    """100 random episodes, 3% illegal actions: every episode is a whole match, the
    reward is the engine's reward of the seat, the placements are those of the replayed
    match, and an illegal action eliminates the seat (a forfeit)."""
    seat = SEAT
    env = cg.env(num_players=4, seat=seat, opponents=list(OPPONENTS))
    rng = np.random.default_rng(seat)
    forfeits = 0
    for g in range(100):
        obs, info = env.reset(seed=100 + g)
        assert env.observation_space.contains(obs)
        terminated, steps = False, 0
        while not terminated:
            mask = info["action_mask"]
            a = pick(rng, mask, 0.03)
            obs, reward, terminated, truncated, info = env.step(a)
            assert not truncated and env.observation_space.contains(obs)
            steps += 1
            if not mask[a]:  # a forfeit: the seat is out, the match was played to its end
                assert terminated and reward < 0
                forfeits += 1
        m = replay(4, env.match_seed, env.actions)
        assert m.done and env.placements == m.placements() == info["placements"]
        assert reward == pytest.approx(float(np.asarray(m.state.rewards)[seat]))
        assert steps == sum(s == seat for s, _ in env.actions)
    assert forfeits > 0


def test_gymnasium_opponents_render_and_errors():
    assert cg.env(num_players=3, seat=2, opponents="honest").opponents == ("honest", "honest")
    env = cg.env(num_players=4, seat=SEAT, opponents=list(OPPONENTS), render_mode="ansi")
    assert env.render().startswith("(not started")
    env.reset(seed=0)
    assert f"seat {SEAT} to move" in env.render() and f"seat {SEAT} holds" in env.render()
    with pytest.raises(ValueError, match="one policy spec for every other seat"):
        cg.env(num_players=4, opponents=["random", "honest"])
    with pytest.raises(ValueError, match="seat must be"):
        cg.env(num_players=4, seat=4)
    with pytest.raises(ValueError, match="outside"):
        env.step(10_000)


def test_import_coupjax_needs_neither_library():
    code = ("import sys, coupjax, coupjax.botarena, coupjax.cli; "
            "bad = [m for m in ('pettingzoo', 'gymnasium') if m in sys.modules]; assert not bad, bad")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]


def test_gymnasium_action_masks_are_the_info_mask():
    """``action_masks()`` (what sb3-contrib's MaskablePPO calls) is the info's mask, as bools,
    after reset and after every step; rewards are Python floats."""
    env = cg.env(num_players=4, seat=0, opponents="random")
    with pytest.raises(RuntimeError, match="reset"):
        env.action_masks()
    obs, info = env.reset(seed=2)
    rng = np.random.default_rng(0)
    done = False
    while not done:
        mask = env.action_masks()
        assert mask.dtype == bool and np.array_equal(mask, info["action_mask"].astype(bool)) and mask.any()
        obs, reward, done, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        assert type(reward) is float


# ------------------------------------------------------------------ Gymnasium, batched
def _actions(rng, masks, illegal_rate=0.02):
    return np.array([pick(rng, m, illegal_rate) if not m.all() else int(rng.integers(len(m))) for m in masks])


def test_vector_env_is_sync_vector_env_of_the_single_env():
    """The batched env gives exactly what ``SyncVectorEnv`` of the single env gives with
    the same seeds and actions (2% illegal): observations, rewards (float64), terminations,
    truncations and infos (masks, placements), across next-step autoresets; same seed,
    same games."""
    from gymnasium.utils.env_checker import data_equivalence

    n = 3
    kw = dict(num_players=4, seat=SEAT, opponents=list(OPPONENTS))
    vec = cg.vector_env(n, **kw)
    sync = gym.vector.SyncVectorEnv([lambda: cg.env(**kw) for _ in range(n)])
    assert vec.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP == sync.metadata["autoreset_mode"]
    assert vec.observation_space == sync.observation_space and vec.action_space == sync.action_space
    assert vec.single_observation_space == sync.single_observation_space
    with pytest.raises(RuntimeError, match="reset"):
        vec.step(np.zeros(n, np.int64))
    a, b = vec.reset(seed=11), sync.reset(seed=11)
    assert data_equivalence(a, b, exact=True)
    rng, ends, autoresets = np.random.default_rng(3), 0, 0
    info = a[1]
    for step in range(150):
        actions = _actions(rng, info["action_mask"])
        was_over = vec._autoreset.copy()
        a, b = vec.step(actions), sync.step(actions)
        for part, x, y in zip(("obs", "reward", "terminated", "truncated", "info"), a, b):
            assert data_equivalence(x, y, exact=True), (step, part, x, y)
        obs, reward, terminated, truncated, info = a
        assert vec.observation_space.contains(obs) and reward.dtype == np.float64 and not truncated.any()
        assert np.array_equal(vec.action_masks(), info["action_mask"].astype(bool))
        assert not terminated[was_over].any() and not reward[was_over].any()  # the restarted games
        ends, autoresets = ends + int(terminated.sum()), autoresets + int(was_over.sum())
        for i in np.flatnonzero(terminated):
            assert info["_placements"][i] and reward[i] == pytest.approx(1.0 if info["placements"][i][0] == SEAT else -1 / 3)
    assert ends >= 5 and autoresets >= 4
    again = cg.vector_env(n, **kw)
    assert data_equivalence(again.reset(seed=11), vec.reset(seed=11), exact=True)
    with pytest.raises(ValueError, match="one action per game"):
        vec.step(np.zeros(n + 1, np.int64))
    with pytest.raises(ValueError, match="outside"):
        vec.step(np.full(n, 10_000))
    with pytest.raises(ValueError, match="num_envs"):
        cg.vector_env(0)
    stats = gym.wrappers.vector.RecordEpisodeStatistics(vec)  # Gymnasium's vector wrappers read its autoreset mode
    obs, info = stats.reset(seed=2)
    while "episode" not in info:
        obs, reward, terminated, truncated, info = stats.step(_actions(rng, info["action_mask"], 0.0))
    ended = info["_episode"]
    assert np.array_equal(info["episode"]["r"][ended], reward[ended]) and (info["episode"]["l"][ended] >= 1).all()


def test_vector_env_passes_gymnasiums_environment_match_check():
    """``gymnasium.utils.env_match.check_environments_match`` (sampled actions, resets with
    the seed after every end) between the batched env and ``SyncVectorEnv``, and
    ``gymnasium.make_vec`` by id builds the batched env (its vector entry point)."""
    from gymnasium.utils.env_match import check_environments_match

    kw = dict(num_players=4, seat=SEAT, opponents=list(OPPONENTS))
    check_environments_match(cg.vector_env(1, **kw), gym.vector.SyncVectorEnv([lambda: cg.env(**kw)]),
                             num_steps=60, seed=4)
    made = gym.make_vec(cg.ENV_ID, num_envs=2, **kw)
    assert isinstance(made.unwrapped, cg.CoupVectorEnv) and made.num_envs == 2
    sync = gym.make_vec(cg.ENV_ID, num_envs=2, vectorization_mode="sync", **kw)
    assert isinstance(sync, gym.vector.SyncVectorEnv)


def test_gymnasium_module_prefixed_id_works_in_a_fresh_process():
    """``gymnasium.make("coupjax.gymnasium:coupjax/Coup-v1")`` imports the module itself:
    no ``import coupjax.gymnasium`` first (Gymnasium 1.x has no plugin entry points)."""
    code = ("import sys, gymnasium; assert 'coupjax.gymnasium' not in sys.modules; "
            "env = gymnasium.make('coupjax.gymnasium:coupjax/Coup-v1', num_players=3, seat=2, opponents='honest'); "
            "vec = gymnasium.make_vec('coupjax.gymnasium:coupjax/Coup-v1', num_envs=4, num_players=3); "
            "print(env.spec.id, type(env.unwrapped).__name__, env.unwrapped.opponents, type(vec).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["coupjax/Coup-v1", "CoupSeatEnv", "('honest',", "'honest')", "CoupVectorEnv"]


@pytest.mark.slow
def test_maskable_ppo_trains_on_the_env():
    """sb3-contrib's ``MaskablePPO`` (the ``[sb3]`` extra, not in ``[dev]``) trains on the
    single-seat env for 4,096 steps, reading ``action_masks()``; its masked choices are
    then legal at every decision of 20 matches.  Quick twin:
    test_gymnasium_action_masks_are_the_info_mask."""
    pytest.importorskip("sb3_contrib", reason="needs the [sb3] extra: pip install -e '.[sb3]' (it brings PyTorch)")
    from sb3_contrib import MaskablePPO

    env = cg.env(num_players=4, seat=0, opponents="random")
    model = MaskablePPO("MlpPolicy", env, n_steps=512, batch_size=128, n_epochs=2, seed=0, verbose=1, device="cpu")
    model.learn(total_timesteps=4096)
    assert model.num_timesteps >= 4096
    rewards = []
    for g in range(20):
        obs, info = env.reset(seed=1000 + g)
        done = False
        while not done:
            mask = env.action_masks()
            action, _ = model.predict(obs, action_masks=mask, deterministic=False)
            assert mask[int(action)], (g, int(action))
            obs, reward, done, _, info = env.step(int(action))
        rewards.append(reward)
    assert len(rewards) == 20 and all(r == 1.0 or r == pytest.approx(-1 / 3) for r in rewards)
    print(f"MaskablePPO after {model.num_timesteps} steps: won {rewards.count(1.0)} of 20 matches against random")
