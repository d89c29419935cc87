"""Plain words for the page: choices, events and advice as a person at the table says them.

Every function takes ``names`` (one per seat) and the recording seat ``me`` (None in
a replay of a full match), so a seat reads "Bea" or "you".
"""
from __future__ import annotations

import re

from coupjax import rules
from coupjax.advice import statements

ROLE_OF = {"tax": "duke", "exchange": "ambassador", "assassinate": "assassin", "steal": "captain"}


POLICY_NAMES = {"belief_ev": "Belief EV", "scripted_mix": "Scripted mix", "selfplay_search": "Self-play search",
                "advised": "Advised", "random": "Random", "honest": "Honest", "cautious": "Cautious",
                "aggressive": "Aggressive", "bluffer": "Bluffer", "thompson": "Thompson", "expected": "Expected",
                "regularized": "Regularized"}


MAX_NAME = 24  # characters of a seat's name (the page's inputs take no more)


def cut_name(name: str) -> str:
    """A name of at most `MAX_NAME` characters, cut at a word's end (with "…") when longer."""
    name = " ".join(name.split())
    if len(name) <= MAX_NAME:
        return name
    head = name[: MAX_NAME - 1]
    if " " in head and name[MAX_NAME - 1] != " ":
        head = head[: head.rindex(" ")]
    return head.rstrip() + "…"


def title(role: str) -> str:
    return role.capitalize()


def a_role(role: str) -> str:
    """ "a Duke", "an Assassin", "an Ambassador"."""
    t = title(role)
    return ("an " if t[:1] in "AEIOU" else "a ") + t


def plural(k: int, noun: str, many: str | None = None) -> str:
    """ "1 coin", "2 coins", "0 cards"."""
    return f"{k} {noun if k == 1 else (many or noun + 's')}"


def policy_name(spec: str) -> str:
    """A policy's name for people: "Belief EV", "Scripted mix"; a checkpoint by its last folder."""
    spec = str(spec)
    base = spec.split(":")[0]
    if base in POLICY_NAMES:
        return POLICY_NAMES[base] + (f" ({spec.split(':', 1)[1]})" if ":" in spec else "")
    if "/" not in spec:  # a registered policy without a name of its own here: "best" -> "Best", as the others
        return spec.replace("_", " ").capitalize()
    parts = [x for x in spec.split("/") if x]
    if len(parts) > 1 and parts[-1] == "export":  # runs/NAME/export: the run's name
        parts.pop()
    return (parts[-1] if parts else spec).replace("_", " ")


def whose(names, s, me=None) -> str:
    """ "your" for the recording seat, else "Bea's"."""
    return "your" if me is not None and s == me else f"{names[s]}'s"


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
            "challenges": "challenge", "blocks": "block", "passes": "pass", "accepts": "accept",
            "chooses": "choose", "steals": "steal", "assassinates": "assassinate", "reveals": "reveal",
            "draws": "draw", "does": "do", "is": "are", "has": "have", "was": "were", "shows": "show"}.get(verb, verb)


def verb(names, s, me, v: str) -> str:
    """The verb ``v`` (third person) agreeing with seat ``s``: "claims" / "claim" for you."""
    return _verb(me is not None and s == me, v)


def main_action(names, actor: int, name: str, me=None) -> str:
    """ "Bea claims Duke: tax", "Bea coups Cal" -- a main action by ``actor``."""
    kind, _, arg = name.partition(":")
    a = Who(names, actor, me)
    v = lambda verb: _verb(actor == me, verb)  # noqa: E731
    t = who(names, int(arg), me) if arg else ""
    return {"income": f"{a} {v('takes')} income (+1)", "foreign_aid": f"{a} {v('takes')} foreign aid (+2)",
            "coup": f"{a} {v('coups')} {t} (-7)", "tax": f"{a} {v('claims')} Duke: tax (+3)",
            "exchange": f"{a} {v('claims')} Ambassador: exchange",
            "assassinate": f"{a} {v('claims')} Assassin: {v('assassinates')} {t} (-3)",
            "steal": f"{a} {v('claims')} Captain: {v('steals')} from {t}"}.get(kind, f"{a}: {name}")


