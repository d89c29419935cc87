"""The reasons of a recommendation as typed statements, checked before they are worded.

A reason used to be a sentence formatted wherever the code happened to be, and some
were false: "You hold the blocking role" under a Contessa bluff, "close call" on a
certain win, a value lower than another option's with no word on why.  Here every
reason is first a statement, a dict with a ``kind`` and the facts it asserts (absolute
seats, role and action names, the numbers the page shows), built from the decision's
numbers (`coupjax.advice.recommend.decide`).  `check` tests each statement against the
seat's own view (its hand, the claim's probability, the values); one that fails is
never worded.  `say` words a statement with the caller's names: "seat 2" and the
protocol names for the terminal, the players' names and the buttons' words on the page
(`coupjax.web.words`).

Kinds: ``fact`` (a claim that cannot be true), ``chance`` (the claim's probability and
the bar at which a challenge pays), ``risk`` (what a challenge risks and gains),
``honest`` (you hold the role you claim or block with), ``bluff`` (you do not: who may
challenge, how often, what it costs), ``no_block`` (a block would be a bluff),
``block_first`` (an honest block beats a challenge), ``brings`` (what a main action does
for you), ``keep`` (which cards a loss or an exchange keeps, and what they do),
``one_step`` (the best one-step value), ``search`` (the search's value of the choice),
``certain`` (it wins for certain), ``tie`` (a close call: values within noise),
``override`` (a higher-valued option, and why it is not chosen), ``search_over`` (the
search's clear lead over the advice's own choice), ``band`` (a probability within the
margin of its bar).
"""
from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

import numpy as np

from coupjax import rules

TIE_SIGMAS = 2.0  # values closer than this many standard errors of their difference are tied (recommend's)

# What each role lets its holder do next, in a player's words.
ROLE_USE = {"duke": "tax for 3 coins and block foreign aid", "assassin": "assassinate for 3 coins",
            "captain": "steal 2 coins and block steals", "ambassador": "exchange cards and block steals",
            "contessa": "block an assassination"}


def _role(r) -> str:
    return rules.ROLES[int(r)]


def times_in(p: float) -> int:
    """p as "1 time in N" (N at least 1)."""
    return max(1, round(1.0 / p)) if p > 0 else 0


def shown(p) -> float:
    """p as the page shows it: kept to 4 places (the beliefs' JSON), shown to 2 as
    JavaScript's toFixed does (the exact binary value, halves up: 0.125 -> 0.13, and
    0.815, just under in binary, -> 0.81; Python's round would give 0.12 and 0.81)."""
    return float(Decimal(round(float(p), 4)).quantize(Decimal("0.01"), ROUND_HALF_UP))


def _rows(search) -> dict:
    return {} if search is None else {r["id"]: r for r in search["actions"] if r["value"] is not None}


