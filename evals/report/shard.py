"""Batched functions split over the host's devices (one per CPU core, `coupjax.devices`).

`over_devices(fn)`: ``fn`` maps arrays batched on their leading axis to outputs batched
the same way, row by row (a vmapped function, or a vmapped per-game loop); the result
is ``fn`` jitted under `jax.shard_map` over `jax.devices()`, each device computing a
contiguous part of the rows (the batch must divide evenly).  Rows do not interact, so
the results equal one device's.  With one device it is ``jax.jit(fn)``.
"""
from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def device_count() -> int:
    return len(jax.devices())


def over_devices(fn):
    devs = jax.devices()
    if len(devs) == 1:
        return jax.jit(fn)
    mesh = Mesh(np.array(devs), ("data",))
    return jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=P("data"), out_specs=P("data"), check_vma=False))
