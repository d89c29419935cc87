"""PettingZoo's own render and seed checks on the AEC adapter (its ``api_test`` runs in
tests/test_adapters.py): ``render_mode="human"`` prints the table as text, as the
classic card games do, and the same seed gives the same game."""
from __future__ import annotations

import pytest

pettingzoo_test = pytest.importorskip("pettingzoo.test")

from coupjax import pettingzoo as cp  # noqa: E402


def test_render_test_passes_and_human_mode_prints_the_table(capsys):
    pettingzoo_test.render_test(cp.env)
    out = capsys.readouterr().out
    assert "player_0" in out and "coins" in out
    human = cp.env(render_mode="human")
    human.reset(seed=3)
    capsys.readouterr()
    assert human.render() is None
    text = capsys.readouterr().out
    assert text.count("coins") == 4 and "to move" in text
    with pytest.raises(ValueError, match="'ansi' or 'human'"):
        cp.env(render_mode="rgb_array")


def test_seed_test_passes():
    pettingzoo_test.seed_test(cp.env, num_cycles=40)
