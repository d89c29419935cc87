"""The docs are part of the product: every snippet marked runnable runs, every relative
link resolves, and the README stays short with a map that is complete and agrees with
the import contracts.

A snippet is runnable when its fence's info string is ``python runnable`` or ``bash
runnable`` (the first word keeps the highlighting).  Each runs as a user who copied it
at the root of a checkout would run it: in a fresh temporary directory into which every
top-level entry of the repository is linked (so ``configs/``, ``examples/`` and
``evals/reference/`` mean what they mean at the root, and what the snippet writes lands
in the temporary directory), with the repository first on ``PYTHONPATH`` and W&B
offline.  Python snippets run under ``sys.executable``, bash snippets under ``bash -e``.
A snippet is self-contained: it may not rely on files an earlier snippet wrote.

A block whose info string also says ``slow`` (a whole training run, even at tiny sizes)
runs in the slow tier; the quick twins of its commands are the tiny runs of
tests/test_training.py and the option checks of tests/test_cli.py.
"""
from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_README_LINES = 200
RUNNABLE = "runnable"
SLOW = "slow"
LANGUAGES = {"python": ([sys.executable], ".py"), "bash": (["bash", "-e"], ".sh")}
# A hang guard, not a speed requirement: blocks are kept to tens of seconds by their sizes.
TIMEOUT_S = 600
MAP_HEADING = "## What is where"
PACKAGES = ("coupjax", "training", "evals")


def _pages() -> list[Path]:
    docs = ROOT / "docs"
    return [README, *sorted(docs.glob("*.md")), *sorted((docs / "experiments").glob("*.md"))]


def _fences(text: str):
    """(line number, info string, code) of every fenced block (``` or ~~~, any length)."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^( {0,3})(`{3,}|~{3,})(.*)$", lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(2), m.group(3).strip(), i
        body = []
        i += 1
        while i < len(lines) and not re.match(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[i]):
            body.append(lines[i])
            i += 1
        yield start + 1, info, "\n".join(body) + "\n"
        i += 1


def _runnable_blocks():
    blocks = []
    for page in _pages():
        for line, info, code in _fences(page.read_text()):
            words = info.split()
            if RUNNABLE in words[1:]:
                marks = [pytest.mark.slow] if SLOW in words[1:] else []
                blocks.append(pytest.param(words[0], code, id=f"{page.relative_to(ROOT)}:{line}", marks=marks))
    return blocks


WRITTEN_INTO = ("runs",)  # folders the documented commands make new entries in


def _checkout_like(tmp: Path) -> Path:
    """A working directory that reads like the repository's root and writes elsewhere: its
    tracked top-level entries are links, except the folders commands write new runs into
    (`runs/` holds the committed runs/experiments/), which are real folders of links."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    top = sorted({p.split("/")[0] for p in tracked}) or [p.name for p in ROOT.iterdir() if not p.name.startswith(".")]
    for name in top:
        if not (ROOT / name).exists():
            continue
        if name in WRITTEN_INTO:
            (tmp / name).mkdir()
            for sub in sorted({p.split("/")[1] for p in tracked if p.startswith(name + "/")}):
                (tmp / name / sub).symlink_to(ROOT / name / sub)
        else:
            (tmp / name).symlink_to(ROOT / name)
    return tmp


def test_there_are_runnable_blocks():
    ids = [b.id for b in _runnable_blocks()]
    assert any(i.startswith("README.md:") for i in ids), "the README's example should be marked runnable"
    assert len(ids) >= 5, ids


@pytest.mark.parametrize("language,code", _runnable_blocks())
def test_runnable_block_runs(language, code, tmp_path):
    assert language in LANGUAGES, f"a runnable block must be one of {sorted(LANGUAGES)}, not {language!r}"
    # `python` in a bash block is this interpreter, as in an activated environment.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "python"  # a script, not a link: a venv's interpreter finds its packages by its own path
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               PATH=os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]), WANDB_MODE="offline")
    command, suffix = LANGUAGES[language]
    snippet = tmp_path / f"snippet{suffix}"  # a file, not stdin: a command in the block may read stdin
    snippet.write_text(code)
    cwd = tmp_path / "checkout"
    cwd.mkdir()
    out = subprocess.run([*command, str(snippet)], cwd=_checkout_like(cwd), env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=TIMEOUT_S)
    assert out.returncode == 0, f"exit {out.returncode}\n--- stdout\n{out.stdout[-3000:]}\n--- stderr\n{out.stderr[-3000:]}"


