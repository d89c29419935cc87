"""Hostile bots never stop the arena nor outlive it (issue 28).

Bots from tests/bots/hostile_bot.py print a 10 MB line, 200,000 short lines, a
5,000-digit number or 60,000 open brackets -- at the hello or at a decision -- start a
child in its own session (``setsid``) that would sleep for an hour, or flood their
stderr.  Against the simple example bot and the ``random`` policy, 2 matches of 6
players at ``--move-timeout 3`` per line-up: ``coupjax arena`` returns, writes
``results.json`` with each bot's forfeits by reason, leaves no process of a bot
behind, and keeps each log under its cap.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from coupjax import cli
from coupjax.botarena import process, protocol
from coupjax.match import Match

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "bots" / "hostile_bot.py"
SIMPLE = ROOT / "examples" / "bots" / "simple_bot.py"
ATTACKS = ("longline", "shortlines", "digits", "nested")


def alive(pid: int) -> bool:
    """A process that still runs (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rindex(b")") + 2:].split()[0] not in (b"Z", b"X")


def bot_processes(tag: str) -> list[int]:
    """Processes whose command line names ``tag`` (each test's own folder)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if tag.encode() in f.read() and alive(int(name)):
                        out.append(int(name))
            except OSError:
                continue
    return out


def run_arena(out: Path, bots: dict[str, str], policies=("random",)) -> dict:
    argv = ["arena", "--players", "6", "--matches", "2", "--move-timeout", "3", "--seed", "5",
            "--out", str(out / "results.json")]
    for name, command in bots.items():
        argv += ["--bot", f"{name}={command}"]
    for spec in policies:
        argv += ["--policy", spec]
    cli.main(argv)  # returns: the command's exit status 0
    return json.loads((out / "results.json").read_text())


def decisions_of(report: dict, name: str) -> int:
    """How many decisions ``name`` had in the saved matches."""
    total = 0
    for row in report["match_list"]:
        seat = row["seats"].index(name)
        total += sum(e["seat"] == seat for e in Match.load(row["file"]).events)
    return total


def check_logs(out: Path) -> None:
    for log in (out / "results" / "logs").glob("*.log"):
        assert log.stat().st_size <= process.MAX_LOG + 200, log


@pytest.mark.parametrize("where", ["hello", "decide"])
def test_hostile_bots_forfeit_and_the_tournament_ends(tmp_path, where):
    """Each attack is a garbage forfeit of its bot (every decision when it came at the
    hello, the attacked decision otherwise); the well-behaved entrants forfeit nothing;
    the setsid grandchild is dead; the flooded log stops at its cap with a note."""
    py = sys.executable
    pidfile = tmp_path / "setsid.pid"
    bots = {f"{a}-{where}": f"{py} {HOSTILE} {a} {where} {tmp_path}/x" for a in ATTACKS}
    bots["setsid" if where == "hello" else "stderr"] = (f"{py} {HOSTILE} setsid hello {pidfile}" if where == "hello"
                                                       else f"{py} {HOSTILE} stderr decide {tmp_path}/x")
    if where == "hello":
        bots["simple"] = f"{py} {SIMPLE} {tmp_path}/x"
    report = run_arena(tmp_path, bots, policies=() if where == "hello" else ("random",))
    assert report["matches"] == 2
    seated = {name for row in report["match_list"] for name in row["seats"]}
    for a in ATTACKS:
        name = f"{a}-{where}"
        assert name in seated
        forfeits = report["results"][name]["forfeits"]
        assert set(k for k, v in forfeits.items() if v) <= {"garbage"}, (name, forfeits)
        had = decisions_of(report, name)
        if where == "hello":
            assert forfeits["garbage"] == had, (name, forfeits, had)
        else:
            assert forfeits["garbage"] >= min(had, 1) and had >= 1, (name, forfeits, had)
    for name in bots.keys() - {f"{a}-{where}" for a in ATTACKS}:
        if name in seated:
            assert sum(report["results"][name]["forfeits"].values()) == 0, (name, report["results"][name])
    details = " ".join(f["detail"] for f in report["forfeits"])
    assert "over 65536 bytes" in details or "printed more than" in details
    assert bot_processes(str(tmp_path)) == []  # no bot, and no child of one, survives the tournament
    if where == "hello":
        assert pidfile.exists() and not alive(int(pidfile.read_text()))
    check_logs(tmp_path)
    if where == "decide":
        flooded = [p for p in (tmp_path / "results" / "logs").glob("*-stderr.stderr.log")]
        assert flooded and all("this log stops at" in p.read_text()[-200:] for p in flooded)


def test_each_attack_in_a_reply_is_a_forfeit_with_its_reason():
    """The reply checks never raise: huge numbers, deep nesting, over-long lines and bytes
    that are not UTF-8 are garbage with a reason, in a decide reply and in a hello."""
    legal = ["income", "tax"]
    for line in (b'{"action": ' + b"1" * 5000 + b"}\n", b"[" * 60_000 + b"\n", b"[" * 20_000 + b"]" * 20_000,
                 b'{"action": "' + b"x" * 70_000 + b'"}', b'{"action": 1e999999}', b"\xff\n"):
        name, reason, detail = protocol.check_reply(line, legal, 4)
        assert (name, reason) == (None, "garbage") and detail
        reason, detail = protocol.check_hello(line)
        assert reason == "garbage" and detail


def test_a_bot_that_floods_stdout_is_broken_and_its_pipes_closed(tmp_path):
    """A bot printing far past the bounds is broken with garbage and stopped; `finish`
    returns at once even while a setsid grandchild still holds the pipes."""
    async def go():
        bot = process.BotProcess("b", f"{sys.executable} {HOSTILE} shortlines decide", tmp_path / "b.log")
        await bot.start(protocol.hello("b", 0), 5.0)
        got = await bot.decide(protocol.decide(0, {}, ["income"]), 3.0)
        await bot.finish(None)
        return bot, got

    bot, got = asyncio.run(go())
    assert got[1] == "garbage" and bot.broken[0] == "garbage" and bot.exit_status is not None
    assert "nobody asked for" in bot.broken[1]
