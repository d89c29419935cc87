"""The arena: one loop, one definition of winning, results independent of chunking,
head-to-head tables, parameters as arguments, and the seat-table command."""
from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import seat_tables
from coupjax.env import Env
from coupjax.game import board
from coupjax.policies import make_policy, resolve_policy
from coupjax.policies.common import masked_logits
from coupjax.policies.pools import OPPONENTS
from coupjax.seeds import TUNING_SEEDS
from evals import seat_table

ROOT = Path(__file__).resolve().parents[1]

N = 4


@pytest.fixture(scope="module")
def env():
    return Env(N)


def test_every_policy_faces_the_same_draws():
    seats, opp = seat_tables.draw_tables(50, 4, seed=3)
    a = seat_tables.seat_index(seats, opp, tested=6, num_players=4)
    b = seat_tables.seat_index(seats, opp, tested=7, num_players=4)
    assert (a[np.arange(50), seats] == 6).all() and (b[np.arange(50), seats] == 7).all()
    mask = np.ones_like(a, bool)
    mask[np.arange(50), seats] = False
    assert (a[mask] == b[mask]).all() and (a[mask] < len(OPPONENTS)).all()
    # the opponents fill the other seats in seat order
    g = 0
    others = [s for s in range(4) if s != seats[g]]
    assert a[g, others].tolist() == opp[g].tolist()


def test_results_do_not_depend_on_the_chunk_size(env):
    one = seat_tables.play_tables(env, ["honest"], 24, seed=5, chunk=24)["honest"]
    three = seat_tables.play_tables(env, ["honest"], 24, seed=5, chunk=7)["honest"]
    assert one.pop("action_entropy") == pytest.approx(three.pop("action_entropy"), rel=1e-6)  # summation order
    assert one == three


def test_the_one_definition_of_winning(env):
    """A win is placement 1 by the rules' ranking; placements are a permutation."""
    run = seat_tables.make_table_runner(env, [make_policy("random", env), make_policy("honest", env)])
    idx = jnp.asarray(np.random.default_rng(0).integers(0, 2, (64, N)), jnp.int32)
    state, stats = run(seat_tables.game_keys(3, 0, 64), idx)
    place = np.asarray(stats["placement"])
    assert np.asarray(stats["finished"]).all()
    assert (np.sort(place, axis=1) == np.arange(1, N + 1)).all()
    np.testing.assert_array_equal(np.asarray(stats["wins"]), place == 1)
    winners = np.asarray(jax.vmap(board.winner)(state))
    np.testing.assert_array_equal(np.argmax(place == 1, axis=1), winners)
    row = seat_tables.summarize(np.array([1, 0, 0, 1]), np.array([1, 3, 2, 1]))
    assert row["win_rate"] == 0.5 and row["mean_placement"] == 1.75 and row["wins"] == 2 and row["games"] == 4
    assert row["ci95_low"] < 0.5 < row["ci95_high"]


def test_game_counts_share_one_compilation(env):
    """Tables of 17 to 32 games are played in one padded batch of 32 (`bucket_size`): the
    runner is traced once for all of them, and padding changes no result."""
    traces = []
    honest = make_policy("honest", env)

    def counted(key, state):
        traces.append(1)  # runs when the runner is traced, not per game
        return honest(key, state)

    play = seat_tables.make_seat_table(env, ["counted"], opponents="random", policies={"counted": counted})
    rows = {g: play(g, seed=4)["counted"] for g in (17, 24, 32)}
    assert len(traces) == 1
    assert [rows[g]["games"] for g in (17, 24, 32)] == [17, 24, 32]
    assert [seat_tables.bucket_size(g) for g in (1, 16, 17, 32, 33, 1000)] == [16, 16, 32, 32, 64, 1024]
    again = seat_tables.make_seat_table(env, ["counted"], opponents="random", policies={"counted": honest})
    chunked = again(24, seed=4, chunk=8)["counted"]  # the same 24 tables, chunked without padding
    assert chunked.pop("action_entropy") == pytest.approx(rows[24].pop("action_entropy"), rel=1e-6)
    assert chunked == rows[24]


