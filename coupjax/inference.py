"""Load an exported learned policy (DQN, behaviour cloning or self-play) for play.

``load_policy(path)`` accepts a training run directory (``RUN/``, with ``RUN/export/``)
or the export directory itself, which holds:

* ``policy.json``: ``kind`` (``dqn`` | ``bc_logreg`` | ``bc_mlp`` | ``selfplay``), ``num_players``,
  ``hidden_sizes``, ``obs_dim``, ``num_actions``, ``temperature`` (the default),
  ``params_file`` and the training ``config``;
* ``params.msgpack``: the network parameters (`flax.serialization` msgpack of
  ``{"hidden_0": {"kernel", "bias"}, ..., "out": {...}}``).  A self-play policy that
  reads its learned belief (``policy_reads_belief: true`` in policy.json, with
  ``belief_hidden_sizes``) holds the belief MLP's parameters as ``"belief"`` beside
  them, and its first layer reads the observation and the belief's (n-1) x 5
  probabilities (`coupjax.networks.PolicyReadingBelief`).  One that reads the exact
  posterior (``policy_reads_posterior: true``) has an MLP's parameters whose first
  layer reads the observation and `coupjax.networks.posterior_features`
  (`PolicyReadingPosterior`); exports without either field are the plain MLP.

It returns a policy of the common interface ``policy(key, state) -> logits``
(float32[num_actions], ``-inf`` exactly on the illegal actions; jit/vmap-able) that
reads only ``state.observation`` and ``state.legal_action_mask``:

* ``dqn``: the q-values as logits.  ``temperature == 0`` is greedy: 0 on the legal
  actions of maximal q (ties split uniformly by the sampler), ``log(1e-30)`` on the
  other legal ones; ``temperature > 0`` gives ``(q - max q) / temperature``.
* ``bc_*``, ``selfplay``: the network's log-probabilities over the legal actions (the
  cloned policy, or the self-play policy head), divided by the temperature (1 samples
  the policy; 0 is greedy as above).

The network is `coupjax.networks.MLP` (or one of the two readers), the module training
trains (its input is the observation multiplied by `coupjax.networks.observation_scale`):
an export is loaded by the code that defined it, and this module needs nothing from
``training``.  Flax comes with the first `load_policy`, not with ``import coupjax``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rules
from coupjax.game.views import observation_layout

KINDS = ("dqn", "bc_logreg", "bc_mlp", "selfplay")
POLICY_FILE = "policy.json"
PARAMS_FILE = "params.msgpack"
NEVER_LOGIT = float(np.log(1e-30))


def masked_policy_logits(values, mask, temperature: float, log_probs: bool):
    """Values (q-values, or raw logits when ``log_probs``) -> logits of the common interface."""
    mask = jnp.asarray(mask, bool)
    if log_probs:
        values = jax.nn.log_softmax(jnp.where(mask, values, -jnp.inf))
    best = jnp.max(jnp.where(mask, values, -jnp.inf), axis=-1, keepdims=True)
    if temperature == 0:
        out = jnp.where(values >= best, 0.0, NEVER_LOGIT)
    else:
        out = (values - best) / temperature
    return jnp.where(mask, out, -jnp.inf).astype(jnp.float32)


def _export_dir(path) -> Path:
    p = Path(path)
    if (p / POLICY_FILE).is_file():
        return p
    if (p / "export" / POLICY_FILE).is_file():
        return p / "export"
    if not p.exists():
        raise ValueError(f"no exported policy at {str(p)!r}: the path does not exist")
    raise ValueError(f"no exported policy at {str(p)!r}: neither {POLICY_FILE} nor export/{POLICY_FILE} is there")


def read_export(path) -> tuple[dict, dict]:
    """(policy.json dict, params) of an export; ValueError naming the path if missing or corrupt."""
    d = _export_dir(path)
    meta_path = d / POLICY_FILE
    try:
        info = json.loads(meta_path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"corrupt policy file {str(meta_path)!r}: {e}") from None
    if not isinstance(info, dict):
        raise ValueError(f"corrupt policy file {str(meta_path)!r}: not a JSON object")
    missing = [k for k in ("kind", "num_players", "hidden_sizes", "obs_dim", "num_actions") if k not in info]
    if missing:
        raise ValueError(f"corrupt policy file {str(meta_path)!r}: missing {missing}")
    if info["kind"] not in KINDS:
        raise ValueError(f"corrupt policy file {str(meta_path)!r}: kind {info['kind']!r} is not one of {KINDS}")
    params_path = d / info.get("params_file", PARAMS_FILE)
    params = read_msgpack(params_path, "parameter")
    n, hidden = int(info["num_players"]), list(info["hidden_sizes"])
    obs_dim = int(info["obs_dim"])
    reads_belief = info.get("policy_reads_belief", False)
    if reads_belief not in (True, False) or (reads_belief and "belief_hidden_sizes" not in info):
        raise ValueError(f"corrupt policy file {str(meta_path)!r}: policy_reads_belief must be true or false, "
                         f"and true needs belief_hidden_sizes")
    reads_posterior = info.get("policy_reads_posterior", False)
    if reads_posterior not in (True, False) or (reads_posterior and reads_belief):
        raise ValueError(f"corrupt policy file {str(meta_path)!r}: policy_reads_posterior must be true or false, "
                         f"and not beside policy_reads_belief")
    num_belief = (n - 1) * rules.NUM_ROLES
    extra_inputs = num_belief if reads_belief else (num_belief + 2 if reads_posterior else 0)
    layers = [("", [obs_dim + extra_inputs] + hidden + [int(info["num_actions"])])]
    if reads_belief:
        layers.append(("belief", [obs_dim] + list(info["belief_hidden_sizes"]) + [num_belief]))
    try:
        if not isinstance(params, dict) or ("belief" in params) != reads_belief:
            raise ValueError("a 'belief' sub-tree if and only if policy_reads_belief")
        for where, sizes in layers:
            tree = params[where] if where else params
            for i, name in enumerate([f"hidden_{i}" for i in range(len(sizes) - 2)] + ["out"]):
                k, b = np.asarray(tree[name]["kernel"]), np.asarray(tree[name]["bias"])
                if k.shape != (sizes[i], sizes[i + 1]) or b.shape != (sizes[i + 1],):
                    raise ValueError(f"layer {where + '/' if where else ''}{name} has shapes {k.shape}, {b.shape}")
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"corrupt parameter file {str(params_path)!r}: does not match {str(meta_path)!r} "
                         f"({e})") from None
    if obs_dim != observation_layout(n)["size"][0] or int(info["num_actions"]) != rules.num_actions(n):
        raise ValueError(f"corrupt policy file {str(meta_path)!r}: obs_dim/num_actions do not fit {n} players")
    return info, params


def load_policy(path, temperature: float | None = None, num_players: int | None = None) -> Callable:
    """The exported policy at ``path`` (run dir or export dir) as ``policy(key, state) -> logits``.

    ``temperature``: None uses the exported default (see the module doc).  The returned
    function carries ``.info`` (policy.json), ``.params``, ``.values(obs)`` (the raw
    network output) and ``.param_apply(params, key, state)``: the same policy with its
    weights an argument, so the table runners (`coupjax.seat_tables.as_param_policy`)
    compile one program for every network of an architecture instead of one per
    network, its weights folded in as constants.
    """
    info, params = read_export(path)
    n = int(info["num_players"])
    if num_players is not None and int(num_players) != n:
        raise ValueError(f"the policy at {str(path)!r} is for {n} players, not {num_players}")
    temp = float(info.get("temperature", 0.0) if temperature is None else temperature)
    if temp < 0:
        raise ValueError(f"temperature must be >= 0, got {temp}")
    from coupjax.networks import policy_network_of

    params = jax.tree.map(jnp.asarray, params)
    log_probs = info["kind"] != "dqn"
    reads_posterior = info.get("policy_reads_posterior", False)
    values = policy_network_of(params, n, reads_posterior)

    def param_apply(prm, key, state):
        del key
        logits = policy_network_of(prm, n, reads_posterior)(state.observation)
        return masked_policy_logits(logits, state.legal_action_mask, temp, log_probs)

    def policy(key, state):
        return param_apply(params, key, state)

    policy.info = info
    policy.params = params
    policy.values = values
    policy.param_apply = param_apply
    return policy


def read_msgpack(path, what: str) -> dict:
    """A msgpack file of an export as a pytree; a missing or corrupt file is a
    `ValueError` that names the file and what it holds (``what``)."""
    from flax import serialization

    try:
        return serialization.msgpack_restore(Path(path).read_bytes())
    except FileNotFoundError:
        raise ValueError(f"missing {what} file {str(path)!r}") from None
    except Exception as e:  # msgpack raises several types on bad bytes
        raise ValueError(f"corrupt {what} file {str(path)!r}: {e}") from None
