"""Shared by every test and every xdist worker: the persistent compilation cache.

The suite's time is mostly XLA compiling the same functions again: in each xdist
worker, in each subprocess a test starts (the CLI, the page server, the arena), and in
each run.  With one persistent cache (`coupjax.compile_cache`, the same one every
coupjax command uses) a function compiled once is loaded everywhere else: by the other
worker, by the subprocesses (they inherit the cache through JAX's environment
variables), and by the next run of the suite.  ``COUPJAX_CACHE_DIR`` moves it (``off``
turns it off, to time a cold start).

The quick tier also compiles with most of XLA's optimizations off
(``JAX_DISABLE_MOST_OPTIMIZATIONS``, JAX's own switch, inherited by the subprocesses):
its programs run on a few games each, so compiling is most of their time (a cold quick
tier on a 2-core CPU: 645 s optimized, 442 s not).  The few tests that play thousands
of games compile optimized all the same (the ``optimized_xla`` fixture).  The slow tier
(``-m slow``) compiles as every command does, so the optimized programs are tested too.
Set the variable yourself (``=0`` or ``=1``) to choose either way.
"""
from __future__ import annotations

import os
import sys

import pytest

from coupjax import compile_cache

os.environ.setdefault("WANDB_MODE", "offline")
# Before any test module imports JAX: a worker's first compilation already uses it.
compile_cache.enable()

OPTIMIZE_SWITCH = "JAX_DISABLE_MOST_OPTIMIZATIONS"


def pytest_configure(config):
    """Choose the tier's compilation (module doc) before any test module imports JAX."""
    slow_tier = "slow" in (config.getoption("markexpr") or "").replace("not slow", "")
    os.environ.setdefault(OPTIMIZE_SWITCH, "0" if slow_tier else "1")
    if "jax" in sys.modules:  # a plugin imported it first: JAX read its flags already
        import jax

        jax.config.update("jax_disable_most_optimizations", os.environ[OPTIMIZE_SWITCH] not in ("0", "false", ""))


@pytest.fixture
def optimized_xla():
    """Compile this test's programs with XLA's optimizations: for the quick tier's few
    tests that play thousands of games, where running is most of the time."""
    import jax

    before = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", False)
    yield
    jax.config.update("jax_disable_most_optimizations", before)