def reaction(names, seat: int, name: str, table: dict, me=None) -> str:
    """ "Cal challenges Bea's Duke", "Cal blocks with Contessa", "Cal passes"."""
    s = Who(names, seat, me)
    if name == "pass":
        return f"{s} pass" + ("" if me is not None and seat == me else "es")
    if name == "challenge":
        if table.get("phase") == "answer_block" and table.get("blocker") is not None:
            return f"{s} challenge{'' if seat == me else 's'} {whose(names, table['blocker'], me)} " \
                   f"{title(table['block_role'])} block"
        role = ROLE_OF.get(table.get("main_action") or "", "")
        return f"{s} challenge{'' if seat == me else 's'} {whose(names, table['actor'], me)} {title(role)}"
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


def lose_card(names, seat: int, name: str, me=None, hand=None) -> str:
    """ "Lose your Assassin" (``reveal:i`` of your ``hand``), "Bea loses a card"."""
    _, _, arg = name.partition(":")
    if me is not None and seat == me and hand and arg.isdigit() and int(arg) < len(hand):
        return f"Lose your {title(hand[int(arg)])}"
    return f"{Who(names, seat, me)} {verb(names, seat, me, 'loses')} a card"


def action(names, seat: int, name: str, table: dict, me=None, hand=None) -> str:
    """Any protocol name played by ``seat`` at ``table`` (the state before it), in words;
    ``hand`` (your cards, in the engine's order) names the card a ``reveal:i`` of yours loses."""
    kind = name.partition(":")[0]
    if kind in rules.MAIN_ACTIONS:
        return main_action(names, seat, name, me)
    if name in rules.REACTION_NAMES:
        return reaction(names, seat, name, table, me)
    if kind == "keep":
        return f"{Who(names, seat, me)}: " + (keep(name) if ":" in name else "finishes the exchange")
    if kind == "reveal":
        return lose_card(names, seat, name, me, hand)
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
        parts.append(f"{Who(names, s, me)}: " + (keep(name) if name.startswith("keep:") else
                                                  f"{verb(names, s, me, 'finishes')} the exchange"))
    elif name == "pass":
        parts.append(reaction(names, s, name, fake, me))
    else:
        parts.append(action(names, s, name, fake, me))
    if ev.get("forfeit"):
        parts[-1] += " (forfeit: outside the legal set)"
    ch = ev.get("challenge")
    if ch:
        c = who(names, ch["seat"], me)
        s_ = ch["seat"]
        parts.append(f"{c} {verb(names, s_, me, 'was')} caught bluffing: no {title(ch['role'])}" if ch["bluff_caught"]
                     else f"{c} {verb(names, s_, me, 'shows')} {a_role(ch['role'])}")
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


def short(names, name: str, me=None, hand=None) -> str:
    """An action of yours in a few words, for a table of values: "steal from Bea", "block (Captain)"."""
    kind, _, arg = name.partition(":")
    t = who(names, int(arg), me) if arg.isdigit() else ""
    if kind == "reveal" and arg.isdigit():
        return f"lose your {title(hand[int(arg)])}" if hand and int(arg) < len(hand) else f"lose card {int(arg) + 1}"
    return {"income": "income", "foreign_aid": "foreign aid", "tax": "tax (Duke)", "exchange": "exchange (Ambassador)",
            "coup": f"coup {t}", "assassinate": f"assassinate {t}", "steal": f"steal from {t}",
            "pass": "pass", "challenge": "challenge"}.get(kind) or (
        f"block ({title(arg)})" if kind == "block" else keep(name).lower() if kind == "keep" and arg else name)


# ------------------------------------------------------------------ prompts and narration
def prompt(names, v: dict, me=None) -> str:
    """What the table waits for, from a tracker's or a seat's view ``v`` of the table."""
    if v["done"]:
        return f"Game over: {who(names, v['winner'], me)} won."
    p, phase = v["current_player"], v["phase"]
    if phase == "action":
        return f"{Who(names, p, me)} to play (turn {v['turn'] + 1})."
    act = main_action(names, v["actor"], v["main_action"] + (f":{v['target']}" if v["target"] is not None
                                                             else ""), me)
    if phase == "react":
        main = rules.MAIN_ACTIONS.index(v["main_action"])
        can = (["challenge"] if rules.ACTION_CLAIM[main] >= 0 else []) + (
            ["block"] if rules.ACTION_BLOCKERS[main].any() else [])
        return f"{act}. Any {' or '.join(can)}?"
    if phase == "answer_block":
        a = v["actor"]
        return f"{act}; {who(names, v['blocker'], me)} blocked with {title(v['block_role'])}. " \
               f"{_verb_cap(a == me, 'Does')} {who(names, a, me)} challenge the block?"
    if phase == "lose":
        return f"{Who(names, p, me)} must lose a card." + ("" if me is not None and p == me else
                                                          " Which card did they reveal?")
    return f"{Who(names, p, me)} {verb(names, p, me, 'chooses')} the cards to keep."


