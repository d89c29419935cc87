"""evals.seat_table: shared draws, exact keys, and the JSON it writes."""
import json

import numpy as np

from coupjax import arena
from coupjax.policies.pools import OPPONENTS
from evals import seat_table as S


def test_every_policy_faces_the_same_draws():
    seats, opp = arena.draw_tables(50, 4, seed=3)
    a = arena.seat_index(seats, opp, tested=6, num_players=4)
    b = arena.seat_index(seats, opp, tested=7, num_players=4)
    assert (a[np.arange(50), seats] == 6).all() and (b[np.arange(50), seats] == 7).all()
    mask = np.ones_like(a, bool)
    mask[np.arange(50), seats] = False
    assert (a[mask] == b[mask]).all() and (a[mask] < len(OPPONENTS)).all()


def test_seat_table_cli_writes_the_documented_keys(tmp_path):
    out = tmp_path / "table.json"
    S.main(["--policy", "random", "--policy", "honest", "--games", "24", "--seed", "1", "--chunk", "24",
            "--out", str(out)])
    table = json.loads(out.read_text())
    assert list(table) == ["random", "honest"]
    for row in table.values():
        assert set(row) == {"win_rate", "ci95_low", "ci95_high", "mean_placement", "action_entropy", "games", "wins"}
        assert row["games"] == 24 and 0 <= row["ci95_low"] <= row["win_rate"] <= row["ci95_high"] <= 1
        assert 1 <= row["mean_placement"] <= 4
    assert table["random"]["action_entropy"] > table["honest"]["action_entropy"] > 0
