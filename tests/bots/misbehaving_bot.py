"""A test bot that plays its first legal action until its Nth decision, then misbehaves.

    python tests/bots/misbehaving_bot.py MODE [N]

MODE: timeout (sleeps), crash (exits), garbage (prints non-JSON), illegal (a protocol
name outside the legal set), noise (JSON without an action), version (a hello with
another protocol version), silent_hello (never answers the hello), good (never).
"""
import json
import sys
import time

mode = sys.argv[1]
at = int(sys.argv[2]) if len(sys.argv) > 2 else 1
decisions = 0


def send(obj):
    sys.stdout.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "hello":
        if mode == "silent_hello":
            time.sleep(3600)
        send({"type": "hello", "protocol": 99 if mode == "version" else 1})
    elif msg["type"] == "decide":
        decisions += 1
        if decisions == at and mode != "good":
            print(f"misbehaving ({mode}) at decision {decisions}", file=sys.stderr, flush=True)
            if mode == "timeout":
                time.sleep(3600)
            if mode == "crash":
                sys.exit(3)
            if mode == "garbage":
                send("this is not json {")
                continue
            if mode == "noise":
                send({"move": "tax"})
                continue
            if mode == "illegal":
                seat = msg["observation"]["seat"]
                send({"action": f"coup:{seat}"})
                continue
        send({"action": msg["legal"][0]})
    elif msg["type"] == "end":
        break
