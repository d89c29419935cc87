"""One bot seat: a subprocess spoken to in JSON lines, with timeouts.

A bot runs in its own process group (its own session), so stopping it also stops any
child it started; its stderr goes to a log file.  Nothing here raises on a bot's
mistake: a dead pipe, a closed stdout, an over-long line or a late answer come back as
a forfeit reason (`coupjax.botarena.protocol.REASONS`).
"""
from __future__ import annotations

import asyncio
import os
import shlex
import signal
import time
from pathlib import Path

from coupjax.botarena import protocol as proto

# The hello is answered by a process that may still be starting (an interpreter on a
# busy machine can take seconds): it gets this long, or the move timeout if longer.
HELLO_TIMEOUT = 30.0
END_GRACE = 2.0  # seconds a bot has to exit after `end` before it is stopped


def split_command(command: str) -> list[str]:
    """The argv of a bot command (shell-like quoting, no shell)."""
    argv = shlex.split(command)
    if not argv:
        raise ValueError("empty command")
    return argv


class BotProcess:
    """A bot's process for one seat of one match (never restarted)."""

    def __init__(self, name: str, command: str, log_path: Path):
        self.name, self.command, self.log_path = name, command, Path(log_path)
        self.proc: asyncio.subprocess.Process | None = None
        self.broken: tuple[str, str] | None = None  # (reason, detail): every later decision forfeits
        self.exit_status: int | None = None
        self.decisions = 0
        self.seconds = 0.0  # time spent answering decisions

    async def start(self, hello: dict, timeout: float) -> None:
        """Spawn the process and shake hands; a failure marks the bot broken."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            try:
                self.proc = await asyncio.create_subprocess_exec(
                    *split_command(self.command), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=log, start_new_session=True, limit=proto.MAX_LINE)
            except OSError as err:
                self.broken = ("crash", f"could not start {self.command!r}: {err}")
                return
        line, why = await self.request(hello, max(HELLO_TIMEOUT, timeout))
        if why:
            self.broken = (why, f"hello: {line}")
        else:
            reason, detail = proto.check_hello(line)
            self.broken = (reason, detail) if reason else None
        if self.broken:
            self.stop()  # never spoken to again: each of its decisions forfeits

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def send(self, message: dict) -> None:
        """Queue a line for the bot (no waiting: a bot that reads slowly only delays itself)."""
        if not self.alive or self.proc.stdin.is_closing():
            return
        try:
            self.proc.stdin.write(proto.dumps(message))
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            pass

    async def request(self, message: dict, timeout: float) -> tuple[bytes | str | None, str | None]:
        """Send ``message`` and read one line within ``timeout`` seconds.

        Returns (line, None), or (detail, reason) when no line came: "timeout" or
        "crash" (stdout closed), or "garbage" for a line over `protocol.MAX_LINE`.
        """
        if not self.alive:
            return "the process is not running", "crash"
        self.send(message)
        try:
            async with asyncio.timeout(timeout):
                await self.proc.stdin.drain()
                line = await self.proc.stdout.readline()
        except TimeoutError:
            return f"no answer within {timeout:g} s", "timeout"
        except (BrokenPipeError, ConnectionResetError):
            return "its stdin closed", "crash"
        except (ValueError, asyncio.LimitOverrunError):
            return f"a line over {proto.MAX_LINE} bytes", "garbage"
        if not line:
            return "closed its stdout", "crash"
        return line, None

    async def decide(self, message: dict, timeout: float) -> tuple[bytes | str | None, str | None]:
        """`request` for a decision, counted and timed (``decisions``, ``seconds``)."""
        t0 = time.perf_counter()
        try:
            return await self.request(message, timeout)
        finally:
            self.decisions += 1
            self.seconds += time.perf_counter() - t0

    async def finish(self, message: dict | None) -> None:
        """Send ``end`` (if given), close stdin, let the bot exit, then stop what is left."""
        if self.proc is None:
            return
        if message is not None:
            self.send(message)
        try:
            if not self.proc.stdin.is_closing():
                self.proc.stdin.close()
            async with asyncio.timeout(END_GRACE):
                await self.proc.wait()
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            pass
        self.stop(group=True)
        await self.proc.wait()
        self.exit_status = self.proc.returncode

    def stop(self, group: bool = False) -> None:
        """Kill the bot's process group (the session of our own child) while the bot runs,
        or, with ``group``, whatever it left running in that group."""
        if self.proc is not None and (group or self.proc.returncode is None):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


__all__ = ["BotProcess", "HELLO_TIMEOUT", "END_GRACE", "split_command"]
