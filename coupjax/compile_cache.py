"""The persistent XLA compilation cache, on by default for every coupjax command.

Almost every first use of coupjax waits for XLA: the page's first advice, a bot's first
move, the arena's first table, the test suite.  JAX can keep compiled executables on
disk (``jax_compilation_cache_dir``, CPU included), so the second start of anything
loads them instead of compiling again.  Every command turns the cache on through
`enable` (the shared argument parser, `coupjax.args.Parser`, calls it, so a new
command gets it without a line of its own); library users who want it call `enable`
before their first compilation.

Where it lives:

- ``COUPJAX_CACHE_DIR``: the folder; ``off`` (or ``0``, ``none``, ``false``) turns the
  cache off.  Default: ``$XDG_CACHE_HOME/coupjax/jax`` (``~/.cache/coupjax/jax``).
- ``COUPJAX_CACHE_MAX_MB``: its size bound in MiB (default 2048).  `enable` trims
  the folder to it once per process, least recently used files first (`trim`).  JAX's
  own bound is left off: it reads every entry's time stamp under a file lock on each
  write, which on a folder of some 2,800 entries took 0.44 s a write and held the other
  processes waiting (the test suite writes thousands: 1,281 s cold with it on a 2-core
  CPU, see the commit).  Several processes may share one folder (the test suite's
  workers, a server and a training run): without its bound JAX writes with no lock, and
  a process that reads an entry another is still writing warns and compiles again.
- A cache folder the user already gave JAX (``JAX_COMPILATION_CACHE_DIR`` or
  ``jax.config.update``) wins over all of this.

A training run's chunk goes one step further (`compiled`): its lowered program is saved
beside the executables, so a second start neither traces nor compiles it, and
`compile_log` prints what is compiling and, after, how long it took and where the time
went.

``coupjax cache info`` prints where it is and how big; ``coupjax cache clear`` empties
it.  Every compilation is cached, small ones too (a minimum compile time of 0 s): on a
2-core CPU even a "small" policy step takes seconds to compile.

`enable` also makes every compilation itself cheaper: XLA's CPU backend compiles with
its classic loop emitters instead of the newer fusion emitters
(``--xla_cpu_use_fusion_emitters=false``, `CPU_COMPILE_FLAGS`).  Measured on a seat
table of ``honest`` and ``belief_ev``: its first call (tracing and compiling) went from
8.6 s to 5.0 s, a later call from 0.069 s to 0.073 s; ``python -m evals.bench_startup``
measures first uses end to end.  A value the user gives in ``XLA_FLAGS`` for that flag
wins; it must be set before JAX starts its CPU backend, which `enable` does (the backend
starts at the first computation).  XLA stops the process on a flag it does not know, so
the flags are added only for the jaxlib series they were measured on
(`CPU_COMPILE_FLAGS_JAXLIB`).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import sys
import threading
import time
from importlib import metadata
from pathlib import Path

ENV_DIR = "COUPJAX_CACHE_DIR"
ENV_MAX_MB = "COUPJAX_CACHE_MAX_MB"
DEFAULT_MAX_MB = 2048
_OFF = {"off", "0", "none", "false", "no"}
# What JAX writes: one file per executable, plus a last-access stamp per file and a lock.
_CACHE_FILE_SUFFIXES = ("-cache", "-atime", EXPORT_SUFFIX := "-export")
# XLA flags for quicker CPU compiles at the same run speed (module doc).
CPU_COMPILE_FLAGS = ("--xla_cpu_use_fusion_emitters=false",)
CPU_COMPILE_FLAGS_JAXLIB = ("0.10.",)  # jaxlib versions (prefixes) known to have them


def cache_dir() -> Path | None:
    """The folder the commands use, or None when the user turned the cache off."""
    value = os.environ.get(ENV_DIR)
    if value is not None:
        return None if value.strip().lower() in _OFF or not value.strip() else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "coupjax" / "jax"


def max_bytes() -> int:
    """The size bound in bytes (``COUPJAX_CACHE_MAX_MB``); a bad value is a one-line error."""
    text = os.environ.get(ENV_MAX_MB, str(DEFAULT_MAX_MB))
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{ENV_MAX_MB} must be a size in MiB, got {text!r}") from None
    if value <= 0:
        raise ValueError(f"{ENV_MAX_MB} must be positive, got {text!r}")
    return int(value * 2**20)


def enable() -> Path | None:
    """Turn the persistent cache on (idempotent); returns its folder, or None if off.

    Before JAX is imported this only sets JAX's own environment variables, so a command
    that never compiles pays nothing, and subprocesses (bots, test workers, a server
    started by a test) inherit the same cache.  After the import it also updates
    ``jax.config``; either way it must happen before the first compilation, since JAX
    opens its cache once per process.  A cache folder the user already gave JAX is kept.
    """
    prefer_quick_cpu_compiles()
    jax = sys.modules.get("jax")
    given = os.environ.get("JAX_COMPILATION_CACHE_DIR") or (jax and jax.config.jax_compilation_cache_dir)
    if given:
        return Path(given)
    path = cache_dir()
    if path is None:
        return None
    path.mkdir(parents=True, exist_ok=True)
    bound = max_bytes()
    if path not in _trimmed:
        _trimmed.add(path)
        trim(path, bound)
    settings = {"jax_compilation_cache_max_size": -1,  # no per-write eviction: `trim` bounds it
                "jax_persistent_cache_min_compile_time_secs": 0.0,
                "jax_persistent_cache_min_entry_size_bytes": -1,
                "jax_compilation_cache_dir": str(path)}
    for name, value in settings.items():
        os.environ[name.upper()] = str(value)
        if jax is not None:
            jax.config.update(name, value)
    return path


_trimmed: set[Path] = set()


def trim(path: Path, bound: int) -> int:
    """Delete the least recently used cache files (by their last read or write) until the
    folder holds at most ``bound`` bytes; returns the bytes removed.  One pass over the
    folder, so a process pays it once, not on every write.  A file another process
    deletes meanwhile is skipped; an executable deleted under a running process is
    compiled again on its next miss."""
    stamped = []
    for p in _entries(path):
        try:
            st = p.stat()
        except FileNotFoundError:
            continue
        stamped.append((max(st.st_atime, st.st_mtime), st.st_size, p))
    excess = sum(size for _, size, _ in stamped) - bound
    removed = 0
    for _, size, p in sorted(stamped, key=lambda t: t[0]):
        if removed >= excess:
            break
        p.unlink(missing_ok=True)
        removed += size
    return removed


def prefer_quick_cpu_compiles() -> None:
    """Add `CPU_COMPILE_FLAGS` to ``XLA_FLAGS``, each unless the user set that flag.

    Inherited by subprocesses; takes effect in this process if JAX's CPU backend has
    not started yet (the first computation starts it)."""
    try:
        jaxlib_version = metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        return
    if not jaxlib_version.startswith(CPU_COMPILE_FLAGS_JAXLIB):
        return
    flags = os.environ.get("XLA_FLAGS", "")
    given = {f.split("=")[0] for f in flags.split()}
    extra = [f for f in CPU_COMPILE_FLAGS if f.split("=")[0] not in given]
    if extra:
        os.environ["XLA_FLAGS"] = " ".join([flags, *extra]).strip()


def _entries(path: Path):
    if not path.is_dir():
        return []
    return [p for p in path.iterdir() if p.is_file() and p.name.endswith(_CACHE_FILE_SUFFIXES)]


def info(path: Path | None = None) -> dict:
    """Where the cache is, whether it is on, and its size: for ``coupjax cache info``."""
    path = cache_dir() if path is None else path
    if path is None:
        return {"enabled": False, "path": None, "entries": 0, "bytes": 0, "max_bytes": None}
    files = _entries(path)
    return {"enabled": True, "path": str(path), "entries": sum(p.name.endswith("-cache") for p in files),
            "bytes": sum(p.stat().st_size for p in files), "max_bytes": max_bytes()}


def clear(path: Path | None = None) -> dict:
    """Delete every cached executable (only JAX's own files, never the folder's other
    contents); returns what was removed.  Safe while no coupjax process runs."""
    path = cache_dir() if path is None else path
    removed = {"path": None if path is None else str(path), "entries": 0, "bytes": 0}
    for p in [] if path is None else _entries(path):
        size = p.stat().st_size
        p.unlink(missing_ok=True)
        removed["bytes"] += size
        removed["entries"] += p.name.endswith("-cache")
    return removed


# ------------------------------------------------------------------ saved traces
@functools.lru_cache(maxsize=8)
def source_digest(root: Path | None = None) -> str:
    """A digest of coupjax's own source and packaged constants (``.py`` and ``.yaml``, e.g.
    the advisor's), or of another package folder ``root`` (the training code): a saved
    trace is only used by the code and constants that made it."""
    root = Path(__file__).resolve().parent if root is None else Path(root)
    h = hashlib.sha256()
    for p in sorted(x for x in root.rglob("*") if x.suffix in (".py", ".yaml") and x.is_file()):
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _signature(leaves) -> tuple:
    import jax

    return tuple(str(jax.typeof(x)) for x in leaves)


def traced_once(fn, name: str, *key_parts):
    """``fn`` (a jittable function), traced once per argument shapes for all processes.

    The persistent cache skips XLA's compile on a second start, but not JAX's tracing
    and lowering, which for the search is most of a warm start (about 1.5 s of the
    page's first advice on a 2-core CPU).  This keeps the lowered program itself
    (`jax.export`) beside the cache's executables, named by ``name``, ``key_parts``
    (whatever else the trace depends on, e.g. a config), JAX's version, the backend, the
    argument types and `source_digest`; a later process loads it and calls it without tracing.
    Results are those of ``jax.jit(fn)`` (the same program).  With the cache off, or if
    anything about saving or loading fails, it is ``jax.jit(fn)`` itself."""
    import jax

    plain = jax.jit(fn)
    loaded: dict = {}

    def call(*args):
        leaves, in_tree = jax.tree.flatten(args)
        sig = (in_tree, _signature(leaves))
        if sig not in loaded:
            loaded[sig] = _load_or_export(fn, name, key_parts, in_tree, leaves, sig)
        runner = loaded[sig]
        if runner is None:
            return plain(*args)
        compiled, out_tree = runner
        return jax.tree.unflatten(out_tree, compiled(*leaves))

    return call


def export_folder() -> str | None:
    """Where `traced_once` keeps its programs: the persistent cache's folder, if it is on."""
    import jax

    return jax.config.jax_compilation_cache_dir


def _load_or_export(fn, name, key_parts, in_tree, leaves, sig):
    import jax

    folder = export_folder()
    if not folder:
        return None
    # the platform too: an export runs only where it was lowered (a cache folder shared by a CPU and a GPU run)
    text = repr((name, key_parts, jax.__version__, jax.default_backend(), source_digest(), str(sig)))
    path = Path(folder) / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:32]}{EXPORT_SUFFIX}"
    try:
        blob, out_tree = pickle.loads(path.read_bytes())
        exported = jax.export.deserialize(blob)
    except Exception:  # noqa: BLE001 - missing, partial or from another version: export again
        seen = {}

        def flat(*xs):
            out, seen["tree"] = jax.tree.flatten(fn(*jax.tree.unflatten(in_tree, xs)))
            return out

        try:
            exported = jax.export.export(jax.jit(flat))(*leaves)
            out_tree = seen["tree"]
            tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")  # per writer
            tmp.write_bytes(pickle.dumps((exported.serialize(), out_tree)))
            os.replace(tmp, path)  # whole or not at all, whoever else writes it
        except Exception:  # noqa: BLE001 - e.g. a read-only folder: trace as usual
            return None
    return jax.jit(exported.call), out_tree


