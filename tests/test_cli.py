"""The command line: the main job (`python -m coupjax`), and one-line errors before any work.

Every mistake is one line on stderr with exit status 2, found before training starts
(the in-process tests below return in well under a second: nothing is compiled).
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from coupjax import cli
from coupjax.policies.pools import OPPONENTS

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--games", "24", "--no-wandb", "--set", "num_envs=8", "--set", "num_chunks=1", "--set",
        "updates_per_chunk=2", "--set", "rollout_steps=8", "--set", "snapshot_every=1", "--set",
        "checkpoint_every=1"]


def _one_line_error(capsys, argv, main=cli.main):
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2, err
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("argv, says", [
    (["--config", "no/such.yaml"], "does not exist"),
    (["--set", "lr=3"], "did you mean 'learning_rate'"),
    (["--set", "num_envs=-4"], "num_envs"),
    (["--games", "-5"], "positive integer"),
    (["train", "--games", "0"], "positive integer"),
    (["--seed", "0"], "used to tune"),
    (["train", "--seed", "1000"], "used to tune"),
    (["--bogus"], "unrecognized arguments"),
])
def test_main_job_mistakes_are_one_line(capsys, argv, says):
    assert says in _one_line_error(capsys, argv)


def test_existing_run_dir_is_refused_before_work(capsys, tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text("{}")
    assert "already holds a run" in _one_line_error(capsys, ["--run-dir", str(tmp_path / "run")])
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    assert "not an empty directory" in _one_line_error(capsys, ["--run-dir", str(tmp_path / "other")])
    assert "holds no checkpointed run" in _one_line_error(capsys, ["--resume", "--run-dir", str(tmp_path / "x")])


def test_options_mean_the_same_before_or_after_the_subcommand():
    before = vars(cli.parse_args(["--games", "5", "--seed", "3", "--no-wandb", "train"]))
    after = vars(cli.parse_args(["train", "--games", "5", "--seed", "3", "--no-wandb"]))
    plain = vars(cli.parse_args(["--games", "5", "--seed", "3", "--no-wandb"]))
    assert before == after == plain
    assert before["games"] == 5 and before["seed"] == 3 and before["no_wandb"]
    assert cli.parse_args(["train", "--games", "7"]).games == 7  # after overrides nothing it should not
    sim_before = vars(cli.parse_args(["--games", "16", "simulate"]))
    sim_after = vars(cli.parse_args(["simulate", "--games", "16"]))
    assert sim_before == sim_after and sim_after["games"] == 16 and sim_after["seed"] == 0
    assert cli.parse_args(["simulate"]).games == 4096 and cli.parse_args([]).games == 1000


def test_training_cli_refuses_before_writing(capsys, tmp_path):
    from training.train import main

    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoints").mkdir()
    saved = json.dumps({"algo": "dqn", "seed": 1})
    (run / "config.json").write_text(saved)
    cfg = str(ROOT / "configs" / "dqn_cpu.yaml")
    err = _one_line_error(capsys, ["--config", cfg, "--run-dir", str(run), "--resume"], main)
    assert "another config" in err and (run / "config.json").read_text() == saved  # not rewritten
    assert "already holds a run" in _one_line_error(capsys, ["--config", cfg, "--run-dir", str(run)], main)
    assert "does not exist" in _one_line_error(capsys, ["--config", "nope.yaml", "--run-dir", str(run)], main)
    assert "positive integer" in _one_line_error(
        capsys, ["--config", cfg, "--run-dir", str(tmp_path / "new"), "--host-devices", "0"], main)
    assert not (tmp_path / "new").exists()


def test_fresh_run_dirs_never_collide(tmp_path):
    first = cli.fresh_run_dir(tmp_path)
    first.mkdir(parents=True)
    second = cli.fresh_run_dir(tmp_path)
    assert second != first and second.name.startswith(first.name)


@pytest.mark.slow
def test_main_job_runs_twice_and_evaluates(tmp_path):
    """`make run` twice in a row: two runs, two seat tables (a subprocess, as a user runs it).
    Quick twins: test_driver_runs_resumes_and_logs, test_fresh_run_dirs_never_collide."""
    env = dict(os.environ, WANDB_MODE="offline", PYTHONPATH=str(ROOT))
    for _ in range(2):
        res = subprocess.run([sys.executable, "-m", "coupjax", *TINY], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=900)
        assert res.returncode == 0, res.stderr[-3000:]
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2
    for run_dir in runs:
        out = json.loads((run_dir / "seat_table.json").read_text())
        rows = out["seat_table"]
        assert list(rows) == [str(run_dir.relative_to(tmp_path)), *OPPONENTS]
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


def test_quickstart_is_selfplay_cpu_cut_short():
    from training.config import QUICKSTART, config_from_dict, config_to_dict, load_config

    full = config_to_dict(load_config(ROOT / "configs" / "selfplay_cpu.yaml"))
    quick = config_to_dict(config_from_dict(QUICKSTART))
    assert {k for k in full if full[k] != quick[k]} == {"num_chunks", "checkpoint_every", "seed"}
    assert quick["num_chunks"] < full["num_chunks"] and quick["num_chunks"] % quick["checkpoint_every"] == 0


def test_an_output_file_gets_its_folder_now_and_a_path_that_cannot_be_written_is_refused(tmp_path):
    """``--out`` of every command that writes a result (`coupjax.args.output_file`): the
    folder is made before the work (a seat table's minutes were lost to a missing one),
    and a folder or a path under a file is a one-line refusal, not a traceback after it."""
    import argparse

    from coupjax.args import output_file

    made = output_file(str(tmp_path / "new" / "deeper" / "x.json"))
    assert made.parent.is_dir() and not made.exists()
    with pytest.raises(argparse.ArgumentTypeError, match="is a folder"):
        output_file(str(tmp_path))
    (tmp_path / "a_file").write_text("")
    with pytest.raises(argparse.ArgumentTypeError, match="cannot make the folder"):
        output_file(str(tmp_path / "a_file" / "x.json"))


def test_every_command_with_an_output_file_checks_it_before_work():
    """No evals command that writes one file parses ``--out`` as a bare path: each uses
    `output_file` (evals.experiments' ``--out`` is the run directories' folder)."""
    bare = [p.name for p in sorted((ROOT / "evals").glob("*.py")) if p.name != "experiments.py"
            and re.search(r'add_argument\("--out"(?![^)]*output_file)', p.read_text())]
    assert not bare, bare
