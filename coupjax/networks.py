"""The Flax networks on the engine's observation (CoupVisor C.1): what training trains
and what `coupjax.inference` loads an export with.

`MLP`: the observation scaled by `observation_scale` (one-hots kept, counts to about
[0, 1]), then ``hidden_sizes`` Dense + ReLU layers (default 128, 128), then a linear
output of ``num_outputs``.  Layers are named ``hidden_0 ... out``: an export's
``params.msgpack`` is exactly an `MLP`'s ``params`` collection (`apply_mlp` evaluates
one from its parameters alone).  With no hidden layer it is multinomial logistic
regression (behaviour cloning's ``logreg``).  `PolicyWithBelief`: the same MLP with a
second head, the belief, on its last hidden layer (self-play's shared torso).
`PolicyReadingBelief`: a belief MLP of its own (sub-module ``belief``) whose
probabilities the policy MLP reads beside the observation, one parameter tree
(`policy_network_of` evaluates either kind from its parameters alone).
`PolicyReadingPosterior`: the policy MLP on the observation and the exact posterior's
marginals (`coupjax.beliefs.posterior`), which have no parameters.

Flax is imported here, so ``import coupjax`` never imports this module; the package
loads it on first use (`coupjax.inference.load_policy`).
"""
from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rules
from coupjax.beliefs.posterior import exact_posterior
from coupjax.game.views import SEAT_FEATURES, observation_layout
from coupjax.observation import parse


def observation_scale(num_players: int) -> np.ndarray:
    """float32[obs]: the factor applied to each observation entry before the network.

    One-hot blocks (own hand, phase, main action, actor, target, claim, blocker, block
    role) and the alive flag keep scale 1.  Counts are brought to about [0, 1]: drawn
    cards / 2, coins / 10, hidden cards / 2, revealed cards per role / 2, claims and
    blocks per role / 3, challenges won and lost / 3, hand renewals / 5, turns / 50;
    the disproven flags (0/1) keep scale 1.
    """
    lay = observation_layout(num_players)
    scale = np.ones(lay["size"][0], np.float32)
    start, _ = lay["drawn"]
    scale[start:start + rules.NUM_ROLES] = 0.5
    per_seat = {"coins": 0.1, "hidden": 0.5, "alive": 1.0, "revealed": 0.5, "claims": 1 / 3, "blocks": 1 / 3,
                "challenges_won": 1 / 3, "challenges_lost": 1 / 3, "renewals": 0.2, "disproven": 1.0}
    seat_scale = np.concatenate([np.full(size, per_seat[name], np.float32) for name, size in SEAT_FEATURES])
    start, shape = lay["seats"]
    scale[start:start + int(np.prod(shape))] = np.tile(seat_scale, num_players)
    start, _ = lay["turn"]
    scale[start] = 1 / 50
    return scale


def _scaled(obs, num_players: int):
    return jnp.asarray(obs, jnp.float32) * jnp.asarray(observation_scale(num_players))


def _hidden_layers(x, hidden_sizes):
    for i, h in enumerate(hidden_sizes):
        x = nn.relu(nn.Dense(int(h), name=f"hidden_{i}")(x))
    return x


def _torso(obs, num_players: int, hidden_sizes):
    return _hidden_layers(_scaled(obs, num_players), hidden_sizes)


class MLP(nn.Module):
    num_outputs: int
    num_players: int
    hidden_sizes: Sequence[int] = (128, 128)

    @nn.compact
    def __call__(self, obs):
        return nn.Dense(self.num_outputs, name="out")(_torso(obs, self.num_players, self.hidden_sizes))


class PolicyWithBelief(nn.Module):
    """The policy MLP with a belief head on its last hidden layer: the belief's loss
    shapes the policy's features.  Layers ``hidden_i``, ``out`` (the policy: exactly
    `MLP`'s names) and ``belief_out``; returns (policy logits, belief logits)."""

    num_actions: int
    num_players: int
    hidden_sizes: tuple
    num_belief: int

    @nn.compact
    def __call__(self, obs):
        x = _torso(obs, self.num_players, self.hidden_sizes)
        return nn.Dense(self.num_actions, name="out")(x), nn.Dense(self.num_belief, name="belief_out")(x)


class PolicyReadingBelief(nn.Module):
    """The policy MLP on the observation and a learned belief: the belief is an `MLP` of
    its own (sub-module ``belief``: observation -> logits of P(relative opponent k holds
    role r), ``num_belief`` = (n-1) x 5), and the policy's layers ``hidden_i``, ``out``
    read concat(scaled observation, sigmoid(belief logits)).

    Why: whether a claim is plausible is a complicated function of the public counts that
    the belief learns from a dense signal (the true hands at every decision) and the
    policy hardly learns from sparse rewards.  The belief's probabilities enter through
    `jax.lax.stop_gradient`, so the policy's losses never move the belief: it is trained
    by its own loss alone and stays a calibrated belief.  One parameter tree, so that
    every copy of the policy (snapshots, magnet, checkpoints, the export) carries the
    belief it reads.  Returns (policy logits, belief logits)."""

    num_actions: int
    num_players: int
    hidden_sizes: tuple
    belief_hidden_sizes: tuple
    num_belief: int

    @nn.compact
    def __call__(self, obs):
        belief = MLP(self.num_belief, self.num_players, tuple(self.belief_hidden_sizes), name="belief")(obs)
        x = jnp.concatenate([_scaled(obs, self.num_players), jax.lax.stop_gradient(nn.sigmoid(belief))], axis=-1)
        return nn.Dense(self.num_actions, name="out")(_hidden_layers(x, self.hidden_sizes)), belief


