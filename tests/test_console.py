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

from coupjax import console as output
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
    out = output.console()  # pytest captures stdout: not a terminal
    assert not out.is_terminal and out.width == output.PLAIN_WIDTH
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
    to = Console(file=buffer, width=output.PLAIN_WIDTH, no_color=True)
    with output.progress(to=to) as progress:
        assert isinstance(progress, output.PlainProgress)
        task = progress.add_task("chunks", total=3, info="compiling")
        for _ in range(3):
            progress.update(task, advance=1, info="win_rate 0.5")
    lines = buffer.getvalue().splitlines()
    assert lines[-1].startswith("chunks 3/3 ") and lines[-1].endswith("win_rate 0.5")
    assert all("━" not in x and "\x1b" not in x for x in lines)
    assert output.progress(to=to, disable=True).disable  # quiet: Rich's own, silent


def test_policies_command_lists_every_registered_policy_on_a_line():
    out = subprocess.run([sys.executable, "-m", "coupjax", "policies"], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    names = [line.split()[0] for line in lines[:-1]]
    assert names == policy_names()
    assert all(len(line.split(None, 1)) == 2 and line.endswith(".") for line in lines)
