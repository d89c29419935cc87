"""One bot seat: a subprocess spoken to in JSON lines, with timeouts and bounds.

A bot is a program we do not trust, so whatever it does stays its own problem:

* its stdout is read as it comes (never left unread, so the bot never blocks us and a
  full pipe never stalls the end of a match), cut into lines of at most
  `protocol.MAX_LINE` bytes (a longer line is garbage, skipped to its end), at most
  `MAX_PENDING` lines waiting and `MAX_OUTPUT` bytes in all per match (past either the
  bot is broken: garbage, and stopped);
* its stderr goes to its log file up to `MAX_LOG` bytes, then one note, the rest read
  and dropped;
* it runs in its own session and process group, under resource limits (`LIMITS`:
  memory, CPU time, processes, file size, no core files) set by a small launcher
  before the bot's program is executed;
* when it is done every process it started goes too: its group, every descendant
  (`descendants`: a child that left the group with ``setsid`` included) and every
  process carrying its marker in the environment; the arena is the child subreaper
  (`become_subreaper`), so an orphan of a bot is the arena's child, never init's, and
  is found and reaped at the end of the tournament (`sweep_orphans`).

Nothing here raises on a bot's mistake: a dead pipe, a closed stdout, an over-long line
or a late answer come back as a forfeit reason (`coupjax.botarena.protocol.REASONS`).
"""
from __future__ import annotations

import asyncio
import collections
import ctypes
import json
import os
import secrets
import shlex
import signal
import sys
import time
from pathlib import Path

from coupjax.botarena import protocol

# The hello is answered by a process that may still be starting (an interpreter on a
# busy machine can take seconds): it gets this long, or the move timeout if longer.
HELLO_TIMEOUT = 30.0
END_GRACE = 2.0  # seconds a bot has to exit after `end` before it is stopped
KILL_WAIT = 5.0  # seconds to see a killed bot gone (it cannot refuse SIGKILL; this only bounds the wait)
MAX_OUTPUT = 16 << 20  # bytes a bot may print on stdout in one match
MAX_PENDING = 16  # lines a bot may print that nobody asked for yet
MAX_LOG = 1 << 20  # bytes of a bot's stderr kept in its log per match
MARKER = "COUPJAX_ARENA_BOT"  # environment variable naming the bot seat, inherited by its children
# Resource limits of each bot process (resource.RLIMIT_<NAME>: soft = hard).  Processes
# count every process of the user, so that limit is added to how many it has at start.
LIMITS = {"AS": 4 << 30, "CPU": 600, "NPROC": 64, "FSIZE": 256 << 20, "CORE": 0}
PR_SET_CHILD_SUBREAPER = 36
_LAUNCHER = ("import json, os, resource, sys\n"
             "for name, value in json.loads(sys.argv[1]).items():\n"
             "    r = getattr(resource, 'RLIMIT_' + name)\n"
             "    hard = resource.getrlimit(r)[1]\n"
             "    value = value if hard == resource.RLIM_INFINITY else min(value, hard)\n"
             "    resource.setrlimit(r, (value, value))\n"
             "try:\n"
             "    os.execvp(sys.argv[2], sys.argv[2:])\n"
             "except OSError as err:\n"
             "    sys.stderr.write(f'coupjax arena: could not start {sys.argv[2]!r}: {err}\\n')\n"
             "    sys.exit(127)\n")


def split_command(command: str) -> list[str]:
    """The argv of a bot command (shell-like quoting, no shell)."""
    argv = shlex.split(command)
    if not argv:
        raise ValueError("empty command")
    return argv


