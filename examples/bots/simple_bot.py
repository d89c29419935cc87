#!/usr/bin/env python3
"""A Coup bot in plain Python (standard library only) for `coupjax arena`.

It speaks the JSON-lines protocol of docs/bots.md on stdin/stdout and logs to
stderr (the arena saves it).  Its play: coup when it can, claim only roles it holds,
block with roles it holds, and challenge only a claim it can prove false (every copy
of the role is in sight: revealed on the table or in its own hand).

    python -m coupjax arena --bot simple="python examples/bots/simple_bot.py" --policy belief_ev ...
"""
import json
import random
import sys

PROTOCOL = 1
COPIES = 3
KEEP_ORDER = ("duke", "captain", "assassin", "contessa", "ambassador")  # most useful first


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def in_sight(obs, role):
    revealed = sum(row.count(role) for row in obs["revealed"])
    return revealed + obs["cards"].count(role) + obs["drawn"].count(role)


def choose(obs, legal, rng):
    me, phase = obs["seat"], obs["phase"]
    cards = obs["cards"]
    if phase == "action":
        rich = sorted((s for s in range(len(obs["coins"])) if s != me and obs["alive"][s]),
                      key=lambda s: (obs["hidden"][s], obs["coins"][s]), reverse=True)
        for kind in ("coup", "assassinate"):
            for s in rich:
                if f"{kind}:{s}" in legal and (kind == "coup" or "assassin" in cards):
                    return f"{kind}:{s}"
        if "duke" in cards and "tax" in legal:
            return "tax"
        if "captain" in cards:
            for s in rich:
                if f"steal:{s}" in legal and obs["coins"][s] >= 2:
                    return f"steal:{s}"
        if "ambassador" in cards and "exchange" in legal:
            return "exchange"
        return "income" if "income" in legal else rng.choice(legal)
    if phase in ("react", "answer_block"):
        for block in (x for x in legal if x.startswith("block:")):
            if block.split(":")[1] in cards:
                return block
        claimed = obs["block_role"] if phase == "answer_block" else obs["claim"]
        if "challenge" in legal and claimed and in_sight(obs, claimed) >= COPIES:
            return "challenge"
        return "pass"
    if phase == "lose":
        worst = max(range(len(cards)), key=lambda i: KEEP_ORDER.index(cards[i]))
        return f"reveal:{worst}"
    if phase == "exchange":
        pool = sorted(cards + obs["drawn"], key=KEEP_ORDER.index)
        keep = sorted(pool[:len(cards)], key=("duke", "assassin", "captain", "ambassador", "contessa").index)
        name = "keep:" + "+".join(keep)
        return name if name in legal else rng.choice(legal)
    return rng.choice(legal)


def main():
    rng = random.Random(0)
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg["type"]
        if kind == "hello":
            send({"type": "hello", "protocol": PROTOCOL, "name": "simple_bot"})
            print(f"{msg.get('move_timeout', '?')} s per decision", file=sys.stderr)
        elif kind == "start":
            rng.seed(msg["match"] * 10 + msg["seat"])
            print(f"match {msg['match']}: seat {msg['seat']} of {msg['players']}, cards {msg['cards']}",
                  file=sys.stderr)
        elif kind == "decide":
            send({"action": choose(msg["observation"], msg["legal"], rng)})
        elif kind == "end":
            print(f"placement {msg['placement']}, winner seat {msg['winner']}", file=sys.stderr)
            break
        # "event" messages: this bot reads everything it needs from the observation


if __name__ == "__main__":
    main()