def test_head_to_head_seats_three_copies(env):
    rows = seat_tables.play_tables(env, ["random"], 16, seed=5, opponents="honest")
    rows_pool = seat_tables.play_tables(env, ["random"], 16, seed=5)
    assert rows["random"]["games"] == 16
    assert rows["random"] != rows_pool["random"]
    # honest against three honest copies wins about a quarter of its tables by symmetry
    sym = seat_tables.play_tables(env, ["honest"], 400, seed=9, opponents="honest")["honest"]
    assert sym["ci95_low"] < 0.25 < sym["ci95_high"]


def test_parameters_are_arguments_of_the_runner(env):
    """`ParamPolicy`: new parameters give new play without a new compilation."""
    def apply(prm, key, state):
        del key
        return masked_logits(jnp.exp(prm * jnp.arange(env.num_actions) / env.num_actions), state.legal_action_mask)

    run = seat_tables.make_table_runner(env, [make_policy("honest", env), seat_tables.ParamPolicy(apply, jnp.float32(0.0))])
    idx = jnp.asarray([[1, 0, 0, 0]] * 8, jnp.int32)
    keys = seat_tables.game_keys(1, 0, 8)
    _, a = run(keys, idx)
    _, b = run(keys, idx, params=(jnp.float32(40.0),))
    assert not np.array_equal(np.asarray(a["steps"]), np.asarray(b["steps"]))


def test_policy_specs_resolve(env, tmp_path, monkeypatch):
    assert callable(resolve_policy("belief_ev", env))
    mod = tmp_path / "mybots.py"
    mod.write_text("import jax.numpy as jnp\n"
                   "def always_first(key, state):\n"
                   "    return jnp.where(state.legal_action_mask, 0.0, -jnp.inf)\n"
                   "def make_bot(env):\n"
                   "    return always_first\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert resolve_policy("mybots:always_first", env).__name__ == "always_first"
    assert resolve_policy("mybots:make_bot", env).__name__ == "always_first"
    rows = seat_tables.play_tables(env, ["mybots:make_bot"], 8, seed=2)
    assert rows["mybots:make_bot"]["games"] == 8
    for bad in ("no_such_policy", "mybots:nothing", "no_such_module:f"):
        with pytest.raises(ValueError):
            resolve_policy(bad, env)
    with pytest.raises(ValueError, match="policy 'honest' takes no argument: give 'honest', not 'honest:x'"):
        resolve_policy("honest:x", env)  # a registered factory without a parameter for the argument


def test_export_specs_are_paths_from_the_working_directory(env, tmp_path, monkeypatch):
    """An export resolves by its path; the package's configs folder is no lookup place (the
    frozen best response that shipped there is gone: a shipped YAML or folder name is no policy)."""
    import shutil

    from coupjax.policies.spec import describe_spec, locate

    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "evals" / "reference" / "dqn" / "export", tmp_path / "mine")
    assert describe_spec("mine") == "path" and locate("mine") == Path("mine")
    assert resolve_policy("mine", env).info["kind"] == "dqn"
    for name in ("selfplay_cpu.yaml", "best_responses/selfplay_seed0"):
        assert locate(name) is None
        with pytest.raises(ValueError, match="neither a registered policy"):
            describe_spec(name)


def test_seat_table_cli_writes_the_documented_keys(tmp_path, capsys):
    out = tmp_path / "table.json"
    seat_table.main(["--policy", "random", "--policy", "honest", "--games", "24", "--seed", "1", "--chunk", "24",
            "--out", str(out)])
    table = json.loads(out.read_text())
    assert list(table) == ["random", "honest"]
    for row in table.values():
        assert set(row) == {"win_rate", "ci95_low", "ci95_high", "mean_placement", "action_entropy", "games", "wins"}
        assert row["games"] == 24 and 0 <= row["ci95_low"] <= row["win_rate"] <= row["ci95_high"] <= 1
        assert 1 <= row["mean_placement"] <= 4
    assert table["random"]["action_entropy"] > table["honest"]["action_entropy"] > 0


@pytest.mark.parametrize("argv, says", [
    (["--policy", "honest", "--seed", str(next(iter(TUNING_SEEDS)))], "used to tune"),
    (["--policy", "no_such_policy", "--games", "4"], "neither a registered policy"),
    (["--policy", "honest", "--games", "-1"], "positive integer"),
])
def test_seat_table_mistakes_are_one_line(capsys, argv, says):
    with pytest.raises(SystemExit) as info:
        seat_table.main(argv)
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and len(err.splitlines()) == 1 and says in err, err
