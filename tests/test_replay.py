"""`coupjax replay FILE.jsonl`: every step of a saved game for one seat, run as a subprocess.

A full match (with the search's advice), a seat record, and broken files of both
kinds: a broken line is reported with its line number after the valid steps before
it, with exit status 1.  The subprocesses share a JAX compilation cache, so only the
first pays for compiling the engine and the search.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from coupjax import cli
from coupjax import rules
from coupjax.events import event_to_dict, last_event
from coupjax.game import deal
from coupjax.match import Match, compiled
from coupjax.tracker import Tracker, seat_event

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A 3-player match saved by Match.save, and a seat record of seat 1 of another game."""
    d = tmp_path_factory.mktemp("replay")
    rng = random.Random(4)
    m = Match(num_players=3, seed=4)
    while not m.done:
        legal = m.legal_actions()
        calm = [a for a in legal if a in ("pass", "exchange", "tax") or a.startswith(("keep", "reveal", "steal"))]
        m.play(rng.choice(calm if calm and rng.random() < 0.7 else legal))
    m.save(d / "match.jsonl")

    n, seat = 3, 1
    _, init, step, _ = compiled(n)
    state = init(jax.random.PRNGKey(9))
    t = Tracker(n, seat, [rules.ROLES[c] for c in deal.hands(state)[seat]])
    k = 0
    while not bool(state.terminated):
        k += 1
        mask = np.asarray(state.legal_action_mask)
        state = step(state, np.int32(rng.choice(list(np.flatnonzero(mask)))), jax.random.PRNGKey(k))
        ev = event_to_dict(last_event(state), n)
        own = {}
        if ev["seat"] == seat and ev["phase"] == "exchange" and not ev["forfeit"]:
            own["keep"] = ev["action"]
        if ev["challenge"] and ev["challenge"]["seat"] == seat and not ev["challenge"]["bluff_caught"]:
            own["redraw"] = ev["redraw"]
        if ev["exchange_drawn"] and ev["actor"] == seat:
            own["drawn"] = ev["exchange_drawn"]
        t.add_event(event_to_dict(last_event(state), n, public=True), **own)
    t.save(d / "seat.jsonl")

    lines = (d / "match.jsonl").read_text().splitlines()
    (d / "match_bad.jsonl").write_text("\n".join(lines[:6] + [json.dumps({**json.loads(lines[6]), "step": "six"})]
                                                + lines[7:]) + "\n")
    lines = (d / "seat.jsonl").read_text().splitlines()
    bad = next(k for k, line in enumerate(lines) if k and json.loads(line)["reveals"])
    event = json.loads(lines[bad])
    event["reveals"][0]["role"] = "duke" if event["reveals"][0]["role"] != "duke" else "captain"
    event["reveals"].append(dict(event["reveals"][0]))  # one card too many
    (d / "seat_bad.jsonl").write_text("\n".join(lines[:bad] + [json.dumps(event)] + lines[bad + 1:]) + "\n")
    return d, m, t, bad + 1


