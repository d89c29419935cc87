"""The registry of policies: name -> lazy entry point ("module:factory") and a one-line doc.

Nothing is imported to register: `make_policy` imports a policy's module the first
time it is asked for, so no module imports another to register itself and the
registry can list every policy (`policy_names`, `describe_policies`) at no cost.  A
factory is ``make(env, **kwargs) -> policy`` with the common interface
``policy(key, state) -> logits`` (`coupjax.policies.common`).

Users add their own with `register_policy` (a factory or a "module:factory" string).
"""
from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Callable


@dataclasses.dataclass(frozen=True)
class Entry:
    """One registered policy: ``target`` is "module:factory" or the factory itself."""

    name: str
    target: str | Callable
    doc: str
    kind: str = "user"  # scripted | belief | learned | search | user
    export: str | None = None  # the weights it loads without an argument (relative to the package), if any

    def factory(self) -> Callable:
        if callable(self.target):
            return self.target
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)


_SCRIPTED = "coupjax.policies.scripted"
_ENTRIES: dict[str, Entry] = {e.name: e for e in (
    Entry("random", f"{_SCRIPTED}:make_random",
          "Uniform over the legal actions (bluff and challenge rates are whatever the legal sets give).", "scripted"),
    Entry("honest", f"{_SCRIPTED}:make_honest",
          "Never claims a role it lacks (bluff rate 0, bluff-blocks 0), blocks whenever it can truthfully, "
          "challenges only impossible claims (all 3 copies visible to it, probability 1, else 0), and otherwise "
          "takes its top honest option (coup at 7+ > assassinate > tax > steal > exchange > foreign aid) with "
          "probability 0.8.", "scripted"),
    Entry("cautious", f"{_SCRIPTED}:make_cautious",
          "Bluffs on 5% of main-action decisions where a bluff is possible, bluff-blocks with probability 0.05 "
          "when it cannot block truthfully, blocks truthfully whenever it can, and challenges only claims with "
          "0 unseen copies (probability 1, else 0).", "scripted"),
    Entry("aggressive", f"{_SCRIPTED}:make_aggressive",
          "Bluffs on 25% of main-action decisions where a bluff is possible, challenges with probability 0.35 "
          "at every opportunity (1.0 for impossible claims), bluff-blocks with probability 0.25, and aims "
          "coup/assassinate/steal at the leader (most coins, then most hidden cards).", "scripted"),
    Entry("bluffer", f"{_SCRIPTED}:make_bluffer",
          "Bluffs on 50% of main-action decisions where a bluff is possible, challenges with probability 0.10 at "
          "every opportunity, and bluff-blocks with probability 0.5 when a block is legal and it cannot block "
          "truthfully.", "scripted"),
    Entry("scripted_mix", f"{_SCRIPTED}:make_scripted_mix",
          "At every decision the average of the action distributions of random, honest, cautious, aggressive and "
          "bluffer (equal weights): a model of an unknown scripted opponent, and the search policies' default "
          "rollout policy.", "scripted"),
    Entry("role_bluffer", "coupjax.policies.probes:make_role_bluffer",
          "role_bluffer:ROLE[:RATE]: an exploit probe: honest play, except that it claims ROLE without holding it "
          "at rate RATE (default 1) at every chance, in main actions and in blocks (role_bluffer:duke claims "
          "Duke whenever it can).", "scripted"),
    Entry("belief_ev", "coupjax.policies.belief_ev:make_belief_ev",
          "Acts on the exact posterior: challenges when the threshold advisor says so, blocks truthfully "
          "(bluff-blocks an assassination of its last card when the actor seldom challenges), picks the main "
          "action of highest one-step expected value (bluffs only when that value says so) aimed at the most "
          "threatening seat, reveals its least valuable card and keeps its best cards in an exchange.", "belief"),
    Entry("advised", "coupjax.search.advised:make_advised_spec",
          "advised:BASE[:all][:search]: BASE's own play (default honest), with its challenges and blocks (and with "
          ":all its main actions) taken from the one recommendation the page shows, without search or (:search) "
          "with the page's default search, to judge the advice by the games it wins.", "belief"),
    Entry("best", "coupjax.policies.best:make_best",
          "The policy coupjax ships for play: the training recipe's self-play network (configs/recipe_cpu.yaml, "
          "training seed 21, weights committed), which reads the exact posterior's marginals, with no hand-written "
          "rules on top.", "learned", export="policies/weights/best"),
    Entry("thompson", "coupjax.search.policy:make_thompson",
          "Thompson sampling over the posterior: samples hidden worlds from its own observation, rolls out every "
          "legal action in each (scripted_mix rollouts by default), and plays each action with the share of "
          "sampled worlds in which it is best.", "search"),
    Entry("expected", "coupjax.search.policy:make_expected",
          "Samples hidden worlds from its own observation, rolls out every legal action in each, and plays the "
          "action with the highest value averaged over the worlds.", "search"),
    Entry("regularized", "coupjax.search.policy:make_regularized",
          "Samples hidden worlds from its own observation, rolls out every legal action, and plays "
          "pi ∝ pi_prior * exp(Q / tau): the KL-regularized improvement of the prior (by default the rollout "
          "policy) as in Ataraxos.", "search"),
    Entry("selfplay_search", "coupjax.search.selfplay_search:make_selfplay_search_spec",
          "selfplay_search:DIR[,key=value...]: the regularized search on top of a self-play run, with its policy as "
          "rollout policy and prior, worlds from the exact posterior or its learned belief (belief=learned), and its "
          "value head scoring cut rollouts.", "search"),
)}


