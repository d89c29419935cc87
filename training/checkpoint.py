"""Orbax checkpoints of a whole run, and the inference export.

Checkpoints (``RUN/checkpoints/<step>/``, `orbax.checkpoint.CheckpointManager`): item
``state`` is the full `training.dqn.RunnerState` as host arrays (params, target
params, optimiser state, replay buffer, the games of the learner's view, RNG key,
counters), item ``config`` the run's config as JSON.  The step is the number of chunks
done.  Restoring onto the same config gives the identical next chunk.  With several
processes (`coupjax.distributed`) the state's arrays span hosts: every process saves and
restores its own shards through Orbax's multi-process API (process 0 writes the
metadata), so the directory must be on storage that every host sees.

Export (``RUN/export/``): ``params.msgpack`` (`flax.serialization`) and ``policy.json``,
read by `coupjax.inference.load_policy`.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp
from flax import serialization

from coupjax.inference import PARAMS_FILE, POLICY_FILE, read_export


def checkpoint_manager(directory, max_to_keep: int = 2, create: bool = True) -> ocp.CheckpointManager:
    options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=create, enable_async_checkpointing=False)
    return ocp.CheckpointManager(Path(directory).absolute(), options=options, item_names=("state", "config"))


def save_checkpoint(manager: ocp.CheckpointManager, step: int, state, config: dict) -> None:
    """Save ``state`` (any pytree; fetched to host, or its arrays as they are when they
    span several processes) and ``config`` (JSON-able) at ``step``.  Every process calls it."""
    host = state if jax.process_count() > 1 else jax.device_get(state)
    manager.save(int(step), args=ocp.args.Composite(state=ocp.args.StandardSave(host),
                                                    config=ocp.args.JsonSave(config)), force=True)
    manager.wait_until_finished()


def latest_step(directory) -> int | None:
    d = Path(directory)
    if not d.is_dir():
        return None
    return checkpoint_manager(d, create=False).latest_step()


def restore_checkpoint(directory, target, step: int | None = None):
    """(host state shaped like ``target``, config dict, step) of the latest (or given) step.

    ``target``: a pytree of arrays or ShapeDtypeStructs giving the structure, shapes and
    dtypes.  With several processes the state comes back as arrays placed by
    ``target``'s shardings (each process reads its shards).  Raises ValueError naming
    the directory when there is no checkpoint or it cannot be read.
    """
    d = Path(directory)
    if not d.is_dir():
        raise ValueError(f"no checkpoint directory at {str(d)!r}")
    manager = checkpoint_manager(d, create=False)
    step = manager.latest_step() if step is None else int(step)
    if step is None:
        raise ValueError(f"no checkpoint in {str(d)!r}")
    several = jax.process_count() > 1
    host_target = target if several else jax.tree.map(lambda x: np.zeros(x.shape, x.dtype), target)
    try:
        out = manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(host_target),
                                                            config=ocp.args.JsonRestore()))
    except Exception as e:  # orbax raises many kinds on damaged files
        where = str(d / str(step))
        raise ValueError(f"corrupt or incompatible checkpoint {where!r}: {type(e).__name__}: {e}") from None
    state = out["state"] if several else jax.tree.map(np.asarray, out["state"])
    got = [(tuple(a.shape), np.dtype(a.dtype)) for a in jax.tree.leaves(state)]
    want = [(tuple(x.shape), np.dtype(x.dtype)) for x in jax.tree.leaves(target)]
    if got != want:
        raise ValueError(f"checkpoint {str(d / str(step))!r} does not match this config's state shapes")
    return state, out["config"], step


def relative_paths(data, root):
    """JSON ``data`` with every string and mapping key that is a path inside ``root``
    written relative to it: an export that names its own run's files (a PSRO league's
    best responses) then names no folder of the machine it was trained on, and its run
    directory can move (runs/experiments is committed)."""
    prefix = str(Path(root).resolve()) + os.sep

    def fix(x):
        if isinstance(x, str):
            return x[len(prefix):] if x.startswith(prefix) else x
        if isinstance(x, dict):
            return {fix(k): fix(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [fix(v) for v in x]
        return x

    return fix(data)


def write_export(export_dir, params, *, kind: str, num_players: int, hidden_sizes, obs_dim: int, num_actions: int,
                 temperature: float, config: dict, extra: dict | None = None, run_dir=None) -> Path:
    """Write ``params.msgpack`` + ``policy.json``; returns the directory.  Checks it loads.
    ``run_dir``: paths inside it are written relative to it (`relative_paths`)."""
    d = Path(export_dir)
    d.mkdir(parents=True, exist_ok=True)
    host = jax.tree.map(np.asarray, jax.device_get(params))
    (d / PARAMS_FILE).write_bytes(serialization.msgpack_serialize(serialization.to_state_dict(host)))
    info = {"format_version": 1, "kind": kind, "num_players": int(num_players),
            "hidden_sizes": [int(h) for h in hidden_sizes], "obs_dim": int(obs_dim),
            "num_actions": int(num_actions), "temperature": float(temperature), "params_file": PARAMS_FILE,
            "config": config, **(extra or {})}
    if run_dir is not None:
        info = relative_paths(info, run_dir)
    (d / POLICY_FILE).write_text(json.dumps(info, indent=2))
    read_export(d)
    return d