def build(res: dict, search, seat: int, n: int, mask, source: str) -> list[dict]:
    """The statements behind ``res`` (`decide`'s result as numpy) for ``seat`` (absolute),
    ``source`` the recommendation's (`coupjax.advice.recommend.SOURCES`)."""
    abs_seat = lambda rel: (seat + int(rel)) % n  # noqa: E731
    name = lambda a: rules.action_name(int(a), seat, n)  # noqa: E731
    c, view, vals = res["challenge"], res["view"], res["values"]
    action, own = int(res["action"]), int(res["advised"])
    chosen = name(action)
    kind, _, arg = chosen.partition(":")
    out = []
    # the claim at hand
    if bool(c["decision"]):
        claim = {"seat": abs_seat(c["claimant"]), "role": _role(c["role"])}
        if bool(c["disproven"]):
            out.append(dict(kind="fact", cause="caught", **claim))
        elif bool(c["impossible"]):
            out.append(dict(kind="fact", cause="accounted", revealed=int(c["revealed_role"]),
                            own=int(c["own_role"]), **claim))
        else:
            out.append(dict(kind="chance", p=shown(c["p_truth"]), theta=shown(c["theta"]),
                            **claim))
            out.append(dict(kind="risk", last=int(c["me_hidden"]) == 1, target=bool(c["target_is_me"]),
                            context=int(c["context"])))
    own_counts = view["own_counts"]
    one_card = int(view["hidden"][0]) == 1
    # your hand against the role the choice claims
    if kind == "block":
        if own_counts[rules.ROLES.index(arg)] > 0:
            out.append(dict(kind="honest", action=chosen, role=arg))
            if bool(c["decision"]) and bool(c["challenge"]):
                out.append(dict(kind="block_first", action=chosen))
        else:
            actor = abs_seat(view["actor"])
            p = float(view["p_challenge"][int(view["actor"])])
            cost = "out" if (arg == "contessa" or one_card) else "card"
            out.append(dict(kind="bluff", action=chosen, role=arg, by=[actor], times=times_in(p), cost=cost))
    elif kind in rules.MAIN_ACTIONS and kind in ("tax", "exchange", "assassinate", "steal"):
        role = {"tax": "duke", "exchange": "ambassador", "assassinate": "assassin", "steal": "captain"}[kind]
        if own_counts[rules.ROLES.index(role)] > 0:
            out.append(dict(kind="honest", action=chosen, role=role))
        else:
            opp = [r for r in range(1, n) if int(view["hidden"][r]) > 0]
            p = 1.0 - float(np.prod([1.0 - float(view["p_challenge"][r]) for r in opp]))
            out.append(dict(kind="bluff", action=chosen, role=role, by=[abs_seat(r) for r in opp],
                            times=times_in(p), cost="out" if one_card else "card"))
    elif kind == "pass" and not bool(c["answer"]):
        blocks = [name(a).split(":")[1] for a in np.flatnonzero(mask) if name(a).startswith("block:")]
        if blocks and not any(own_counts[rules.ROLES.index(r)] > 0 for r in blocks):
            out.append(dict(kind="no_block", roles=blocks))
    # what the choice does for you
    if kind in rules.MAIN_ACTIONS:
        coins = int(view["coins"][0])
        gain = {"income": 1, "foreign_aid": 2, "tax": 3, "coup": -7, "assassinate": -3, "exchange": 0}.get(kind)
        if kind == "steal":
            gain = min(2, int(view["coins"][(int(arg) - seat) % n]))
        blockers = {"foreign_aid": ["duke"], "assassinate": ["contessa"], "steal": ["captain", "ambassador"]}.get(kind, [])
        seats = [(int(arg) - seat) % n] if arg and kind != "coup" else [r for r in range(1, n) if int(view["hidden"][r])]
        # who might block, with the beliefs panel's figure for each role that blocks
        holds = [dict(seat=abs_seat(r), role=role, p=shown(view["marginals"][r, rules.ROLES.index(role)]))
                 for r in seats for role in blockers]
        out.append(dict(kind="brings", action=chosen, coins=coins + gain, blockers=holds))
    elif kind == "reveal":
        hand = [_role(r) for r in view["own_cards"] if r >= 0]
        i = int(arg)
        if i < len(hand):
            out.append(dict(kind="keep", action=chosen, lose=[hand[i]], keep=hand[:i] + hand[i + 1:]))
    elif kind == "keep":
        kept = arg.split("+")
        pool = [_role(r) for r in view["own_cards"] if r >= 0] + [
            rules.ROLES[r] for r in range(rules.NUM_ROLES) for _ in range(int(view["drawn"][r]))]
        for r in kept:
            if r in pool:
                pool.remove(r)
        out.append(dict(kind="keep", action=chosen, lose=pool, keep=kept))
    # the values
    ev = vals["ev"]

    def one_step(a):
        others = [b for b in np.flatnonzero(np.isfinite(ev) & (ev > -500)) if b != a]
        nxt = max(others, key=lambda b: ev[b]) if others else None
        return dict(kind="one_step", action=name(a), ev=round(float(ev[a]), 2),
                    next=None if nxt is None else name(nxt), next_ev=None if nxt is None else round(float(ev[nxt]), 2))

    if source == "one-step expected value":
        out.append(one_step(action))
    rows = _rows(search)
    if rows:
        row = rows.get(action)
        best = max(rows.values(), key=lambda r: (r["value"], -r["se"]))
        if row is not None and row["se"] == 0 and row["value"] >= 1.0:
            out.append(dict(kind="certain", action=chosen))
        elif row is not None:
            out.append(dict(kind="search", action=chosen, value=row["value"], se=row["se"],
                            close=bool(res["close_call"])))
        tied = [name(a) for a in np.flatnonzero(res["tied"]) if int(a) in rows]
        by_advice = source == "search, tie broken by the advice"
        if bool(res["close_call"]):
            out.append(dict(kind="tie", actions=tied, action=chosen, by="advice" if by_advice else "search"))
        if row is not None and best["value"] > row["value"]:
            why = "fact" if bool(res["settled"]) else "tie"
            out.append(dict(kind="override", action=chosen, better=best["action"], value=row["value"],
                            se=row["se"], better_value=best["value"], better_se=best["se"], why=why))
        if by_advice and int(view["phase"]) == rules.PH_ACTION and not any(x["kind"] == "one_step" for x in out):
            out.append(one_step(action))  # the advice's own reason, which decided the tie
        if own >= 0 and own != action and not bool(res["settled"]):
            out.append(dict(kind="search_over", advice=name(own), action=chosen))
    elif bool(res["close_call"]) and bool(c["decision"]):
        out.append(dict(kind="band", p=round(float(c["p_truth"]), 2), theta=round(float(c["theta"]), 2),
                        band=round(float(c["band"]), 2)))
    return out