def test_the_block_finder_sees_only_marked_fences():
    page = "a\n```python runnable\nprint(1)\n```\n```python\nprint(2)\n```\n````bash runnable\necho 3\n````\n"
    assert [(info, code) for _, info, code in _fences(page)] == [
        ("python runnable", "print(1)\n"), ("python", "print(2)\n"), ("bash runnable", "echo 3\n")]


def test_readme_stays_short():
    n = len(README.read_text().splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines (at most {MAX_README_LINES}): move detail into docs/"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = page.read_text()
    code = {n for line, _, body in _fences(text) for n in range(line, line + body.count("\n") + 2)}
    return {_slug(m.group(1)) for n, row in enumerate(text.splitlines(), 1)
            if n not in code and (m := re.match(r"^#{1,6}\s+(.*?)\s*#*$", row))}


def _links(page: Path):
    """(line, target) of every inline link and image outside code blocks and code spans."""
    text = page.read_text()
    code = {n for line, _, body in _fences(text) for n in range(line, line + body.count("\n") + 2)}
    for n, row in enumerate(text.splitlines(), 1):
        if n in code:
            continue
        row = re.sub(r"`[^`]*`", "", row)
        for m in re.finditer(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", row):
            yield n, m.group(1)


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for line, target in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{page.relative_to(ROOT)}:{line}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{page.relative_to(ROOT)}:{line}: {target} (no heading #{anchor})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def _map_paths() -> list[str]:
    """The paths the README's map names, in order: the backticked paths in the first
    column of the tables under its heading."""
    text = README.read_text()
    assert MAP_HEADING in text, f"the README should have a map under {MAP_HEADING!r}"
    section = text.split(MAP_HEADING, 1)[1].split("\n## ", 1)[0]
    cells = [row.split("|")[1] for row in section.splitlines() if row.startswith("|")]
    return [p for cell in cells for p in re.findall(r"`([^`\s]+)`", cell)]


def _expected_map_entries() -> list[str]:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    entries = {p.split("/")[0] + "/" for p in tracked if "/" in p}
    for package in PACKAGES:
        for p in tracked:
            parts = p.split("/")
            if parts[0] != package or len(parts) < 2 or parts[1] == "__init__.py":
                continue
            entries.add(f"{package}/{parts[1]}" + ("/" if len(parts) > 2 else ""))
    return sorted(entries)


def test_the_readme_map_is_complete():
    named = set(_map_paths())
    missing = [e for e in _expected_map_entries() if e not in named]
    assert not missing, f"README.md's map ({MAP_HEADING!r}) should name: {missing}"


def _layers() -> list[list[str]]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    return [[m.strip() for m in layer.split("|")] for layer in layers]


def test_the_readme_map_follows_the_layer_contract():
    """The map lists the layers of pyproject.toml's contract from top to bottom: every
    entry of a layer comes before every entry of the layers it may import."""
    paths = _map_paths()

    def rows(module: str) -> list[int]:
        prefix = module.replace(".", "/")
        return [i for i, p in enumerate(paths) if p == prefix + ".py" or p.startswith(prefix + "/")]

    layers = _layers()
    placed = []
    for layer in layers:
        found = [i for m in layer for i in rows(m)]
        assert found, f"the map names no module of the layer {' | '.join(layer)}"
        placed.append((min(found), max(found), " | ".join(layer)))
    out_of_order = [f"{upper[2]} (rows {upper[0]}-{upper[1]}) should come before {lower[2]} (rows {lower[0]}-{lower[1]})"
                    for k, upper in enumerate(placed) for lower in placed[k + 1:] if upper[1] > lower[0]]
    assert not out_of_order, "README.md's map disagrees with the layer contract:\n" + "\n".join(out_of_order)


def _benchmark_figures():
    """(doc, the figures it quotes, each formatted as the doc writes it) from the committed
    benchmark outputs under docs/bench/: a figure typed by hand, or a rerun whose JSON was
    replaced without the doc, fails."""
    import json

    bench = ROOT / "docs" / "bench"
    vector = json.loads((bench / "adapters-vector-2026-12-02.json").read_text())["vector"]["loops"]
    yield "adapters.md", [f"{vector['vector_env']['agent_steps_per_s']:,.0f}",
                          f"{vector['sync_vector_env']['agent_steps_per_s']:,.0f}",
                          f"{vector['vector_env']['ratio_to_sync_vector_env']:.1f}x"]
    rows = json.loads((bench / "processes-2026-12-02.json").read_text())["rows"]
    earlier = json.loads((bench / "processes-2026-12-02-earlier.json").read_text())["rows"]
    yield "scaling.md", ([f"| {r['env_steps_per_s']:,.0f} | {r['speedup']:.2f} | {r['chunk_seconds']:.2f} |"
                          for r in rows] + [f"{r['env_steps_per_s']:,.0f}" for r in earlier])
    advice = ROOT / "docs" / "experiments" / "2026-12-02-advice-that-wins"
    yield "experiments/2026-12-02-advice-that-wins-results.md", [
        f"| {d['win_rate_a']:.3f} | {d['win_rate_b']:.3f} | {d['diff']:+.3f} | [{d['ci95_low']:+.3f}, "
        f"{d['ci95_high']:+.3f}] | [{d['ci_corrected_low']:+.3f}, {d['ci_corrected_high']:+.3f}] | {d['verdict']} |"
        for d in (json.loads((advice / f"{name}.json").read_text())
                  for name in ("honest", "honest-vs-honest_heavy", "cautious"))]
    best = ROOT / "docs" / "experiments" / "2026-12-02-best"

    def best_row(name):
        d = json.loads((best / f"{name}.json").read_text())
        b, others = d["best"], [v for k, v in d.items() if k != "best"]
        rates = [b["win_rate"]] + [v["win_rate"] for v in others]
        spread = (f"{others[0]['win_rate']:.3f} | {others[1]['win_rate']:.3f} | {sum(rates) / len(rates):.3f} "
                  f"({min(rates):.3f}-{max(rates):.3f})") if others else "not played | not played | -"
        return (f"| {b['win_rate']:.3f} | [{b['ci95_low']:.3f}, {b['ci95_high']:.3f}] | {spread} | "
                f"{'yes' if b['ci95_low'] > 0.25 else 'no'} |")

    scenarios = json.loads((best / "scenarios.json").read_text())
    yield "experiments/2026-12-02-best-results.md", [best_row(name) for name in (
        "random", "honest", "cautious", "aggressive", "bluffer", "scripted_mix", "belief_ev", "export", "expected")] + [
        f"sound move in {scenarios['best']['hits']} of the {scenarios['best']['of']}"]
    probe = json.loads((ROOT / "docs" / "experiments" / "2026-12-02-exploit-probe" / "best.json").read_text())
    yield "experiments/2026-12-02-exploit-probe-results.md", [
        f"| `{probe['strongest']}` | {probe['win_rate_vs_policy']:.3f} | {probe['win_rate_vs_baseline']:.3f} | "
        f"{probe['diff']:+.3f} | [{probe['ci95_low']:+.3f}, {probe['ci95_high']:+.3f}] | {probe['upper95']:+.3f} |"] + [
        f"| `{p}` | {r['win_rate']:.3f} | [{r['ci95_low']:.3f}, {r['ci95_high']:.3f}] |"
        for p, r in probe["probes"].items()]
    learned = ROOT / "docs" / "experiments" / "2026-12-02-learned-probe"
    pair = json.loads((learned / "compare.json").read_text())
    runs = [{r["seed"]: r for r in json.loads((learned / f"{x}.json").read_text())["families"]["dqn"]}
            for x in ("best", "belief_ev")]
    yield "experiments/2026-12-02-learned-probe-results.md", [
        f"| {s} | {runs[0][s]['win_rate']:.3f} [{runs[0][s]['ci95_low']:.3f}, {runs[0][s]['ci95_high']:.3f}] | "
        f"{runs[1][s]['win_rate']:.3f} [{runs[1][s]['ci95_low']:.3f}, {runs[1][s]['ci95_high']:.3f}] | {d:+.3f} |"
        for s, d in zip(pair["seeds"], pair["diff_per_seed"])] + [
        f"| mean over {len(pair['seeds'])} seeds | {pair['diff']:+.3f} | [{pair['ci95_low']:+.3f}, "
        f"{pair['ci95_high']:+.3f}] | {pair['upper95']:+.3f} |"]
    layer = ROOT / "docs" / "experiments" / "2026-12-04-recipe-final"
    yield "experiments/2026-12-04-recipe-final-layer-results.md", [
        f"| `{d['opponents']}` | {d['win_rate_a']:.3f} | {d['win_rate_b']:.3f} | {d['diff']:+.3f} | [{d['ci95_low']:+.3f}, "
        f"{d['ci95_high']:+.3f}] | [{d['ci_corrected_low']:+.3f}, {d['ci_corrected_high']:+.3f}] | {d['verdict']} |"
        for d in (json.loads((layer / f"layer-{c}.json").read_text()) for c in ("aggressive_heavy", "honest_heavy"))]
    temp = ROOT / "docs" / "experiments" / "2026-12-04-export-temperature"

    def temperature_row(tag):
        p = json.loads((temp / f"ppo_{tag}_s7.json").read_text())
        cells = [f"{p['win_rate']:.3f} [{p['ci95_low']:.3f}, {p['ci95_high']:.3f}]"]
        for o in ("belief_ev", "aggressive_heavy") if tag != "t0" else ():
            c = json.loads((temp / f"cmp_{tag}_{o}.json").read_text())
            cells.append(f"{c['win_rate_a']:.3f} vs {c['win_rate_b']:.3f}: {c['diff']:+.3f} "
                         f"[{c['ci_corrected_low']:+.3f}, {c['ci_corrected_high']:+.3f}]")
        return " | ".join(cells)

    yield "experiments/2026-12-04-export-temperature.md", [temperature_row(t) for t in ("t0", "t03", "t1")]
    gang = ROOT / "docs" / "experiments" / "2026-12-04-gang-up"

    outsider_rows, compare_cell, ppo_cell = (functools.partial(f, gang)
                                             for f in (_outsider_rows, _compare_cell, _ppo_cell))

    outsiders = [name for p in sorted(gang.glob("*.json"))
                 if (name := p.stem).startswith(("outsiders_", "recipe21_vs", "recipe22_vs", "A_vs", "B_vs", "B22_vs", "D22_vs", "E22_vs"))]
    yield "experiments/2026-12-04-gang-up.md", (
        [row for name in outsiders for row in outsider_rows(name)]
        + [compare_cell(p.stem) for p in sorted(gang.glob("*_cmp_*.json"))]
        + [ppo_cell(p.stem) for p in sorted(gang.glob("*_ppo_*.json"))]
        + ["sound move in {} of 31 (the recipe's seed 21: {} of 31)".format(*[
            sum(v["hit"] for v in scored.values())
            for scored in json.loads((gang / "scenarios.json").read_text()).values()][::-1])]
        + [f"sound move in {sum(v['hit'] for v in scored.values())} of 31"
           for p in sorted(gang.glob("*_scenarios.json")) for scored in json.loads(p.read_text()).values()]
        + [f"| {sum(v['hit'] for v in scored.values())} of 31 | {', '.join(k for k, v in scored.items() if not v['hit'])} |"
           for p in sorted(gang.glob("teacher_*.json")) for scored in json.loads(p.read_text()).values()])


    teach = ROOT / "docs" / "experiments" / "2026-12-05-teacher"
    yield "experiments/2026-12-05-teacher.md", _teacher_page_figures(teach)
    cost = ROOT / "docs" / "experiments" / "2026-12-05-update-cost"
    yield "experiments/2026-12-05-update-cost.md", [
        f"| {1000 * r['seconds_per_update']:.1f} | {r['env_steps_per_s']:,.0f} | {r['cpu_ratio']:.2f} |"
        for name in ("profile_recipe_pool.txt", "profile_recipe_trajectories.txt")
        for r in json.loads((cost / name).read_text().strip().splitlines()[-2])["shapes"]] + _variant_page_figures(cost)
    league = ROOT / "docs" / "experiments" / "2026-12-05-exploiter-in-league"
    yield "experiments/2026-12-05-exploiter-in-league.md", _variant_page_figures(league)
    trust = ROOT / "docs" / "experiments" / "2026-12-05-teacher-claim-trust"
    yield "experiments/2026-12-05-teacher-claim-trust.md", _variant_page_figures(trust) + _teacher_challenge_figures(trust)
    bluff = ROOT / "docs" / "experiments" / "2026-12-05-bluffing-snapshots"
    yield "experiments/2026-12-05-bluffing-snapshots.md", _variant_page_figures(bluff)
    league_bluffing = ROOT / "docs" / "experiments" / "2026-12-05-league-bluffing"
    yield "experiments/2026-12-05-league-bluffing.md", (_variant_page_figures(league_bluffing)
                                                        + _bluff_bias_figures(league_bluffing)
                                                        + _challenge_bias_figures(league_bluffing))
    regularised = ROOT / "docs" / "experiments" / "2026-12-06-regularised-league"
    yield "experiments/2026-12-06-regularised-league.md", (_variant_page_figures(regularised)
                                                           + _target_choice_rows(regularised)
                                                           + _mixed_aim_rows(regularised))
    retrained = ROOT / "docs" / "experiments" / "2026-12-06-exploiters-retrained"
    yield "experiments/2026-12-06-exploiters-retrained.md", (_variant_page_figures(retrained)
                                                             + _exploiter_rows(retrained, "Q22")
                                                             + _curve_rows(retrained / "best_response_curves.json"))


def _variant_page_figures(folder):
    """A variant page's figures from the evaluations beside it: the outsider tables
    (``*_vs_*``, and ``*_outsider`` with bluff and challenge rates), the pools
    (``*_cmp_*``), the best responses (``*_ppo_s?``, ``*_dqn_s?``), the bluff-bias tables
    (`_bias_rows`) and the scenario counts."""
    return ([row for p in sorted(folder.glob("*_vs_*.json")) for row in _outsider_rows(folder, p.stem)]
            + [row for p in sorted(folder.glob("*_outsider.json")) for row in _outsider_rate_rows(folder, p.stem)]
            + [_compare_cell(folder, p.stem) for p in sorted(folder.glob("*_cmp_*.json"))]
            + [_ppo_cell(folder, p.stem) for p in sorted(folder.glob("*_ppo_s?.json"))]
            + [_ppo_cell(folder, p.stem) for p in sorted(folder.glob("*_dqn_s?.json"))]
            + _bias_rows(folder)
            + [f"sound move in {sum(v['hit'] for v in scored.values())} of 31"
               for p in sorted(folder.glob("*_scenarios.json")) for scored in json.loads(p.read_text()).values()])


def _exploiter_rows(folder, name):
    """The exploiters' table of docs/experiments/2026-12-06-exploiters-retrained.md: each
    exploiter's win rate per chunk (``NAME_exploiter_curves.json``) and the network's win
    rate where it sat, in its first chunk and the last (``NAME_learner_summary.json``)."""
    curves = json.loads((folder / f"{name}_exploiter_curves.json").read_text())
    history = json.loads((folder / f"{name}_learner_summary.json").read_text())["history"]
    rows = []
    for exploiter, curve in curves.items():
        sat = [h[k] for h in history if (k := f"league/win_rate_vs_{exploiter}/run/export") in h]
        rows.append(f"| {exploiter.split('_')[1]} | " + " / ".join(f"{w:.3f}" for w in curve["win_rate_per_chunk"])
                    + f" | {sat[0]:.3f}, {sat[-1]:.3f} |")
    return rows


def _curve_rows(path):
    """A table of training curves (``{label: {"win_rate_per_chunk": [...]}}``): one row
    per label, its win rate at the end of each chunk."""
    return [f"| {label} | " + " / ".join(f"{w:.3f}" for w in curve["win_rate_per_chunk"]) + " |"
            for label, curve in json.loads(path.read_text()).items()]


def _bluff_bias_figures(folder):
    """The rest of docs/experiments/2026-12-05-league-bluffing.md's bluff tables (its
    ``*bias_*.json`` tables are among `_variant_page_figures`'): its ``after_challenge_*.json``
    (`bluff_after_challenge.py`) and ``teacher_*.json`` (`teacher_bluff_mix.py`,
    `teacher_prior.py`)."""
    rows = []
    for path in sorted(folder.glob("teacher_*.json")):
        rows += [f" | {v['teacher_bluff']:.3f} | {v['best_bluff_minus_best_honest']:+.3f} | {v['network_bluff']:.3f} |"
                 for where in json.loads(path.read_text())["rows"].values() for v in where.values()]
    splits = [json.loads((folder / f"after_challenge_{net}.json").read_text())["opponents"] for net in ("head26", "W22")]
    for head, w in zip(*(s.values() for s in splits)):
        rows.append(" | ".join(f"{r[f'{when}_bluff_rate']:.3f} of {r[f'{when}_chances']:,}"
                               for r in (head, w) for when in ("before", "after")) + " |")
    return rows


def _bias_rows(folder):
    """The rows of a bluff-bias table (``*bias_*.json``: `evals.outsider` with the
    league-bluffing page's ``bluffbias.py`` copies of one network): the copies' rates, each
    bias's wins and own bluff rate, the difference between the last bias and the first."""
    rows = []
    for path in sorted(folder.glob("*bias_*.json")):
        runs = list(json.loads(path.read_text()).values())
        copies = runs[0]["copies"]
        rows.append(f" | {copies['bluff_rate']:.2f} / {copies['challenge_rate']:.2f} | "
                    + " | ".join(f"{r['wins']:.3f} ({r['outsider']['bluff_rate']:.2f})" for r in runs)
                    + f" | {runs[-1]['wins'] - runs[0]['wins']:+.3f} |")
    return rows


def _target_choice_rows(folder):
    """docs/experiments/2026-12-06-regularised-league.md's table of whom the copies aim at,
    from ``target_choice*.json`` (its ``target_choice.py``): each pair's share aimed at the
    outsider, in all and split by seat order, coins and claims made."""
    def cell(x):
        return f"{x['at_outsider']:.2f} ({x['actions']:,})"
    rows = []
    for run in (r for p in sorted(folder.glob("target_choice*.json")) for r in json.loads(p.read_text()).values()):
        if isinstance(run, dict):
            cells = ([run["all"]] + [run["by_position"][k] for k in ("O next", "C next")]
                     + [run[by][k] for by in ("by_coins", "by_claims_made") for k in ("O fewer", "equal", "O more")])
            rows.append(" | " + " | ".join(cell(c) for c in cells) + " |")
    return rows


def _mixed_aim_rows(folder):
    """The mixed-aim tables of docs/experiments/2026-12-06-regularised-league.md: best
    responses against L's copies with a uniform aim (``L22_br_s?_mixed_aim.json``; the
    retrained ones are among `_variant_page_figures`' outsider rows) and the pool's paired
    comparison (``mixed_aim_pool_aggressive_heavy.json``, one comparison: no correction)."""
    rows = [row for p in sorted(folder.glob("L22_br_s?_mixed_aim.json")) for row in _outsider_rate_rows(folder, p.stem)]
    c = json.loads((folder / "mixed_aim_pool_aggressive_heavy.json").read_text())
    return rows + [f"{c['win_rate_a']:.3f} vs {c['win_rate_b']:.3f}: {c['diff']:+.3f} "
                   f"[{c['ci95_low']:+.3f}, {c['ci95_high']:+.3f}]"]


def _challenge_bias_figures(folder):
    """The challenge-bias tables of docs/experiments/2026-12-05-league-bluffing.md: a best
    response against copies made to challenge more (``W22_br_s?_challenge_*.json``, one
    `evals.outsider` run per bias) and the biased network as the outsider
    (``W22_challenge_more_*.json``); the best responses retrained against those copies
    (``W22c4_ppo_s?.json``) are among `_variant_page_figures`' best responses."""
    def br(seed, spec):
        run = next(iter(json.loads((folder / f"W22_br_s{seed}_challenge_{spec}.json").read_text()).values()))
        return f"{run['copies']['challenge_rate']:.2f} | {run['wins']:.3f}"
    rows = [f"| {spec[1:]} | {br(7, spec)} | {br(8, spec)} |" for spec in ("b0", "c1", "c2", "c4", "c8")]
    for path in sorted(folder.glob("W22_challenge_more_*.json")):
        runs = json.loads(path.read_text())
        copies = runs["bluffbias:b0"]["copies"]
        rows.append(f" | {copies['bluff_rate']:.2f} / {copies['challenge_rate']:.2f} | "
                    + " | ".join(f"{r['wins']:.3f} ({r['outsider']['challenge_rate']:.2f})" for r in runs.values())
                    + f" | {runs['bluffbias:c4']['wins'] - runs['bluffbias:b0']['wins']:+.3f} |")
    return rows


def _teacher_challenge_figures(folder):
    """The teacher-beside-network table of docs/experiments/2026-12-05-teacher-claim-trust.md,
    from its `teacher_challenge.py` JSON files."""
    rows = {t: json.loads((folder / f"head26_teacher_{t}.json").read_text())["rows"] for t in ("0.98", "0.5")}
    learned = json.loads((folder / "T22_teacher_0.5.json").read_text())["rows"]["all"]
    labels = {"all": "all", "action aimed at the seat": "an action aimed at the seat",
              "action aimed elsewhere": "an action aimed elsewhere", "answering a block": "answering a block"}
    figures = [f"| {label} ({rows['0.98'][key]['decisions']}) | {rows['0.98'][key]['claims_true']:.2f} | "
               + " | ".join([f"{rows['0.98'][key]['teacher_challenge']:.3f}", f"{rows['0.98'][key]['value_gap']:+.3f}",
                             f"{rows['0.98'][key]['network_challenge']:.3f}", f"{rows['0.5'][key]['teacher_challenge']:.3f}",
                             f"{rows['0.5'][key]['value_gap']:+.3f}"]) + " |"
               for key, label in labels.items()]
    return figures + [f"challenges {learned['network_challenge']:.3f} of the time, its teacher "
                      f"{learned['teacher_challenge']:.3f}"]


def _outsider_rows(folder, name):
    """An `evals.outsider` JSON's rows as a page quotes them: wins, places out, aim."""
    return [f"| {r['wins']:.3f} | {' / '.join(f'{v:.2f}' for k, v in r['placement'].items() if k != 'won')} | "
            f"{r['targeted_at_outsider']:.2f} of {r['targeted_actions']:,} |"
            for r in json.loads((folder / f"{name}.json").read_text()).values()]


def _outsider_rate_rows(folder, name):
    """An `evals.outsider` JSON's rows with each side's bluff and challenge rates."""
    def pair(r):
        return " / ".join("-" if r[k] is None else f"{r[k]:.2f}" for k in ("bluff_rate", "challenge_rate"))
    return [f"| {r['wins']:.3f} | {' / '.join(f'{v:.2f}' for k, v in r['placement'].items() if k != 'won')} | "
            f"{r['targeted_at_outsider']:.2f} of {r['targeted_actions']:,} | {pair(r['outsider'])} | {pair(r['copies'])} |"
            for r in json.loads((folder / f"{name}.json").read_text()).values()]


def _compare_cell(folder, name):
    """An `evals.compare` JSON as a page quotes it: both win rates, the difference, its interval."""
    c = json.loads((folder / f"{name}.json").read_text())
    return (f"{c['win_rate_a']:.3f} vs {c['win_rate_b']:.3f}: {c['diff']:+.3f} "
            f"[{c['ci_corrected_low']:+.3f}, {c['ci_corrected_high']:+.3f}]")


def _ppo_cell(folder, name):
    """An `evals.exploit` JSON's win rate and interval as a page quotes them."""
    p = json.loads((folder / f"{name}.json").read_text())
    return f"{p['win_rate']:.3f} [{p['ci95_low']:.3f}, {p['ci95_high']:.3f}]"


def _teacher_page_figures(teach):
    """docs/experiments/2026-12-05-teacher.md's figures, from its folder's JSON files."""
    figures = [row for p in sorted(teach.glob("*_vs_*.json")) for row in _outsider_rows(teach, p.stem)]
    figures += [_compare_cell(teach, p.stem) for p in sorted(teach.glob("*_cmp_*.json"))]
    figures += [_ppo_cell(teach, p.stem) for p in sorted(teach.glob("*_ppo_*.json"))]
    figures += [f"sound move in {sum(v['hit'] for v in scored.values())} of 31"
                for p in sorted(teach.glob("*_scenarios.json")) for scored in json.loads(p.read_text()).values()]
    for p in sorted(teach.glob("teacher_*.json")):
        for scored in json.loads(p.read_text()).values():
            figures.append(f"| {sum(v['hit'] for v in scored.values())} of 31 | "
                           f"{', '.join(k for k, v in scored.items() if not v['hit'])} |")
    from evals.report.decision_benchmark import SCENARIOS

    sound = {sc.name: sc.sound for sc in SCENARIOS}
    values = list(json.loads((teach / "teacher_B22_rollouts_per_world_16_rollout_steps_80.json").read_text()).values())[0]
    for name in ("forced_coup_at_the_threat", "assassinate_one_card_leader", "steal_from_the_rich",
                 "late_exchange_keeps_the_duke"):
        v = values[name]["values"]
        shown = [a for a in v if a in sound[name]] + sorted((a for a in v if a not in sound[name]),
                                                              key=lambda a: -v[a]["mean"])[:3]
        figures += [f"{v[a]['mean']:+.3f} ({v[a]['sd']:.3f})" for a in shown]
    return figures


@pytest.mark.parametrize("doc, figures", list(_benchmark_figures()))
def test_quoted_benchmark_figures_are_the_committed_outputs(doc, figures):
    text = (ROOT / "docs" / doc).read_text()
    missing = [f for f in figures if f not in text]
    assert not missing, f"docs/{doc} does not quote {missing} from docs/bench/"


def test_results_md_is_what_the_committed_report_renders():
    """docs/results.md is exactly what `evals.report.final.render` makes of the committed
    runs/experiments/report/report.json (no figure typed or edited by hand; what
    ``python -m evals.report.final`` writes), and the figures it shows
    (`evals.report.figures.draw_final`) are there."""
    from evals.report import final

    results = ROOT / "docs" / "results.md"
    assert all((ROOT / "docs" / link).stat().st_size for link in final.FIGURE_LINKS.values())
    assert final.rerender(ROOT / "runs" / "experiments" / "report", results) == results.read_text()


# Comparative sentences outside the results files (issue 41): each rests on a line of docs/results.md or a
# dated results file, which must say it: (doc, the sentence's words, results file, its line).
# None now: the sentences on the earlier `best` went with it (README and docs/engine.md point to results files).
BACKED: list[tuple[str, str, str, str]] = []
COMPARATIVE = re.compile(r"strongest|less exploitable|stronger than|better than", re.I)


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]


def test_comparative_sentences_quote_a_results_line():
    """`grep -ri "strongest\\|less exploitable" README.md docs/` finds, outside the results
    files and criteria, only sentences listed in BACKED, whose results line is there."""
    unbacked, missing = [], []
    for doc, words, results, line in BACKED:
        if words not in " ".join((ROOT / doc).read_text().split()):
            missing.append(f"{doc} no longer says {words!r}: drop it from BACKED")
        if line not in " ".join((ROOT / results).read_text().split()):
            missing.append(f"{results} does not say {line!r}, which {doc} rests on")
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        rel = page.relative_to(ROOT).as_posix()
        name = page.name
        if (name == "results.md" or name.endswith("-results.md") or re.match(r"\d{4}-\d{2}-\d{2}-", name)
                or "/history/" in rel):
            continue  # results, criteria (a claim to test, not a claim) and dated working pages
        backed = [w for d, w, _, _ in BACKED if d == rel]
        unbacked += [f"{rel}: {p[:120]}" for p in _paragraphs(page.read_text())
                     if COMPARATIVE.search(p) and not any(w in p for w in backed)]
    assert not missing and not unbacked, "\n".join(missing + ["unbacked comparative sentences:", *unbacked])


def test_the_weights_readme_quotes_the_runs_training_time():
    from evals import experiments

    first = experiments.load_config(ROOT / "configs" / "experiments.yaml").seeds_of("recipe_cpu")[0]  # `best`'s run
    summary = json.loads((ROOT / f"runs/experiments/train/recipe_cpu/seed_{first}/summary.json").read_text())
    text = " ".join((ROOT / "coupjax/policies/weights/best/README.md").read_text().split())
    assert f"({summary['wall_seconds']:,.0f} s wall, compilation included" in text


def test_the_config_reference_is_what_the_dataclasses_say():
    """docs/training.md's table of config keys is `training.config.reference_markdown`'s
    output: a key added, removed or given another default or range shows up here until
    the doc is regenerated (``python -m training.config``, pasted between the markers)."""
    from training.config import REFERENCE_BEGIN, REFERENCE_END, reference_markdown

    text = (ROOT / "docs" / "training.md").read_text()
    assert REFERENCE_BEGIN in text and REFERENCE_END in text
    assert text.split(REFERENCE_BEGIN + "\n", 1)[1].split(REFERENCE_END, 1)[0] == reference_markdown()
    for name in ("hidden_sizes", "entropy_coef", "num_seeds", "epsilon_decay_steps"):
        assert f"| `{name}` |" in text


def test_packaged_exports_resolve_wherever_a_command_runs(tmp_path, monkeypatch):
    """docs/adapters.md's first Gymnasium block names ``evals/reference/dqn/export``: a
    copied script finds it from any folder, not only the checkout's root."""
    from coupjax.inference import read_export
    from coupjax.policies.spec import describe_spec, locate

    block = next(code for _, info, code in _fences((ROOT / "docs" / "adapters.md").read_text())
                 if "coupjax.gymnasium" in code)
    assert "evals/reference/dqn/export" in block
    monkeypatch.chdir(tmp_path)
    assert describe_spec("evals/reference/dqn/export") == "path"
    assert locate("evals/reference/dqn/export").resolve() == (ROOT / "evals/reference/dqn/export").resolve()
    assert read_export(locate("evals/reference/dqn/export"))[0]["kind"] == "dqn"
    assert locate("evals/no_such_export") is None and locate("runs/no_such_run") is None