def posterior_features(obs, num_players: int):
    """float32[..., (n-1) x 5 + 2]: what `PolicyReadingPosterior` reads beside the observation.

    The exact posterior's P(relative opponent k holds role r) (`coupjax.beliefs.posterior`,
    its default claim likelihoods), then P(the pending action claim is true) and P(the
    pending block claim is true) under it (1 where there is none, or where the claimant is
    the observer, whose own hand the observation holds).  A function of the observation
    alone, so every seat computes it from its own view and nothing hidden enters."""
    obs = jnp.asarray(obs, jnp.float32)
    flat = obs.reshape((-1, obs.shape[-1]))

    def one(o):
        marginals = exact_posterior(o, num_players)["role_marginals"]
        v = parse(o, num_players)

        def truth(seat, role):
            p = marginals[jnp.clip(seat, 0, num_players - 1), jnp.clip(role, 0, rules.NUM_ROLES - 1)]
            return jnp.where((seat > 0) & (role >= 0), p, 1.0)

        return jnp.concatenate([marginals[1:].reshape(-1), jnp.stack([truth(v.actor, v.claim),
                                                                      truth(v.blocker, v.block_role)])])

    out = jax.vmap(one)(flat)
    return out.reshape(obs.shape[:-1] + out.shape[-1:])


def num_posterior_features(num_players: int) -> int:
    return (num_players - 1) * rules.NUM_ROLES + 2


class PolicyReadingPosterior(nn.Module):
    """The policy MLP on concat(scaled observation, `posterior_features`): the exact
    posterior's marginals and the truth of the pending claims, which a network learns
    only slowly from sparse rewards (that a claim is impossible because every copy of
    its role is visible, or that a caught bluffer still holds no copy).  The features
    have no parameters, so the parameters are exactly an `MLP`'s (``hidden_i``, ``out``)
    with a wider first layer; returns the policy logits like `MLP`.

    ``features``: `posterior_features` of ``obs`` computed beforehand (they cost some
    twenty times the MLP, and training reads them many times per decision: the rollout
    computes them once and the update reuses them); None computes them here."""

    num_actions: int
    num_players: int
    hidden_sizes: tuple

    @nn.compact
    def __call__(self, obs, features=None):
        if features is None:
            features = posterior_features(obs, self.num_players)
        x = jnp.concatenate([_scaled(obs, self.num_players), features], axis=-1)
        return nn.Dense(self.num_actions, name="out")(_hidden_layers(x, self.hidden_sizes))


def make_network(env, hidden_sizes=(128, 128)) -> MLP:
    """The Q-network / policy head for ``env``: obs -> num_actions values."""
    return MLP(num_outputs=env.num_actions, num_players=env.num_players, hidden_sizes=tuple(hidden_sizes))


def init_params(network: nn.Module, key, obs_dim: int):
    """The ``params`` collection (what is trained, checkpointed and exported)."""
    return network.init(key, jnp.zeros((obs_dim,), jnp.float32))["params"]


def mlp_of(params, num_players: int) -> MLP:
    """The `MLP` whose parameters ``params`` are (``hidden_0 ...``, ``out``; an export's)."""
    hidden, i = [], 0
    while f"hidden_{i}" in params:
        hidden.append(int(np.shape(params[f"hidden_{i}"]["bias"])[0]))
        i += 1
    return MLP(int(np.shape(params["out"]["bias"])[0]), num_players, tuple(hidden))


def apply_mlp(params, obs, num_players: int):
    """`MLP` ``params`` on ``obs`` (float32[..., num_outputs]): an export's network."""
    return mlp_of(params, num_players).apply({"params": params}, obs)


def policy_network_of(params, num_players: int, reads_posterior: bool = False):
    """``obs -> policy logits`` (or q-values) of an export's ``params``: an `MLP`'s, a
    `PolicyReadingPosterior`'s (``reads_posterior``: its parameters are an MLP's with a
    wider first layer, so the export says which), or a `PolicyReadingBelief`'s when they
    hold its ``belief`` sub-tree (shapes read from them)."""
    if reads_posterior:
        plain = mlp_of(params, num_players)
        network = PolicyReadingPosterior(plain.num_outputs, num_players, plain.hidden_sizes)
        return lambda obs: network.apply({"params": params}, obs)
    if "belief" not in params:
        network = mlp_of(params, num_players)
        return lambda obs: network.apply({"params": params}, obs)
    plain = mlp_of({k: v for k, v in params.items() if k != "belief"}, num_players)
    belief = mlp_of(params["belief"], num_players)
    network = PolicyReadingBelief(plain.num_outputs, num_players, plain.hidden_sizes, belief.hidden_sizes,
                                  belief.num_outputs)
    return lambda obs: network.apply({"params": params}, obs)[0]


__all__ = ["observation_scale", "MLP", "PolicyWithBelief", "PolicyReadingBelief", "PolicyReadingPosterior",
           "posterior_features", "num_posterior_features", "make_network", "init_params",
           "mlp_of", "apply_mlp", "policy_network_of"]
