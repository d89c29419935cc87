"""Shared by every test and every xdist worker: the persistent compilation cache.

The suite's time is mostly XLA compiling the same functions again: in each xdist
worker, in each subprocess a test starts (the CLI, the page server, the arena), and in
each run.  With one persistent cache (`coupjax.compile_cache`, the same one every
coupjax command uses) a function compiled once is loaded everywhere else: by the other
worker, by the subprocesses (they inherit the cache through JAX's environment
variables), and by the next run of the suite.  ``COUPJAX_CACHE_DIR`` moves it (``off``
turns it off, to time a cold start).
"""
from __future__ import annotations

import os

from coupjax import compile_cache

os.environ.setdefault("WANDB_MODE", "offline")
# Before any test module imports JAX: a worker's first compilation already uses it.
compile_cache.enable()
