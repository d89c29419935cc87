"""The main job (`python -m coupjax`): a short training run, then its seat table."""
import json
import os

import pytest

from coupjax import cli
from coupjax.policies.pools import OPPONENTS


@pytest.mark.slow
def test_main_job_trains_exports_and_evaluates(tmp_path):
    run_dir = tmp_path / "run"
    cli.main(["train", "--run-dir", str(run_dir), "--games", "24", "--no-wandb",
              "--set", "num_envs=8", "--set", "num_chunks=1", "--set", "updates_per_chunk=4",
              "--set", "warmup_steps=8", "--set", "batch_size=8", "--set", "buffer_size=64",
              "--set", "checkpoint_every=1"])
    out = json.loads((run_dir / "seat_table.json").read_text())
    rows = out["seat_table"]
    assert list(rows) == [str(run_dir), *OPPONENTS]
    for r in rows.values():
        assert r["games"] == 24 and r["ci95_low"] <= r["win_rate"] <= r["ci95_high"]
    assert (run_dir / "export").is_dir() and out["training"]["env_steps"] > 0


def test_simulate_subcommand_writes_figures(tmp_path):
    out = tmp_path / "sim.json"
    cli.main(["simulate", "--games", "16", "--out", str(out)])
    figures = json.loads(out.read_text())
    assert figures["games"] == 16 and figures["mean_decisions_per_game"] > 2
    assert sum(figures["win_rate_by_seat"]) == pytest.approx(1.0)


def test_use_host_cores_sets_the_flag_only_before_jax_starts(monkeypatch):
    import jax

    from coupjax import devices

    jax.devices()  # the backend runs: asking now must change nothing
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert devices.use_host_cores(2) == 1 and "XLA_FLAGS" not in os.environ
    monkeypatch.setattr(devices, "_backends_started", lambda: False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert devices.use_host_cores(3) == 3
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=3"
    assert devices.use_host_cores(4) == 1  # the count is already set: the user's choice wins
    assert devices.use_host_cores(1) == 1


def test_quickstart_is_dqn_cpu_cut_to_a_third():
    from pathlib import Path

    from training.config import QUICKSTART, config_from_dict, config_to_dict, load_config

    full = config_to_dict(load_config(Path(__file__).parents[1] / "configs" / "dqn_cpu.yaml"))
    quick = config_to_dict(config_from_dict(QUICKSTART))
    assert {k for k in full if full[k] != quick[k]} == {"num_chunks", "checkpoint_every"}
    assert 3 * quick["num_chunks"] == full["num_chunks"]