def check(st: dict, res: dict, search, seat: int, n: int) -> bool:
    """Whether ``st`` is true of the decision: the seat's hand, the claim's probability,
    the values (the view the statement was built from, read again)."""
    c, view = res["challenge"], res["view"]
    held = lambda role: int(view["own_counts"][rules.ROLES.index(role)]) > 0  # noqa: E731
    rows = {r["action"]: r for r in _rows(search).values()}
    k = st["kind"]
    if k == "honest":
        return held(st["role"])
    if k == "bluff":
        return not held(st["role"])
    if k == "no_block":
        return not any(held(r) for r in st["roles"])
    if k == "chance":
        return bool(c["decision"]) and abs(st["p"] - float(c["p_truth"])) <= 0.0051
    if k == "fact":
        return bool(c["decision"]) and (bool(c["impossible"]) or bool(c["disproven"]))
    if k == "certain":
        r = rows.get(st["action"])
        return r is not None and r["se"] == 0 and r["value"] >= 1.0
    if k == "tie":
        tied = [rows[a] for a in st["actions"] if a in rows]
        if len(tied) < 2 or st["action"] not in st["actions"] or any(r["se"] == 0 for r in tied):
            return False
        top = max(r["value"] for r in tied)
        return all(top - r["value"] <= TIE_SIGMAS * math.hypot(r["se"], max(tied, key=lambda x: x["value"])["se"])
                   + 1e-6 for r in tied)
    if k == "override":
        return st["better"] in rows and st["action"] in rows and rows[st["better"]]["value"] > rows[st["action"]]["value"]
    if k == "band":
        return abs(float(c["p_truth"]) - float(c["theta"])) <= float(c["band"]) + 1e-6
    return True


# ---------------------------------------------------------------- words
def _sign(x: float) -> str:
    return f"{x:+.2f}"  # one minus sign everywhere: the ASCII one


def _join(items: list[str], last: str = "and") -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {last} " + items[-1]


def _a(role: str) -> str:
    t = role.capitalize()
    return ("an " if t[0] in "AEIOU" else "a ") + t


