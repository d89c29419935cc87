"""The setup protocol of the algorithms: what ``make_train(config)`` returns.

Each algorithm file (`training.dqn`, `training.selfplay`) builds its own subclass of
`Setup` with its own pieces (the learner and replay buffer, the league and heads) and
the functions the chunk driver (`training.train`) calls:

* ``init(key) -> runner state`` (sharded over ``mesh``: ``state_sharding`` gives a
  `NamedSharding` per leaf prefix of the runner state);
* ``train_chunk(runner state) -> (runner state, metrics)``: one jitted chunk;
* ``train(key) -> (runner state, metrics)``: the whole run as one pure function;

and, shared here, the restore target (`abstract_state`), the placement of a host state
(`put`) and the metrics as host values (`flatten_metrics`, which an algorithm may
refine).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import optax
from jax.sharding import Mesh, NamedSharding


def default_devices(*sizes: int) -> list:
    """The first D of `jax.devices()`, D the most of them that divides every size (the
    game slots, the batch: each device gets an equal share)."""
    devices = jax.devices()
    return devices[:max(d for d in range(1, len(devices) + 1) if all(int(s) % d == 0 for s in sizes))]


@dataclasses.dataclass(frozen=True)
class Setup:
    """Everything for a run of ``config`` (module doc)."""

    config: Any
    env: Any
    optimizer: optax.GradientTransformation
    mesh: Mesh
    state_sharding: Any  # the runner state's shardings, one NamedSharding per leaf prefix
    init: Callable
    train_chunk: Callable
    train: Callable

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    def full_sharding(self):
        """The runner state's sharding per leaf."""
        shapes = jax.eval_shape(self.init, jax.random.PRNGKey(0))
        return jax.tree.map(lambda p, sub: jax.tree.map(lambda _: p, sub), self.state_sharding, shapes,
                            is_leaf=lambda x: isinstance(x, NamedSharding))

    def abstract_state(self):
        """ShapeDtypeStruct tree (with shardings) of a runner state: the restore target."""
        shapes = jax.eval_shape(self.init, jax.random.PRNGKey(0))
        return jax.tree.map(lambda s, sh: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh), shapes,
                            self.full_sharding())

    def put(self, host_state):
        """Place a host (numpy) runner state on the mesh with its shardings."""
        return jax.device_put(host_state, self.full_sharding())

    def for_this_run(self, rs):
        """``rs`` (an initial or restored state on the mesh) with the values this config
        sets that shape no program, such as a schedule's length (an algorithm may have
        some; the chunk driver applies this to every state it starts from)."""
        return rs

    def flatten_metrics(self, m: dict) -> dict:
        """Chunk metrics as host values (an algorithm may flatten them further)."""
        return jax.device_get(m)
