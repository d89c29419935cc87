"""Throughput of one training job as 1 process and as N processes, side by side:
``python -m evals.bench_processes [--processes 2] [--config dqn_cpu.yaml] [--out FILE.json]``.

Each process gets one XLA device (on a CPU: one core) and the same ``--num-envs``
games, so the job with N processes steps N times the games (weak scaling: how a job
grows when hosts are added; docs/scaling.md).  Each job is ``python -m
training.train`` on ``--config`` cut to ``--chunks`` chunks of ``--updates`` iterations,
started on 127.0.0.1 with `coupjax.distributed`'s flags; its env steps per second are
the last chunk's (the first call of a compiled chunk does one-off work), read from the
run's ``summary.json``.  Compile time is reported apart.  A third job, one process of N
devices with the same games, does the same work without the process boundary (its
collectives in memory instead of over gloo).  On a host with fewer cores
than processes the processes share cores and the figure says nothing about hosts.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from coupjax import console
from coupjax.args import Parser, fail, output_file, positive_int

PROG = "python -m evals.bench_processes"
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(processes: int, config: str, num_envs: int, batch_size: int | None, updates: int, chunks: int,
            overrides, work: Path, timeout: float, devices: int = 1) -> dict:
    """One training job of ``processes`` processes x 1 device (or one process of
    ``devices`` devices); its summary's figures."""
    shards = processes * devices
    run_dir = work / f"p{processes}d{devices}"
    env = dict(os.environ, WANDB_MODE="offline", PYTHONPATH=str(ROOT))
    flags = [f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f]
    env["XLA_FLAGS"] = " ".join(flags + ([f"--xla_force_host_platform_device_count={devices}"] if devices > 1 else []))
    sets = [f"num_envs={num_envs * shards}", f"updates_per_chunk={updates}", f"num_chunks={chunks}",
            f"checkpoint_every={chunks}", "eval_games=0", *overrides]
    if batch_size is not None:  # DQN: the samples of an update grow with the games
        sets.append(f"batch_size={batch_size * shards}")
    cmd = [sys.executable, "-m", "training.train", "--config", config, "--run-dir", str(run_dir), "--no-wandb",
           "--quiet", "--host-devices", str(devices)] + [a for s in sets for a in ("--set", s)]
    port = _free_port()
    job = [["--coordinator", f"127.0.0.1:{port}", "--num-processes", str(processes), "--process-id", str(i)]
           if processes > 1 else [] for i in range(processes)]
    t0 = time.time()
    procs = [subprocess.Popen(cmd + j, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for j in job]
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(1.0, timeout - (time.time() - t0)))[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise RuntimeError(f"the {processes}-process job ran past {timeout:.0f} s") from None
    for p, out in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError(f"the {processes}-process job failed ({p.returncode}): {out.strip()[-1500:]}")
    summary = json.loads((run_dir / "summary.json").read_text())
    last = summary["history"][-1]
    return {"processes": processes, "devices": shards, "games": num_envs * shards,
            "env_steps_per_s": last["env_steps_per_s"], "chunk_seconds": last["chunk_seconds"],
            "compile_seconds": summary["compile_seconds"], "wall_seconds": time.time() - t0}


def main(argv=None) -> dict:
    ap = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=positive_int, default=2, help="processes of the second job (default 2)")
    ap.add_argument("--config", default=str(ROOT / "coupjax" / "configs" / "dqn_cpu.yaml"),
                    help="a DQN or self-play config (default: dqn_cpu.yaml)")
    ap.add_argument("--num-envs", type=positive_int, default=128, help="games per process")
    ap.add_argument("--batch-size", type=positive_int, default=128, help="DQN samples per process and update")
    ap.add_argument("--updates", type=positive_int, default=50, help="iterations per chunk")
    ap.add_argument("--chunks", type=positive_int, default=3, help="chunks per job (the last one is timed)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="another config override")
    ap.add_argument("--timeout", type=positive_int, default=1200, help="seconds per job")
    ap.add_argument("--out", type=output_file, help="write the figures as JSON")
    args = ap.parse_args(argv)
    from training.config import ConfigError, load_config

    try:
        algo = load_config(args.config, args.set).algo
    except ConfigError as err:
        fail(PROG, err)
    if algo not in ("dqn", "selfplay"):
        fail(PROG, f"--config: a DQN or self-play config, not {algo!r}")
    batch = args.batch_size if algo == "dqn" else None
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for n, d in ((1, 1), (args.processes, 1), (1, args.processes)):  # the last: the same work in one process
            rows.append(run_job(n, args.config, args.num_envs, batch, args.updates, args.chunks, args.set,
                                Path(work), args.timeout, devices=d))
    base = rows[0]["env_steps_per_s"]
    for r in rows:
        r["speedup"] = r["env_steps_per_s"] / base
    result = {"config": Path(args.config).name, "updates_per_chunk": args.updates, "cpu_count": os.cpu_count(),
              "load_average": list(os.getloadavg()), "rows": rows}
    from rich.table import Table

    table = Table(title=f"{result['config']}: 1 vs {args.processes} processes, {args.num_envs} games per device")
    for col in ("processes", "devices", "games", "env steps/s", "x 1 process", "chunk s", "compile s"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r["processes"]), str(r["devices"]), f"{r['games']:,}", f"{r['env_steps_per_s']:,.0f}",
                      f"{r['speedup']:.2f}", f"{r['chunk_seconds']:.2f}", f"{r['compile_seconds']:.0f}")
    console.console().print(table)
    console.console().print(f"load average {result['load_average'][0]:.1f} on {result['cpu_count']} cores")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
