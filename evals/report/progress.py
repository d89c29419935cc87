"""What the report says while it runs: one plain line per stage and per cell, and a line
at least every ``every`` seconds whatever it is doing.

A report takes a quarter of an hour, often in the background, in CI or over SSH, with
its output in a file.  `StageLog` prints, through `coupjax.console` (plain and flushed
in a file, Rich's own in a terminal):

* ``[0:00:03] seat: 10 cells``, when a stage starts (``, 4 stored`` where some are reused);
* ``[0:00:21] seat: 1/10 cells (seat/n4/aggressive_heavy/s7 18 s); stage 0:00:18, about
  0:02:42 left``, as each cell finishes (the estimate: the stage's cells still to compute
  at the mean time of those computed so far, the first left out once there are others:
  it carries the stage's compilation);
* ``[0:02:55] seat: done, 10 cells in 0:02:52``;
* ``[0:03:15] search: still on search/aggressive_heavy/s7 for 0:00:20; stage 0:00:20``
  when nothing else was printed for ``every`` seconds (a compilation, a long cell,
  the final stage), from a background thread, so the log never goes quiet for longer.

In a terminal the heartbeat is left out: Rich's bars (`coupjax.console.progress`) show
the time live.
"""
from __future__ import annotations

import contextlib
import threading
import time

HEARTBEAT = 20.0  # seconds: at most this long between two lines in a file (the promise: 30)


def clock_text(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class StageLog:
    """The stage and cell lines of the module doc on ``console`` (a Rich console);
    ``heartbeat`` (seconds, None: none) is the longest silence allowed."""

    def __init__(self, console, heartbeat: float | None = HEARTBEAT, clock=time.monotonic):
        self.console, self.heartbeat, self.clock = console, heartbeat, clock
        self.started = clock()
        self.last_line = self.started
        self.stage_name: str | None = None
        self.cell_name: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    # ------------------------------------------------------------ lines
    def line(self, text: str) -> None:
        with self._lock:
            now = self.clock()
            self.console.print(f"[{clock_text(now - self.started)}] {text}", markup=False, highlight=False)
            file = getattr(self.console, "file", None)
            if file is not None and hasattr(file, "flush"):
                file.flush()
            self.last_line = now

    @contextlib.contextmanager
    def stage(self, name: str, total: int | None = None, stored: int = 0):
        """A stage of ``total`` cells (None: no cells, e.g. the figures), ``stored`` of them reused."""
        self.stage_name, self.cell_name = name, None
        self.stage_start, self.stage_total, self.stage_done = self.clock(), total, 0
        self.computed_seconds: list[float] = []
        cells = "" if total is None else f": {total} cells" + (f", {stored} stored" if stored else "")
        self.line(f"{name}{cells}")
        try:
            yield self
        finally:
            took = clock_text(self.clock() - self.stage_start)
            if total is None:
                self.line(f"{name}: done in {took}")
            else:
                self.line(f"{name}: done, {self.stage_done} cells in {took}")
            self.stage_name = self.cell_name = None

    def cell_start(self, name: str) -> None:
        self.cell_name, self.cell_started = name, self.clock()

    def cell_done(self, name: str, seconds: float, reused: bool) -> None:
        self.cell_name = None
        self.stage_done += 1
        if not reused:
            self.computed_seconds.append(seconds)
        total = self.stage_total
        elapsed = self.clock() - self.stage_start
        what = f"{name} stored" if reused else f"{name} {seconds:.0f} s"
        text = f"{self.stage_name}: {self.stage_done}/{total} cells ({what}); stage {clock_text(elapsed)}"
        basis = self.computed_seconds[1:] or self.computed_seconds  # the first cell compiles
        if total is not None and basis and self.stage_done < total:
            text += f", about {clock_text((total - self.stage_done) * sum(basis) / len(basis))} left"
        self.line(text)

    def beat(self) -> None:
        """The heartbeat's line: where the report is and for how long."""
        now = self.clock()
        if self.stage_name is None:
            self.line(f"working; report {clock_text(now - self.started)}")
            return
        on = f" on {self.cell_name} for {clock_text(now - self.cell_started)}" if self.cell_name else ""
        self.line(f"{self.stage_name}: still{on}; stage {clock_text(now - self.stage_start)}")

    # ------------------------------------------------------------ the heartbeat
    def __enter__(self):
        if self.heartbeat:
            self._thread = threading.Thread(target=self._run, name="report-heartbeat", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return False

    def _run(self):
        while not self._stop.wait(min(1.0, self.heartbeat / 4)):
            if self.clock() - self.last_line >= self.heartbeat:
                self.beat()


class Parts:
    """Times the parts of a stage that has no cells (the final stage's pool tables, pairs
    and targets, `evals.report.final.final_parts`): each is a cell line of ``log``, with
    the estimate of what is left, and its seconds stay in ``seconds`` (meta.json's
    ``final_parts``), so a slow report shows which part took the time."""

    def __init__(self, log, clock=time.perf_counter):
        self.log, self.clock, self.seconds = log, clock, {}

    @contextlib.contextmanager
    def __call__(self, name: str):
        start = self.clock()
        self.log.cell_start(name)
        yield
        self.seconds[name] = self.clock() - start
        self.log.cell_done(name, self.seconds[name], False)


class Silent:
    """A `StageLog` that prints nothing (``--quiet``)."""

    def line(self, text):
        pass

    @contextlib.contextmanager
    def stage(self, name, total=None, stored=0):
        yield self

    def cell_start(self, name):
        pass

    def cell_done(self, name, seconds, reused):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
