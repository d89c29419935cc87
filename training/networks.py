"""Flax networks on the engine's observation (CoupVisor C.1).

`MLP`: the observation scaled by `coupjax.inference.observation_scale` (one-hots kept,
counts to about [0, 1]), then ``hidden_sizes`` Dense + ReLU layers (default 128, 128),
then a linear output of ``num_outputs``.  Layers are named ``hidden_0 ... out`` so the
parameters are exactly what `coupjax.inference.mlp_apply` evaluates.  With no hidden
layer it is multinomial logistic regression (behaviour cloning's ``logreg``).
"""
from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax.numpy as jnp

from coupjax.inference import observation_scale


class MLP(nn.Module):
    num_outputs: int
    num_players: int
    hidden_sizes: Sequence[int] = (128, 128)

    @nn.compact
    def __call__(self, obs):
        x = jnp.asarray(obs, jnp.float32) * jnp.asarray(observation_scale(self.num_players))
        for i, h in enumerate(self.hidden_sizes):
            x = nn.relu(nn.Dense(int(h), name=f"hidden_{i}")(x))
        return nn.Dense(self.num_outputs, name="out")(x)


def make_network(env, hidden_sizes=(128, 128)) -> MLP:
    """The Q-network / policy head for ``env``: obs -> num_actions values."""
    return MLP(num_outputs=env.num_actions, num_players=env.num_players, hidden_sizes=tuple(hidden_sizes))


def init_params(network: MLP, key, obs_dim: int):
    """The ``params`` collection (what is trained, checkpointed and exported)."""
    return network.init(key, jnp.zeros((obs_dim,), jnp.float32))["params"]


__all__ = ["MLP", "make_network", "init_params"]
