"""The two tiers: every behaviour has a quick test (what ``make test`` and CI run), and a
long run (``-m slow``) says in its docstring which quick test covers the same behaviour
at a small size: ``Quick twin: test_name`` (or ``Quick twins: a, b``)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
TWIN = re.compile(r"Quick twins?:\s+([\w\s,]+)")


def _is_slow(node: ast.expr) -> bool:
    """``pytest.mark.slow`` (as a decorator, in ``pytestmark`` or a list of marks)."""
    return any(isinstance(n, ast.Attribute) and n.attr == "slow" and isinstance(n.value, ast.Attribute)
               and n.value.attr == "mark" for n in ast.walk(node))


def _tests():
    """(file, function node, slow?, its docstring) for every test function."""
    for path in sorted(TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text())
        module_slow = any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
                          and _is_slow(n.value) for n in tree.body)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                slow = module_slow or any(_is_slow(d) and not _only_some_params(d) for d in node.decorator_list)
                yield path.name, node, slow, ast.get_docstring(node) or ""


def _only_some_params(decorator: ast.expr) -> bool:
    """A ``parametrize`` whose slow marks are on some params: the others are its quick twins."""
    return isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "parametrize"


def test_every_slow_test_names_its_quick_twin():
    quick = {node.name for _, node, slow, _ in _tests() if not slow}
    missing, wrong = [], []
    for file, node, slow, doc in _tests():
        if not slow:
            continue
        found = TWIN.search(doc)
        if not found:
            missing.append(f"{file}::{node.name}")
            continue
        names = [n.strip().rstrip(".").split("[")[0] for n in found.group(1).split(",") if n.strip()]
        wrong += [f"{file}::{node.name} -> {n}" for n in names if n not in quick]
    assert not missing, "slow tests without 'Quick twin: test_...' in their docstring:\n" + "\n".join(missing)
    assert not wrong, "named quick twins that are not quick tests:\n" + "\n".join(wrong)


def test_the_check_has_teeth():
    tree = ast.parse("import pytest\n@pytest.mark.slow\ndef test_x():\n    'long'\n")
    assert _is_slow(tree.body[1].decorator_list[0])
    assert not TWIN.search("long") and TWIN.search("Quick twin: test_y").group(1).strip() == "test_y"
