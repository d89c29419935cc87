"""The main job (`python -m coupjax`): a short training run, then its seat table."""
import json

import pytest

from coupjax import cli


@pytest.mark.slow
def test_main_job_trains_exports_and_evaluates(tmp_path):
    run_dir = tmp_path / "run"
    cli.main(["train", "--run-dir", str(run_dir), "--games", "24", "--no-wandb",
              "--set", "num_envs=8", "--set", "num_chunks=1", "--set", "updates_per_chunk=4",
              "--set", "warmup_steps=8", "--set", "batch_size=8", "--set", "buffer_size=64",
              "--set", "checkpoint_every=1"])
    out = json.loads((run_dir / "seat_table.json").read_text())
    rows = out["seat_table"]
    assert list(rows) == [str(run_dir), *cli.BASELINES]
    for r in rows.values():
        assert r["games"] == 24 and r["ci95_low"] <= r["win_rate"] <= r["ci95_high"]
    assert (run_dir / "export").is_dir() and out["training"]["env_steps"] > 0


def test_simulate_subcommand_writes_figures(tmp_path):
    out = tmp_path / "sim.json"
    cli.main(["simulate", "--games", "16", "--out", str(out)])
    figures = json.loads(out.read_text())
    assert figures["games"] == 16 and figures["mean_decisions_per_game"] > 2
    assert sum(figures["win_rate_by_seat"]) == pytest.approx(1.0)