def compiled(fn, name: str, *key_parts, args: tuple, say=None):
    """``jax.jit(fn)`` compiled ahead of time for ``args``, through the saved trace of
    `traced_once` when the cache is on: a second start neither traces nor lowers ``fn``
    (for a training chunk that is most of a warm start: 19 s of its 27 s on a loaded
    2-core CPU) and XLA's executable comes from the persistent cache.  ``key_parts``
    must name everything the trace depends on besides the argument types (`traced_once`).
    ``say`` (e.g. a console's print) gets `compile_log`'s two lines.  Returns a function
    of arguments like ``args``."""
    import jax

    with compile_log(name, say):
        leaves, in_tree = jax.tree.flatten(args)
        runner = _load_or_export(fn, name, key_parts, in_tree, leaves, (in_tree, _signature(leaves)))
        if runner is None:
            return jax.jit(fn).lower(*args).compile()
        wrapped, out_tree = runner
        executable = wrapped.lower(*leaves).compile()
    return lambda *a: jax.tree.unflatten(out_tree, executable(*jax.tree.leaves(a)))


# ------------------------------------------------------------------ what compiling costs
# JAX's own timings (jax.monitoring) of the three stages of a compilation, and its
# persistent cache's hits and misses: what `compile_log` sums up.
STAGE_EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "tracing",
                "/jax/core/compile/jaxpr_to_mlir_module_duration": "lowering",
                "/jax/core/compile/backend_compile_duration": "XLA"}
