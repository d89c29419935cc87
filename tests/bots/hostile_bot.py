"""A test bot that attacks the arena, at the hello or at its first decision, then plays on.

    python tests/bots/hostile_bot.py MODE WHERE [PIDFILE]

MODE: longline (one 10 MB reply line), shortlines (200,000 short lines, 1.2 MB),
digits (a 5,000-digit number), nested (60,000 nested brackets), setsid (starts a child
in its own session that outlives the bot unless killed, its pid written to PIDFILE, and
plays well), stderr (2 MB on stderr at every decision, and plays well).
WHERE: hello or decide.  Otherwise the bot answers its first legal action.
"""
import json
import os
import sys
import time

mode, where = sys.argv[1], sys.argv[2]
pidfile = sys.argv[3] if len(sys.argv) > 3 else None


def send(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def attack(ok: str) -> None:
    if mode == "longline":
        send('{"action": "' + "x" * (10 << 20) + '"}')
    elif mode == "shortlines":
        sys.stdout.write("debug\n" * 200_000)
        sys.stdout.flush()
    elif mode == "digits":
        send('{"action": ' + "1" * 5000 + ', "type": "hello", "protocol": 1}')
    elif mode == "nested":
        send("[" * 60_000)
    elif mode == "setsid":
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:  # a grandchild in its own session, whose parent exits
                if pidfile:
                    with open(pidfile, "w") as f:
                        f.write(str(os.getpid()))
                time.sleep(3600)
            os._exit(0)
        send(ok)
    elif mode == "stderr":
        sys.stderr.write("e" * (2 << 20))
        sys.stderr.flush()
        send(ok)


for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "hello":
        ok = json.dumps({"type": "hello", "protocol": 1})
        attack(ok) if where == "hello" or mode == "setsid" else send(ok)
    elif msg["type"] == "decide":
        ok = json.dumps({"action": msg["legal"][0]})
        attack(ok) if (where == "decide" and mode != "setsid") or mode == "stderr" else send(ok)
    elif msg["type"] == "end":
        break
