"""A replay buffer in device memory, flashbax style: a frozen dataclass of pure
functions over an explicit `BufferState`.

    buf = make_replay_buffer(capacity=10_000, num_envs=B, batch_size=64, min_size=256)
    state = buf.init(example_transition)          # one unbatched item (any pytree)
    state = buf.add(state, batch)                  # leaves [B, ...]: one item per game slot
    buf.can_sample(state)                          # bool: stored items >= max(min_size, batch_size)
    batch = buf.sample(state, key)                 # leaves [batch_size, ...]

Storage is a ring of ``rows = capacity // num_envs`` rows of ``num_envs`` items
(row-major in time, one column per game slot).  ``add`` writes one row at ``index``
and advances it modulo ``rows``, overwriting the oldest row once full; ``size``
counts the valid rows.  ``sample`` only reads valid rows.

Sampling is stratified over columns and sharding-invariant: global sample ``j`` draws
``u ~ U[0, 1)`` and a row uniformly from the valid ones with ``fold_in(key, j)``, and
takes column ``floor((j + u) * num_envs / batch_size)``.  Every item is equally likely,
and the samples whose columns live on shard ``d`` of ``num_shards`` (columns split in
equal contiguous blocks) are exactly samples ``d * batch_size / num_shards ...``, so
``sample(state_d, key, shard_index=d, num_shards=D)`` on each shard returns that block
of the unsharded sample.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class BufferState:
    data: Any  # pytree, leaves [rows, columns, ...]
    index: jnp.ndarray  # int32 []  next row to write
    size: jnp.ndarray  # int32 []  valid rows


@dataclasses.dataclass(frozen=True)
class ReplayBuffer:
    init: Callable[[Any], BufferState]
    add: Callable[[BufferState, Any], BufferState]
    sample: Callable[..., Any]
    can_sample: Callable[[BufferState], jnp.ndarray]
    rows: int
    num_envs: int
    batch_size: int
    min_size: int


def make_replay_buffer(capacity: int, num_envs: int, batch_size: int, min_size: int = 0,
                       num_shards: int = 1) -> ReplayBuffer:
    """A uniform replay buffer of ``capacity`` items added ``num_envs`` at a time.

    ``num_shards`` > 1: each shard holds ``num_envs // num_shards`` columns and
    ``sample`` must be given its ``shard_index``; it returns ``batch_size // num_shards``
    items (see the module doc).
    """
    rows = capacity // num_envs
    if rows < 1:
        raise ValueError(f"capacity {capacity} is smaller than num_envs {num_envs}")
    if num_envs % num_shards or batch_size % num_shards:
        raise ValueError(f"num_envs ({num_envs}) and batch_size ({batch_size}) must be multiples of the "
                         f"number of shards ({num_shards})")
    cols = num_envs // num_shards
    local_batch = batch_size // num_shards
    need = max(int(min_size), int(batch_size))

    def init(example) -> BufferState:
        data = jax.tree.map(lambda x: jnp.zeros((rows, cols) + jnp.shape(x), jnp.asarray(x).dtype), example)
        return BufferState(data=data, index=jnp.int32(0), size=jnp.int32(0))

    def add(state: BufferState, batch) -> BufferState:
        def write(buf, x):
            return jax.lax.dynamic_update_index_in_dim(buf, x.astype(buf.dtype), state.index, 0)

        data = jax.tree.map(write, state.data, batch)
        return BufferState(data=data, index=(state.index + 1) % rows, size=jnp.minimum(state.size + 1, rows))

    def can_sample(state: BufferState):
        return state.size * num_envs >= need

    def sample(state: BufferState, key, shard_index=0):
        j = jnp.asarray(shard_index, jnp.int32) * local_batch + jnp.arange(local_batch, dtype=jnp.int32)

        def one(jj):
            k_col, k_row = jax.random.split(jax.random.fold_in(key, jj))
            u = jax.random.uniform(k_col)
            col = jnp.floor((jj.astype(jnp.float32) + u) * (num_envs / batch_size)).astype(jnp.int32)
            row = jax.random.randint(k_row, (), 0, jnp.maximum(state.size, 1))
            return row, col

        row, col = jax.vmap(one)(j)
        col = jnp.clip(col - jnp.asarray(shard_index, jnp.int32) * cols, 0, cols - 1)
        return jax.tree.map(lambda buf: buf[row, col], state.data)

    return ReplayBuffer(init=init, add=add, sample=sample, can_sample=can_sample, rows=rows, num_envs=num_envs,
                        batch_size=batch_size, min_size=int(min_size))
