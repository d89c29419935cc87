"""The rule an impossible entry breaks, in words (docs/rules.md).

`why_illegal` explains an action outside the legal set from the public state;
`check_card_ops` checks a step's card operations (`coupjax.tracker.card_timeline`) against
what the recording seat knows for certain (its own cards, every revealed card, the
roles a caught bluff ruled out) and names the first one that cannot happen.  What
only the whole card timeline can rule out is left to `worlds.find_world`.
"""
from __future__ import annotations

from collections import Counter

from coupjax import rules
from coupjax.game import board
from coupjax.game import deal
from coupjax.tracker.entries import TrackerError


def _plural(role: int, k: int) -> str:
    return rules.ROLES[role] if k == 1 else rules.ROLES[role] + "s"


def _cards(roles) -> str:
    return ", ".join(rules.ROLES[r] for r in roles) or "none"


def why_illegal(state, name: str, num_players: int) -> str:
    """Why the seat to act may not play ``name`` (a protocol name outside the legal set)."""
    n = num_players
    p = int(state.current_player)
    phase = int(board.phase(state))
    coins = deal.coins(state)
    alive = [h > 0 for h in (len(x) for x in deal.hands(state))]
    kind, _, arg = name.partition(":")
    main = int(board.main_action(state))
    main_name = rules.MAIN_ACTIONS[main] if main >= 0 else None
    actor = int(board.actor(state))
    if phase == rules.PH_ACTION:
        if kind not in rules.MAIN_ACTIONS:
            return f"seat {p} must choose a main action ({', '.join(rules.MAIN_ACTIONS)}), not {name}"
        if coins[p] >= rules.FORCED_COUP_COINS and kind != "coup":
            return f"seat {p} must coup: it starts its turn with {coins[p]} coins ({rules.FORCED_COUP_COINS} or more force a coup)"
        cost = int(rules.ACTION_COST[rules.MAIN_ACTIONS.index(kind)])
        if coins[p] < cost:
            return f"seat {p} cannot {kind} with {coins[p]} coins: {kind} costs {cost}"
        if arg:
            t = int(arg)
            if t == p:
                return f"seat {p} cannot {kind} itself: the target must be an opponent"
            if not alive[t]:
                return f"seat {t} is out of the game: it cannot be the target of {kind}"
        return f"{name} is not legal for seat {p} now"
    if phase == rules.PH_REACT:
        claim = int(rules.ACTION_CLAIM[main])
        if kind == "challenge" and claim < 0:
            return f"{main_name} claims no role: it can be blocked, not challenged"
        if kind == "block":
            role = rules.role_index(arg)
            blockers = [rules.ROLES[r] for r in rules.BLOCK_ROLES if rules.ACTION_BLOCKERS[main, r]]
            if not blockers:
                return f"{main_name} cannot be blocked"
            if not rules.ACTION_BLOCKERS[main, role]:
                return f"{main_name} is blocked by {' or '.join(blockers)}, not {arg}"
            if rules.BLOCK_BY_TARGET_ONLY[main] and p != int(board.target(state)):
                return f"only the target (seat {int(board.target(state))}) may block {main_name}"
        return (f"seat {p} is reacting to seat {actor}'s {main_name}: pass, challenge or a block the rules allow, "
                f"not {name}")
    if phase == rules.PH_ANSWER_BLOCK:
        return f"seat {p} answers seat {int(board.blocker(state))}'s block: pass (the block stands) or challenge, not {name}"
    if phase == rules.PH_LOSE:
        return f"seat {p} must choose a card to lose (reveal), not {name}"
    if phase == rules.PH_EXCHANGE and kind == "keep":
        hand, drawn = deal.hands(state)[p], deal.drawn(state)
        keep = rules.KEEPS[rules.KEEP_NAMES.index(name)]
        if len(keep) != len(hand):
            return f"seat {p} holds {len(hand)} card(s): it keeps {len(hand)}, not {len(keep)}"
        return f"{name} cannot be formed from seat {p}'s hand and drawn cards ({_cards(sorted(hand + drawn))})"
    return f"seat {p} must choose which cards to keep from its exchange, not {name}"


