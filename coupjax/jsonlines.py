"""The one reader of JSON-lines files (saved matches, seat records, the page's files).

A file on disk may come from anyone (an upload, a download, a careless copy), so
reading one is bounded before anything is parsed: only a regular file is opened
(a directory, a device such as ``/dev/zero`` or a FIFO is refused from its `os.stat`,
a FIFO is never opened), at most `MAX_FILE_BYTES` are read, a line holds at most
`MAX_LINE_BYTES`, a number at most `MAX_NUMBER_CHARS` characters and a value at most
`MAX_DEPTH` levels of nesting.  Every failure is a `ReplayError` (a `ValueError`)
naming the file, the line where there is one, and the field where there is one --
never a `RecursionError`, a `MemoryError` or Python's integer-string limit.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from coupjax.events import FieldError

MAX_FILE_BYTES = 64 << 20  # a match of the turn cap is well under 1 MB
MAX_LINE_BYTES = 1 << 20  # an event line is under 1 KB
MAX_NUMBER_CHARS = 40  # every number in our formats is a seed, a count or a seat
MAX_DEPTH = 32  # our lines nest four levels deep


class ReplayError(ValueError):
    """A file that cannot be loaded exactly: ``path``, ``line`` (1-based; None when the
    file as a whole is wrong) and ``field`` (None when the line as a whole is wrong)."""

    def __init__(self, path, line: int | None, field: str | None, message: str):
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")
        self.path, self.line, self.field, self.message = path, line, field, message


def _open_regular(path: Path, limit: int):
    """The open binary file at ``path``, once it is known to be a regular file of at most
    ``limit`` bytes (`ReplayError` otherwise).

    The kind of file is checked with `os.stat` before it is opened (opening a FIFO
    blocks), and again on the open file, in case it was swapped in between."""
    try:
        st = os.stat(path)
    except OSError as err:
        raise ReplayError(path, None, None, f"cannot read it ({err.strerror or err})") from None
    _check_kind(path, st, limit)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as err:
        raise ReplayError(path, None, None, f"cannot read it ({err.strerror or err})") from None
    f = os.fdopen(fd, "rb")
    try:
        _check_kind(path, os.fstat(f.fileno()), limit)
    except ReplayError:
        f.close()
        raise
    return f


def read_bytes(path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (`ReplayError` otherwise)."""
    path = Path(path)
    with _open_regular(path, limit) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ReplayError(path, None, None, f"larger than {limit} bytes: not a saved game")
    return data


def _check_kind(path, st, limit: int) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise ReplayError(path, None, None, "a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise ReplayError(path, None, None, "not a regular file (a device, a FIFO or a socket)")
    if st.st_size > limit:
        raise ReplayError(path, None, None, f"{st.st_size} bytes, over the limit of {limit}: not a saved game")


def lines_of(path, first: str = "a header line", limit: int = MAX_FILE_BYTES) -> list[str]:
    """The file's lines (UTF-8; the newline that ends the last line dropped); a file that
    is not a regular file, too large, empty, with an over-long line or bytes that are
    not UTF-8 raises `ReplayError` (with the line where there is one)."""
    path = Path(path)
    data = read_bytes(path, limit)
    raw = data.split(b"\n")
    if raw[-1] == b"":
        raw.pop()
    if not raw:
        raise ReplayError(path, 1, None, f"empty file; expected {first}")
    lines = []
    for lineno, line in enumerate(raw, start=1):
        if len(line) > MAX_LINE_BYTES:
            raise ReplayError(path, lineno, None, f"a line of {len(line)} bytes, over the limit of {MAX_LINE_BYTES}")
        try:
            lines.append(line.decode("utf-8"))
        except UnicodeDecodeError:
            raise ReplayError(path, lineno, None, "not UTF-8 text") from None
    return lines


def first_line(path, limit: int = MAX_LINE_BYTES):
    """The first line of a regular file as JSON (the kind of file it is), bounded like the
    rest; `ReplayError` if it is not one."""
    path = Path(path)
    with _open_regular(path, MAX_FILE_BYTES) as f:
        line = f.readline(limit + 1)
    if len(line) > limit:
        raise ReplayError(path, 1, None, f"a line over the limit of {limit} bytes")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise ReplayError(path, 1, None, "not UTF-8 text") from None
    return json_line(path, 1, text)


def read_json(path, limit: int = MAX_LINE_BYTES):
    """A whole small JSON file (the page's side of a game), bounded like a line."""
    data = read_bytes(path, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ReplayError(path, None, None, "not UTF-8 text") from None
    return loads(text, path, None)


def json_line(path, lineno: int, line: str):
    """One line as JSON: no empty line, no duplicate key, no NaN, bounded numbers and
    nesting (`ReplayError` otherwise)."""
    if not line.strip():
        raise ReplayError(path, lineno, None, "empty line")
    return loads(line, path, lineno)


def loads(text: str, path, lineno: int | None):
    """``text`` as JSON under this module's bounds; `ReplayError` naming ``path`` and ``lineno``."""
    if len(text) > MAX_LINE_BYTES:
        raise ReplayError(path, lineno, None, f"{len(text)} characters, over the limit of {MAX_LINE_BYTES}")
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant,
                           parse_int=_int, parse_float=_float)
    except json.JSONDecodeError as err:
        raise ReplayError(path, lineno, None, f"not JSON ({err.msg} at column {err.colno})") from None
    except FieldError as err:
        raise ReplayError(path, lineno, err.field, err.message) from None
    except RecursionError:  # the parser's own bound, far above ours
        raise ReplayError(path, lineno, None, f"nested deeper than the limit of {MAX_DEPTH} levels") from None
    except (ValueError, MemoryError) as err:  # what the bounds above should already stop
        raise ReplayError(path, lineno, None, f"not readable JSON ({type(err).__name__})") from None
    depth = nesting(value)
    if depth > MAX_DEPTH:
        raise ReplayError(path, lineno, None, f"nested {depth} levels deep, over the limit of {MAX_DEPTH}")
    return value


def nesting(value) -> int:
    """How deep a parsed JSON value nests (0 for a scalar); iterative, as the value may
    be as deep as the parser allows."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        v, d = todo.pop()
        items = v.values() if isinstance(v, dict) else v if isinstance(v, list) else None
        if items is None:
            continue
        deepest = max(deepest, d)
        todo.extend((x, d + 1) for x in items)
    return deepest


def _int(s: str) -> int:
    if len(s) > MAX_NUMBER_CHARS:
        raise FieldError("(line)", f"a number of {len(s)} digits, over the limit of {MAX_NUMBER_CHARS}")
    return int(s)


def _float(s: str) -> float:
    if len(s) > MAX_NUMBER_CHARS:
        raise FieldError("(line)", f"a number of {len(s)} characters, over the limit of {MAX_NUMBER_CHARS}")
    return float(s)


def _unique_keys(pairs) -> dict:
    out = {}
    for k, v in pairs:
        if k in out:
            raise FieldError(k, "duplicate key")
        out[k] = v
    return out


def _no_constant(name):
    raise FieldError("(line)", f"{name} is not a JSON value")


__all__ = ["ReplayError", "MAX_FILE_BYTES", "MAX_LINE_BYTES", "MAX_NUMBER_CHARS", "MAX_DEPTH", "read_bytes",
           "lines_of", "first_line", "read_json", "json_line", "loads", "nesting"]
