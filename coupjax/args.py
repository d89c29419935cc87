"""Command-line parsing shared by every command: one-line errors with exit status 2.

`Parser` is an `argparse.ArgumentParser` whose errors are one line
(``prog: error: ...``), and `fail` reports any other mistake found before work
starts the same way.  The argument types check what argparse does not.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from coupjax import compile_cache
from coupjax.seeds import SeedError, check_report_seed


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) and exit status 2.

    Every command parses its arguments here first, so this is also where the persistent
    compilation cache is turned on for all of them (`coupjax.compile_cache`): a new
    command gets it without a line of its own.
    """

    def parse_known_args(self, args=None, namespace=None):  # noqa: D102 - argparse API
        try:
            compile_cache.enable()
        except (ValueError, OSError) as err:
            self.error(f"compilation cache: {err}")
        return super().parse_known_args(args, namespace)

    def error(self, message):  # noqa: D102 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")


def fail(prog: str, message) -> None:
    """Exit with status 2 and the one line ``prog: error: message``."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def require_extra(prog: str, command: str, what: str, extra: str, *libraries: str) -> None:
    """Exit with one line naming the extra to install when one of ``libraries`` is not
    installed: a plain ``pip install coupjax`` has the engine and the main job, not the
    page, the report or the adapters.  Checked before any work, without importing them."""
    missing = [name for name in libraries if not _installed(name)]
    if missing:
        fail(prog, f'{command} needs {what}: pip install "coupjax[{extra}]" (missing: {", ".join(missing)})')


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def output_file(text: str) -> Path:
    """A file a command writes when its work is done (``--out``): its folder is made now
    if missing, so that hours of games are never lost to a path that cannot be written;
    a path that names a folder, or lies under a file, is refused before any work."""
    path = Path(text)
    if not text or path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise argparse.ArgumentTypeError(f"cannot make the folder of {text!r}: {err.strerror or err}") from None
    return path


def report_seed(text: str) -> int:
    """A seed of a command that reports figures: any integer but the tuning seeds (a
    held-out seed is accepted and its use recorded in the ledger: `coupjax.seeds`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    try:
        return check_report_seed(value)
    except SeedError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def seconds(value: float) -> str:
    """A duration for people: '48 s', '4.2 min'."""
    return f"{value:.0f} s" if value < 120 else f"{value / 60:.1f} min"


def rate(value: float, unit: str) -> str:
    """A rate for people: '12.4k env steps/s'."""
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= div:
            return f"{value / div:.1f}{suffix} {unit}/s"
    return f"{value:.0f} {unit}/s"
