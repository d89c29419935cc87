"""The suite's cells: each a fixed part of the design matrix, stored as it finishes.

A cell (one condition and seed of the seat tables, one slice of the cross-play, ...) is
computed by a function of the config alone and written to ``OUT/cells/NAME.json`` (and
``NAME.npz`` for arrays) the moment it finishes, with the config's fingerprint.
``--resume`` loads every stored cell whose fingerprint matches and plays only the
others, so an interrupted report continues without replaying finished cells.

``--only STAGE[,STAGE]`` (``only``): the cells of those stages are computed afresh (the
code behind them may have changed), every other cell is taken from the folder or not
at all (`CellMissing`: the suite leaves that stage out).  A cell's stage is the first
part of its name (``seat/n4/honest_heavy/s7``: ``seat``).
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import numpy as np


class CellMissing(LookupError):
    """A cell of a stage outside ``--only`` that the folder does not hold."""


def stage_of(name: str) -> str:
    return name.split("/")[0]


def fingerprint(cfg_dict: dict) -> str:
    """A short hash of the config (what every cell's games depend on)."""
    return hashlib.sha256(json.dumps(cfg_dict, sort_keys=True).encode()).hexdigest()[:16]


class CellStore:
    """``OUT/cells``: ``get(name)`` a stored cell (None if absent or from another config),
    ``put(name, data, arrays=None)``; every cell records the seconds it took.  ``only``:
    the stages to compute (module doc; None: every stage); ``log``: an
    `evals.report.progress.StageLog` told of each cell."""

    def __init__(self, out_dir: Path, cfg_dict: dict, resume: bool, only=None, log=None):
        self.dir = Path(out_dir) / "cells"
        self.fp = fingerprint(cfg_dict)
        self.resume = resume or only is not None
        self.only = None if only is None else set(only)
        self.log = log
        self.dir.mkdir(parents=True, exist_ok=True)
        self.timings: dict[str, float] = {}
        self.cpu: dict[str, float] = {}  # CPU seconds (all threads) of the cells computed in this run
        self.reused: list[str] = []

    def _path(self, name: str, ext: str) -> Path:
        return self.dir / (name.replace("/", "__") + ext)

    def stored(self, name: str) -> bool:
        """Whether the folder holds cell ``name`` of this config (without loading it)."""
        p = self._path(name, ".json")
        if not self.resume or not p.is_file():
            return False
        try:
            return json.loads(p.read_text()).get("fingerprint") == self.fp
        except json.JSONDecodeError:
            return False

    def get(self, name: str):
        if not self.resume or (self.only is not None and stage_of(name) in self.only):
            return None
        p = self._path(name, ".json")
        if not p.is_file():
            return None
        try:
            rec = json.loads(p.read_text())
        except json.JSONDecodeError:
            return None
        if rec.get("fingerprint") != self.fp:
            return None
        data = rec["data"]
        if rec.get("arrays"):
            with np.load(self._path(name, ".npz")) as z:
                data = dict(data, **{k: z[k] for k in z.files})
        self.timings[name] = rec["seconds"]
        self.reused.append(name)
        return data

    def put(self, name: str, data: dict, arrays: dict | None = None, seconds: float = 0.0):
        if arrays:
            np.savez_compressed(self._path(name, ".npz"), **arrays)
        tmp = self._path(name, ".json.tmp")
        tmp.write_text(json.dumps({"fingerprint": self.fp, "seconds": seconds, "arrays": bool(arrays),
                                   "data": data}))
        tmp.replace(self._path(name, ".json"))  # atomic: a cell is stored whole or not at all
        self.timings[name] = seconds
        return dict(data, **(arrays or {}))

    def cell(self, name: str, fn):
        """The stored cell ``name``, or ``fn() -> (data, arrays | None)`` computed and stored
        (`CellMissing` for a cell outside ``only`` that is not stored)."""
        if self.log is not None:
            self.log.cell_start(name)
        got = self.get(name)
        if got is not None:
            if self.log is not None:
                self.log.cell_done(name, self.timings[name], True)
            return got
        if self.only is not None and stage_of(name) not in self.only:
            raise CellMissing(name)
        t0, c0 = time.perf_counter(), time.process_time()
        data, arrays = fn()
        self.cpu[name] = time.process_time() - c0
        out = self.put(name, data, arrays, time.perf_counter() - t0)
        if self.log is not None:
            self.log.cell_done(name, self.timings[name], False)
        return out
