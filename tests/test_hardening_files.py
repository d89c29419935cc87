"""Hostile files never stop a reader (issue 28): `Match.load`, `Tracker.load` and
``coupjax replay`` on a 5,000-digit number, 60,000 nested brackets, a directory,
``/dev/zero`` (through a link), a FIFO and a 100 MB line each give one
`coupjax.jsonlines.ReplayError` (a ValueError) naming the file -- and the line where
there is one -- and ``coupjax replay`` one line with exit status 1 or 2.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from coupjax import cli, jsonlines
from coupjax.match import Match, ReplayError
from coupjax.tracker import Tracker

ROOT = Path(__file__).resolve().parents[1]
DEAL = '{"type": "deal", "version": 2, "num_players": 2, "seed": 1}'


def first_lines(tmp_path: Path) -> dict:
    """A good first line of each kind of file: a full match's deal, a seat record's header."""
    Match(2, seed=1).save(tmp_path / "m.jsonl")
    Tracker(2, 0, ("duke", "captain"), 0).save(tmp_path / "t.jsonl")
    return {Match.load: (tmp_path / "m.jsonl").read_text().splitlines()[0],
            Tracker.load: (tmp_path / "t.jsonl").read_text().splitlines()[0]}


def hostile(tmp_path: Path, kind: str, head: str = DEAL) -> tuple[Path, int | None]:
    """A file of ``kind`` (its later lines after ``head``) and the line its error names
    (None: the file as a whole)."""
    path = tmp_path / f"{kind}.jsonl"
    if kind == "digits":
        path.write_text('{"type": "deal", "seed": ' + "1" * 5000 + "}\n")
        return path, 1
    if kind == "digits_later":
        path.write_text(head + "\n" + '{"type": "event", "step": ' + "9" * 5000 + "}\n")
        return path, 2
    if kind == "nested":
        path.write_text("[" * 60_000 + "]" * 60_000 + "\n")
        return path, 1
    if kind == "nested_shallow":  # within the parser's own limit, over ours
        path.write_text(head + "\n" + "[" * 100 + "]" * 100 + "\n")
        return path, 2
    if kind == "directory":
        path.mkdir()
        return path, None
    if kind == "dev_zero":
        path.symlink_to("/dev/zero")
        return path, None
    if kind == "fifo":
        os.mkfifo(path)
        return path, None
    if kind == "long_line":
        with open(path, "wb") as f:
            f.write(b"x" * (100 << 20) + b"\n")
        return path, None
    raise ValueError(kind)


KINDS = ["digits", "digits_later", "nested", "nested_shallow", "directory", "dev_zero", "fifo", "long_line"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("load", [Match.load, Tracker.load], ids=["match", "tracker"])
def test_loaders_refuse_hostile_files_with_file_and_line(tmp_path, kind, load):
    path, line = hostile(tmp_path, kind, first_lines(tmp_path)[load])
    with pytest.raises(ReplayError) as info:
        load(path)
    err = info.value
    assert isinstance(err, ValueError) and err.path == path and str(path) in str(err)
    if line is not None and err.line is not None:
        assert f"{path}:{err.line}:" in str(err)
    if kind in ("digits", "digits_later", "nested", "nested_shallow"):
        assert err.line == line  # the line is named where there is one
    assert "\n" not in str(err) and len(str(err)) < 400


def test_the_line_bound_names_the_line(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonlines, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "m.jsonl"
    path.write_text(DEAL + "\n" + "x" * 2000 + "\n")
    with pytest.raises(ReplayError, match=r"m\.jsonl:2: a line of 2000 bytes"):
        Match.load(path)


@pytest.mark.parametrize("kind", KINDS)
def test_replay_command_is_one_line(tmp_path, capsys, kind):
    path, _ = hostile(tmp_path, kind)
    with pytest.raises(SystemExit) as info:
        cli.main(["replay", str(path), "--no-search"])
    err = capsys.readouterr().err.strip()
    assert info.value.code in (1, 2) and len(err.splitlines()) == 1 and str(path) in err, err


def test_replay_of_a_fifo_in_a_process_does_not_block(tmp_path):
    """The FIFO is never opened: the command ends (the timeout only guards a hang)."""
    path, _ = hostile(tmp_path, "fifo")
    r = subprocess.run([sys.executable, "-m", "coupjax", "replay", str(path), "--no-search"], cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120)
    assert r.returncode in (1, 2) and len(r.stderr.strip().splitlines()) == 1 and str(path) in r.stderr


def test_the_page_readers_share_the_bounds(tmp_path):
    """The first line (what kind of file) and a whole small JSON file (the page's side of a
    game) refuse the same things."""
    for kind in ("digits", "nested", "directory", "dev_zero", "fifo"):
        path, _ = hostile(tmp_path, kind)
        with pytest.raises(ReplayError):
            jsonlines.first_line(path)
        with pytest.raises(ReplayError):
            jsonlines.read_json(path)
    assert jsonlines.first_line(_write(tmp_path / "ok.jsonl", DEAL + "\n")) == \
        {"type": "deal", "version": 2, "num_players": 2, "seed": 1}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
