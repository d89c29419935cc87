"""Differential test: the JAX engine against the plain-Python model, step by step.

Both are driven by the same protocol names: random legal play, stalling play that
reaches the 200-turn cap, and injected names outside the legal set (forfeits).  The
engine runs all games in one vmapped step; after each step the model's hidden cards
are synced from the engine, since reshuffles draw different random cards.
"""
from __future__ import annotations

import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import rules as R
from coupjax.match import compiled
from tests.reference_model import RefGame

ROLE = R.ROLES


def _stalling_choice(rng, legal):
    """Never adds coins to the table (exchange, steal, pass): games run to the cap."""
    for pick in ("exchange", "pass"):
        if pick in legal and rng.random() < 0.6:
            return pick
    steals = [a for a in legal if a.startswith("steal:")]
    if steals and rng.random() < 0.8:
        return rng.choice(steals)
    calm = [a for a in legal if not a.startswith(("challenge", "income", "tax", "foreign_aid", "assassinate", "coup"))]
    return rng.choice(calm or legal)


def run_differential(num_players: int, num_games: int, seed: int, illegal_rate=0.01, stall_share=0.1):
    env, init, _, _ = compiled(num_players)
    n, A = num_players, env.num_actions
    step = jax.jit(jax.vmap(env.step))
    placements = jax.jit(jax.vmap(env.placements))
    names = [[R.action_name(a, seat, n) for a in range(A)] for seat in range(n)]
    every_name = R.all_protocol_names(n)
    keys = jax.random.split(jax.random.PRNGKey(seed), num_games)
    state = jax.vmap(env.init)(keys)
    st = jax.device_get(state)
    games, rngs, stalls = [], [], []
    for i in range(num_games):
        hands = [[ROLE[c] for c in row] for row in st._hands[i]]
        deck = [ROLE[c] for c in st._deck[i][: st._deck_size[i]][::-1]]
        games.append(RefGame(n, hands=hands, deck=deck, seed=seed * 100_003 + i))
        rngs.append(random.Random(seed * 7919 + i))
        stalls.append(i < stall_share * num_games)
    stats = {"steps": 0, "forfeits": 0, "capped": 0, "games": num_games}
    key = jax.random.PRNGKey(seed + 1)
    active = list(range(num_games))
    while active:
        actions = np.zeros(num_games, np.int32)
        chosen = {}
        for i in active:
            g, rng = games[i], rngs[i]
            legal = g.legal_actions()
            if rng.random() < (illegal_rate / 20 if stalls[i] else illegal_rate):
                name = rng.choice([x for x in every_name if x not in legal])
                stats["forfeits"] += 1
            elif stalls[i]:
                name = _stalling_choice(rng, legal)
            else:
                name = rng.choice(legal)
            chosen[i] = name
            actions[i] = R.action_id(name, g.current_player, n)
        key, sub = jax.random.split(key)
        state = step(state, jnp.asarray(actions), jax.random.split(sub, num_games))
        st = jax.device_get(state)
        places = np.asarray(placements(state))
        still = []
        for i in active:
            g = games[i]
            g.play(chosen[i])
            stats["steps"] += 1
            where = f"game {i} step {stats['steps']} after {chosen[i]!r}"
            assert g.done == bool(st.terminated[i]), where
            assert g.coins == [int(c) for c in st._coins[i]], where
            assert g.revealed == [[ROLE[c] for c in row if c >= 0] for row in st._revealed[i]], where
            if g.done:
                assert g.placements == [int(s) for s in places[i]], where
                assert g.winner == int(places[i][0]), where
                assert st.rewards[i][g.winner] == 1.0, where
                stats["capped"] += int(g.turn >= R.TURN_CAP)
                continue
            assert g.turn == int(st._turn[i]), where
            assert g.phase == R.PHASES[int(st._phase[i])], where
            assert g.current_player == int(st.current_player[i]), where
            g.set_hidden(
                [[ROLE[c] for c in row if c >= 0] for row in st._hands[i]],
                [ROLE[c] for c in st._deck[i][: st._deck_size[i]][::-1]],
                [ROLE[c] for c in st._drawn[i] if c >= 0],
            )
            engine_legal = sorted(names[g.current_player][a] for a in np.flatnonzero(st.legal_action_mask[i]))
            assert g.legal_actions() == engine_legal, where
            still.append(i)
        active = still
    return stats


def test_differential_four_players_2000_games():
    stats = run_differential(4, 2000, seed=0)
    assert stats["forfeits"] > 200
    assert stats["capped"] >= 50


@pytest.mark.parametrize("num_players", [2, 3, 5, 6])
def test_differential_other_table_sizes(num_players):
    stats = run_differential(num_players, 150, seed=num_players, stall_share=0.1)
    assert stats["forfeits"] > 0 and stats["capped"] > 0
