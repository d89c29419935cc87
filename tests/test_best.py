"""`best`: the scenario count the issue asks for, the challenges its network alone does
not make, and a layer that moves the network's choice only where its docstring says.

The leak test and the policy interface are checked with every registered policy in
tests/test_policies.py.
"""
from __future__ import annotations

import jax
import numpy as np
import pytest

from coupjax import rules, testing
from coupjax.env import Env
from coupjax.game import board
from coupjax.game.tables import tables
from coupjax.policies.spec import resolve_policy
from evals.report.decision_benchmark import build_all, score_policy

NUM_PLAYERS = 4


@pytest.fixture(scope="module")
def env():
    return Env(NUM_PLAYERS)


@pytest.fixture(scope="module")
def built():
    return build_all()


@pytest.fixture(scope="module")
def best(env):
    return resolve_policy("best", env)


def _scores(policy, built):
    """Scenario name -> whether the policy's top play is a sound one (one compiled call
    per scenario: the same shapes, so one compilation)."""
    return {name: row["hit"] for name, row in score_policy(jax.jit(policy), built).items()}


def test_best_plays_the_sound_move_in_at_least_28_of_the_31_scenarios(best, built):
    hits = _scores(best, built)
    assert len(hits) == 31
    missed = sorted(name for name, hit in hits.items() if not hit)
    assert len(hits) - len(missed) >= 28, missed


def test_the_layer_makes_the_challenges_and_true_blocks_its_network_does_not(best, built):
    """`best` plays every reaction scenario soundly (challenges, true blocks, passes);
    its network alone makes almost none of the challenges, so the layer is what does."""
    hits = _scores(best, built)
    net = _scores(best.network, built)
    reacting = [s.name for s, _ in built if s.kind == "react"]
    assert reacting and all(hits[name] for name in reacting), [n for n in reacting if not hits[n]]
    challenges = [s.name for s, _ in built if s.advisor]
    assert len(challenges) >= 10 and sum(net[name] for name in challenges) <= 2


def test_the_layer_moves_the_network_only_to_the_choices_it_names(env, best):
    """On 256 mid-game positions of every phase, where `best` differs from its network it
    plays: at a main action a kill, a tax or foreign aid; at a reaction a challenge or a
    block; otherwise it is losing or exchanging cards. And it differs somewhere."""
    states = testing.sample_positions(env, 256, seed=21)  # the size test_policies samples: one compiled sampler
    keys = jax.random.split(jax.random.PRNGKey(0), 256)
    run = jax.jit(jax.vmap(lambda k, s: (best(k, s).argmax(), best.network(k, s).argmax())))
    mine, net = map(np.asarray, run(keys, states))
    phase = np.asarray(board.phase(states))
    T = tables(NUM_PLAYERS)
    kind = np.asarray(T.main_kind)[mine]
    block = np.asarray(T.action_block_role)[mine] >= 0
    moved = mine != net
    assert moved.any()
    allowed = np.select(
        [phase == rules.PH_ACTION, (phase == rules.PH_REACT) | (phase == rules.PH_ANSWER_BLOCK)],
        [np.isin(kind, [rules.COUP, rules.ASSASSINATE, rules.TAX, rules.FOREIGN_AID]),
         (mine == T.challenge_id) | block],
        True)
    assert allowed[moved].all(), list(zip(phase[moved & ~allowed], mine[moved & ~allowed]))


def test_best_runs_the_same_layer_on_another_export(env, built):
    """``best:DIR``: the layer on the committed DQN reference export (the spec a user
    gives for their own run)."""
    other = resolve_policy("best:evals/reference/dqn/export", env)
    assert other.network.info["kind"] == "dqn"
    assert sum(_scores(other, built).values()) >= 28
