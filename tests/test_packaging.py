"""The package installs what a user asks for: a base install (no extra) runs the engine,
the main job and its evaluation; a command whose extra is missing names it in one line;
``import coupjax`` stays light (no Flax, Orbax, W&B, Optax or web stack until a feature
needs them).

A base install is imitated in a subprocess by a `sys.meta_path` finder that refuses the
extras' libraries, so these tests run in the full development environment.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# The extras' libraries: a base install has none of them.
EXTRAS_LIBRARIES = ("fastapi", "uvicorn", "starlette", "matplotlib", "scipy", "openskill", "pettingzoo", "gymnasium")
# What `import coupjax` leaves for the features that need them.
HEAVY = ("flax", "orbax", "wandb", "optax", "distrax", "fastapi", "uvicorn", "starlette", "matplotlib")

BASE_INSTALL = textwrap.dedent(f"""
    import sys

    class _NotInstalled:
        # the extras' libraries are not there, as after a plain `pip install coupjax`
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in {EXTRAS_LIBRARIES!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, _NotInstalled())
""")

# One subprocess for every base-install check (each check imports JAX): it prints one
# JSON object of what it saw.
BASE_CHECKS = BASE_INSTALL + textwrap.dedent("""
    import contextlib, importlib, io, json, runpy, traceback
    seen = {}

    def attempt(name, fn):
        try:
            fn()
            seen[name] = "ok"
        except BaseException as err:  # noqa: BLE001 - the report says what went wrong
            seen[name] = "".join(traceback.format_exception_only(err)).strip()

    def command(name, module, argv):
        err = io.StringIO()
        sys.argv = [module, *argv]
        try:
            with contextlib.redirect_stderr(err):
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exit_:
            code = exit_.code
        except BaseException as exc:  # noqa: BLE001
            code, err = "raised", io.StringIO(err.getvalue() + traceback.format_exc())
        seen[name] = {"code": code, "stderr": err.getvalue()}

    attempt("import coupjax", lambda: importlib.import_module("coupjax"))
    attempt("base names", lambda: exec("from coupjax import Env, Match, State, Event, rules, load_policy, "
                                       "observation_layout"))
    for module in ("coupjax.seat_tables", "evals.seat_table", "training.train", "coupjax.cli"):
        attempt(module, lambda module=module: importlib.import_module(module))
    for module in ("coupjax.gymnasium", "coupjax.pettingzoo"):
        attempt(module, lambda module=module: importlib.import_module(module))
    command("serve", "coupjax", ["serve", "--no-warm-up", "--games-dir", GAMES_DIR])
    command("report", "evals.report", ["--out", REPORT_DIR, "--no-wandb", "--quiet"])
    print("BASE-CHECKS " + json.dumps(seen))
