"""Every command's output: Rich in a terminal, plain and whole when written to a file.

Written to a log (CI, ``make run > log``), Rich's defaults cut a table to 80 columns
and end the cut in an ellipsis, and a live progress bar comes out as one garbled line
(``chunks ━━ 6… … 0…``).  `console` gives such output a wide page and no colour or
cursor codes, and never wraps a line of text (a long path stays on its line), so
every column of every table is there; `progress` prints one plain
line per step instead of a live bar.  In a terminal both are Rich's own.
"""
from __future__ import annotations

import time

from rich.console import Console
from rich.progress import Progress

PLAIN_WIDTH = 240  # wide enough for every table a command prints, with room to spare


def console(stderr: bool = False) -> Console:
    """The console a command prints to (stdout, or stderr for progress and notes)."""
    rich = Console(stderr=stderr)
    if rich.is_terminal:
        return rich
    return Console(stderr=stderr, width=PLAIN_WIDTH, no_color=True, highlight=False, emoji=False,
                   force_terminal=False, force_interactive=False, soft_wrap=True)


class PlainProgress:
    """Rich's `Progress` calls (``add_task``, ``advance``, ``update``, a context manager)
    as plain lines: ``chunks 3/6 0:01:12 win_rate 0.512``, one per step, at most one per
    ``every`` seconds but always the last."""

    def __init__(self, console: Console, every: float = 2.0):
        self.console, self.every = console, every
        self.tasks: dict[int, dict] = {}
        self.started = time.monotonic()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def add_task(self, description: str, total: float | None = None, completed: float = 0, **fields) -> int:
        task = len(self.tasks)
        self.tasks[task] = {"description": description, "total": total, "completed": completed, "fields": fields,
                            "printed": -float("inf")}
        return task

    def advance(self, task: int, advance: float = 1) -> None:
        self.update(task, advance=advance)

    def update(self, task: int, *, advance: float | None = None, completed: float | None = None,
               total: float | None = None, description: str | None = None, **fields) -> None:
        t = self.tasks[task]
        t["completed"] = completed if completed is not None else t["completed"] + (advance or 0)
        t["total"] = total if total is not None else t["total"]
        t["description"] = description if description is not None else t["description"]
        t["fields"].update(fields)
        now, last = time.monotonic(), t["total"] is not None and t["completed"] >= t["total"]
        if last or now - t["printed"] >= self.every:
            t["printed"] = now
            total_text = f"/{t['total']:g}" if t["total"] is not None else ""
            elapsed = time.strftime("%H:%M:%S", time.gmtime(now - self.started))
            info = " ".join(str(v) for v in t["fields"].values())
            self.console.print(f"{t['description']} {t['completed']:g}{total_text} {elapsed} {info}".rstrip(),
                               markup=False, highlight=False)


def progress(*columns, to: Console | None = None, transient: bool = False, disable: bool = False):
    """Rich's `Progress` (same columns and options) on ``to`` (default: stderr) in a
    terminal; `PlainProgress` otherwise, or a silent one when ``disable``."""
    out = to or console(stderr=True)
    if out.is_terminal or disable:
        return Progress(*columns, console=out, transient=transient, disable=disable)
    return PlainProgress(out)
