"""Batched functions split over the host's devices (one per CPU core, `coupjax.devices`).

`over_devices(fn)`: ``fn`` maps arrays batched on their leading axis to outputs batched
the same way, row by row (a vmapped function, or a vmapped per-game loop); the result
is ``fn`` jitted under `jax.shard_map` over `jax.devices()`, each device computing a
contiguous part of the rows (the batch must divide evenly).  Rows do not interact, so
the results equal one device's.  With one device it is ``jax.jit(fn)``.
"""
from __future__ import annotations

import jax
from jax.sharding import PartitionSpec as P

from coupjax.devices import data_mesh, shard


def device_count() -> int:
    return len(jax.devices())


def over_devices(fn):
    devs = jax.devices()
    if len(devs) == 1:
        return jax.jit(fn)
    return jax.jit(shard(fn, data_mesh(devs), P("data"), P("data")))
