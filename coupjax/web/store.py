"""Where the page keeps its games: one directory, two files per game.

``<id>.jsonl`` is the game itself in the repository's formats -- a seat record
(`coupjax.tracker.Tracker.save`) for a game entered at a real table, a full match
(`coupjax.match.Match.save`) for a practice match -- so ``coupjax replay`` opens it.
``<id>.json`` is the page's side of it: the names, the seat, the entries as tapped
(so undo removes a whole entry), the warnings (refused entries are kept, nothing
entered is lost), the style and, for practice, the opponents.  Both files are written
whole to a temporary file, flushed to disk and renamed over the old one after every
entry, so a killed server finds either the old or the new game, never half of one.
A ``.jsonl`` without a ``.json`` (a match from the arena, an upload) is open to replay.

Every file is read through `coupjax.jsonlines` (a regular file, bounded), so a bad
one -- an upload of anything, a file edited by hand -- is reported by `scan` and
skipped, never a failure of the whole list.  A game is renamed (its id) by linking
both files to the new name before unlinking the old, so a crash in between leaves two
complete copies, never none; ids are `ID_RE` names inside the directory, so no
request reaches a file outside it.
"""
from __future__ import annotations

import json
import os
import stat
import re
import secrets
import time
from pathlib import Path

from coupjax.jsonlines import MAX_FILE_BYTES, ReplayError, first_line, read_bytes, read_json

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
TITLE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.#,!?'()&-]{0,99}$")  # a name a person gives a game


