"""Plain words for the page: choices, events and advice as a person at the table says them.

Every function takes ``names`` (one per seat) and the recording seat ``me`` (None in
a replay of a full match), so a seat reads "Bea" or "you".
"""
from __future__ import annotations

from coupjax import rules as R

ROLE_OF = {"tax": "duke", "exchange": "ambassador", "assassinate": "assassin", "steal": "captain"}


def title(role: str) -> str:
    return role.capitalize()


def who(names, s, me=None) -> str:
    return "you" if me is not None and s == me else names[s]


def Who(names, s, me=None) -> str:  # noqa: N802 - capitalised form of `who`
    w = who(names, s, me)
    return w[0].upper() + w[1:]


def _verb(you: bool, verb: str) -> str:
    """The verb for a subject: "claims" for a seat, "claim" for you."""
    if not you:
        return verb
    return {"takes": "take", "coups": "coup", "claims": "claim", "loses": "lose", "finishes": "finish",
            "challenges": "challenge", "blocks": "block", "passes": "pass", "accepts": "accept"}.get(verb, verb)


def main_action(names, actor: int, name: str, me=None) -> str:
    """ "Bea claims Duke: tax", "Bea coups Cal" -- a main action by ``actor``."""
    kind, _, arg = name.partition(":")
    a = Who(names, actor, me)
    v = lambda verb: _verb(actor == me, verb)  # noqa: E731
    t = who(names, int(arg), me) if arg else ""
    return {"income": f"{a} {v('takes')} income (+1)", "foreign_aid": f"{a} {v('takes')} foreign aid (+2)",
            "coup": f"{a} {v('coups')} {t} (-7)", "tax": f"{a} {v('claims')} Duke: tax (+3)",
            "exchange": f"{a} {v('claims')} Ambassador: exchange",
            "assassinate": f"{a} {v('claims')} Assassin: assassinates {t} (-3)",
            "steal": f"{a} {v('claims')} Captain: steals from {t}"}.get(kind, f"{a}: {name}")


def reaction(names, seat: int, name: str, table: dict, me=None) -> str:
    """ "Cal challenges Bea's Duke", "Cal blocks with Contessa", "Cal passes"."""
    s = Who(names, seat, me)
    if name == "pass":
        return f"{s} pass" + ("" if me is not None and seat == me else "es")
    if name == "challenge":
        if table.get("phase") == "answer_block" and table.get("blocker") is not None:
            return f"{s} challenge{'' if seat == me else 's'} {who(names, table['blocker'], me)}'s " \
                   f"{title(table['block_role'])} block"
        role = ROLE_OF.get(table.get("main_action") or "", "")
        return f"{s} challenge{'' if seat == me else 's'} {who(names, table['actor'], me)}'s {title(role)}"
    if name.startswith("block:"):
        return f"{s} block{'' if seat == me else 's'} with {title(name.split(':')[1])}"
    return f"{s}: {name}"


def all_passed(names, table: dict, me=None) -> str:
    if table.get("phase") == "answer_block":
        a = table["actor"]
        return f"{Who(names, a, me)} accept{'' if a == me else 's'} the block"
    return "All passed"


def keep(name: str) -> str:
    return "Keep " + " + ".join(title(r) for r in name.split(":")[1].split("+"))


def action(names, seat: int, name: str, table: dict, me=None) -> str:
    """Any protocol name played by ``seat`` at ``table`` (the state before it), in words."""
    kind = name.partition(":")[0]
    if kind in R.MAIN_ACTIONS:
        return main_action(names, seat, name, me)
    if name in R.REACTION_NAMES:
        return reaction(names, seat, name, table, me)
    if kind == "keep":
        return f"{Who(names, seat, me)}: " + (keep(name) if ":" in name else "finishes the exchange")
    if kind == "reveal":
        return f"{Who(names, seat, me)} lose{'' if seat == me else 's'} a card"
    return f"{Who(names, seat, me)}: {name}"


def event(names, ev: dict, me=None) -> str:
    """One engine step (an event dict, private or a seat's view) in words."""
    parts = []
    phase = ev["phase"]
    s, name = ev["seat"], ev["action"]
    fake = {"phase": phase, "actor": ev["actor"], "main_action": ev["main_action"], "blocker": None,
            "block_role": ev.get("claim")}
    if phase == "answer_block" and name == "challenge":
        parts.append(f"{Who(names, s, me)} challenge{'' if s == me else 's'} the block")
    elif phase == "lose":
        parts.append(f"{Who(names, s, me)} lose{'' if s == me else 's'} a card")
    elif phase == "exchange":
        parts.append(f"{Who(names, s, me)}: " + (keep(name) if name.startswith("keep:") else "finishes the exchange"))
    elif name == "pass":
        parts.append(reaction(names, s, name, fake, me))
    else:
        parts.append(action(names, s, name, fake, me))
    if ev.get("forfeit"):
        parts[-1] += " (forfeit: outside the legal set)"
    ch = ev.get("challenge")
    if ch:
        c = who(names, ch["seat"], me)
        parts.append(f"{c} {'bluffed' if ch['bluff_caught'] else 'held'} {title(ch['role'])}")
    if ev.get("redraw"):
        parts.append(f"{who(names, ev['seat'] if ch is None else ch['seat'], me)} drew {title(ev['redraw'])}")
    for x in ev.get("reveals", []):
        parts.append(f"{who(names, x['seat'], me)} revealed {title(x['role'])}")
    if ev.get("exchange_drawn"):
        parts.append(f"{who(names, ev['actor'], me)} drew {' + '.join(title(r) for r in ev['exchange_drawn'])}")
    for x in ev.get("eliminated", []):
        parts.append(f"{who(names, x, me)} {'are' if x == me else 'is'} out")
    if ev.get("game_over"):
        parts.append("game over")
    return "; ".join(parts)


def short(names, name: str, me=None) -> str:
    """An action of yours in a few words, for a table of values: "steal from Bea", "block (Captain)"."""
    kind, _, arg = name.partition(":")
    t = who(names, int(arg), me) if arg.isdigit() else ""
    return {"income": "income", "foreign_aid": "foreign aid", "tax": "tax (Duke)", "exchange": "exchange (Ambassador)",
            "coup": f"coup {t}", "assassinate": f"assassinate {t}", "steal": f"steal from {t}",
            "pass": "pass", "challenge": "challenge"}.get(kind) or (
        f"block ({title(arg)})" if kind == "block" else keep(name).lower() if kind == "keep" and arg
        else f"lose card {int(arg) + 1}" if kind == "reveal" and arg else name)
