"""The report while it runs: plain lines that arrive as it goes (its output in a file),
stages run alone with ``--only`` and the seconds of every stage and cell in meta.json.

The run is the quick suite's micro matrix of tests/test_report.py (seat tables of two
scripted policies and honest's advice on/off: the shapes that file compiles), in a
subprocess whose stdout and stderr go to a file read while it runs."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from evals.report import __main__ as report_main
from evals.report import suite as S
from evals.report.config import config_from_dict
from evals.report.progress import Parts, StageLog

ROOT = Path(__file__).resolve().parents[1]
PROMISE = 30.0  # seconds: the longest silence of the log written to a file (the promise)
MICRO = {
    "policies": {"random": "random", "honest": "honest"}, "conditions": ["aggressive_heavy"], "seeds": [7],
    "games": 6, "search_games": 0, "cross_play_games": 0, "mixed_games": 0, "player_count_games": 0,
    "position_games": 0, "advisor_games": 0, "scenarios": False, "batch": 8, "advice_bases": ["honest"],
    "advice_games": 6,
}


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    """A micro report as a user runs it in the background (``> log 2>&1``): the log
    polled while it runs; returns (config, out, arrivals [(seconds, lines so far)], log text)."""
    root = tmp_path_factory.mktemp("watched")
    cfg = root / "eval.yaml"
    cfg.write_text(yaml.safe_dump(MICRO))
    out, log = root / "out", root / "log"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # the log flushes its own lines
    env.update(PYTHONPATH=str(ROOT), WANDB_MODE="offline")
    arrivals, seen = [], 0
    with open(log, "w") as f:
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "evals.report", "--config", str(cfg), "--out", str(out),
                                 "--no-wandb"], cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env=env)
        while proc.poll() is None:
            count = log.read_text().count("\n")
            if count > seen:
                arrivals.append((time.monotonic() - t0, count))
                seen = count
            assert time.monotonic() - t0 < 900, "the micro report ran for 15 minutes"
            time.sleep(0.25)
        ended = time.monotonic() - t0
    text = log.read_text()
    assert proc.returncode == 0, text
    return cfg, out, arrivals, ended, text


def test_lines_arrive_while_the_report_runs(watched):
    _, _, arrivals, ended, text = watched
    lines = text.splitlines()
    assert len({round(t) for t, _ in arrivals}) >= 2, (arrivals, text)  # not all at the end
    assert arrivals[0][0] < ended - 1.0, (arrivals, ended)
    times = [0.0] + [t for t, _ in arrivals] + [ended]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) <= PROMISE, (gaps, text)
    assert all("\x1b" not in x and "━" not in x for x in lines)  # plain: no cursor codes, no bar
    assert any(x.endswith("] seat: 1 cells") for x in lines), text
    assert any("] seat: 1/1 cells (seat/n4/aggressive_heavy/s7 " in x for x in lines), text
    assert any("] advice: done, 1 cells in " in x for x in lines), text
    assert lines[-1].startswith("wrote ") and "report.md" in lines[-1]


def test_meta_has_the_seconds_of_every_stage_and_cell(watched):
    _, out, _, _, _ = watched
    meta = json.loads((out / "meta.json").read_text())
    assert set(meta["cells"]) == {"seat/n4/aggressive_heavy/s7", "advice/aggressive_heavy"}
    for name, cell in meta["cells"].items():
        assert cell["seconds"] > 0 and cell["cpu_seconds"] > 0 and cell["reused"] is False
    for stage in ("seat", "advice"):
        st = meta["stages"][stage]
        assert st["cells"] == 1 and st["cells_reused"] == 0 and st["wall_seconds"] >= st["seconds"] > 0


def test_only_plays_one_stage_again_and_reuses_the_others(watched, tmp_path):
    cfg, out, _, _, _ = watched
    folder = tmp_path / "again"
    folder.mkdir()
    subprocess.run(["cp", "-r", str(out / "cells"), str(folder)], check=True)
    cells = folder / "cells"
    before = {p.name: p.stat().st_mtime_ns for p in cells.iterdir()}
    assert report_main.main(["--config", str(cfg), "--out", str(folder), "--only", "advice", "--quiet",
                             "--no-wandb"]) == 0
    after = {p.name: p.stat().st_mtime_ns for p in cells.iterdir()}
    assert {x for x in before if after[x] != before[x]} == {"advice__aggressive_heavy.npz",
                                                            "advice__aggressive_heavy.json"}
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["only"] == ["advice"] and meta["cells_reused"] == ["seat/n4/aggressive_heavy/s7"]
    assert meta["cells"]["seat/n4/aggressive_heavy/s7"]["reused"] and "wall_seconds" in meta["stages"]["advice"]
    first, again = (json.loads((d / "report.json").read_text()) for d in (out, folder))
    assert again["policies"] == first["policies"] and again["advice_paired"] == first["advice_paired"]
    # a stage with no stored cell is left out, not played
    alone = tmp_path / "alone"
    assert report_main.main(["--config", str(cfg), "--out", str(alone), "--only", "advice", "--quiet",
                             "--no-wandb"]) == 0
    assert sorted(p.name for p in (alone / "cells").iterdir()) == ["advice__aggressive_heavy.json",
                                                                  "advice__aggressive_heavy.npz"]
    rep = json.loads((alone / "report.json").read_text())
    assert rep["policies"]["honest"] == {} and rep["advice_paired"] == first["advice_paired"]


@pytest.mark.parametrize("only, words", [("seats", "no stage 'seats'"), ("seat,final", "no stage 'final' (with --final)"),
                                         (",", "--only needs stage names")])
def test_a_wrong_stage_is_one_line_with_status_2(tmp_path, capsys, only, words):
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(yaml.safe_dump(MICRO))
    with pytest.raises(SystemExit) as e:
        report_main.main(["--config", str(cfg), "--out", str(tmp_path / "o"), "--only", only])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("python -m evals.report: error:") and words in err and "\n" not in err
    assert not (tmp_path / "o").exists()


def test_the_plan_names_every_stage_and_cell():
    """`Suite.plan` (the cells the log counts) names each stage's cells as its method stores them."""
    assert tuple(S.STAGES) == report_main.STAGES
    cfg = config_from_dict({**MICRO, "player_counts": [3, 4], "player_count_games": 2, "cross_play_games": 600,
                            "mixed_games": 4, "position_games": 2, "exploit_probes": {
                                "h": {"policy": "honest", "baseline": "random"}}, "probe_games": 2})
    plan = S.Suite(cfg, store=None).plan()
    assert list(plan) == list(S.STAGES)
    assert plan["seat"] == ["seat/n4/aggressive_heavy/s7"] and plan["players"] == ["players/n3/aggressive_heavy"]
    assert plan["crossplay"] == ["crossplay/part0", "crossplay/part1"] and plan["mixed"] == []  # 2 labels < 4 seats
    assert plan["positions"] == ["positions/aggressive_heavy/s7"] and plan["probes"] == ["probes/h"]
    assert plan["advisor"] == plan["search"] == plan["reactions"] == plan["scenarios"] == []


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_stage_lines_count_cells_and_estimate_what_is_left():
    buffer, clock = io.StringIO(), FakeClock()
    log = StageLog(Console(file=buffer, width=240, no_color=True), heartbeat=None, clock=clock)
    with log.stage("seat", 4, stored=1):
        log.cell_start("seat/a")
        log.cell_done("seat/a", 3.0, True)
        for name, took in (("seat/b", 30), ("seat/c", 10)):  # b compiles: c's time is the estimate's
            log.cell_start(name)
            clock.now += took
            log.cell_done(name, took, False)
        clock.now += 70  # silent for 70 s: the heartbeat's line
        log.beat()
        clock.now += 10
        log.cell_done("seat/d", 90.0, False)
    lines = buffer.getvalue().splitlines()
    assert lines == ["[0:00:00] seat: 4 cells, 1 stored",
                     "[0:00:00] seat: 1/4 cells (seat/a stored); stage 0:00:00",
                     "[0:00:30] seat: 2/4 cells (seat/b 30 s); stage 0:00:30, about 0:01:00 left",
                     "[0:00:40] seat: 3/4 cells (seat/c 10 s); stage 0:00:40, about 0:00:10 left",
                     "[0:01:50] seat: still; stage 0:01:50",
                     "[0:02:00] seat: 4/4 cells (seat/d 90 s); stage 0:02:00",
                     "[0:02:00] seat: done, 4 cells in 0:02:00"]


