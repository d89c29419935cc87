"""The layout is a contract: import layers without circles, no reaching into another
module's private names, no module over 600 lines, and a repository that stands alone."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("coupjax", "training", "evals")
MAX_LINES = 600
# Modules that implement the state: they may read `State`'s private fields.
STATE_OWNERS = ("coupjax/game/",)
OUTSIDE = ("../" + "shared", "/" + "work/")  # paths of the workplace beside the checkout


def _sources(*dirs):
    for d in dirs:
        yield from sorted((ROOT / d).rglob("*.py"))


def test_import_linter_contracts_hold():
    """`lint-imports` over the contracts in pyproject.toml: layers, no cycles, the
    engine imports no policy, the package imports neither training nor evals."""
    out = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                          "lint_imports_command()"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "broken" in out.stdout and " 0 broken" in out.stdout


def _modules(package: str):
    """Every module of a package by its dotted name (``coupjax.game.board``), the
    package's own ``__init__`` left out."""
    for p in _sources(package):
        parts = p.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) > 1:
            yield ".".join(parts)


def test_every_module_has_a_place_in_the_layers():
    """A module outside the layers contract is not checked by it: each module (or a
    package above it) is named in one of the layers."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    named = {m.strip() for layer in layers for m in re.split(r"[|:]", layer)}
    unnamed = [m for pkg in PACKAGES for m in _modules(pkg)
               if not any(m == n or m.startswith(n + ".") for n in named)]
    assert not unnamed, "give these modules a layer in pyproject.toml's layers contract:\n" + "\n".join(unnamed)


def test_every_evals_module_has_a_room():
    """The rooms contract (report above commands above benchmarks above the library)
    names modules one by one: a new command or package under evals/ not named in it
    could import the report unchecked."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    rooms = next(c for c in contracts if c.get("containers") == ["evals"])
    named = {m.strip() for layer in rooms["layers"] for m in re.split(r"[|:]", layer)}
    children = {p.stem for p in (ROOT / "evals").glob("*.py") if p.stem != "__init__"}
    children |= {p.parent.name for p in (ROOT / "evals").glob("*/__init__.py")}
    assert children - named == set(), "give these a room in pyproject.toml's evals contract"


def test_a_module_root_is_the_repository_root():
    """``ROOT = Path(__file__).resolve().parents[N]`` counts folders: a module moved one
    folder deeper (evals/bench_engine.py -> evals/bench/engine.py) must count one more."""
    pattern = re.compile(r"^ROOT = Path\(__file__\)\.resolve\(\)\.parents\[(\d)\]", re.M)
    wrong = [f"{p.relative_to(ROOT)}: parents[{m}]" for p in _sources(*PACKAGES)
             for m in pattern.findall(p.read_text()) if p.resolve().parents[int(m)] != ROOT]
    assert not wrong, wrong


PUBLIC_UNDERSCORED = {"os._exit"}  # documented public API despite its underscore


def _private_reaches(path: Path):
    """(line, text) of every ``module._name`` attribute use where ``module`` is an
    imported module alias, and every ``from m import _name``."""
    tree = ast.parse(path.read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    yield node.lineno, f"from {node.module} import {a.name}"
                top = node.module.split(".")[0]
                if top in PACKAGES and a.name[:1].islower():
                    modules.add(a.asname or a.name)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id in modules
                and f"{node.value.id}.{node.attr}" not in PUBLIC_UNDERSCORED):
            yield node.lineno, f"{node.value.id}.{node.attr}"


def _state_field_reads(path: Path):
    """(line, text) of reads of `State`'s private fields (``x._hands`` and the like)."""
    from coupjax.state import State

    private = {f for f in State.__dataclass_fields__ if f.startswith("_")}
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in private:
            yield node.lineno, node.attr


def test_no_module_reaches_into_another_modules_private_names():
    bad = [f"{p.relative_to(ROOT)}:{line}: {text}" for p in _sources(*PACKAGES) for line, text in _private_reaches(p)]
    assert not bad, "private names used across modules:\n" + "\n".join(bad)


def test_only_the_game_reads_the_states_private_fields():
    bad = []
    for p in _sources(*PACKAGES):
        rel = str(p.relative_to(ROOT))
        if rel.startswith(STATE_OWNERS) or rel in ("coupjax/events.py",):
            continue
        bad += [f"{rel}:{line}: ._{attr.lstrip('_')}" for line, attr in _state_field_reads(p)]
    assert not bad, "private State fields read outside coupjax.game (use its readers):\n" + "\n".join(bad)


def test_modules_stay_under_600_lines():
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in _sources(*PACKAGES)
            if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not long, "split these along their seams:\n" + "\n".join(long)


def test_the_repository_names_no_path_outside_it():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    bad = []
    for rel in tracked:
        path = ROOT / rel
        if path.is_symlink() or not path.is_file() or path.suffix in (".png", ".msgpack", ".npz"):
            continue
        text = path.read_text(errors="ignore")
        if any(marker in text for marker in OUTSIDE):
            bad.append(rel)
    assert not bad, f"files naming a path outside the repository: {bad}"


def test_rules_page_is_in_the_repository():
    rules = ROOT / "docs" / "rules.md"
    assert rules.is_file() and "## Challenge resolution" in rules.read_text()
    for rel in ("README.md", "coupjax/rules.py", "tests/reference_model.py"):
        assert "docs/rules.md" in (ROOT / rel).read_text(), f"{rel} should link the rules page"