class Known:
    """What the recording seat knows for certain after some card operations: revealed
    cards per role, its own hand and drawn cards, and per seat the roles a caught bluff
    ruled out since that seat's hand last changed."""

    def __init__(self, record, upto: int | None = None):
        self.seat = record.seat
        self.revealed = Counter()
        self.hand, self.drawn = list(record.hand), []
        self.disproven = [set() for _ in range(record.num_players)]
        for op in record.ops[:upto]:
            self.apply(op)

    def apply(self, op) -> None:
        kind, s, role, cards = op
        me = s == self.seat
        if kind == "reveal":
            self.revealed[role] += 1
            if me:
                self.hand.remove(role)
        elif kind == "exclude":
            self.disproven[s].add(role)
        elif kind == "redraw":
            self.disproven[s] = set()
            if me:
                self.hand[self.hand.index(role)] = cards[0]
        elif kind == "draw" and me:
            self.drawn = list(cards)
        elif kind == "keep":
            self.disproven[s] = set()
            if me:
                self.hand, self.drawn = list(cards), []
        elif kind == "return" and me:
            self.drawn = []

    def visible(self, role: int) -> int:
        return self.revealed[role] + self.hand.count(role) + self.drawn.count(role)

    def accounted(self, role: int) -> str:
        parts = [f"{self.revealed[role]} revealed"] if self.revealed[role] else []
        if self.hand.count(role):
            parts.append(f"{self.hand.count(role)} in your hand")
        if self.drawn.count(role):
            parts.append(f"{self.drawn.count(role)} in your draw")
        v = self.visible(role)
        return f"{'all 3 are' if v >= rules.COPIES_PER_ROLE else f'{v} of the 3 are'} accounted for: {', '.join(parts)}"


def check_card_ops(record, ops: list) -> None:
    """Raise `TrackerError` at the first of ``ops`` (one step's card operations, after
    ``record.ops``) that what the recording seat knows rules out."""
    known = Known(record)
    me = record.seat
    for kind, s, role, cards in ops:
        if kind == "reveal" and s == me and role not in known.hand:
            raise TrackerError(f"you hold no {rules.ROLES[role]} to reveal (your hand: {_cards(known.hand)})", "reveals")
        if kind == "reveal" and s != me:
            if known.visible(role) >= rules.COPIES_PER_ROLE:
                raise TrackerError(f"a fourth {rules.ROLES[role]}: {known.accounted(role)}", "reveals")
            if role in known.disproven[s]:
                raise TrackerError(f"seat {s} cannot reveal a {rules.ROLES[role]}: it was caught bluffing "
                                   f"{rules.ROLES[role]} since its hand last changed", "reveals")
        if kind == "need" and s == me and role not in known.hand:
            raise TrackerError(f"you hold no {rules.ROLES[role]}: the challenge caught your bluff (bluff_caught is true)",
                               "bluff_caught")
        if kind == "exclude" and s == me and role in known.hand:
            raise TrackerError(f"you hold a {rules.ROLES[role]}: the challenge cannot catch a bluff (bluff_caught is false)",
                               "bluff_caught")
        if kind == "need" and s != me:
            if known.visible(role) >= rules.COPIES_PER_ROLE:
                raise TrackerError(f"seat {s} cannot hold a {rules.ROLES[role]}: {known.accounted(role)}", "bluff_caught")
            if role in known.disproven[s]:
                raise TrackerError(f"seat {s} cannot hold a {rules.ROLES[role]}: it was caught bluffing "
                                   f"{rules.ROLES[role]} since its hand last changed", "bluff_caught")
        if kind == "redraw" and s == me:
            known.hand.remove(role)
            if known.visible(cards[0]) >= rules.COPIES_PER_ROLE:
                raise TrackerError(f"you cannot draw a {rules.ROLES[cards[0]]}: {known.accounted(cards[0])}", "redraw")
            known.hand.append(role)
        if kind == "draw" and s == me:
            for r, k in Counter(cards).items():
                if known.visible(r) + k > rules.COPIES_PER_ROLE:
                    raise TrackerError(f"you cannot draw {k} {_plural(r, k)}: {known.accounted(r)}", "drawn")
        known.apply((kind, s, role, cards))


def describe_op(op, seat: int) -> str:
    """A card operation as a fact, for the message of a record no world fits."""
    kind, s, role, cards = op
    who = "you" if s == seat else f"seat {s}"
    if kind == "reveal":
        return f"{who} cannot reveal a {rules.ROLES[role]} here"
    if kind == "need":
        return f"{who} cannot hold a {rules.ROLES[role]} here"
    if kind == "exclude":
        return f"{who} cannot lack a {rules.ROLES[role]} here"
    if kind == "redraw":
        return f"{who} cannot redraw here" if cards is None else f"you cannot draw a {rules.ROLES[cards[0]]} here"
    if kind == "draw":
        return f"{who} cannot draw these cards here" if cards else f"{who} cannot exchange here"
    return f"{who} cannot {kind} here"