def test_the_final_stage_counts_its_parts_and_keeps_their_seconds():
    """The final stage has no cells; its parts (pool tables, pairs, targets) speak as cells
    do, and their seconds go to meta.json (``final_parts``).  A part that fails keeps none."""
    buffer, clock = io.StringIO(), FakeClock()
    log = StageLog(Console(file=buffer, width=240, no_color=True), heartbeat=None, clock=clock)
    with log.stage("final", 3) as stage:
        parts = Parts(stage, clock=clock)
        for name, took in (("pool/aggressive_heavy", 400), ("pool/honest_heavy", 300)):
            with parts(name):
                clock.now += took
        with pytest.raises(ValueError), parts("targets/recipe/belief_ev"):
            raise ValueError("a unit's run is missing")
    assert parts.seconds == {"pool/aggressive_heavy": 400, "pool/honest_heavy": 300}
    assert buffer.getvalue().splitlines()[1:3] == [
        "[0:06:40] final: 1/3 cells (pool/aggressive_heavy 400 s); stage 0:06:40, about 0:13:20 left",
        "[0:11:40] final: 2/3 cells (pool/honest_heavy 300 s); stage 0:11:40, about 0:05:00 left"]


def test_the_heartbeat_speaks_when_nothing_else_does():
    buffer = io.StringIO()
    with StageLog(Console(file=buffer, width=240, no_color=True), heartbeat=0.2) as log:
        with log.stage("final"):
            log.cell_start("final/x")
            time.sleep(1.0)
    beats = [x for x in buffer.getvalue().splitlines() if "final: still on final/x for " in x]
    assert 2 <= len(beats) <= 6, buffer.getvalue()