CACHE_EVENTS = {"/jax/compilation_cache/cache_hits": "hits", "/jax/compilation_cache/cache_misses": "misses"}


class CompileCounts:
    """Seconds per stage (`STAGE_EVENTS`) and the persistent cache's hits and misses of
    the compilations made inside one `compile_log` (or `counting`) block."""

    def __init__(self):
        self.seconds = dict.fromkeys(STAGE_EVENTS.values(), 0.0)
        self.hits = self.misses = 0
        self.total = 0.0
        self.traced: list[str] = []  # the names of the Python functions traced, in order

    def on_duration(self, event, duration, fun_name="", **_):
        if event in STAGE_EVENTS:
            self.seconds[STAGE_EVENTS[event]] += duration
        if STAGE_EVENTS.get(event) == "tracing":
            self.traced.append(str(fun_name))

    def on_event(self, event, **_):
        if event in CACHE_EVENTS:
            setattr(self, CACHE_EVENTS[event], getattr(self, CACHE_EVENTS[event]) + 1)

    def describe(self, what: str) -> str:
        stages = ", ".join(f"{k} {v:.1f} s" for k, v in self.seconds.items() if v >= 0.05)
        cache = f"{self.hits} of {self.hits + self.misses} from the cache" if self.hits + self.misses else ""
        detail = "; ".join(x for x in (stages, cache) if x)
        return f"{what}: ready in {self.total:.1f} s" + (f" ({detail})" if detail else "")


@contextlib.contextmanager
def counting():
    """`CompileCounts` of the compilations inside the block (JAX's monitoring events)."""
    from jax import monitoring

    counts = CompileCounts()
    monitoring.register_event_duration_secs_listener(counts.on_duration)
    monitoring.register_event_listener(counts.on_event)
    start = time.monotonic()
    try:
        yield counts
    finally:
        counts.total = time.monotonic() - start
        monitoring.unregister_event_duration_listener(counts.on_duration)
        monitoring.unregister_event_listener(counts.on_event)


@contextlib.contextmanager
def compile_log(what: str, say=None):
    """Say ``compiling WHAT`` before the block and, after it, how long it took and where
    the time went (``WHAT: ready in 4.2 s (tracing 0.1 s, XLA 3.9 s; 1 of 1 from the
    cache)``): a log written to a file shows what a start is waiting for."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    say(f"compiling {what}")
    with counting() as counts:
        yield counts
    say(counts.describe(what))
