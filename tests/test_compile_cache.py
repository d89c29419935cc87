"""The persistent compilation cache: on by default for every command, moved or turned
off by ``COUPJAX_CACHE_DIR``, bounded, cleared by ``coupjax cache clear``."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from coupjax import compile_cache

ROOT = Path(__file__).resolve().parents[1]
# A command's argument parsing turns the cache on (coupjax.args.Parser); then one jit.
PROGRAM = """
from coupjax.args import Parser
Parser(prog="probe").parse_args([])
import jax, jax.numpy as jnp
print(float(jax.jit(lambda x: jnp.sin(x) * 3.0 + 1.0)(jnp.float32(0.5))))
"""


def _run(env_extra, program=PROGRAM, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "COUPJAX_CACHE"))}
    env.update(env_extra, JAX_LOG_COMPILES="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", program, *args], env=env, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def test_a_second_process_loads_what_the_first_compiled(tmp_path):
    first = _run({compile_cache.ENV_DIR: str(tmp_path)})
    assert first.returncode == 0, first.stderr[-2000:]
    assert "cache hit" not in first.stderr
    assert list(tmp_path.glob("*-cache")), "the first process wrote no cache entry"
    second = _run({compile_cache.ENV_DIR: str(tmp_path)})
    assert second.returncode == 0, second.stderr[-2000:]
    assert "Persistent compilation cache hit" in second.stderr
    assert second.stdout == first.stdout


def test_the_rl_adapters_use_the_cache_like_the_commands(tmp_path):
    """An RL script never parses coupjax's arguments: importing an adapter turns the cache
    on (a second start of the script loads the opponents instead of compiling them)."""
    for module in ("coupjax.gymnasium", "coupjax.pettingzoo"):
        out = _run({compile_cache.ENV_DIR: str(tmp_path / module)},
                   f"import {module}, jax; print(jax.config.jax_compilation_cache_dir)")
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip() == str(tmp_path / module)


def test_quick_cpu_compile_flags_are_added_unless_the_user_set_them(monkeypatch):
    from importlib import metadata

    import pytest

    if not metadata.version("jaxlib").startswith(compile_cache.CPU_COMPILE_FLAGS_JAXLIB):
        pytest.skip("the flags are added only on the jaxlib series they were measured on")
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    compile_cache.prefer_quick_cpu_compiles()
    assert os.environ["XLA_FLAGS"].split() == ["--xla_force_host_platform_device_count=2",
                                               *compile_cache.CPU_COMPILE_FLAGS]
    compile_cache.prefer_quick_cpu_compiles()  # once only
    assert len(os.environ["XLA_FLAGS"].split()) == 2
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true")
    compile_cache.prefer_quick_cpu_compiles()
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_use_fusion_emitters=true"


def test_off_writes_nothing_and_the_users_own_jax_folder_wins(tmp_path):
    off = _run({compile_cache.ENV_DIR: "off", "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert off.returncode == 0, off.stderr[-2000:]
    assert not (tmp_path / "xdg").exists() and "cache hit" not in off.stderr
    mine = tmp_path / "mine"
    given = _run({compile_cache.ENV_DIR: str(tmp_path / "ours"), "JAX_COMPILATION_CACHE_DIR": str(mine),
                  "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"})
    assert given.returncode == 0, given.stderr[-2000:]
    assert list(mine.glob("*-cache")) and not (tmp_path / "ours").exists()


def test_default_folder_is_per_user_and_the_bound_is_checked(monkeypatch, tmp_path):
    monkeypatch.delenv(compile_cache.ENV_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache.cache_dir() == tmp_path / "coupjax" / "jax"
    monkeypatch.setenv(compile_cache.ENV_MAX_MB, "64")
    assert compile_cache.max_bytes() == 64 * 2**20
    bad = _run({compile_cache.ENV_MAX_MB: "lots", compile_cache.ENV_DIR: str(tmp_path)}, "import coupjax")
    assert bad.returncode == 0  # nothing asked for the cache
    for command in ("cache", "simulate"):
        cli = _run({compile_cache.ENV_MAX_MB: "lots"}, "from coupjax.cli import main; main()", command)
        assert cli.returncode == 2 and cli.stderr.strip().count("\n") == 0, cli.stderr
    assert "COUPJAX_CACHE_MAX_MB must be a size in MiB" in cli.stderr


def test_cache_clear_removes_only_jax_entries(tmp_path):
    env = {**os.environ, compile_cache.ENV_DIR: str(tmp_path), "PYTHONPATH": str(ROOT)}
    (tmp_path / "k1-cache").write_bytes(b"x" * 100)
    (tmp_path / "k1-atime").write_bytes(b"t" * 8)
    (tmp_path / "notes.txt").write_text("mine")
    info = subprocess.run([sys.executable, "-m", "coupjax", "cache", "info"], env=env, capture_output=True,
                          text=True, cwd=ROOT)
    assert info.returncode == 0 and "1 compiled functions" in info.stdout and str(tmp_path) in info.stdout
    out = subprocess.run([sys.executable, "-m", "coupjax", "cache", "clear"], env=env, capture_output=True,
                         text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "removed 1 compiled functions" in out.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_trim_keeps_the_bound_deleting_the_least_recently_used_first(tmp_path):
    """JAX's own bound scans the folder on every write (0.44 s a write at 2,800 entries),
    so `enable` leaves it off and `trim` bounds the folder once per process."""
    for age, key in enumerate(("new", "mid", "old")):
        for suffix, size in (("-cache", 400), ("-export", 100)):
            p = tmp_path / f"{key}{suffix}"
            p.write_bytes(b"x" * size)
            os.utime(p, (1e9 - age * 100, 1e9 - age * 100))
    (tmp_path / "notes.txt").write_bytes(b"y" * 10_000)  # not the cache's: never counted or deleted
    assert compile_cache.trim(tmp_path, 1500) == 0
    assert compile_cache.trim(tmp_path, 1000) == 500
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mid-cache", "mid-export", "new-cache", "new-export",
                                                         "notes.txt"]
    out = _run({compile_cache.ENV_DIR: str(tmp_path), compile_cache.ENV_MAX_MB: str(500 / 2**20)},
               "from coupjax import compile_cache; import jax; compile_cache.enable();"
               "print(jax.config.jax_compilation_cache_max_size)")
    assert out.returncode == 0 and out.stdout.strip() == "-1", out.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new-cache", "new-export", "notes.txt"]


def test_bench_startup_writes_cold_and_warm_figures(tmp_path):
    """The startup benchmark's frame (the figures themselves are never asserted): each
    bench cold from an emptied cache, then warm, with the load beside it, in its JSON."""
    out = tmp_path / "startup.json"
    run = subprocess.run([sys.executable, "-m", "evals.bench_startup", "--only", "import", "--out", str(out),
                          "--cache-dir", str(tmp_path / "cache")], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    import json

    figures = json.loads(out.read_text())
    for phase in ("cold", "warm"):
        assert figures[phase]["import"] > 0 and len(figures[phase]["import_load"]) == 2
    assert "cold  import" in run.stdout and "load" in run.stdout


def test_a_traced_function_is_saved_and_loaded_without_tracing_again(tmp_path, monkeypatch):
    """`traced_once`: the first use traces and saves the lowered program beside the cache;
    a new one (as in the next process) loads it and does not trace; its results are those
    of ``jax.jit``; another source digest (the code changed) traces again."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    traces = []

    def f(x, pair):
        traces.append(1)
        return {"sum": x + pair[0], "scaled": pair[1] * 2.0}

    monkeypatch.setattr(compile_cache, "export_folder", lambda: str(tmp_path))
    args = (jnp.arange(3.0), (jnp.float32(1.0), jnp.ones(2)))
    first = compile_cache.traced_once(f, "probe")(*args)
    assert len(traces) == 1 and len(list(tmp_path.glob("probe-*-export"))) == 1
    again = compile_cache.traced_once(f, "probe")(*args)  # a fresh wrapper: what a new process has
    assert len(traces) == 1, "loaded, not traced"
    want = jax.jit(f)(*args)
    for got in (first, again):
        assert jax.tree.structure(got) == jax.tree.structure(want)
        assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)))
    monkeypatch.setattr(compile_cache, "source_digest", lambda: "other code")
    compile_cache.traced_once(f, "probe")(*args)
    assert len(list(tmp_path.glob("probe-*-export"))) == 2
    for saved in tmp_path.glob("probe-*-export"):  # a broken file is traced over, not fatal
        saved.write_bytes(b"not a program")
    before = len(traces)
    assert np.array_equal(compile_cache.traced_once(f, "probe")(*args)["sum"], want["sum"])
    assert len(traces) == before + 1
    monkeypatch.setattr(compile_cache, "export_folder", lambda: None)  # cache off: plain jit
    assert np.array_equal(compile_cache.traced_once(f, "probe")(*args)["sum"], want["sum"])
