"""`evals.bench_gpu`: the one prepared GPU run works on a CPU (small sizes), keeps what it
measured when a section fails, stops growing the engine's batch in time, and imports
nothing but JAX's stack at the top."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The figures each section must write (the list: device, engine vs Python,
# memory per game, the self-play and DQN chunks, the search's decisions per second).
SECTION_KEYS = {
    "device": {"name", "platform", "count", "versions", "seconds"},
    "engine": {"batches", "python_steps_per_s", "python_games_per_s", "state_bytes_per_game", "skipped"},
    "memory": {"available", "peak_bytes_per_game", "fresh_bytes_per_game", "state_bytes_per_game"},
    "selfplay": {"config", "env_steps_per_s", "updates_per_s", "gradient_steps_per_s", "compile_s", "chunks"},
    "dqn": {"config", "env_steps_per_s", "updates_per_s", "transitions_per_s", "compile_s", "chunks"},
    "search": {"policy", "config", "batches"},
}
ENGINE_ROW_KEYS = {"batch", "live_steps_per_s", "autoreset_steps_per_s", "autoreset_games_per_s", "ratio_live",
                   "ratio_autoreset", "compile_s"}


@pytest.mark.slow
def test_runs_on_cpu_small_by_itself_and_writes_every_section(tmp_path):
    """``python -m evals.bench_gpu --out F`` on a CPU: --small is automatic, and every
    section's figures are in the JSON, none failed (about two CPU-minutes of compiling
    the training chunks and the search).  Quick twins:
    test_a_failing_section_is_recorded_and_the_next_one_still_runs, test_the_gpu_plan_is_valid_here."""
    out = tmp_path / "gpu.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu", WANDB_MODE="disabled")
    res = subprocess.run([sys.executable, "-m", "evals.bench_gpu", "--out", str(out)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["small"] is True and report["complete"] is True
    for name, keys in SECTION_KEYS.items():
        assert "error" not in report[name], (name, report[name].get("traceback"))
        assert keys <= report[name].keys(), (name, keys - report[name].keys())
    assert report["device"]["platform"] == "cpu" and report["device"]["count"] >= 1
    (row,) = report["engine"]["batches"]
    assert ENGINE_ROW_KEYS <= row.keys() and row["batch"] == 64 and row["live_steps_per_s"] > 0
    assert report["memory"]["available"] is False and report["memory"]["peak_bytes_per_game"] == "not available"
    assert report["memory"]["state_bytes_per_game"] == report["engine"]["state_bytes_per_game"] > 0
    for algo in ("selfplay", "dqn"):
        chunk = report[algo]["chunks"][0]
        assert chunk["env_steps"] > 0 and chunk["updates"] > 0 and report[algo]["env_steps_per_s"] > 0
    assert [r["batch"] for r in report["search"]["batches"]] == [1, 4]
    assert all(r["decisions_per_s"] > 0 for r in report["search"]["batches"])
    for heading in ("live steps/s", "decisions/s", "env steps"):  # the rich tables
        assert heading in res.stdout


def test_a_failing_section_is_recorded_and_the_next_one_still_runs(tmp_path, monkeypatch):
    """The JSON is rewritten after every section: a section that raises leaves its error
    (and traceback) there, and the sections after it run and are written too."""
    from evals.bench import gpu as bench_gpu

    out = tmp_path / "cut.json"
    written_before_memory = []
    memory = bench_gpu.SECTIONS["memory"]

    def broken_engine(plan, clock, report):
        raise RuntimeError("no engine today")

    def memory_after_the_failure(plan, clock, report):
        written_before_memory.append(json.loads(out.read_text()))
        return memory(plan, clock, report)

    monkeypatch.setitem(bench_gpu.SECTIONS, "engine", broken_engine)
    monkeypatch.setitem(bench_gpu.SECTIONS, "memory", memory_after_the_failure)
    report = bench_gpu.main(["--small", "--sections", "device,engine,memory", "--out", str(out)])
    assert report["engine"]["error"] == "RuntimeError: no engine today"
    assert any("broken_engine" in line for line in report["engine"]["traceback"])
    assert "error" not in report["device"] and "error" not in report["memory"]
    assert report["memory"]["state_bytes_per_game"] > 0
    (cut,) = written_before_memory  # what a run cut during the memory section keeps
    assert cut["complete"] is False and "memory" not in cut
    assert cut["engine"]["error"] == "RuntimeError: no engine today" and cut["device"]["name"]
    assert json.loads(out.read_text())["complete"] is True


def test_bad_arguments_get_one_line_errors(capsys):
    from evals.bench import gpu as bench_gpu

    for argv, text in ((["--sections", "engine,gpus"], "unknown ['gpus']"), (["--budget", "0"], "--budget")):
        with pytest.raises(SystemExit) as exc:
            bench_gpu.main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and text in err and err.count("\n") == 1


def test_the_engine_stops_growing_before_memory_or_time_runs_out():
    from evals.bench.gpu import next_batch_verdict

    last = {"batch": 1000, "compile_s": 10.0, "wall_s": 12.0, "peak_bytes_per_game": 1000.0}
    assert next_batch_verdict(None, 4096, None, 0.0) is None  # the first size is always tried
    assert next_batch_verdict(last, 4000, 10**9, 19.0) is None  # 10 s compile + 4 x 2 s of calls fit
    assert "overrun" in next_batch_verdict(last, 4000, 10**9, 17.0)
    assert "would not fit" in next_batch_verdict(last, 4000, 4_400_000, 100.0)  # 4 MB > 90% of 4.4 MB
    assert next_batch_verdict(last, 4000, 4_500_000, 100.0) is None
    assert next_batch_verdict({**last, "peak_bytes_per_game": None}, 4000, None, 100.0) is None  # a CPU
    assert next_batch_verdict(last, 250, 4_400_000, 10.6) is None  # a size between: 10 s + 2 s / 4
    assert "would not fit" in next_batch_verdict({**last, "shards": 2}, 8000, 4_400_000, 100.0)  # 4,000 a device
    assert next_batch_verdict({**last, "shards": 2}, 8000, 4_500_000, 100.0) is None


OOM = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 123 bytes."


def _fake_gpu(monkeypatch, bytes_limit, fail_at=None, error=OOM):
    """The engine section on a pretend GPU: `bench_batch` returns at once, its peak is
    100 bytes a game of the largest batch so far, and batch ``fail_at`` raises ``error``."""
    from evals.bench import engine as bench_engine
    from evals.bench import gpu as bench_gpu

    calls, peak = [], [0]

    def bench_batch(env, batch, steps, repeats, min_time, seed, shards):
        calls.append(batch)
        if batch == fail_at:
            raise RuntimeError(error)
        peak[0] = max(peak[0], 100 * batch)
        return {"batch": batch, "shards": shards, "steps": steps, "compile_s": 1.0, "live_steps_per_s": 1e6,
                "autoreset_steps_per_s": 2e6, "autoreset_games_per_s": 6e4}

    monkeypatch.setattr(bench_engine, "bench_batch", bench_batch)
    monkeypatch.setattr(bench_gpu, "memory_stats", lambda device=None: {"bytes_limit": bytes_limit, "bytes_in_use": 0,
                                                                 "peak_bytes_in_use": peak[0]})
    return bench_gpu, dataclasses.replace(bench_gpu.FULL, python_chunk_s=0.01), calls


def test_the_engine_section_skips_what_would_not_fit_on_a_gpu(monkeypatch):
    """FULL's sizes on a pretend GPU: the largest comes third, the sizes between after
    it; a size that ran out of memory, or that the largest's peak says would not fit, is
    skipped and the rest measured; the peak per game is kept for growing sizes only (the
    device's peak is the largest batch's); a size past the section's time is skipped."""
    import time

    bench_gpu, plan, calls = _fake_gpu(monkeypatch, 10**10, fail_at=1048576)
    out = bench_gpu.section_engine(plan, bench_gpu.Section(60, time.perf_counter() + 60), {})
    assert calls == [4096, 65536, 1048576, 16384, 262144]
    assert [r["batch"] for r in out["batches"]] == [4096, 16384, 65536, 262144]
    assert out["skipped"][0]["batch"] == 1048576 and "did not fit: RESOURCE_EXHAUSTED" in out["skipped"][0]["why"]
    assert {r["batch"]: r.get("peak_bytes_per_game") for r in out["batches"]} == {
        4096: 100.0, 16384: None, 65536: 100.0, 262144: 100.0}
    assert all(r["ratio_live"] > 0 for r in out["batches"])

    bench_gpu, plan, calls = _fake_gpu(monkeypatch, 30_000_000)  # 1M games x 100 B > 90% of 30 MB
    out = bench_gpu.section_engine(plan, bench_gpu.Section(60, time.perf_counter() + 60), {})
    assert calls == [4096, 65536, 16384, 262144] and "would not fit" in out["skipped"][0]["why"]

    bench_gpu, plan, calls = _fake_gpu(monkeypatch, 10**10)  # 1 s compiles, half a second's budget
    out = bench_gpu.section_engine(plan, bench_gpu.Section(0.5, time.perf_counter() + 60), {})
    assert calls == [4096] and all("overrun" in s["why"] for s in out["skipped"]) and len(out["skipped"]) == 4

    bench_gpu, plan, calls = _fake_gpu(monkeypatch, 10**10, fail_at=65536, error="INTERNAL: a driver error")
    with pytest.raises(RuntimeError, match="a driver error"):  # any other error fails the section
        bench_gpu.section_engine(plan, bench_gpu.Section(60, time.perf_counter() + 60), {})


