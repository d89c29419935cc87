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
"""
from __future__ import annotations

import json
import os
import re
import secrets
import time
from pathlib import Path

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


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
        return json.loads(path.read_text(encoding="utf-8"))

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
        """Every game, newest first: id, kind and what the page knows of it."""
        out = []
        for path in self.root.glob("*.jsonl"):
            gid = path.name[: -len(".jsonl")]
            if not ID_RE.match(gid):
                continue
            try:
                meta = self.read_meta(gid)
            except (ValueError, OSError, UnknownGame):
                meta = None
            row = {"id": gid, "modified": path.stat().st_mtime, "kind": "file", "names": None,
                   "num_players": None, "steps": None, "done": None}
            if meta:
                row.update({k: meta.get(k) for k in ("kind", "names", "num_players", "steps", "done", "seat")})
            else:
                row["kind"] = _file_kind(path)
            out.append(row)
        return sorted(out, key=lambda r: -r["modified"])


def _file_kind(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            head = json.loads(f.readline().decode("utf-8"))
        return {"seat_record": "seat record", "deal": "match"}.get(head.get("type"), "file")
    except (ValueError, UnicodeDecodeError, AttributeError, OSError):
        return "file"