# ------------------------------------------------------------------ faster stages, the same counts
REACTIONS_SCRIPT = """
import json, sys, jax
from coupjax.env import Env
from evals.lib.reactions import reaction_rates
assert len(jax.devices()) == 2
json.dump(reaction_rates(Env(4), ["aggressive", "honest"], 40, 5, chunk=32), open(sys.argv[1], "w"))
"""


@pytest.mark.slow
def test_reaction_rates_split_over_two_devices_count_the_same(tmp_path):
    """Every spec's tables in one interleaved queue, split over two host devices (as the
    report runs on a 2-core CPU), give one device's counts, spec by spec in calls of 32
    games.

    Quick twin: test_the_challenge_opportunities_per_role_add_up_to_the_arenas_count (in
    tests/test_reaction_rates.py: the counts against the arena's, one device).
    """
    from coupjax.env import Env
    from evals.lib.reactions import reaction_rates

    f = tmp_path / "split.json"
    env_vars = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", REACTIONS_SCRIPT, str(f)], check=True, env=env_vars, cwd=ROOT)
    env = Env(4)
    one = {spec: reaction_rates(env, [spec], 40, 5, chunk=64)[spec] for spec in ("aggressive", "honest")}
    assert json.loads(f.read_text()) == json.loads(json.dumps(one))


@pytest.mark.slow
def test_probe_tuning_plays_the_seat_tables_games():
    """`probes.tune` (every probe in one queue) gives `coupjax.seat_tables.play_tables`'
    rows for the same tables.  Quick twin: test_micro_report_files_and_resume."""
    from coupjax.env import Env
    from coupjax.seat_tables import play_tables
    from evals.lib.probes import tune

    env, probes = Env(4), ["role_bluffer:duke:1", "aggressive", "honest"]
    got, want = tune(env, "honest", 24, 1003, probes), play_tables(env, probes, 24, 1003, opponents="honest")
    for probe in probes:
        entropy = want[probe].pop("action_entropy")
        assert got[probe].pop("action_entropy") == pytest.approx(entropy, rel=1e-5)
        assert got[probe] == want[probe], probe


def test_a_small_cell_serves_every_bot_its_tables_seat():
    """A cell of 2 tables took its capacities from 2 other tables, where `random` sat
    nowhere: capacity 0, and seed 7's tables, which seat it, never ended (the search stage
    of a small matrix ran for 18 minutes).  Every bot a condition can seat now serves."""
    from evals.lib.play import condition_weights

    cfg = config_from_dict({**MICRO, "conditions": ["aggressive_heavy", "honest_heavy"], "seeds": [7, 8]})
    player, _ = S.Suite(cfg, store=None).seat_player(4, ["honest"], 2)
    weights = sum(condition_weights(c) for c in cfg.conditions)
    assert all(c > 0 for c, w in zip(player.capacity, weights) if w > 0), player.capacity