def default_games_dir() -> Path:
    """``$XDG_DATA_HOME/coupjax/games`` (default ``~/.local/share/coupjax/games``)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "coupjax" / "games"


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` in one rename, after the bytes are on disk."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class UnknownGame(KeyError):
    """No game of that id in the store."""


class GameExists(KeyError):
    """A new name that another game already has."""


class GameStore:
    """The games directory (module doc)."""

    def __init__(self, root):
        self.root = Path(root).expanduser()
        self.root.mkdir(parents=True, exist_ok=True)

    def new_id(self, kind: str) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        while True:
            gid = f"{stamp}-{kind}-{secrets.token_hex(2)}"
            if not self.record_path(gid).exists():
                return gid

    def check_id(self, gid: str) -> str:
        if not isinstance(gid, str) or not ID_RE.match(gid) or gid.endswith((".json", ".jsonl", ".tmp")):
            raise UnknownGame(gid)
        return gid

    def record_path(self, gid: str) -> Path:
        return self.root / f"{gid}.jsonl"

    def meta_path(self, gid: str) -> Path:
        return self.root / f"{gid}.json"

    def exists(self, gid: str) -> bool:
        return self.record_path(self.check_id(gid)).is_file()

    def read_meta(self, gid: str) -> dict | None:
        path = self.meta_path(self.check_id(gid))
        if not path.is_file():
            if not self.record_path(gid).is_file():
                raise UnknownGame(gid)
            return None
        meta = read_json(path)
        if not isinstance(meta, dict):
            raise ReplayError(path, None, None, "not a JSON object")
        return meta

    def write(self, gid: str, meta: dict, record) -> None:
        """The page's side first, then the record (module doc): ``record`` is its lines, or
        a function that writes it to a path (`Match.save`)."""
        meta = dict(meta, updated=time.time())
        write_atomic(self.meta_path(gid), json.dumps(meta, indent=1))
        if callable(record):
            tmp = self.root / f".{gid}.jsonl.{os.getpid()}.tmp"
            record(tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, self.record_path(gid))
        else:
            write_atomic(self.record_path(gid), "".join(line + "\n" for line in record))

    def add_file(self, name: str, text: str) -> str:
        """Store an uploaded game file for replay; returns its id."""
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(name or "upload").stem).strip("-.")[:60] or "upload"
        gid = f"{time.strftime('%Y%m%d-%H%M%S')}-upload-{stem}-{secrets.token_hex(2)}"
        write_atomic(self.record_path(gid), text)
        return gid

    def list(self) -> list[dict]:
        """Every readable game, newest first: id, kind and what the page knows of it."""
        return self.scan()[0]

    def scan(self) -> tuple[list[dict], list[dict]]:
        """(`list`, the files skipped: ``{"id", "error"}`` each, the error one line)."""
        out, skipped = [], []
        for path in self.root.glob("*.jsonl"):
            gid = path.name[: -len(".jsonl")]
            if not ID_RE.match(gid):
                continue
            try:
                out.append(self._row(gid, path))
            except (ValueError, OSError, UnknownGame) as err:
                skipped.append({"id": gid, "error": _one_line(err)})
        return sorted(out, key=lambda r: -r["modified"]), sorted(skipped, key=lambda r: r["id"])

    def _row(self, gid: str, path: Path) -> dict:
        if not path.is_file():
            raise ReplayError(path, None, None, "not a regular file")
        meta = self.read_meta(gid)
        row = {"id": gid, "modified": path.stat().st_mtime, "kind": "file", "names": None,
               "num_players": None, "steps": None, "done": None}
        if meta:
            row.update({k: meta.get(k) for k in ("kind", "names", "num_players", "steps", "done", "seat", "title")})
        else:
            row["kind"] = _file_kind(path)
        return row

    def own_record(self, gid: str) -> Path:
        """The record of ``gid`` if it is a regular file of the directory itself (not a
        link to elsewhere, not a FIFO or a device): what may be downloaded or renamed."""
        path = self.record_path(self.check_id(gid))
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            raise UnknownGame(gid) from None
        if not stat.S_ISREG(mode):
            raise UnknownGame(gid)
        return path

    def read_record(self, gid: str) -> bytes:
        """The bytes of a game's file (for download)."""
        return read_bytes(self.own_record(gid), MAX_FILE_BYTES)

    def rename(self, gid: str, name: str) -> str:
        """Give a game the name ``name`` (module doc): a person's words ("Friday night game
        #1") kept as its ``title`` beside its record, and an id made of them (spaces and
        other marks as "-"); returns the id."""
        self.own_record(gid)
        if self.meta_path(gid).is_symlink():
            raise UnknownGame(gid)
        title = " ".join(name.split()) if isinstance(name, str) and not re.search(r"[\x00-\x1f\x7f]", name) else ""
        new = re.sub(r"[^A-Za-z0-9_.-]+", "-", title).strip("-")
        if (not TITLE_RE.match(title) or not ID_RE.match(new) or new.endswith((".json", ".jsonl", ".tmp"))
                or title.startswith(".")):
            raise ValueError(f"name: {title[:100]!r} is not a game name (letters, digits, spaces and "
                             f"_ . - # , ! ? ' ( ) &, at most 100, starting with a letter or digit)")
        if new == gid:
            self._set_title(gid, title)
            return gid
        pairs = [(self.record_path(gid), self.record_path(new))]
        if self.meta_path(gid).is_file():
            pairs.insert(0, (self.meta_path(gid), self.meta_path(new)))
        if any(dst.exists() or dst.is_symlink() for _, dst in pairs) or self.meta_path(new).exists():
            raise GameExists(new)
        made = []
        try:
            for src, dst in pairs:
                os.link(src, dst)
                made.append(dst)
        except FileExistsError:
            for dst in made:
                dst.unlink()
            raise GameExists(new) from None
        for src, _ in pairs:
            src.unlink()
        self._set_title(new, title)
        return new

    def _set_title(self, gid: str, title: str) -> None:
        """Keep the name as the person wrote it in the page's side of the game, if it has one."""
        meta = self.read_meta(gid)
        if meta is not None and self.meta_path(gid).is_file():
            write_atomic(self.meta_path(gid), json.dumps(dict(meta, title=title), indent=1))

    def delete(self, gid: str) -> None:
        """Remove a game's files: the record first (a page's side alone is never listed)."""
        self.check_id(gid)
        if not os.path.lexists(self.record_path(gid)):
            raise UnknownGame(gid)
        self.record_path(gid).unlink()
        self.meta_path(gid).unlink(missing_ok=True)


def _one_line(err: Exception) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 300 else text[:297] + "..."


def _file_kind(path: Path) -> str:
    """What a file without the page's side is, from its first line (`ReplayError` if unreadable)."""
    head = first_line(path)
    return {"seat_record": "seat record", "deal": "match"}.get(head.get("type"), "file") if isinstance(head, dict) \
        else "file"
