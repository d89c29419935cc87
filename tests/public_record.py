"""A public-record oracle, written from the rules and the PUBLIC event dicts alone.

It follows one match through ``coupjax.events.event_to_dict(event, n, public=True)``
(never the engine's observation) and knows, per seat: the revealed cards, the hidden
count, and the roles a caught bluff proved absent since the seat's hand last changed
(a redraw after a proven claim or an exchange changes a hand; losing a card does not).
`PublicRecord.contradictions` says which of those facts a sampled world breaks, given
the observer's own cards (which it knows), and checks card conservation.

It also tracks two facts the beliefs ignore (`coupjax.beliefs.posterior` names them),
to measure how often they would bind:

* ``kept``: after a redraw that replaced one of two cards, the kept card is still not
  a role proven absent before the redraw;
* ``located``: a proven claim of role X showed where one unseen X was, so the seats
  whose hands have not changed since hold at most ``3 - (X revealed then) - 1`` of X
  (counting the X's they revealed since); the proven card went to the deck, which the
  posterior, dealing unseen cards uniformly, forgets.
"""
from __future__ import annotations

from collections import Counter

ROLES = ("duke", "assassin", "captain", "ambassador", "contessa")
COPIES = 3
HAND = 2


def _cards(row) -> list[int]:
    return [int(c) for c in row if c >= 0]


class PublicRecord:
    """The public facts of one match so far; feed it every step's public event dict."""

    def __init__(self, num_players: int, revealed=None):
        n = num_players
        self.n = n
        self.revealed = [list(r) for r in revealed] if revealed is not None else [[] for _ in range(n)]
        self.disproven = [set() for _ in range(n)]
        self.exchanger = None  # seat holding two drawn cards, choosing what to keep
        self.kept = [set() for _ in range(n)]  # roles the kept card is not, after a one-card redraw
        self.kept_is_last = [False] * n  # the seat's only card is the kept one
        self.located = []  # (claimant, role, bound, {seat: X revealed by then}) per proven claim

    # ---------------------------------------------------------------- following the match
    def hidden(self, seat: int) -> int:
        return HAND - len(self.revealed[seat])

    def _renew(self, seat: int):
        self.disproven[seat] = set()
        self.kept[seat], self.kept_is_last[seat] = set(), False
        for _, _, _, seats in self.located:
            seats.pop(seat, None)

    def update(self, event: dict) -> None:
        """One step's public event dict (absolute seats, role names)."""
        assert all("index" not in item for item in event["reveals"]), "a public event dict, please"
        ch = event["challenge"]
        if ch is not None:  # the truth check comes first in a step
            seat, role = ch["seat"], ROLES.index(ch["role"])
            if ch["bluff_caught"]:
                self.disproven[seat].add(role)
            else:  # the proven card goes to the deck; a replacement is drawn into its slot
                shown = sum(r.count(role) for r in self.revealed)
                others = {s: self.revealed[s].count(role) for s in range(self.n) if s != seat and self.hidden(s) > 0}
                self.located.append((seat, role, COPIES - shown - 1, others))
                kept = set(self.disproven[seat]) if self.hidden(seat) == HAND else set()
                self._renew(seat)
                self.kept[seat] = kept
        for item in event["reveals"]:
            seat, role = item["seat"], ROLES.index(item["role"])
            if self.kept[seat] and self.hidden(seat) == HAND:
                # a role the kept card is not: the revealed card was the new one
                self.kept_is_last[seat] = role in self.kept[seat]
                if not self.kept_is_last[seat]:
                    self.kept[seat] = set()
            elif self.hidden(seat) == 1:
                self.kept[seat], self.kept_is_last[seat] = set(), False
            self.revealed[seat].append(role)
        if event["phase"] == "exchange" and not event["forfeit"]:
            self._renew(event["seat"])
        if event["phase"] == "exchange" or event["game_over"] or event["turn_ended"]:
            self.exchanger = None
        elif event["main_action"] == "exchange" and event["resolved"]:
            self.exchanger = event["actor"]

    # ---------------------------------------------------------------- facts
    def active_disproven(self, observer: int):
        """(seat, role) pairs proven absent for an opponent of ``observer`` that still has cards."""
        return [(s, r) for s in range(self.n) if s != observer and self.hidden(s) > 0 for r in self.disproven[s]]

    def contradictions(self, observer: int, own_hand, own_drawn, hands_rel, deck, drawn) -> list[str]:
        """The facts a world breaks ([] if none).

        own_hand / own_drawn: the observer's cards (role ids, hand-index order; its
        drawn exchange cards or []).  hands_rel: [n][2] role ids relative to the
        observer (row 0 the observer), -1 padded; deck, drawn: role ids, -1 padded.
        """
        n = self.n
        out = []
        hands = [_cards(hands_rel[(s - observer) % n]) for s in range(n)]
        deck, drawn = _cards(deck), _cards(drawn)
        if hands[observer] != list(own_hand):
            out.append(f"observer {observer} holds {own_hand}, world {hands[observer]}")
        for s in range(n):
            if len(hands[s]) != self.hidden(s):
                out.append(f"seat {s} has {self.hidden(s)} hidden cards, world {len(hands[s])}")
            for r in self.disproven[s] & set(hands[s]):
                out.append(f"seat {s} was caught bluffing {ROLES[r]}, world holds one")
        want_drawn = 2 if self.exchanger is not None else 0
        if len(drawn) != want_drawn:
            out.append(f"{want_drawn} drawn cards expected, world {len(drawn)}")
        if self.exchanger == observer and Counter(drawn) != Counter(own_drawn):
            out.append(f"observer drew {own_drawn}, world {drawn}")
        total = Counter(c for h in hands for c in h) + Counter(deck) + Counter(drawn)
        total += Counter(c for r in self.revealed for c in r)
        if any(total[r] != COPIES for r in range(len(ROLES))) or len(total) != len(ROLES):
            out.append(f"card counts {dict(total)}")
        return out

    def kept_facts(self, observer: int):
        """Seats (opponents of ``observer`` with cards) whose kept card is known not to be some role."""
        return [s for s in range(self.n) if s != observer and self.hidden(s) > 0 and self.kept[s]]

    def kept_broken(self, observer: int, hands_rel) -> bool:
        """The world's hands break a ``kept`` fact (no card of the hand can be the kept one)."""
        for s in self.kept_facts(observer):
            hand = _cards(hands_rel[(s - observer) % self.n])
            if self.kept_is_last[s] or len(hand) == HAND:
                if all(c in self.kept[s] for c in hand):
                    return True
        return False

    def located_facts(self):
        """The ``located`` facts that still bind some seat."""
        return [f for f in self.located if f[3]]

    def located_broken(self, observer: int, hands_rel) -> bool:
        """The world's hands break a ``located`` fact."""
        for _, role, bound, seats in self.located_facts():
            held = sum(_cards(hands_rel[(s - observer) % self.n]).count(role) + self.revealed[s].count(role) - before
                       for s, before in seats.items())
            if held > bound:
                return True
        return False
