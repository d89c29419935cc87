"""A plain-Python reference model of the Coup rules (``docs/rules.md``).

Stdlib only, written for clarity and for speed (no copies per step).  Used as the
oracle of a differential test against the JAX engine and as a Python speed baseline.

State is kept in plain lists of role names:

* ``hands[s]``    hidden cards of seat ``s`` (index order = ``reveal:<i>`` order)
* ``revealed[s]`` revealed cards of seat ``s`` in reveal order
* ``deck``        the court deck, next card first
* ``drawn``       the 2 cards an exchanging actor has drawn while it chooses, else ``[]``

Deck order: before the first reshuffle a draw takes ``deck[0]``; a reshuffle is
realised lazily (flag ``shuffled``, also set from the start by ``deck_shuffled=True``
as after a random deal): from then on every draw takes a uniformly random card of the
deck (``self.rng.randrange``).  Cards put back are appended.  To follow another
engine's random choices, ``play(name, draws=[...])`` gives the cards that engine drew
in the step: a uniform draw takes the next of them out of the deck (it must be there),
a draw before any reshuffle takes ``deck[0]`` whatever the engine drew.
"""
from __future__ import annotations

import itertools
import random

# Same constants as coupjax.rules (kept local so this module needs only the stdlib).
ROLES = ("duke", "assassin", "captain", "ambassador", "contessa")
ROLE_INDEX = {r: i for i, r in enumerate(ROLES)}
COPIES_PER_ROLE = 3
START_COINS = 2
TURN_CAP = 200
KEEPS = tuple((r,) for r in range(5)) + tuple(itertools.combinations_with_replacement(range(5), 2))
KEEP_NAMES = tuple("keep:" + "+".join(ROLES[r] for r in roles) for roles in KEEPS)
# keep name -> tuple of role names (role-index order)
KEEP_ROLES = {name: tuple(ROLES[r] for r in roles) for name, roles in zip(KEEP_NAMES, KEEPS)}

CLAIM = {"tax": "duke", "assassinate": "assassin", "steal": "captain", "exchange": "ambassador"}
COST = {"coup": 7, "assassinate": 3}
GAIN = {"income": 1, "foreign_aid": 2, "tax": 3}
REACTION_NAMES = ("pass", "challenge", "block:duke", "block:contessa", "block:captain", "block:ambassador")
REVEAL_NAMES = ("reveal:0", "reveal:1")

# after a loss is paid, the turn either ends or the pending main action resolves
END, RESOLVE = 0, 1

_NAME_CACHE: dict = {}


def _names(n: int):
    """(set of all protocol names, dict name -> (kind, target seat or None)) for n seats."""
    if n not in _NAME_CACHE:
        parse = {k: (k, None) for k in ("income", "foreign_aid", "tax", "exchange")}
        for kind in ("coup", "assassinate", "steal"):
            for t in range(n):
                parse[f"{kind}:{t}"] = (kind, t)
        proto = set(parse) | set(REACTION_NAMES) | set(REVEAL_NAMES) | set(KEEP_NAMES)
        _NAME_CACHE[n] = (frozenset(proto), parse)
    return _NAME_CACHE[n]


def _keep_name(roles) -> str:
    return "keep:" + "+".join(sorted(roles, key=ROLE_INDEX.__getitem__))


class DrawMismatch(AssertionError):
    """Another engine's draws (`RefGame.play`'s ``draws``) break the rules."""


