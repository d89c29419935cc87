"""Configs compose: a shipped YAML states only what differs from its base (the
dataclass defaults or another config named by ``base:``), and each key's range is
declared, and checked, where the key is defined."""
from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest
import yaml

from coupjax.paths import CONFIG_DIR
from training.config import (CONFIG_CLASSES, ConfigError, Range, config_from_dict, config_to_dict, load_config,
                             read_config)

ROOT = Path(__file__).resolve().parents[1]
OUTER_LOOPS = ("psro", "exploiter_league")  # configs of training.psro and training.exploiter_league (tests/test_psro.py)
TRAINING_CONFIGS = sorted(p for p in CONFIG_DIR.glob("*.yaml")
                          if p.name not in ("eval.yaml", "advisor.yaml", "experiments.yaml")
                          and yaml.safe_load(p.read_text()).get("algo") not in OUTER_LOOPS)


def test_a_base_is_overridden_key_by_key(tmp_path):
    (tmp_path / "parent.yaml").write_text("base: dqn_cpu\nseed: 9\nlearning_rate: 0.01\n")
    (tmp_path / "child.yaml").write_text("base: parent\nseed: 11\n")
    child, cpu = load_config(tmp_path / "child.yaml"), load_config(CONFIG_DIR / "dqn_cpu.yaml")
    assert (child.seed, child.learning_rate) == (11, 0.01)
    assert dataclasses.replace(child, seed=cpu.seed, learning_rate=cpu.learning_rate) == cpu
    assert load_config(tmp_path / "child.yaml", ["seed=3"]).seed == 3
    assert config_from_dict({"base": "dqn_cpu", "seed": 4}) == dataclasses.replace(cpu, seed=4)


@pytest.mark.parametrize("text, says", [
    ("base: nowhere\n", "config key 'base': no config 'nowhere'"),
    ("base: [1]\n", "config key 'base' must name a config"),
    ("base: loop\n", "'loop' names itself through its bases"),
])
def test_bad_bases_are_one_line_errors(tmp_path, text, says):
    (tmp_path / "loop.yaml").write_text("base: loop\n")
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ConfigError, match=re.escape(says)):
        load_config(tmp_path / "c.yaml")


@pytest.mark.parametrize("path", TRAINING_CONFIGS, ids=lambda p: p.name)
def test_shipped_configs_state_only_what_differs_from_their_base(path):
    """No key repeats its base's value (the file would be a copy, not a difference)."""
    raw = yaml.safe_load(path.read_text())
    if "base" in raw:
        base = config_to_dict(config_from_dict({"base": raw["base"]}))
    else:
        base = config_to_dict(CONFIG_CLASSES[raw.get("algo", "dqn")]())
    full = config_to_dict(load_config(path))
    repeated = [k for k in raw if k not in ("base", "algo") and base.get(k) == full[k]]
    assert not repeated, f"{path.name} repeats its base's value for {repeated}"
    assert read_config(path).keys() <= set(full)


def test_every_shipped_config_is_used_by_a_command_a_test_or_the_docs():
    names = [p.name for p in CONFIG_DIR.glob("*.yaml")]
    texts = [p.read_text(errors="replace") for folder in ("coupjax", "training", "evals", "tests", "docs")
             for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md", ".yaml") and p.is_file()]
    texts.append((ROOT / "README.md").read_text())
    unused = []
    for name in names:
        mentions = sum(t.count(name) + t.count(f"base: {name[:-5]}\n") for t in texts)
        own = (CONFIG_DIR / name).read_text().count(name)
        if mentions - own <= 0:
            unused.append(name)
    assert not unused, f"shipped configs nothing uses: {unused}"


def test_every_numeric_key_declares_its_range_where_it_is_defined():
    """A range in a side table drifts from the fields: every int or float key carries
    its check in its own definition."""
    missing = []
    for cls in CONFIG_CLASSES.values():
        for f in dataclasses.fields(cls):
            if isinstance(f.default, (int, float)) and not isinstance(f.default, bool):
                if not isinstance(f.metadata.get("check"), Range):
                    missing.append(f"{cls.__name__}.{f.name}")
    assert not missing, missing


@pytest.mark.parametrize("key, value, says", [
    ("num_players", 7, "'num_players' must be from 2 to 6, got 7"),
    ("gamma", 1.5, "'gamma' must be in [0, 1], got 1.5"),
    ("batch_size", 0, "'batch_size' must be > 0, got 0"),
    ("warmup_steps", -1, "'warmup_steps' must be >= 0, got -1"),
    ("learning_rate", math.inf, "'learning_rate' must be finite"),
    ("loss", "l1", "'loss' must be one of 'mse', 'huber', got 'l1'"),
])
def test_ranges_are_checked_with_the_keys_name(key, value, says):
    with pytest.raises(ConfigError, match=re.escape(says)):
        config_from_dict({key: value})



def test_the_exploiter_flag_is_gone():
    """The league exploiter was switched off and deleted: an old config naming it fails
    through the unknown-key error."""
    with pytest.raises(ConfigError, match="config key 'exploiter_tables' is not known"):
        config_from_dict({"algo": "selfplay", "exploiter_tables": 0.4})
    named = [str(p.relative_to(ROOT)) for folder in ("coupjax", "training", "evals") for p in (ROOT / folder).rglob("*")
             if p.suffix in (".py", ".yaml") and "exploiter_tables" in p.read_text()]
    assert not named, named
