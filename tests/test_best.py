"""`best`: the committed network of the recipe's first training seed, alone, with the
scenario count the docs quote.

The leak test and the policy interface are checked with every registered policy in
tests/test_policies.py.
"""
from __future__ import annotations

import re
from pathlib import Path

import jax
import pytest

from coupjax.env import Env
from coupjax.policies import best as best_module
from coupjax.policies.spec import resolve_policy
from evals import experiments
from evals.report.decision_benchmark import build_all, score_policy

ROOT = Path(__file__).resolve().parents[1]
# the criterion names the recipe's first training seed as `best` before any held-out figure
FIRST_SEED = experiments.load_config(ROOT / "configs" / "experiments.yaml").seeds_of("recipe_cpu")[0]
RUN = ROOT / "runs" / "experiments" / "train" / "recipe_cpu" / f"seed_{FIRST_SEED}"


@pytest.fixture(scope="module")
def best():
    return resolve_policy("best", Env(4))


def test_best_is_the_recipe_first_seed_export_unchanged(best):
    """The weights README says the files are the run's export copied unchanged, and
    the criterion named that seed before any held-out figure: a swapped file fails."""
    shipped = sorted(p.name for p in best_module.WEIGHTS.iterdir() if p.name != "README.md")
    assert shipped == sorted(p.name for p in (RUN / "export").iterdir())
    for name in shipped:
        assert (best_module.WEIGHTS / name).read_bytes() == (RUN / "export" / name).read_bytes(), name
    assert best.info["kind"] == "selfplay" and best.info["policy_reads_posterior"]
    assert best.info["config"]["seed"] == FIRST_SEED


def test_best_is_the_network_alone(best):
    """No layer: `best`'s logits are the loaded export's, for the same states."""
    from coupjax import testing
    from coupjax.inference import load_policy

    env = Env(4)
    states = testing.sample_positions(env, 256, seed=21)  # the size test_policies samples: one compiled sampler
    keys = jax.random.split(jax.random.PRNGKey(0), 256)
    net = load_policy(RUN / "export", num_players=4)
    a, b = jax.jit(jax.vmap(lambda k, s: (best(k, s), net(k, s))))(keys, states)  # one compilation for both
    assert (a == b).all()


def test_the_docs_quote_its_scenario_count(best):
    """docs/engine.md says how many of the 31 decision scenarios `best` plays soundly:
    the figure is this network's, measured here (no seed: the scenarios are fixed)."""
    hits = {name: row["hit"] for name, row in score_policy(jax.jit(best), build_all()).items()}
    assert len(hits) == 31
    text = " ".join((ROOT / "docs" / "engine.md").read_text().split())
    quoted = re.search(r"It plays the sound move in (\d+) of the 31 decision scenarios", text)
    assert quoted and int(quoted.group(1)) == sum(hits.values()), sorted(n for n, h in hits.items() if not h)


def test_best_for_another_table_size_or_with_an_argument_is_a_clear_error():
    with pytest.raises(ValueError, match="is for 4 players, not 3"):
        resolve_policy("best", Env(3))
    with pytest.raises(ValueError, match="policy 'best' takes no argument"):
        resolve_policy("best:runs/x", Env(4))
