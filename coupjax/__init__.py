"""coupjax: a pure-functional Coup engine in JAX, with beliefs, advice and learning.

The names below are loaded on first use (PEP 562), so ``import coupjax`` stays light
and a command, the page or a bot pays only for the libraries its feature needs
(``coupjax.Env`` brings JAX; Flax, Orbax, W&B and the web stack come later still).
"""
from __future__ import annotations

import importlib

# public name -> the module that defines it (None: the name is that module)
_HOMES = {
    "Env": "coupjax.env",
    "Match": "coupjax.match",
    "State": "coupjax.state",
    "Event": "coupjax.state",
    "rules": None,
    "observation_layout": "coupjax.game.views",
    "load_policy": "coupjax.inference",
}

__all__ = ["Env", "Match", "State", "Event", "rules", "observation_layout", "load_policy"]


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'coupjax' has no attribute {name!r}")
    home = _HOMES[name]
    value = importlib.import_module(f"coupjax.{name}") if home is None else getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