""")


@pytest.fixture(scope="module")
def base_install(tmp_path_factory):
    """What a base install (no extra) sees: imports, and the commands that need an extra."""
    tmp = tmp_path_factory.mktemp("base")
    script = f"GAMES_DIR = {str(tmp / 'games')!r}\nREPORT_DIR = {str(tmp / 'report')!r}\n" + BASE_CHECKS
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env=_env())
    lines = [x for x in out.stdout.splitlines() if x.startswith("BASE-CHECKS ")]
    assert lines, out.stdout[-3000:] + out.stderr[-3000:]
    seen = json.loads(lines[-1].removeprefix("BASE-CHECKS "))
    seen["tmp"] = tmp
    return seen


def _env():
    return dict(os.environ, PYTHONPATH=str(ROOT), WANDB_MODE="offline")


def test_base_install_imports_coupjax_and_its_engine_names(base_install):
    assert base_install["import coupjax"] == "ok"
    assert base_install["base names"] == "ok"


@pytest.mark.parametrize("module", ["coupjax.seat_tables", "evals.seat_table", "training.train", "coupjax.cli"])
def test_base_install_runs_the_main_job_and_its_evaluation(base_install, module):
    """`python -m coupjax` trains and then plays the seat table: nothing there needs an extra."""
    assert base_install[module] == "ok"


def _one_line_naming(seen, extra):
    err = seen["stderr"].strip()
    assert seen["code"] == 2, seen
    assert len(err.splitlines()) == 1, err
    assert f'pip install "coupjax[{extra}]"' in err, err
    return err


def test_serve_without_the_web_extra_names_it_in_one_line(base_install):
    err = _one_line_naming(base_install["serve"], "web")
    assert err.startswith("coupjax: error: coupjax serve needs"), err
    assert not (base_install["tmp"] / "games").exists(), "the games folder was made before the extra was checked"


def test_the_report_without_its_extra_names_it_in_one_line(base_install):
    err = _one_line_naming(base_install["report"], "report")
    assert err.startswith("python -m evals.report: error:"), err
    assert not (base_install["tmp"] / "report").exists(), "the report folder was made before the extra was checked"


@pytest.mark.parametrize("adapter", ["gymnasium", "pettingzoo"])
def test_adapters_without_their_extra_say_which_to_install(base_install, adapter):
    said = base_install[f"coupjax.{adapter}"]
    assert said.startswith("ImportError:") and f"[{adapter}]\"" in said, said


def test_import_coupjax_leaves_the_heavy_libraries_for_the_features_that_need_them():
    code = ("import sys, json, coupjax; "
            "print('LOADED ' + json.dumps(sorted({m.partition('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env=_env())
    line = [x for x in out.stdout.splitlines() if x.startswith("LOADED ")]
    assert out.returncode == 0 and line, out.stderr[-3000:]
    loaded = set(json.loads(line[0].removeprefix("LOADED ")))
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_the_packages_names_resolve_to_the_modules_own_objects():
    import coupjax
    from coupjax import env, game, inference, match, rules, state

    assert coupjax.Env is env.Env and coupjax.Match is match.Match
    assert coupjax.State is state.State and coupjax.Event is state.Event
    assert coupjax.rules is rules and coupjax.load_policy is inference.load_policy
    assert coupjax.observation_layout is game.views.observation_layout
    assert set(coupjax.__all__) <= set(dir(coupjax))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        coupjax.Nope  # noqa: B018


def _names(requirements):
    return {re.split(r"[\[<>=~! ;]", r, maxsplit=1)[0].lower() for r in requirements}


def _self_extras(requirements):
    """The extras a requirement list takes from coupjax itself (``coupjax[web,report]``)."""
    return {x.strip() for r in requirements if (m := re.match(r"coupjax\[([^\]]*)\]", r)) for x in m[1].split(",")}


def test_the_base_install_carries_no_extras_library_and_dev_every_other_extra():
    project = PYPROJECT["project"]
    base = _names(project["dependencies"])
    # filelock: JAX's bounded compilation cache locks with it; flatbuffers: jax.export's
    # serialization, for the traces kept beside it (coupjax.compile_cache)
    assert base == {"jax", "flax", "optax", "chex", "distrax", "orbax-checkpoint", "wandb", "numpy", "pyyaml", "rich",
                    "filelock", "flatbuffers"}
    assert not base & set(EXTRAS_LIBRARIES)
    extras = project["optional-dependencies"]
    assert {"web", "report", "pettingzoo", "gymnasium", "sb3", "cuda", "dev"} <= set(extras)
    dev = extras["dev"]
    for extra, libraries in extras.items():
        if extra in ("dev", "sb3", "cuda"):
            continue
        assert extra in _self_extras(dev) or _names(libraries) <= _names(dev), f"dev does not install [{extra}]"
    assert not {"sb3", "cuda"} & _self_extras(dev) and "sb3-contrib" not in _names(dev)
    assert {"pytest", "pytest-xdist", "import-linter", "playwright", "httpx"} <= _names(dev)
    assert '-e ".[dev]"' in (ROOT / "Makefile").read_text(), "make test installs the dev extra"


def test_every_extra_named_in_a_message_exists():
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    named = set()
    for path in sorted((ROOT / "coupjax").rglob("*.py")) + sorted((ROOT / "evals").rglob("*.py")):
        named |= {a or b for a, b in re.findall(r'coupjax\[(\w+)\]|"\.\[(\w+)\]', path.read_text())}
    assert named and named <= extras, sorted(named - extras)


def test_require_extra_passes_when_installed_and_names_the_extra_otherwise(capsys):
    from coupjax.args import require_extra

    require_extra("coupjax", "coupjax serve", "the page's extra", "web", "json")  # installed: nothing happens
    with pytest.raises(SystemExit) as info:
        require_extra("coupjax", "coupjax serve", "the page's extra", "web", "json", "no_such_library_here")
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2
    assert err == ('coupjax: error: coupjax serve needs the page\'s extra: pip install "coupjax[web]" '
                   '(missing: no_such_library_here)')


def test_the_package_data_carries_every_file_the_package_reads_at_run_time():
    """A wheel holds only what package-data names: the packaged configs, the page's
    files and the weights of `best` (a missing glob breaks `best` after `pip install`)."""
    data = PYPROJECT["tool"]["setuptools"]["package-data"]
    needed = [p for folder in ("coupjax/configs", "coupjax/web/static", "coupjax/policies/weights")
              for p in sorted((ROOT / folder).rglob("*")) if p.is_file() and p.suffix != ".py"]
    assert any("weights" in str(p) for p in needed)
    for path in needed:
        rel = path.relative_to(ROOT)
        covered = False
        for package, globs in data.items():
            base = ROOT / package.replace(".", "/")
            if base in path.parents:
                covered |= any(path.relative_to(base).match(g) for g in globs)
        assert covered, f"{rel} is not in [tool.setuptools.package-data]"