def replay(files, *args):
    d = files[0]
    env = dict(os.environ, PYTHONPATH=str(ROOT), WANDB_MODE="offline", JAX_COMPILATION_CACHE_DIR=str(d / "jax-cache"),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    return subprocess.run([sys.executable, "-m", "coupjax", *args], cwd=d, env=env, capture_output=True, text=True,
                          timeout=900)


@pytest.mark.parametrize("use_search", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["no-search", "search"])
def test_a_match_replays_step_by_step_with_the_advice(files, use_search):
    """Every step of a full match for seat 1: its table, beliefs and advice (the search's,
    at the default budget, under ``-m slow``: compiling it takes minutes on 2 cores)."""
    d, m, _, _ = files
    out = replay(files, "replay", "match.jsonl", "--seat", "1", "--json", *(() if use_search else ("--no-search",)))
    assert out.returncode == 0, out.stderr[-3000:]
    frames = [json.loads(line) for line in out.stdout.splitlines()]
    assert [f["step"] for f in frames] == list(range(len(m.events) + 1))
    advised = 0
    for f, event in zip(frames, m.events + [None]):
        t = f["table"]
        assert t["seat"] == 1 and len(t["hand"]) == t["hidden"][1]
        assert {b["seat"] for b in f["beliefs"]} == {s for s in (0, 2) if t["hidden"][s]}
        for b in f["beliefs"]:
            assert set(b["coupvisor"]) == set(b["exact"]) == set(rules.ROLES)
        if event is not None:
            assert f["event"]["action"] == (event["action"] if event["seat"] == 1 or event["phase"] not in
                                            ("lose", "exchange") else {"lose": "reveal", "exchange": "keep"}[event["phase"]])
        if t["current_player"] != 1:
            assert f["advice"] is None
            continue
        advised += 1
        adv = f["advice"]
        assert event["action"] in adv["legal"]
        if use_search:
            assert adv["search"]["action"] in adv["legal"]
            assert "explanation" in adv["search"] and adv["search"]["budget"]["num_worlds"] == 4
        else:
            assert "search" not in adv
        assert ("action" in adv) == (t["phase"] == "action")
        if use_search or t["phase"] in ("action", "react", "answer_block"):  # the one recommendation
            assert adv["recommendation"]["action"] in adv["legal"]
        else:
            assert adv["recommendation"] is None or len(adv["legal"]) == 1  # no advice on a reveal or a keep
        if "challenge" in adv:
            assert "recommendation" not in adv["challenge"] and isinstance(adv["challenge"]["challenge"], bool)
    assert advised >= 3


def test_a_seat_record_replays_for_its_seat(files):
    _, _, t, _ = files
    out = replay(files, "--json", "--no-search", "replay", "seat.jsonl")  # options before the subcommand
    assert out.returncode == 0, out.stderr[-3000:]
    frames = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(frames) == t.num_steps + 1
    assert [f["event"] for f in frames[:-1]] == t.events and frames[-1]["event"] is None
    assert frames[-1]["table"]["hand"] == t.view()["hand"] and frames[-1]["table"]["done"]
    assert all(f["table"]["seat"] == 1 for f in frames)
    assert all("search" not in (f["advice"] or {}) for f in frames)
    pretty = replay(files, "replay", "seat.jsonl", "--no-search")
    assert pretty.returncode == 0, pretty.stderr[-3000:]
    assert "step 0 · turn 0" in pretty.stdout and "1 (you)" in pretty.stdout and "game over" in pretty.stdout


@pytest.mark.parametrize("name, line", [("match_bad.jsonl", 7), ("seat_bad.jsonl", None)])
def test_a_broken_file_shows_its_valid_prefix_and_fails(files, name, line):
    line = line or files[3]
    out = replay(files, "replay", name, "--json", "--no-search")
    assert out.returncode == 1, out.stderr[-3000:]
    frames = [json.loads(x) for x in out.stdout.splitlines()]
    assert len(frames) == line - 1  # the states before each valid step, and after the last
    err = out.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"coupjax: error: {name}:{line}: "), err
    if name == "match_bad.jsonl":
        assert "step: expected an integer" in err[0]
    else:
        assert "reveals" in err[0]


def test_usage_mistakes_are_one_line(files, monkeypatch, capsys):
    """In process (the exit status and the one line are cli's, as in a subprocess)."""
    monkeypatch.chdir(files[0])
    for args, says in ((["replay", "seat.jsonl", "--seat", "0"], "a seat record of seat 1: it shows only that seat"),
                       (["replay", "match.jsonl", "--seat", "5"], "seat 5 is not at this 3-player table"),
                       (["replay", "nothing.jsonl"], "no such file")):
        with pytest.raises(SystemExit) as info:
            cli.main([*args, "--no-search"])
        err = capsys.readouterr().err
        assert info.value.code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def test_replay_options_mean_the_same_before_or_after():
    before = vars(cli.parse_args(["--seat", "2", "--json", "replay", "x.jsonl"]))
    after = vars(cli.parse_args(["replay", "x.jsonl", "--seat", "2", "--json"]))
    assert before == after and after["seat"] == 2 and after["json"] and after["file"] == "x.jsonl"
    assert cli.parse_args(["replay", "x.jsonl"]).seat is None


def test_a_full_match_shows_a_seats_own_private_parts_only(files):
    _, m, _, _ = files
    for e in m.events:
        view = seat_event(e, 2)
        if e["seat"] != 2 and e["phase"] in ("lose", "exchange"):
            assert view["action"] in ("reveal", "keep")
        assert all("index" not in x for x in view["reveals"] if x["seat"] != 2)
        assert view["redraw"] is None and view["exchange_drawn"] == []
