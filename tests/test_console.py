"""What a command prints: whole and plain in a file or a pipe (CI, ``make run > log``),
Rich in a terminal; and ``coupjax policies``, one registered policy per line."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coupjax import console
from coupjax.policies import policy_names

ROOT = Path(__file__).resolve().parents[1]


def _wide_table() -> Table:
    table = Table(title="seat table")
    for col in ("policy", "win rate", "95% interval", "mean place", "entropy (nats)", "tables", "a long note"):
        table.add_column(col)
    table.add_row("runs/quickstart-20261202-010203/export", "0.612", "[0.593, 0.631]", "2.01", "0.432", "1,000",
                  "x" * 40)
    return table


def test_a_table_written_to_a_file_is_whole_and_plain():
    out = console.console()  # pytest captures stdout: not a terminal
    assert not out.is_terminal and out.width == console.PLAIN_WIDTH
    buffer = io.StringIO()
    out.file = buffer
    out.print(_wide_table())
    text = buffer.getvalue()
    assert "…" not in text and "\x1b" not in text
    assert "[0.593, 0.631]" in text and "x" * 40 in text and "runs/quickstart-20261202-010203/export" in text
    narrow = io.StringIO()  # Rich's default for a file: 80 columns, cut with an ellipsis
    Console(file=narrow, width=80).print(_wide_table())
    assert "…" in narrow.getvalue()


def test_progress_in_a_file_is_one_plain_line_per_step():
    buffer = io.StringIO()
    to = Console(file=buffer, width=console.PLAIN_WIDTH, no_color=True)
    with console.progress(to=to) as progress:
        assert isinstance(progress, console.PlainProgress)
        task = progress.add_task("chunks", total=3, info="compiling")
        for _ in range(3):
            progress.update(task, advance=1, info="win_rate 0.5")
    lines = buffer.getvalue().splitlines()
    assert lines[-1].startswith("chunks 3/3 ") and lines[-1].endswith("win_rate 0.5")
    assert all("━" not in x and "\x1b" not in x for x in lines)
    assert console.progress(to=to, disable=True).disable  # quiet: Rich's own, silent


def test_policies_command_lists_every_registered_policy_on_a_line():
    out = subprocess.run([sys.executable, "-m", "coupjax", "policies"], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    names = [line.split()[0] for line in lines[:-1]]
    assert names == policy_names()
    assert all(len(line.split(None, 1)) == 2 and line.endswith(".") for line in lines)


def _run_to_files(tmp_path, *argv, timeout=900):
    """A command with its stdout and stderr written to files, as in CI or ``make run > log``."""
    out, err = tmp_path / "stdout.log", tmp_path / "stderr.log"
    with open(out, "w") as o, open(err, "w") as e:
        code = subprocess.run([sys.executable, *argv], cwd=ROOT, stdout=o, stderr=e, stdin=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}, timeout=timeout).returncode
    return code, out.read_text(), err.read_text()


def _cells(line: str) -> list[str]:
    """A table row's cells (Rich's box characters or ASCII bars between them)."""
    import re

    return [c.strip() for c in re.split(r"[│┃|]", line) if c.strip()]


def _plain(text: str, progress: bool = False) -> None:
    """No colour or cursor codes, nothing cut (``…``), no broken character; no bar glyph
    in ``progress`` output (tables keep their box lines)."""
    assert "\x1b" not in text and "…" not in text and "\ufffd" not in text, text[-2000:]
    assert not progress or "━" not in text, text[-2000:]


def test_arena_command_written_to_a_file_is_whole_and_plain(tmp_path):
    """``coupjax arena ... > log``: the results table has every column, the intervals whole
    (``0.xxx-0.xxx``, once cut to ``0.193-0.6...``), no colour codes; progress is plain."""
    import re

    code, out, err = _run_to_files(tmp_path, "-m", "coupjax", "arena", "--policy", "random", "--policy", "honest",
                                   "--players", "2", "--matches", "2", "--seed", "7", "--out",
                                   str(tmp_path / "res.json"))
    assert code == 0, err[-2000:]
    _plain(out)
    _plain(err, progress=True)
    assert str(tmp_path / "res" / "matches") in out  # a long path stays on its line
    rows = [_cells(line) for line in out.splitlines() if re.search(r"\b(random|honest)\b.*policy", line)]
    assert len(rows) == 2, out
    for cells in rows:  # entrant, kind, matches, win rate, 95% CI, mean place, forfeits
        assert len(cells) == 7 and cells[2] == "2" and re.fullmatch(r"\d\.\d{3}-\d\.\d{3}", cells[4]), cells
        assert re.fullmatch(r"\d\.\d{2}", cells[5]) and cells[6] == "-", cells
    assert "forfeits" in out and "moves in" in out


def test_seat_table_written_to_a_file_is_whole_and_plain(tmp_path):
    """``python -m evals.seat_table ... > log``: every column of every row, intervals whole,
    plain progress lines on stderr."""
    import re

    code, out, err = _run_to_files(tmp_path, "-m", "evals.seat_table", "--policy", "random", "--policy", "honest",
                                   "--opponents", "random", "--games", "8", "--chunk", "8", "--players", "2")
    assert code == 0, err[-2000:]
    _plain(out)
    _plain(err, progress=True)
    rows = {cells[0]: cells for cells in map(_cells, out.splitlines()) if cells and cells[0] in ("random", "honest")}
    assert set(rows) == {"random", "honest"}, out
    for cells in rows.values():  # policy, win rate, 95% interval, mean place, entropy, tables
        assert len(cells) == 6 and re.fullmatch(r"\[\d\.\d{3}, \d\.\d{3}\]", cells[2]) and cells[5] == "8", cells


def test_the_main_jobs_progress_in_a_file_is_plain_lines(capsys):
    """The main job's progress (``training.runs.progress_bar``, as ``training.train`` drives
    it) with stderr not a terminal: one whole plain line per update, the last ``chunks 3/3``
    with its metrics."""
    from training.runs import progress_bar

    prog, task = progress_bar(3, 0, quiet=False)
    assert isinstance(prog, console.PlainProgress)
    with prog:
        prog.update(task, info="compiled in 12s")
        for c in range(3):
            prog.update(task, advance=1, info=f"win_rate {0.5 + c / 10:.3f} loss 0.125 4321 env steps/s")
    lines = capsys.readouterr().err.splitlines()
    _plain("\n".join(lines), progress=True)
    assert lines[0].startswith("chunks 0/3 ") and lines[0].endswith("compiled in 12s")
    assert lines[-1].startswith("chunks 3/3 ") and lines[-1].endswith("win_rate 0.700 loss 0.125 4321 env steps/s")
