"""`evals.outsider`: how three copies of one policy treat the fourth seat."""
from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import rollout, rules
from coupjax.match import Match
from coupjax.seat_tables import new_stats
from evals import outsider


def _count(seats, actor_moves, eliminated=()):
    """The tally's counts after one move of seat 0 (``actor_moves``) at a table whose seats
    play ``seats`` (0: the outsider, 1: a copy); the seats in ``eliminated`` are out."""
    revealed = [["duke", "duke"] if s in eliminated else [] for s in range(4)]
    hands = [[] if s in eliminated else [["captain", "contessa"], ["assassin", "ambassador"],
                                         ["captain", "contessa"], ["assassin", "ambassador"]][s] for s in range(4)]
    m = Match(num_players=4, seed=0, hands=hands, revealed=revealed, coins=[7, 7, 7, 7], current_player=0)
    state = jax.tree.map(lambda x: jnp.asarray(x)[None], m.state)
    before = rollout.Tables(state=state, steps=jnp.zeros(1, jnp.int32), seats=jnp.asarray([seats], jnp.int32),
                            it=jnp.int32(0))
    action = rules.action_id(actor_moves, 0, 4)
    moved = rollout.Moved(action=jnp.asarray([action], jnp.int32), logits=jnp.zeros((1, rules.num_actions(4))),
                          served=jnp.asarray([True]))
    aim, stats = outsider.outsider_tally(4)((jnp.zeros((1, 2), jnp.int32), new_stats(1, 4)), before, moved)
    sides = outsider.side_stats(jax.device_get(stats), np.asarray([seats]))
    return np.asarray(aim)[0].tolist() + [side[k] for side in sides for k in outsider.RATE_STATS]


def _aim(*args, **kwargs):
    return _count(*args, **kwargs)[:2]


def test_the_tally_counts_a_copys_aim_only_with_three_left():
    copies_and_outsider_at_2 = [1, 1, 0, 1]
    assert _aim(copies_and_outsider_at_2, "coup:2", eliminated=(3,)) == [1, 0]  # a copy aims at the outsider
    assert _aim(copies_and_outsider_at_2, "coup:1", eliminated=(3,)) == [0, 1]  # at the other copy
    assert _aim(copies_and_outsider_at_2, "steal:2", eliminated=(3,)) == [1, 0]
    assert _aim(copies_and_outsider_at_2, "tax", eliminated=(3,)) == [0, 0]  # aims at no one
    assert _aim(copies_and_outsider_at_2, "coup:2") == [0, 0]  # four left
    assert _aim(copies_and_outsider_at_2, "coup:2", eliminated=(2,)) == [0, 0]  # the outsider is out
    assert _aim([0, 1, 1, 1], "coup:2", eliminated=(3,)) == [0, 0]  # the outsider's own aim


def test_the_tally_counts_each_sides_bluffs_and_their_chances():
    """Seat 0 holds captain and contessa: a tax is a bluff, a steal is not (both with a
    bluff legal); the counts go to the outsider's columns or the copies' by who moved."""
    chances_bluffs = {"tax": [1, 1, 0, 0], "steal:2": [1, 0, 0, 0], "income": [1, 0, 0, 0]}
    for move, want in chances_bluffs.items():
        assert _count([0, 1, 1, 1], move)[2:] == want + [0] * 4, move  # the outsider moved
        assert _count([1, 1, 0, 1], move)[2:] == [0] * 4 + want, move  # a copy moved


def test_a_policy_among_copies_of_itself_gets_its_fair_share(tmp_path):
    """By symmetry, ``random`` against three ``random`` wins about 1/4 and is aimed at about
    half the time with three left (400 tables: both well inside the bounds)."""
    out = outsider.main(["--policy", "random", "--opponents", "random", "--games", "400", "--seed", "7",
                         "--out", str(tmp_path / "o.json")])["random"]
    assert 0.17 < out["wins"] < 0.33
    assert 0.4 < out["targeted_at_outsider"] < 0.6 and out["targeted_actions"] > 200
    assert abs(sum(out["placement"].values()) - 1.0) < 1e-9
    for side in ("outsider", "copies"):  # uniform play bluffs and challenges at the same rates from any seat
        assert 0.3 < out[side]["bluff_rate"] < 0.9 and 0.1 < out[side]["challenge_rate"] < 0.9
    assert abs(out["outsider"]["bluff_rate"] - out["copies"]["bluff_rate"]) < 0.1
    assert json.loads((tmp_path / "o.json").read_text())["random"] == out


def test_a_bad_spec_is_a_one_line_error(capsys):
    with pytest.raises(SystemExit):
        outsider.main(["--policy", "no_such_bot", "--opponents", "random", "--games", "4"])
    assert "no_such_bot" in capsys.readouterr().err