def _verb_cap(you: bool, v: str) -> str:
    return "Do" if you and v == "Does" else v


def narrate(names, events, me=None) -> list[str]:
    """Steps in words for a prompt, one line per move; passes in a row are one line
    ("Bea and Cal pass")."""
    out, passers = [], []

    def flush():
        if passers:
            out.append(f"{_join([Who(names, passers[0], me)] + [who(names, x, me) for x in passers[1:]])} "
                       f"{'pass' if len(passers) > 1 or passers[0] == me else 'passes'}")
            passers.clear()

    for ev in events:
        text = event(names, ev, me)
        if ev["action"] == "pass" and ev["phase"] == "react" and text == reaction(names, ev["seat"], "pass", {}, me):
            passers.append(ev["seat"])
            continue
        flush()
        out.append(text[0].upper() + text[1:])
    flush()
    return out


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# ------------------------------------------------------------------ advice in plain words
def statement(st: dict, names, me=None, hand=None) -> str:
    """One typed reason of the advice (`coupjax.advice.statements`), checked before it
    reached here, in the page's words: seats by name, actions as the value table says them."""
    return statements.say(st, lambda s: who(names, s, me), lambda s: whose(names, s, me),
                          lambda a: short(names, a, me, hand))


_SEAT = re.compile(r"\b([Ss])eat (\d+)('s)?")
_NAME = re.compile(r"(?<!\()\b(income|foreign_aid|tax|exchange|coup:\d|assassinate:\d|steal:\d|block:[a-z]+|"
                   r"reveal:\d|keep:[a-z+]+|challenge|pass)\b(?![ ]\()")


