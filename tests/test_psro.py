"""PSRO inside a self-play run (`training.psro`, the driver's between-chunk step): a tiny
run fits a frozen DQN best response to its network after chunk 1, stops, and resumed from
its checkpoint starts again (``psro_reset``) with the best response in its league for
chunk 2.  (A resumed run equal to a straight one is `tests/test_selfplay.py`'s; one run
here keeps the compiles to three.)"""
from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml

from coupjax.inference import read_export
from training import checkpoint
from training import psro
from training.config import ConfigError, config_from_dict, config_to_dict, load_config
from training.selfplay import make_train
from training.train import run_training

ROOT = Path(__file__).resolve().parents[1]
TINY_DQN = dict(num_envs=4, batch_size=8, buffer_size=64, warmup_steps=8, updates_per_chunk=6,
                target_update_steps=3, hidden_sizes=[16], epsilon_decay_steps=10)
TINY = dict(algo="selfplay", seed=5, num_envs=8, rollout_steps=8, num_minibatches=2, num_epochs=1,
            updates_per_chunk=20, num_chunks=2, hidden_sizes=[16], belief_hidden_sizes=[16], num_snapshots=1,
            snapshot_every=2, opponents={"random": 1, "honest": 1}, checkpoint_every=1, max_checkpoints=3,
            export_temperature=0.0, psro_every=1, psro_budget=2, psro_weight=3.0, psro_reset=True)


def _same(a, b):
    return jax.tree.all(jax.tree.map(lambda x, y: bool(np.array_equal(np.asarray(x), np.asarray(y))), a, b))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(config, the run's dir, the summary of its resumed part)."""
    tmp = tmp_path_factory.mktemp("psro")
    dqn = tmp / "tiny_dqn.yaml"
    dqn.write_text(yaml.safe_dump({**yaml.safe_load((ROOT / "configs" / "dqn_cpu.yaml").read_text()), **TINY_DQN}))
    cfg = config_from_dict({**TINY, "psro_config": str(dqn)})
    first = run_training(cfg, tmp / "run", use_wandb=False, quiet=True, stop_after=1)
    assert first["chunks_done"] == 1 and len(first["psro"]) == 1  # the iteration after chunk 1 came before the stop
    summary = run_training(cfg, tmp / "run", resume=True, use_wandb=False, quiet=True)
    assert summary["psro"] == first["psro"] and summary["psro_seconds"] == 0  # read back, not fitted again
    return cfg, tmp / "run", summary


def test_a_best_response_to_the_network_after_chunk_1_joins_the_league(runs):
    cfg, run, summary = runs
    assert psro.iteration_chunks(cfg) == [1] and summary["chunks_done"] == 2
    (row,) = summary["psro"]
    assert row["after_chunk"] == 1 and row["best_response_seed"] == 1000 * cfg.seed + 1 and row["seconds"] > 0
    it = psro.iteration_dir(run, 1)
    assert json.loads((it / psro.ITERATION_FILE).read_text()) == row
    # the frozen copies the DQN trained against are the network as it was after chunk 1
    host, _, done = checkpoint.restore_checkpoint(run / "checkpoints", make_train(cfg).abstract_state(), step=1)
    agent = read_export(it)[1]
    assert done == 1 and _same(agent, jax.tree.map(lambda v: v[0], host.params["policy"]))
    br_info, br_params = read_export(psro.best_response_path(run, 1))
    assert br_info["kind"] == "dqn" and br_info["config"]["opponents"] == str(it.resolve())
    assert br_info["opponents"] == [str(it.resolve())] and br_info["config"]["num_chunks"] == 2
    # chunk 2 seated it (pool weight psro_weight), and the final network moved on from chunk 1's
    final_info, final = read_export(run)
    br = "psro/chunk_1/best_response"  # inside the run directory: named relative to it, no machine's folder
    assert final_info["config"]["opponents"] == {"random": 1.0, "honest": 1.0, br: 3.0}
    assert br in final_info["league"] and not _same(final, agent) and str(run.resolve()) not in json.dumps(final_info)
    assert summary["final"]["league/games_vs_psro/chunk_1/best_response"] > 0  # its label in the metrics
    assert summary["final"]["step"] == cfg.updates_per_chunk  # chunk 2 was the first of a new pass
    assert [h["step"] for h in summary["history"]] == [cfg.updates_per_chunk]  # the resumed call's chunk
    assert json.loads((run / "config.json").read_text()) == config_to_dict(cfg)  # the run's own config, unchanged


def test_an_iteration_goes_on_from_the_state_or_starts_again(runs):
    """`iterate` on a finished iteration reads it back; the runner state carries over, or
    with psro_reset is the run's initial one."""
    cfg, run, summary = runs
    (row,) = summary["psro"]
    setup = make_train(cfg)
    rs = setup.init(jax.random.PRNGKey(cfg.seed + 1))
    for reset in (False, True):
        c = config_from_dict({**config_to_dict(cfg), "psro_reset": reset})
        new_setup, new_rs, got = psro.iterate(c, setup, rs, run, 1, make_train)
        assert got == row and new_setup.league.names[-1] == str(psro.best_response_path(run, 1).resolve())
        assert (new_rs is rs) != reset
    assert _same(new_rs.params, new_setup.init(jax.random.PRNGKey(cfg.seed)).params)
    assert not _same(rs.params, new_rs.params)
    assert [psro.update_offset(cfg, c) for c in (0, 1, 2)] == [0, 20, 20]
    assert psro.update_offset(config_from_dict({**TINY, "psro_reset": False}), 2) == 0


def test_league_config_and_missing_iterations(runs, tmp_path):
    cfg, run, _ = runs
    assert psro.league_config(cfg, run, 0) is cfg
    carry_on = config_from_dict({**TINY, "num_chunks": 10, "psro_every": 4, "psro_reset": False})
    assert psro.iteration_chunks(carry_on) == [4, 8]
    assert psro.iteration_chunks(config_from_dict({**TINY, "psro_every": 0})) == []
    with pytest.raises(FileNotFoundError, match="no best response for chunk 1"):
        psro.read_iterations(tmp_path, cfg, 1)


def test_psro_config_errors_name_the_key(tmp_path):
    with pytest.raises(ConfigError, match="'psro_every' needs num_seeds 1"):
        config_from_dict({**TINY, "num_seeds": 2})
    with pytest.raises(ConfigError, match="'psro_config': no config file 'nope.yaml'"):
        config_from_dict({**TINY, "psro_config": "nope.yaml"})
    with pytest.raises(ConfigError, match="'psro_config' must name a DQN config"):
        config_from_dict({**TINY, "psro_config": "selfplay_cpu.yaml"})
    with pytest.raises(ConfigError, match=r"'psro_reset' needs num_chunks \(3\) to be a multiple of psro_every \(2\)"):
        config_from_dict({**TINY, "num_chunks": 3, "psro_every": 2})
    with pytest.raises(ConfigError, match="'psro_weight' must be > 0"):
        config_from_dict({**TINY, "psro_weight": 0})
    assert load_config(ROOT / "configs" / "selfplay_cpu.yaml").psro_every == 0