def register_policy(name: str, doc: str, target: str | Callable | None = None, kind: str = "user"):
    """Register a policy factory under ``name`` with a one-sentence ``doc``.

    ``target``: the factory ``make(env, **kwargs) -> policy`` or a "module:factory"
    string (imported when first used).  Without ``target`` this is a decorator on the
    factory.  A name can be registered once.
    """
    if not isinstance(name, str) or not name or ":" in name:
        raise ValueError(f"policy names are non-empty strings without ':', got {name!r}")

    def add(factory):
        if name in _ENTRIES:
            raise ValueError(f"policy {name!r} is already registered")
        if not (callable(factory) or (isinstance(factory, str) and ":" in factory)):
            raise TypeError(f"a policy factory is a callable or a 'module:factory' string, got {factory!r}")
        _ENTRIES[name] = Entry(name, factory, doc, kind)
        return factory

    return add if target is None else add(target)


def entry(name: str) -> Entry:
    """The registered entry ``name``; KeyError lists the known names."""
    if name not in _ENTRIES:
        raise KeyError(f"unknown policy {name!r}; known: {', '.join(policy_names())}")
    return _ENTRIES[name]


def export_of(spec: str) -> Path | None:
    """The trained export a spec loads, if one: the path itself, ``NAME:DIR``'s DIR, or
    a registered policy's committed weights (`Entry.export`); None for the rest.  Lets a
    caller ask which table size a spec was trained for before building it."""
    head, sep, arg = spec.partition(":")
    for candidate in (spec, arg.split(",")[0] if sep else ""):
        if candidate and Path(candidate).exists():
            return Path(candidate)
    if not sep and spec in _ENTRIES and _ENTRIES[spec].export:
        return Path(__file__).resolve().parents[1] / _ENTRIES[spec].export
    return None


def make_policy(name: str, env, **kwargs):
    """The policy registered as ``name`` for ``env`` (its module imported on first use)."""
    return entry(name).factory()(env, **kwargs)


def policy_names(kind: str | None = None) -> list[str]:
    """Registered names, in registration order (only those of ``kind`` if given)."""
    return [n for n, e in _ENTRIES.items() if kind is None or e.kind == kind]


def describe_policies() -> dict[str, str]:
    """name -> one-sentence doc, for every registered policy."""
    return {n: e.doc for n, e in _ENTRIES.items()}