def reason(text: str, names, me=None, hand=None) -> str:
    """A sentence of the advice with seats named and protocol names in words."""
    def seat(m):
        k = int(m.group(2))
        if k >= len(names):
            return m.group(0)
        w = (whose(names, k, me) if m.group(3) else who(names, k, me))
        return w[0].upper() + w[1:] if m.group(1) == "S" else w
    text = _SEAT.sub(seat, text)
    text = re.sub(r"\b([Yy])ou's\b", lambda m: m.group(1) + "our", text)
    text = _NAME.sub(lambda m: short(names, m.group(1), me, hand), text)
    text = re.sub(r"\ba ([AEIOU])", r"an \1", text)
    text = re.sub(r"\b1 (coin|card|step|game|claim|block)s\b", r"1 \1", text)
    text = re.sub(r"([.!?] )([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)
    return text[0].upper() + text[1:] if text else text


_EXPLAINED = {  # the numbers of `coupjax.advice.explain.explain_challenge`'s text, for advice that carries only it
    "base": r"= base (-?[\d.]+)", "adj_observer": r"\) ([+-][\d.]+) \((?:you have one influence left|you have 2 influence)\)",
    "adj_claimant": r"([+-][\d.]+) \([^()]* (?:has one influence left|has 2 influence)\)",
    "adj_threat": r"([+-][\d.]+) \((?:coin threat[^()]*|no coin threat)\)", "style": r"([+-][\d.]+) \(style ",
    "role_claims": r"made (\d+) \w+ claim", "role_blocks": r"and (\d+) \w+ block",
    "visible": r"(\d) of 3 \w+ visible", "revealed_role": r"visible to you \((\d+) revealed",
    "own_role": r"revealed, (\d+) in your hand", "deck": r"deck (\d+) cards",
}


def _from_explanation(ch: dict) -> dict:
    """``ch`` with the numbers its explanation names and its fields lack."""
    text, out = ch.get("explanation") or "", dict(ch)
    if isinstance(text, str):
        for key, pat in _EXPLAINED.items():
            m = re.search(pat, text)
            if m and out.get(key) is None:
                out[key] = float(m.group(1))
        m = re.search(r"= base [\d.]+ \(((?:[^()]|\([^()]*\))*)\)", text)
        if m and not out.get("context_text"):
            out["context_text"] = re.sub(r" \((duke|assassin|captain|ambassador|contessa)\)", "", m.group(1))
        if out.get("threat") is None:
            out["threat"] = "(coin threat" in text
        for key, pat in (("me_hidden", "you have one influence left"), ("claimant_hidden", "has one influence left")):
            if out.get(key) is None:
                out[key] = 1 if pat in text else 2
    if out.get("band") is None and isinstance(text, str):
        m, bar = re.search(r"band \+/-([\d.]+)", text), re.search(r"threshold - band ([\d.]+)", text)
        out["band"] = float(m.group(1)) if m else max(0.0, float(out["theta"]) - float(bar.group(1))) if bar else 0.0
    return out


def why_in_full(ch: dict, names, me, claimant: int, style: str) -> list[str]:
    """The challenge advice's numbers, each said in words (the "Why, in full" of the page)."""
    ch = _from_explanation(ch)
    role = title(ch.get("role_name") or rules.ROLES[int(ch.get("role", 0))])
    c, cs = who(names, claimant, me), whose(names, claimant, me)
    out = []
    if ch.get("disproven"):
        return [f"{c[0].upper() + c[1:]} was caught bluffing {role} and has not drawn a new card since, "
                f"so {c} cannot hold {a_role(role)}: a challenge wins for certain."]
    rev, own, vis = int(ch.get("revealed_role", 0)), int(ch.get("own_role", 0)), int(ch.get("visible", 0))
    if ch.get("impossible"):
        return [f"All 3 {role}s are accounted for ({rev} revealed, {own} in your hand), so {c} cannot hold "
                f"{a_role(role)}: a challenge wins for certain."]
    p, theta, band = float(ch["p_truth"]), float(ch["theta"]), float(ch.get("band", 0.0))
    raw = ch.get("p_raw")
    out.append(f"Chance that {cs} {role} claim is true: {p:.2f} (0 = surely a bluff, 1 = surely true). It is "
               f"counted from every card you have seen and every claim made so far"
               + (f", then corrected by how often such counts were right in past games ({float(raw):.2f} before "
                  f"that correction)." if raw is not None else "."))
    moves = []
    adj = [("adj_observer", "you have one card left" if int(ch.get("me_hidden", 2)) == 1 else "you have two cards"),
           ("adj_claimant", f"{c} {verb(names, claimant, me, 'has')} one card left" if int(ch.get("claimant_hidden", 2)) == 1
            else f"{c} {verb(names, claimant, me, 'has')} two cards"),
           ("adj_threat", f"{c} would reach 7 coins (a coup)" if ch.get("threat") else "no coup threat from the coins")]
    for key, text in adj:
        if ch.get(key) is not None:
            moves.append(f"{float(ch[key]):+.2f} because {text}")
    if ch.get("style") is not None:
        moves.append(f"{float(ch['style']):+.2f} for the {style} style")
    kind = f" ({reason(ch['context_text'], names, me)[0].lower() + reason(ch['context_text'], names, me)[1:]})" \
        if ch.get("context_text") else ""
    base = f"It starts at {float(ch['base']):.2f} for this kind of claim{kind}" if ch.get("base") is not None else ""
    out.append(f"A challenge pays when that chance is below {theta:.2f}. " + (base + (": " + ", ".join(moves) if moves
                                                                                     else "") + "." if base else ""))
    if band:
        out.append(f"Within {band:.2f} of that bar the call is too close, and a close call is not challenged.")
    if ch.get("challenge"):
        out.append(f"So: {p:.2f} is below {theta - band:.2f} (the bar less the margin): challenge.")
    elif ch.get("close_call"):
        out.append(f"So: {p:.2f} is within {band:.2f} of {theta:.2f}: a close call, don't challenge.")
    else:
        out.append(f"So: {p:.2f} is not below {theta - band:.2f} (the bar less the margin): don't challenge.")
    if ch.get("role_claims") is not None:
        k, b = int(ch["role_claims"]), int(ch.get("role_blocks", 0))
        out.append(f"What it rests on: {c} {verb(names, claimant, me, 'has')} claimed {role} {plural(k, 'time')} and "
                   f"blocked with it {plural(b, 'time')} since {'your' if claimant == me else 'that'} hand last "
                   f"changed; you can see {vis} of the 3 {role}s ({rev} revealed, {own} in your hand); the deck "
                   f"holds {plural(int(ch.get('deck', 0)), 'card')}.")
    return out


def button(choices, action: str, me) -> str | None:
    """The label of the button that plays ``action`` for ``me`` among the page's
    ``choices`` (a pass where no pass button is offered: the "All passed" one), so the
    advice names what the player will tap, word for word."""
    for c in choices or []:
        e = c.get("entry") or {}
        if c.get("action") == action or (e.get("action") == action and e.get("seat") == me):
            return c["label"]
    if action == "pass":
        for c in choices or []:
            if (c.get("entry") or {}).get("action") == "all_passed":
                return c["label"]
    return None
