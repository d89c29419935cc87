"""One XLA device per CPU core, for data-parallel code on a CPU host.

JAX gives a CPU host one device, and XLA runs most ops of a small per-game batch on a
single thread, so a 2-core machine steps games on one core.  Split into ``D`` host
devices (``--xla_force_host_platform_device_count``), code that shards its batch over
`jax.devices()` -- the DQN step (`training.dqn`), the engine benchmark -- runs one
device per core.  The flag only takes effect before JAX starts its backends, so entry
points call `use_host_cores` first thing.
"""
from __future__ import annotations

import os

FLAG = "--xla_force_host_platform_device_count"


def use_host_cores(count: int | None = None) -> int:
    """Ask XLA for ``count`` CPU devices (default: one per core); returns the count asked.

    Changes nothing (returns 1) when ``count`` is 1, when ``XLA_FLAGS`` already sets the
    count (the user's choice wins), or when JAX's backends are already running.
    """
    count = (os.cpu_count() or 1) if count is None else int(count)
    flags = os.environ.get("XLA_FLAGS", "")
    if count <= 1 or FLAG in flags or _backends_started():
        return 1
    os.environ["XLA_FLAGS"] = f"{flags} {FLAG}={count}".strip()
    return count


def _backends_started() -> bool:
    try:
        from jax._src import xla_bridge
    except ImportError:  # pragma: no cover - JAX is a dependency
        return False
    return bool(getattr(xla_bridge, "_backends", {}))


AXIS = "data"  # the one mesh axis: games (or game slots) split across devices


def data_mesh(devices=None, axis: str = AXIS):
    """The 1-D mesh of data-parallel code: ``devices`` (default all of `jax.devices()`)
    along ``axis``.  Every sharded loop of the project (the arena's queue, DQN,
    self-play, the advisor's recorder, the report's `over_devices`, the engine
    benchmark) builds its mesh here."""
    import jax
    import numpy as np
    from jax.sharding import Mesh

    return Mesh(np.asarray(list(jax.devices() if devices is None else devices)), (axis,))


def shard(fn, mesh, in_specs, out_specs):
    """``fn`` under `jax.shard_map` on ``mesh`` (replication unchecked: each device's
    part is computed from its own rows, collectives are explicit)."""
    import jax

    return jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)


def batch_sharding(mesh):
    """Arrays split along their leading (batch) axis over ``mesh``'s one axis."""
    from jax.sharding import NamedSharding, PartitionSpec

    return NamedSharding(mesh, PartitionSpec(mesh.axis_names[0]))