class RefGame:
    def __init__(self, num_players=4, hands=None, deck=None, coins=None, revealed=None,
                 current_player=0, turn=0, seed=0, deck_shuffled=False):
        n = num_players
        if not isinstance(n, int) or not 2 <= n <= 6:
            raise ValueError(f"num_players must be an int from 2 to 6, got {n!r}")
        self.num_players = n
        self.rng = random.Random(seed)
        self._proto, self._parse = _names(n)
        self._coup_names = [f"coup:{t}" for t in range(n)]
        self._ass_names = [f"assassinate:{t}" for t in range(n)]
        self._steal_names = [f"steal:{t}" for t in range(n)]

        if hands is None:
            if deck is not None or revealed is not None:
                raise ValueError("deck/revealed may only be given together with hands")
            cards = [r for r in ROLES for _ in range(COPIES_PER_ROLE)]
            self.rng.shuffle(cards)
            hands = [cards[2 * s:2 * s + 2] for s in range(n)]
            deck = cards[2 * n:]
        hands = [list(h) for h in hands]
        revealed = [[] for _ in range(n)] if revealed is None else [list(r) for r in revealed]
        if len(hands) != n or len(revealed) != n:
            raise ValueError(f"hands and revealed need {n} entries")
        for s in range(n):
            if len(hands[s]) + len(revealed[s]) > 2:
                raise ValueError(f"seat {s} has more than 2 cards (hidden + revealed)")
        if deck is None:  # convenience: the rest of the cards, shuffled from the seed
            left = {r: COPIES_PER_ROLE for r in ROLES}
            for c in itertools.chain(*hands, *revealed):
                if c in left:
                    left[c] -= 1
            deck = [r for r in ROLES for _ in range(max(left[r], 0))]
            self.rng.shuffle(deck)
        deck = list(deck)
        self._check_cards(hands, revealed, deck, [])
        self.hands = hands
        self.revealed = revealed
        self.deck = deck
        self.drawn = []
        self.shuffled = bool(deck_shuffled)
        self._draws = None  # the other engine's draws of the current step (see play)

        self.coins = [START_COINS] * n if coins is None else [int(c) for c in coins]
        if len(self.coins) != n:
            raise ValueError(f"coins needs {n} entries")
        self.turn = int(turn)
        # seats already without influence count as eliminated before the start, in seat order
        self.elim_order = [s for s in range(n) if not hands[s]]
        if not hands[current_player]:
            raise ValueError(f"current_player {current_player} has no hidden cards")

        self.done = False
        self.winner = None
        self.placements = None
        self.phase = "action"
        self.current_player = current_player
        self.actor = current_player
        self._clear_turn()
        if n - len(self.elim_order) < 2:
            self._finish([current_player] + self.elim_order[::-1])

    # ------------------------------------------------------------ helpers
    @staticmethod
    def _check_cards(hands, revealed, deck, drawn):
        counts = {r: 0 for r in ROLES}
        for c in itertools.chain(*hands, *revealed, deck, drawn):
            if c not in counts:
                raise ValueError(f"unknown role {c!r}; roles are {', '.join(ROLES)}")
            counts[c] += 1
        if any(v != COPIES_PER_ROLE for v in counts.values()):
            raise ValueError(f"cards must total 3 of each role, got {counts}")

    @property
    def alive(self):
        return [len(h) > 0 for h in self.hands]

    def _clear_turn(self):
        self.act = None        # main action kind of this turn
        self.target = None
        self.claim = None      # role claimed by the main action (or None)
        self.responder = None  # seat whose reaction is awaited
        self.blocker = None
        self.block_role = None
        self.after_loss = None  # END or RESOLVE while phase == "lose"

    def _draw(self):
        if self._draws is not None:
            if not self._draws:
                raise DrawMismatch("the other engine drew fewer cards in this step")
            card = self._draws.pop(0)
            if self.shuffled:
                if card not in self.deck:
                    raise DrawMismatch(f"the other engine drew {card!r}, which is not in the deck {self.deck}")
                self.deck.remove(card)
                return card
        if self.shuffled:
            return self.deck.pop(self.rng.randrange(len(self.deck)))
        return self.deck.pop(0)

    def _finish(self, placements):
        self.done = True
        self.phase = "done"
        self.current_player = None
        self.placements = placements
        self.winner = placements[0]

    def _eliminated(self, seat) -> bool:
        """Record the elimination of ``seat``; end the match if one seat is left. True if over."""
        self.elim_order.append(seat)
        if len(self.elim_order) == self.num_players - 1:
            last = next(s for s in range(self.num_players) if self.hands[s])
            self._finish([last] + self.elim_order[::-1])
            return True
        return False

    def _lose(self, seat, then):
        """``seat`` loses 1 influence, then the turn ends (END) or the action resolves (RESOLVE)."""
        h = self.hands[seat]
        if len(h) == 2:
            self.phase = "lose"
            self.current_player = seat
            self.after_loss = then
            return
        if h:  # exactly one card: automatic
            self.revealed[seat].append(h.pop())
            if self._eliminated(seat):
                return
        self._continue(then)

    def _continue(self, then):
        self.after_loss = None
        if then == END:
            self._end_turn()
        else:
            self._resolve()

    def _end_turn(self):
        self.turn += 1
        n = self.num_players
        if self.turn >= TURN_CAP:
            hands, coins = self.hands, self.coins
            survivors = sorted((s for s in range(n) if hands[s]),
                               key=lambda s: (-len(hands[s]), -coins[s], s))
            self._finish(survivors + self.elim_order[::-1])
            return
        s = (self.actor + 1) % n
        while not self.hands[s]:
            s = (s + 1) % n
        self._clear_turn()
        self.actor = s
        self.current_player = s
        self.phase = "action"

    def _resolve(self):
        act, a, t = self.act, self.actor, self.target
        if act in GAIN:
            self.coins[a] += GAIN[act]
            self._end_turn()
        elif act == "steal":
            if self.hands[t]:
                amount = min(2, self.coins[t])
                self.coins[t] -= amount
                self.coins[a] += amount
            self._end_turn()
        elif act == "assassinate" or act == "coup":
            if self.hands[t]:
                self._lose(t, END)
            else:
                self._end_turn()
        else:  # exchange
            self.drawn = [self._draw(), self._draw()]
            self.phase = "exchange"
            self.current_player = a

    def _truth_check(self, claimant, role, challenger, is_block):
        h = self.hands[claimant]
        if role in h:
            i = h.index(role)
            self.deck.append(role)
            self.shuffled = True
            h[i] = self._draw()
            self._lose(challenger, END if is_block else RESOLVE)
        elif is_block:
            self._lose(claimant, RESOLVE)
        else:
            if self.act == "assassinate":
                self.coins[self.actor] += COST["assassinate"]
            self._lose(claimant, END)

    def _next_responder(self):
        n, a = self.num_players, self.actor
        s = (self.responder + 1) % n
        while s != a:
            if self.hands[s]:
                self.responder = s
                self.current_player = s
                return
            s = (s + 1) % n
        self._resolve()

    def _open_window(self):
        self.phase = "react"
        self.responder = self.actor
        self._next_responder()  # there is always an alive opponent while not done

    # ------------------------------------------------------------ protocol
    def _legal(self):
        ph = self.phase
        if ph == "action":
            a, n, hands = self.actor, self.num_players, self.hands
            opp = [t for t in range(n) if t != a and hands[t]]
            c = self.coins[a]
            if c >= 10:
                return [self._coup_names[t] for t in opp]
            out = ["income", "foreign_aid", "tax", "exchange"]
            if c >= 7:
                out += [self._coup_names[t] for t in opp]
            if c >= 3:
                out += [self._ass_names[t] for t in opp]
            out += [self._steal_names[t] for t in opp]
            return out
        if ph == "react":
            out = ["pass"]
            act = self.act
            if act != "foreign_aid":
                out.append("challenge")
            if act == "foreign_aid":
                out.append("block:duke")
            elif self.responder == self.target:
                if act == "assassinate":
                    out.append("block:contessa")
                elif act == "steal":
                    out += ["block:captain", "block:ambassador"]
            return out
        if ph == "answer_block":
            return ["pass", "challenge"]
        if ph == "lose":
            return ["reveal:0", "reveal:1"]
        if ph == "exchange":
            pool = self.hands[self.actor] + self.drawn
            k = len(self.hands[self.actor])
            if k == 1:
                return list({"keep:" + c for c in pool})
            return list({_keep_name(p) for p in itertools.combinations(pool, 2)})
        return []

    def legal_actions(self):
        return sorted(self._legal())

    def play(self, name, draws=None):
        """Play protocol ``name``.  ``draws``: the cards another engine drew in this
        step, in order; the model's uniform draws take them, and a `DrawMismatch` says
        that engine drew a card not in the deck, or fewer or more cards than the rules."""
        if draws is None:
            return self._play(name)
        self._draws = list(draws)
        try:
            self._play(name)
            if self._draws:
                raise DrawMismatch(f"the other engine drew more cards in this step: {self._draws} left over")
        finally:
            self._draws = None

    def _play(self, name):
        if self.done:
            raise RuntimeError("the match is over")
        legal = self._legal()
        if name not in legal:
            if name in self._proto:
                self._forfeit()
                return
            raise ValueError(f"{name!r} is not a protocol name; legal now: {', '.join(sorted(legal))}")
        ph = self.phase
        if ph == "action":
            kind, t = self._parse[name]
            a = self.actor
            self.coins[a] -= COST.get(kind, 0)
            self.act, self.target, self.claim = kind, t, CLAIM.get(kind)
            if kind == "income":
                self._resolve()
            elif kind == "coup":
                self._lose(t, END)
            else:
                self._open_window()
        elif ph == "react":
            if name == "pass":
                self._next_responder()
            elif name == "challenge":
                self._truth_check(self.actor, self.claim, self.responder, False)
            else:
                self.blocker = self.responder
                self.block_role = name[6:]
                self.phase = "answer_block"
                self.current_player = self.actor
        elif ph == "answer_block":
            if name == "pass":
                self._end_turn()
            else:
                self._truth_check(self.blocker, self.block_role, self.actor, True)
        elif ph == "lose":
            s = self.current_player
            self.revealed[s].append(self.hands[s].pop(1 if name == "reveal:1" else 0))
            self._continue(self.after_loss)
        else:  # exchange
            a = self.actor
            rest = self.hands[a] + self.drawn
            kept = list(KEEP_ROLES[name])
            for c in kept:
                rest.remove(c)
            self.hands[a] = kept
            self.drawn = []
            self.deck.extend(rest)
            self.shuffled = True
            self._end_turn()

    def _forfeit(self):
        s, ph = self.current_player, self.phase
        self.revealed[s].extend(self.hands[s])
        self.hands[s] = []
        if ph == "exchange":
            self.deck.extend(self.drawn)
            self.drawn = []
            self.shuffled = True
        if self._eliminated(s):
            return
        if ph == "react":
            self._next_responder()
        elif ph == "lose":
            self._continue(self.after_loss)
        else:  # action, answer_block, exchange: the sender is the actor
            self._end_turn()

    def set_hidden(self, hands, deck, drawn):
        """Overwrite the hidden information (to sync with another engine); ``shuffled`` is kept."""
        hands = [list(h) for h in hands]
        if len(hands) != self.num_players or any(len(h) != len(o) for h, o in zip(hands, self.hands)):
            raise ValueError("hidden card counts per seat must not change")
        if len(drawn) != len(self.drawn):
            raise ValueError("number of drawn cards must not change")
        self._check_cards(hands, self.revealed, deck, drawn)
        self.hands = hands
        self.deck = list(deck)
        self.drawn = list(drawn)

    def __repr__(self):
        return (f"RefGame(n={self.num_players}, turn={self.turn}, phase={self.phase}, "
                f"current={self.current_player}, hands={self.hands}, coins={self.coins}, "
                f"revealed={self.revealed}, deck={self.deck}, drawn={self.drawn})")