def test_imports_only_jax_stack_at_the_top():
    """A bare GPU machine may lack the rest: importing the script loads no web stack, no
    W&B, Orbax or distrax, and not even the project (each section imports what it uses)."""
    code = ("import sys, evals.bench_gpu; "
            "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    loaded = set(res.stdout.split())
    assert {"jax", "rich", "numpy", "evals"} <= loaded
    assert not loaded & {"fastapi", "uvicorn", "starlette", "wandb", "orbax", "distrax", "pettingzoo", "gymnasium",
                         "playwright", "coupjax", "training"}


def test_the_gpu_plan_is_valid_here():
    """What only a GPU runs, checked before one is lent: FULL's sizes are the issue's,
    its cut configs load and build their setups (nothing compiled), and its search
    policy resolves."""
    from coupjax.env import Env
    from coupjax.policies import resolve_policy
    from evals.bench.gpu import FULL, SMALL
    from training import dqn, selfplay
    from training.config import config_file, load_config

    assert min(FULL.engine_batches) == 4096 and max(FULL.engine_batches) == 1048576
    assert FULL.search_batches == (1, 64, 1024) and SMALL.search_batches[0] == 1
    assert sum(FULL.budgets.values()) <= FULL.deadline_s <= 240 - 15  # 4 minutes with start-up
    for name, overrides, algo in (("selfplay_gpu.yaml", FULL.selfplay_overrides, selfplay),
                                  ("dqn_gpu.yaml", FULL.dqn_overrides, dqn)):
        cfg = load_config(config_file(name), overrides)
        assert cfg.num_envs == 4096 and algo.make_train(cfg).num_devices >= 1
    assert resolve_policy(FULL.search_policy, Env(4)).config.num_worlds >= 1