def say(st: dict, who, whose, act) -> str:
    """``st`` in one sentence: ``who(seat)`` ("you", "Bea"), ``whose(seat)`` ("your",
    "Bea's") and ``act(name)`` (an action in words) name things the caller's way."""
    k = st["kind"]
    Who = lambda s: (lambda w: w[0].upper() + w[1:])(who(s))  # noqa: E731
    if k == "fact":
        role = st["role"].capitalize()
        if st["cause"] == "caught":
            return (f"{Who(st['seat'])} was caught bluffing {role} and has not drawn a new card since, so "
                    f"{who(st['seat'])} cannot hold {_a(role)}: a challenge wins for certain.")
        return (f"All 3 {role}s are accounted for ({st['revealed']} revealed, {st['own']} in your hand): "
                f"{who(st['seat'])} cannot hold {_a(role)}, so a challenge wins for certain.")
    if k == "chance":
        side = "below" if st["p"] < st["theta"] else "above"
        return (f"{whose(st['seat'])[0].upper() + whose(st['seat'])[1:]} {st['role'].capitalize()} claim is true "
                f"with probability {st['p']:.2f} (the claim's figure on the beliefs panel), {side} the "
                f"{st['theta']:.2f} at which a challenge pays.")
    if k == "risk":
        lose = "your last card: you would be out" if st["last"] else "one of your two cards"
        return f"A challenge that meets a true claim costs {lose}; one that catches a bluff costs them a card."
    if k == "honest":
        what = "block" if st["action"].startswith("block:") else "claim"
        return (f"You hold {_a(st['role'])}: the {what} is honest, and a challenge of it would cost the "
                "challenger a card.")
    if k == "bluff":
        cost = {"out": "you are out of the game", "card": "you lose a card"}[st["cost"]]
        if st["cost"] == "out" and st["role"] == "contessa":
            cost = "you are out (the lost challenge takes one card and the assassination the other)"
        by = st["by"]
        who_may = who(by[0]) if len(by) == 1 else "anyone"
        how_often = (f"{who(by[0])} challenges" if len(by) == 1 else "someone challenges") + \
            f" about 1 time in {st['times']} (the advice's estimate from the challenges made so far)"
        return f"A bluff: you hold no {st['role'].capitalize()}. If {who_may} challenges, {cost}; {how_often}."
    if k == "no_block":
        return (f"You hold no {_join([r.capitalize() for r in st['roles']], 'or')}: a block would be a bluff.")
    if k == "block_first":
        return "An honest block stops the action without risking a card, so it comes before a challenge."
    if k == "brings":
        kind, _, arg = st["action"].partition(":")
        t = who(int(arg)) if arg else ""
        coins = f"you will have {st['coins']} coins" + (": enough for a coup next turn" if st["coins"] >= 7 and
                                                         kind != "coup" else "")
        holds = _join([f"{who(b['seat'])} {'hold' if who(b['seat']) == 'you' else 'holds'} {_a(b['role'])} with "
                       f"probability {b['p']:.2f}" for b in st["blockers"]]) if st["blockers"] else ""
        if kind == "income":
            return f"Income cannot be blocked or challenged: {coins}."
        if kind == "foreign_aid":
            return f"Foreign aid brings 2 coins unless a Duke blocks it ({holds}): {coins}."
        if kind == "tax":
            return f"Tax brings 3 coins and cannot be blocked, only challenged: {coins}."
        if kind == "exchange":
            return "An exchange draws 2 cards to keep the best 2 of them and your hand; no one can block it."
        if kind == "coup":
            return f"A coup cannot be blocked or challenged: {t} {'lose' if t == 'you' else 'loses'} a card; {coins}."
        if kind == "assassinate":
            return (f"{t[0].upper() + t[1:]} loses a card unless they block with a Contessa ({holds}); it costs "
                    f"3 coins: {coins}.")
        return f"A steal takes up to 2 coins from {t} unless they block with a Captain or an Ambassador ({holds}): {coins}."
    if k == "keep":
        keep = [r.capitalize() for r in st["keep"]]
        uses = "; ".join(f"{r.capitalize()}: {ROLE_USE[r]}" for r in dict.fromkeys(st["keep"]))
        lose = _join([r.capitalize() for r in st["lose"]]) if st["lose"] else "nothing"
        verb = "Losing" if st["action"].startswith("reveal:") else "Giving back"
        return f"{verb} {lose} keeps {_join(keep) if keep else 'no card'}" + (f" ({uses})." if keep else ".")
    if k == "one_step":
        nxt = (f", ahead of {act(st['next'])} at {_sign(st['next_ev'])}" if st.get("next") else "")
        return f"The one-step values (coins gained and lost this turn) put {act(st['action'])} first at " \
               f"{_sign(st['ev'])}{nxt}."
    if k == "certain":
        return f"The search finds that {act(st['action'])} wins the game for certain (value +1.00 ± 0.00)."
    if k == "search":
        lead = "within noise of another choice" if st["close"] else "ahead of every other choice by more than its noise"
        return f"The search values {act(st['action'])} at {_sign(st['value'])} ± {st['se']:.2f}, {lead}."
    if k == "tie":
        head = f"Close call: {_join([act(a) for a in st['actions']])} are within noise of each other in the search"
        if st.get("by") == "search":
            return f"{head}: any of them is about as good, and the highest value is recommended."
        return f"{head}, so the advice's reason decides."
    if k == "override":
        diff = (f"The search gives {act(st['better'])} a higher value ({_sign(st['better_value'])} ± "
                f"{st['better_se']:.2f} against {_sign(st['value'])} ± {st['se']:.2f})")
        if st["why"] == "fact":
            return f"{diff}, but a public fact settles it: rollout noise does not outweigh a fact."
        return f"{diff}, but the difference is within noise, so the advice's reason decides."
    if k == "search_over":
        return (f"The advice alone would say {act(st['advice'])}, but the search's lead is larger than its noise.")
    if k == "band":
        return (f"Close call: the probability {st['p']:.2f} is within {st['band']:.2f} of the bar {st['theta']:.2f}, "
                "and a close call is not challenged.")
    raise ValueError(f"unknown statement kind {k!r}")