# ------------------------------------------------------------------ processes
def become_subreaper(on: bool = True) -> bool:
    """Make this process the child subreaper (Linux ``prctl``): orphans of its
    descendants become its children (``on=False`` ends that).  False where that is not
    available."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def process_table(zombies: bool = False) -> dict[int, int]:
    """pid -> parent pid of every process we can see, the dead ones waiting to be reaped
    only with ``zombies`` (empty where /proc is missing)."""
    out = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
            state, ppid = data[data.rindex(b")") + 2:].split()[:2]
            if zombies or state not in (b"Z", b"X"):
                out[int(name)] = int(ppid)
        except (OSError, ValueError, IndexError):
            continue
    return out


def descendants(pid: int, table: dict[int, int] | None = None) -> set[int]:
    table = process_table() if table is None else table
    children = collections.defaultdict(list)
    for p, parent in table.items():
        children[parent].append(p)
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), ()):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def marked(value: str) -> set[int]:
    """The processes whose environment holds ``MARKER=value`` (those we may read)."""
    needle = f"{MARKER}={value}".encode() + b"\0"
    out = set()
    for pid in process_table():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read() + b"\0":
                    out.add(pid)
        except OSError:
            continue
    return out


def kill_all(pids) -> None:
    for pid in pids:
        if pid != os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def reap(pids, watched=()) -> None:
    """Collect the exit of those of ``pids`` that are our children (orphans handed to us
    as subreaper), leaving alone the ones asyncio waits for (``watched``)."""
    for pid in set(pids) - set(watched):
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def sweep_orphans(before: set[int], watched=()) -> list[int]:
    """Kill and reap every child of ours that was not there at ``before`` and is not a
    bot asyncio still waits for: as subreaper, those are orphans of bots."""
    me = os.getpid()
    found = [p for p, parent in process_table(zombies=True).items()
             if parent == me and p not in before and p not in watched]
    for _ in range(3):
        kill_all(found)
        kill_all(set().union(*(descendants(p) for p in found)) if found else ())
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            reap(found, watched)
            left = [p for p, parent in process_table(zombies=True).items() if parent == me and p in found]
            if not left:
                break
            time.sleep(0.02)
        found = [p for p, parent in process_table(zombies=True).items()
                 if parent == me and p not in before and p not in watched]
        if not found:
            break
    return found


def children_now() -> set[int]:
    me = os.getpid()
    return {p for p, parent in process_table(zombies=True).items() if parent == me}


def _nproc_limit() -> int:
    """The processes limit for a bot: what this user runs now plus `LIMITS`["NPROC"]."""
    uid = os.getuid()
    count = 0
    for pid in process_table():
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                count += 1
        except OSError:
            continue
    return count + LIMITS["NPROC"]


# ------------------------------------------------------------------ one bot
class _Pipes(asyncio.SubprocessProtocol):
    def __init__(self, bot: "BotProcess"):
        self.bot = bot
        self.exited = asyncio.get_running_loop().create_future()

    def pipe_data_received(self, fd, data):
        if fd == 1:
            self.bot._stdout(data)
        elif fd == 2:
            self.bot._stderr(data)

    def pipe_connection_lost(self, fd, exc):
        if fd == 1:
            self.bot._stdout_closed()

    def process_exited(self):
        if not self.exited.done():
            self.exited.set_result(None)


class BotProcess:
    """A bot's process for one seat of one match (never restarted)."""

    RUNNING: set[int] = set()  # pids of bots whose exit asyncio still waits for

    def __init__(self, name: str, command: str, log_path: Path):
        self.name, self.command, self.log_path = name, command, Path(log_path)
        self.transport: asyncio.SubprocessTransport | None = None
        self.pipes: _Pipes | None = None
        self.pid: int | None = None
        self.broken: tuple[str, str] | None = None  # (reason, detail): every later decision forfeits
        self.exit_status: int | None = None
        self.decisions = 0
        self.seconds = 0.0  # time spent answering decisions
        self.marker = secrets.token_hex(8)
        self._log = None
        self._logged = 0
        self._partial = bytearray()
        self._skipping = False  # inside a line over the bound: dropped up to its newline
        self._lines: collections.deque = collections.deque()  # (line, None) or (detail, reason)
        self._printed = 0
        self._eof = False
        self._waiter: asyncio.Future | None = None

    # -------------------------------------------------------------- the pipes
    def _push(self, item) -> None:
        self._lines.append(item)
        if len(self._lines) > MAX_PENDING:
            self._break("garbage", f"printed more than {MAX_PENDING} lines nobody asked for")
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _break(self, reason: str, detail: str) -> None:
        if self.broken is None:
            self.broken = (reason, detail)
        self._lines.clear()
        self._lines.append((detail, reason))
        self.stop()
        self._wake()

    def _stdout(self, data: bytes) -> None:
        if self.broken is not None:
            return  # a broken bot is never read again: drained and dropped
        self._printed += len(data)
        if self._printed > MAX_OUTPUT:
            self._break("garbage", f"printed more than {MAX_OUTPUT} bytes on stdout in one match")
            return
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            chunk = data[start:] if end < 0 else data[start:end]
            if self._skipping:
                if end >= 0:
                    self._skipping = False
            else:
                self._partial += chunk
                if len(self._partial) > protocol.MAX_LINE:
                    self._partial.clear()
                    self._skipping = end < 0
                    self._push((f"a line over {protocol.MAX_LINE} bytes", "garbage"))
                elif end >= 0:
                    self._push((bytes(self._partial) + b"\n", None))
                    self._partial.clear()
            if end < 0 or self.broken is not None:
                break
            start = end + 1

    def _stdout_closed(self) -> None:
        self._eof = True
        self._wake()

    def _stderr(self, data: bytes) -> None:
        if self._log is None or self._logged > MAX_LOG:
            return
        room = MAX_LOG - self._logged
        self._log.write(data[:room])
        self._logged += min(len(data), room)
        if len(data) > room:
            self._log.write(f"\n[coupjax arena: this log stops at {MAX_LOG} bytes; the rest of the bot's "
                            f"stderr was read and dropped]\n".encode())
            self._logged = MAX_LOG + 1
        self._log.flush()

    # -------------------------------------------------------------- speaking
    async def start(self, hello: dict, timeout: float) -> None:
        """Spawn the process and shake hands; a failure marks the bot broken."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        try:
            argv = split_command(self.command)
            limits = dict(LIMITS, NPROC=_nproc_limit())
            env = dict(os.environ, **{MARKER: self.marker})
            loop = asyncio.get_running_loop()
            self.transport, self.pipes = await loop.subprocess_exec(
                lambda: _Pipes(self), sys.executable, "-I", "-S", "-c", _LAUNCHER, json.dumps(limits), *argv,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True, env=env)
            self.pid = self.transport.get_pid()
            BotProcess.RUNNING.add(self.pid)
        except (OSError, ValueError) as err:
            self.broken = ("crash", f"could not start {self.command!r}: {err}")
            return
        line, why = await self.request(hello, max(HELLO_TIMEOUT, timeout))
        if why:
            self.broken = self.broken or (why, f"hello: {line}")
        else:
            reason, detail = protocol.check_hello(line)
            self.broken = (reason, detail) if reason else None
        if self.broken:
            self.stop()  # never spoken to again: each of its decisions forfeits

    @property
    def alive(self) -> bool:
        return self.transport is not None and self.transport.get_returncode() is None

    def send(self, message: dict) -> None:
        """Queue a line for the bot (no waiting: a bot that reads slowly only delays itself)."""
        if not self.alive or self.broken is not None:
            return
        stdin = self.transport.get_pipe_transport(0)
        if stdin is None or stdin.is_closing():
            return
        try:
            stdin.write(protocol.dumps(message))
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            pass

    async def request(self, message: dict, timeout: float) -> tuple[bytes | str | None, str | None]:
        """Send ``message`` and take the bot's next line within ``timeout`` seconds.

        Returns (line, None), or (detail, reason) when no line came: "timeout",
        "crash" (stdout closed) or "garbage" (a line over `protocol.MAX_LINE`, or
        more output than the bounds allow).
        """
        if self.transport is None:
            return "the process is not running", "crash"
        if self.broken is None and not self.alive and not self._lines:
            return "the process is not running", "crash"
        self.send(message)
        try:
            async with asyncio.timeout(timeout):
                while not self._lines and not self._eof:
                    self._waiter = asyncio.get_running_loop().create_future()
                    await self._waiter
        except TimeoutError:
            return f"no answer within {timeout:g} s", "timeout"
        finally:
            self._waiter = None
        if self._lines:
            item = self._lines[0] if self.broken is not None and len(self._lines) == 1 else self._lines.popleft()
            return item
        return "closed its stdout", "crash"

    async def decide(self, message: dict, timeout: float) -> tuple[bytes | str | None, str | None]:
        """`request` for a decision, counted and timed (``decisions``, ``seconds``)."""
        t0 = time.perf_counter()
        try:
            return await self.request(message, timeout)
        finally:
            self.decisions += 1
            self.seconds += time.perf_counter() - t0

    async def finish(self, message: dict | None) -> None:
        """Send ``end`` (if given), close stdin, let the bot exit, then stop it and every
        process it started, and close its pipes (whoever else holds them)."""
        try:
            if self.transport is None:
                return
            if message is not None:
                self.send(message)
            stdin = self.transport.get_pipe_transport(0)
            if stdin is not None and not stdin.is_closing():
                stdin.close()
            try:
                async with asyncio.timeout(END_GRACE):
                    await asyncio.shield(self.pipes.exited)
            except TimeoutError:
                pass
            self.stop(everything=True)
            try:
                async with asyncio.timeout(KILL_WAIT):
                    await asyncio.shield(self.pipes.exited)
            except TimeoutError:
                pass
            self.exit_status = self.transport.get_returncode()
            self.transport.close()  # the pipes too, even if an escaped process still holds them
            BotProcess.RUNNING.discard(self.pid)
        finally:
            if self._log is not None:
                self._log.close()

    def stop(self, everything: bool = False) -> None:
        """Kill the bot: its process group while it runs, and with ``everything`` also every
        process it started (descendants, and whatever carries its marker) -- children of
        children first seen, then killed, then looked for again, as they may fork meanwhile."""
        if self.pid is None:
            return
        if self.alive or everything:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if not everything:
            return
        for _ in range(5):
            table = process_table()
            found = (descendants(self.pid, table) | marked(self.marker)) - {os.getpid()}
            if not found:
                break
            kill_all(found)
            reap(found, BotProcess.RUNNING)


__all__ = ["BotProcess", "HELLO_TIMEOUT", "END_GRACE", "MAX_OUTPUT", "MAX_PENDING", "MAX_LOG", "LIMITS",
           "become_subreaper", "children_now", "descendants", "split_command", "sweep_orphans"]
