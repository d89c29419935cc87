"""One resolver of a policy spec, for every command and config that takes a policy.

A spec is one of:

* a registered name (`registry.policy_names`), e.g. ``belief_ev``;
* ``NAME:ARG`` for a registered factory that takes one argument, e.g.
  ``selfplay_search:runs/sp`` or ``advised:honest:all`` (everything after the first
  colon is the argument: the factory is called as ``make(env, ARG)``);
* a run or export directory written by training (`coupjax.inference.load_policy`);
* ``module:function`` for a user's own policy: a factory ``function(env) -> policy``
  (one parameter) or the policy ``function(key, state) -> logits`` itself (two).
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
from pathlib import Path

from coupjax.policies.common import Policy
from coupjax.policies.registry import entry, make_policy, policy_names


class PolicySpecError(ValueError):
    """A policy spec that names nothing known; the message says what was tried."""


# Packages of this project whose folders hold exports (`evals/reference/dqn/export`).
PACKAGED = ("coupjax", "training", "evals")


def locate(spec: str) -> Path | None:
    """The run or export directory ``spec`` names, or None if there is none: a path from
    the working directory, else one inside this project's installed packages
    (`PACKAGED`), so ``evals/reference/dqn/export`` is found wherever a command runs."""
    path = Path(spec)
    if path.exists():
        return path
    if path.is_absolute() or len(path.parts) < 2 or path.parts[0] not in PACKAGED:
        return None
    found = importlib.util.find_spec(path.parts[0])
    for folder in (found.submodule_search_locations or []) if found else []:
        if Path(folder).joinpath(*path.parts[1:]).exists():
            return Path(folder).joinpath(*path.parts[1:])
    return None


def describe_spec(spec: str) -> str:
    """What kind of spec ``spec`` is: "registered", "registered:arg", "path" or "module"."""
    if spec in policy_names():
        return "registered"
    head, sep, _ = spec.partition(":")
    if sep and head in policy_names():
        return "registered:arg"
    if locate(spec) is not None:
        return "path"
    if sep:
        return "module"
    raise PolicySpecError(f"policy {spec!r} is neither a registered policy ({', '.join(policy_names())}), "
                          f"an existing run or export directory, nor module:function")


def resolve_policy(spec, env, **kwargs) -> Policy:
    """The policy ``spec`` names (module doc) for ``env``; a callable passes through."""
    if callable(spec):
        return spec
    if not isinstance(spec, str) or not spec:
        raise PolicySpecError(f"a policy spec is a non-empty string, got {spec!r}")
    kind = describe_spec(spec)
    if kind == "registered":
        return make_policy(spec, env, **kwargs)
    if kind == "registered:arg":
        name, _, arg = spec.partition(":")
        factory = entry(name).factory()
        if not _takes_an_argument(factory):
            raise PolicySpecError(f"policy {name!r} takes no argument: give {name!r}, not {spec!r}")
        return factory(env, arg, **kwargs)
    if kind == "path":
        from coupjax.inference import load_policy

        policy = load_policy(locate(spec), num_players=env.num_players, **kwargs)
        return policy
    module, _, attr = spec.partition(":")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except ImportError as err:
        raise PolicySpecError(f"policy {spec!r}: cannot import module {module!r} ({err})") from None
    except AttributeError:
        raise PolicySpecError(f"policy {spec!r}: module {module!r} has no {attr!r}") from None
    if not callable(fn):
        raise PolicySpecError(f"policy {spec!r}: {attr!r} is not callable")
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(params) == 1:
        return fn(env, **kwargs)
    if len(params) == 2 and not kwargs:
        return fn
    raise PolicySpecError(f"policy {spec!r}: {attr!r} must take (env) and return a policy, or be a policy "
                          f"taking (key, state); it takes {len(params)} required arguments")


def _takes_an_argument(factory) -> bool:
    """Whether a registered factory ``make(env, ...)`` takes the argument of ``NAME:ARG``."""
    params = list(inspect.signature(factory).parameters.values())[1:]
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params)
