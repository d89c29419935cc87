"""Many processes of one job (`coupjax.distributed`, docs/scaling.md): the only test file
that names ``jax.distributed`` and its flags.

The slow tests launch 2 CPU processes on 127.0.0.1 with one XLA device each (gloo
collectives) and compare with one process of 2 devices and the same global batch: a
DQN run (interrupted and resumed from its multi-process Orbax checkpoint), a self-play
run, a seat table, and a peer killed mid-run.  The quick twin checks the same code
paths inside one process: the flags, the split seat table and the pooling helpers.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from flax import serialization

from coupjax import distributed
from coupjax.seat_tables import make_seat_table
from coupjax.env import Env

ROOT = Path(__file__).resolve().parents[1]
DQN = dict(algo="dqn", num_envs=4, batch_size=8, buffer_size=64, warmup_steps=8, updates_per_chunk=6, num_chunks=2,
           target_update_steps=3, hidden_sizes=[16], opponents="random", reward="win", epsilon_decay_steps=10,
           checkpoint_every=1, max_checkpoints=3, seed=3)
SELFPLAY = dict(algo="selfplay", seed=3, num_envs=8, rollout_steps=8, num_minibatches=2, num_epochs=1,
                updates_per_chunk=3, num_chunks=2, hidden_sizes=[16], belief_hidden_sizes=[32], num_snapshots=2,
                snapshot_every=2, opponents={"random": 1, "honest": 1}, learning_rate=3e-3, checkpoint_every=1,
                max_checkpoints=3, export_temperature=1.0)
SEAT_TABLE = ["-m", "evals.seat_table", "--policy", "random", "--policy", "honest", "--opponents", "honest",
              "--games", "40", "--chunk", "8"]  # 5 chunks: 3 for process 0, 2 for process 1
TIMEOUT = 600  # seconds for one launch of the processes (compiling on a busy 2-core machine)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(devices: int) -> dict:
    flags = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f)
    if devices > 1:
        flags += f" --xla_force_host_platform_device_count={devices}"
    return dict(os.environ, WANDB_MODE="offline", PYTHONPATH=str(ROOT), XLA_FLAGS=flags.strip())


def _start(args, log: Path, processes: int = 2, peer_timeout: int = 30, devices: int = 1):
    """``processes`` processes of ``python ARGS`` (one job when several), output in
    ``log``.0, ``log``.1 ...; returns the Popen objects."""
    port = _free_port()
    procs = []
    for i in range(processes):
        job = ["--coordinator", f"127.0.0.1:{port}", "--num-processes", str(processes), "--process-id", str(i),
               "--peer-timeout", str(peer_timeout)] if processes > 1 else []
        out = open(f"{log}.{i}", "w")
        procs.append(subprocess.Popen([sys.executable, *args, *job], cwd=ROOT, env=_env(devices), stdout=out,
                                      stderr=subprocess.STDOUT, text=True))
        out.close()
    return procs


def _finish(procs, log: Path) -> list[str]:
    """Wait for every process (killing all past `TIMEOUT`); each must exit 0; their output."""
    deadline = time.monotonic() + TIMEOUT
    try:
        for p in procs:
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        pytest.fail(f"processes still running after {TIMEOUT} s: {Path(f'{log}.0').read_text()[-2000:]}")
    outs = [Path(f"{log}.{i}").read_text() for i in range(len(procs))]
    for i, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, f"process {i} exited {p.returncode}:\n{out[-3000:]}"
    return outs


def _run(args, log: Path, processes: int = 2, devices: int = 1) -> list[str]:
    return _finish(_start(args, log, processes, devices=devices), log)


def _train(cfg_file: Path, run_dir: Path, processes: int, *extra) -> list[str]:
    devices = 1 if processes > 1 else 2  # one global batch over 2 devices either way
    args = ["-m", "training.train", "--config", str(cfg_file), "--run-dir", str(run_dir), "--no-wandb", "--quiet",
            "--host-devices", str(devices), *extra]
    return _run(args, run_dir.parent / f"{run_dir.name}.log", processes, devices)


def _export(run_dir: Path, name: str = "params.msgpack"):
    return serialization.msgpack_restore((run_dir / "export" / name).read_bytes())


def _assert_close(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-6)


def _config(tmp_path: Path, cfg: dict, name: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(json.dumps(cfg))  # JSON is YAML
    return path


# ------------------------------------------------------------------ quick twin
def test_flags_and_split_seat_table_in_one_process():
    """The flags' checks (one line, status 2), and the code a split job runs, in one
    process: a seat table played with ``split`` equals the plain one, and pooling,
    barriers and the lost-peer guard change nothing."""
    from training.train import parse_args

    base = ["--config", "c.yaml", "--run-dir", "r"]
    args = parse_args(base + ["--coordinator", "10.0.0.1:1234", "--num-processes", "4", "--process-id", "3"])
    assert (args.coordinator, args.num_processes, args.process_id) == ("10.0.0.1:1234", 4, 3)
    assert distributed.wanted(args)
    for bad in (["--num-processes", "2"], ["--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"],
                ["--coordinator", "nohost", "--num-processes", "2", "--process-id", "0"],
                ["--coordinator", "h:1", "--num-processes", "0", "--process-id", "0"]):
        with pytest.raises(SystemExit) as err:
            parse_args(base + bad)
        assert err.value.code == 2

    env = Env(4)
    play = make_seat_table(env, ["random", "honest"], opponents="honest")
    assert play(20, 7, chunk=8, split=True) == play(20, 7, chunk=8)
    tree = {"a": np.arange(3, dtype=np.int32), "b": np.float32(0.5)}
    assert distributed.sum_over_processes(tree) is tree and distributed.is_primary()
    distributed.barrier("nothing to wait for")
    with pytest.raises(ValueError), distributed.fail_on_lost_peer("prog"):
        raise ValueError("passes unchanged")


# ------------------------------------------------------------------ two processes
@pytest.mark.slow
def test_two_processes_train_as_one(tmp_path):
    """DQN (one chunk, then ``--resume`` from the 2-process Orbax checkpoint to two) and
    self-play on 2 processes x 1 device give one process x 2 devices' parameters;
    only process 0 writes the export and summary.
    Quick twin: test_flags_and_split_seat_table_in_one_process."""
    dqn = _config(tmp_path, DQN, "dqn")
    _train(dqn, tmp_path / "dqn2", 2, "--set", "num_chunks=1")
    outs = _train(dqn, tmp_path / "dqn2", 2, "--resume")
    assert "summary.json" in outs[0] and "summary.json" not in outs[1]
    _train(dqn, tmp_path / "dqn1", 1)
    _assert_close(_export(tmp_path / "dqn2"), _export(tmp_path / "dqn1"))
    summary = json.loads((tmp_path / "dqn2" / "summary.json").read_text())
    assert summary["chunks_done"] == 2 and summary["final"]["updates"] > 0

    sp = _config(tmp_path, SELFPLAY, "selfplay")
    _train(sp, tmp_path / "sp2", 2)
    _train(sp, tmp_path / "sp1", 1)
    for name in ("params.msgpack", "belief.msgpack", "value.msgpack"):
        _assert_close(_export(tmp_path / "sp2", name), _export(tmp_path / "sp1", name))


@pytest.mark.slow
def test_two_processes_split_a_seat_table_exactly(tmp_path):
    """A seat table split over 2 processes gives exactly the one-process rows; process 0
    alone writes ``--out``.
    Quick twin: test_flags_and_split_seat_table_in_one_process."""
    _run([*SEAT_TABLE, "--out", str(tmp_path / "two.json")], tmp_path / "two.log", 2)
    _run([*SEAT_TABLE, "--out", str(tmp_path / "one.json")], tmp_path / "one.log", 1)
    two, one = json.loads((tmp_path / "two.json").read_text()), json.loads((tmp_path / "one.json").read_text())
    assert two == one and one["honest"]["games"] == 40


@pytest.mark.slow
def test_a_dead_peer_ends_the_job_with_one_line(tmp_path):
    """Process 1 killed mid-run: process 0 exits with status 3 and a line saying a peer
    stopped, instead of hanging.
    Quick twin: test_flags_and_split_seat_table_in_one_process."""
    cfg = _config(tmp_path, dict(DQN, num_chunks=100000, checkpoint_every=100000), "long")
    log = tmp_path / "dead.log"
    procs = _start(["-m", "training.train", "--config", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-wandb",
                    "--quiet", "--host-devices", "1"], log, 2, peer_timeout=10)
    deadline = time.monotonic() + TIMEOUT
    try:
        while True:
            alive = procs[0].poll() is None and procs[1].poll() is None  # before reading: no race
            if '"chunk": 2' in Path(f"{log}.0").read_text():
                break
            assert alive and time.monotonic() < deadline, (
                f"before the kill: process 0 {procs[0].poll()}, process 1 {procs[1].poll()}\n"
                + Path(f"{log}.0").read_text()[-1500:] + Path(f"{log}.1").read_text()[-1500:])
            time.sleep(0.5)
        procs[1].kill()
        t_kill = time.monotonic()
        procs[0].wait(timeout=120)
        print(f"process 0 exited {time.monotonic() - t_kill:.1f} s after its peer was killed")
    finally:
        for p in procs:
            p.kill()
    out = Path(f"{log}.0").read_text()
    assert procs[0].returncode == distributed.EXIT_LOST_PEER, out[-2000:]
    assert "a peer process of this job stopped" in out
