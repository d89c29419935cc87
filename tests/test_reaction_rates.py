"""`evals.reaction_rates`: its counts add up to the arena's own counts on the same games,
and its rates show the scripted bots' documented habits."""
from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import rules, seeds
from coupjax.env import Env
from coupjax.policies.spec import resolve_policy
from coupjax.seat_tables import game_keys, make_table_runner, seat_index
from evals import reaction_rates as R
from evals.lib.paired import condition_tables

N = 4
GAMES = 256


@pytest.fixture(scope="module")
def env():
    return Env(N)


@pytest.fixture(scope="module")
def rates(env):
    return R.reaction_rates(env, ["aggressive", "honest"], GAMES, 5, chunk=GAMES)


def test_the_challenge_opportunities_per_role_add_up_to_the_arenas_count(env, rates):
    """The same tables played by the arena's runner: its challenge opportunities and
    challenges of the tested seat equal the sums over roles here (every challenge
    answers exactly one claimed role)."""
    seats, opp, specs = condition_tables(GAMES, N, 5, None)
    entries = list(dict.fromkeys(specs + ["aggressive"]))
    run = make_table_runner(env, [resolve_policy(s, env) for s in entries])
    _, stats = run(game_keys(5, 0, GAMES), jnp.asarray(seat_index(seats, opp, entries.index("aggressive"), N)))
    at = np.arange(GAMES)
    for key in ("challenge_opportunities", "challenges"):
        assert sum(rates["aggressive"][r][key] for r in rules.ROLES) == int(np.asarray(stats[key])[at, seats].sum())


def test_the_rates_show_each_bots_habits(rates):
    aggressive, honest = rates["aggressive"], rates["honest"]
    # aggressive challenges 35% of possible claims (all impossible ones); honest only the impossible
    for role in ("duke", "captain"):
        assert 0.3 < aggressive[role]["challenge_rate"] < 0.6
        assert honest[role]["challenge_rate"] < 0.1
    # honest blocks only truthfully; aggressive bluff-blocks; nobody blocks as an Assassin
    assert all(honest[r]["bluff_blocks"] == 0 for r in rules.ROLES)
    assert sum(aggressive[r]["bluff_blocks"] for r in rules.ROLES) > 0
    assert aggressive["assassin"]["block_opportunities"] == 0 and aggressive["assassin"]["block_rate"] is None
    for row in (aggressive[r] for r in rules.ROLES):
        assert row["bluff_blocks"] <= row["blocks"] <= row["block_opportunities"]


def test_the_command_keeps_every_role_and_refuses_bad_input_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(seeds.LEDGER_ENV, str(tmp_path / "ledger.jsonl"))
    out = R.main(["--policy", "honest", "--games", "16", "--seed", "5", "--out", str(tmp_path / "r" / "x.json")])
    kept = json.loads((tmp_path / "r" / "x.json").read_text())
    assert kept == out and set(kept["honest"]) == set(rules.ROLES)
    assert set(kept["honest"]["duke"]) == {*R.COUNTS, "challenge_rate", "block_rate"}
    for argv, says in ((["--policy", "nobody", "--games", "4"], "nobody"),
                       (["--policy", "honest", "--games", "4", "--seed", str(min(seeds.TUNING_SEEDS))], "used to tune")):
        with pytest.raises(SystemExit) as err:
            R.main(argv)
        assert err.value.code == 2
        line = capsys.readouterr().err.strip().splitlines()
        assert len(line) == 1 and says in line[0], line
    assert not (tmp_path / "ledger.jsonl").exists()
