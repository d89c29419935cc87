"""Hidden worlds that fit one seat's record of a game: the card timeline and its solver.

A seat at a real table sees its own cards and the public events.  What the record
says about the cards it cannot see is a list of *card operations* in the order the
engine applies them (`CardRecord.ops`; seats absolute, roles 0..4):

    ("reveal",  seat, role, None)   seat loses a card of that role (it is shown)
    ("need",    seat, role, None)   a proven claim: seat holds the role now
    ("exclude", seat, role, None)   a caught bluff: seat holds no card of the role now
    ("redraw",  seat, role, cards)  the proven card goes to the deck; seat draws one
                                    (cards = (X,) for the recording seat, None otherwise)
    ("draw",    seat, None, cards)  an exchange draws 2 (cards for the recording seat)
    ("keep",    seat, None, cards)  the exchange keeps a multiset (cards: the recording
                                    seat's; None: another seat's, unseen); the rest go back
    ("return",  seat, None, None)   an exchanging seat forfeits: the drawn cards go back

A *world* chooses everything unseen: each opponent's dealt hand, each opponent's
redrawn card and each opponent's kept multiset (`World`).  It fits the record when
every reveal, proven claim and caught bluff holds in it and no role ever has more
than 3 copies outside the deck.  Between draws cards only leave hands (to the deck
or face up), so it is enough to count at the deal and right after every draw; an
exchange that keeps N from hand C needs the cards of N not in C in the deck, i.e.
the per-role maximum of C and N counted at its draw.

`find_world` is an exact depth-first search over the opponents' hand *epochs* (a hand
between two renewals), seat by seat, epochs in time order:

* per seat, the hands each epoch may start with are filtered forwards and backwards
  through the seat's own facts (a reveal needs the role, a caught bluff forbids it, a
  redraw keeps the other card), so the search never enters a branch that the seat's
  own record rules out;
* every count (a role, at the deal or after a draw) holds the chosen epochs'
  cards plus, for epochs not chosen yet, the fewest cards any of their possible hands
  has there; a choice that pushes a count past 3 is cut at once;
* values are tried with the previous world's first (a record that still fits keeps
  its world), then the ones that leave the most room.

The search visits at most `NODE_LIMIT` candidate hands; past that it raises
`SearchLimit` (the slow test of tests/test_tracker.py counts the candidates per search over
random games and requires a twentieth of the bound at most).
"""
from __future__ import annotations

import dataclasses
import itertools

from coupjax import rules

COPIES = rules.COPIES_PER_ROLE
NUM_ROLES = rules.NUM_ROLES
NODE_LIMIT = 200_000
MULTISETS = {0: [()], 1: [(r,) for r in range(NUM_ROLES)],
             2: [tuple(p) for p in itertools.combinations_with_replacement(range(NUM_ROLES), 2)]}


class SearchLimit(RuntimeError):
    """The world search visited `NODE_LIMIT` candidates without settling the question."""


@dataclasses.dataclass
class World:
    """Everything unseen: ``hands`` {opponent seat: dealt hand (sorted tuple)},
    ``redraw`` {op index: redrawn role}, ``keep`` {op index: kept multiset (sorted tuple)}
    for the opponents' redraws and keeps (op indices into `CardRecord.ops`)."""

    hands: dict
    redraw: dict
    keep: dict

    def get(self, var):
        kind, key = var
        return getattr(self, kind).get(key)


@dataclasses.dataclass
class CardRecord:
    """The card side of a seat's record: the table size, the recording seat, its dealt
    hand (in hand-index order) and the card operations so far."""

    num_players: int
    seat: int
    hand: tuple
    ops: list = dataclasses.field(default_factory=list)

    def opponents(self):
        return [s for s in range(self.num_players) if s != self.seat]


# ---------------------------------------------------------------- multiset helpers
def _counts(cards):
    c = [0] * NUM_ROLES
    for r in cards:
        c[r] += 1
    return c


def _remove(hand: tuple, role: int) -> tuple:
    i = hand.index(role)
    return hand[:i] + hand[i + 1:]


def _add(hand: tuple, role: int) -> tuple:
    return tuple(sorted(hand + (role,)))


def _union(a: tuple, b: tuple) -> tuple:
    """Per-role maximum of two multisets: C plus the cards of N that C lacks."""
    ca, cb = _counts(a), _counts(b)
    return tuple(r for r in range(NUM_ROLES) for _ in range(max(ca[r], cb[r])))


def _minus(a: tuple, b: tuple) -> list:
    """The cards of ``a`` not in ``b`` (multiset difference)."""
    cb = _counts(b)
    out = []
    for r in a:
        if cb[r]:
            cb[r] -= 1
        else:
            out.append(r)
    return out


# ---------------------------------------------------------------- the record as epochs
@dataclasses.dataclass
class _Epoch:
    start: int  # op index of the renewal (-1: the deal; the draw op for an exchange)
    size: int  # cards at the start
    how: str  # "deal" | "redraw" | "exchange"
    var: tuple  # the World variable of the start hand: ("hands", seat) / ("redraw", i) / ("keep", i)
    role: int = -1  # redraw: the proven role given back
    items: list = dataclasses.field(default_factory=list)  # (op index, kind, role) within the epoch
    draw: int | None = None  # op index of an exchange draw that ends the epoch
    checks: list = dataclasses.field(default_factory=list)  # check indices in the span


def _epochs(record: CardRecord, seat: int) -> list[_Epoch]:
    eps = [_Epoch(-1, rules.HAND_SIZE, "deal", ("hands", seat))]
    size = rules.HAND_SIZE
    for i, (kind, s, role, _) in enumerate(record.ops):
        if s != seat:
            continue
        cur = eps[-1]
        if kind in ("reveal", "need", "exclude"):
            cur.items.append((i, kind, role))
            size -= kind == "reveal"
        elif kind == "redraw":
            eps.append(_Epoch(i, size, "redraw", ("redraw", i), role=role))
        elif kind == "draw":
            cur.draw = i
        elif kind == "keep":
            eps.append(_Epoch(cur.draw, size, "exchange", ("keep", i)))
        elif kind == "return":
            pass  # the drawn cards go back; the hand was shown by the reveals before
    return eps


def _end_hand(ep: _Epoch, hand: tuple, upto: int | None = None):
    """The hand after the epoch's own facts up to op index ``upto`` (all if None), or
    None if a fact fails."""
    for i, kind, role in ep.items:
        if upto is not None and i > upto:
            break
        if kind == "reveal":
            if role not in hand:
                return None
            hand = _remove(hand, role)
        elif kind == "need":
            if role not in hand:
                return None
        elif role in hand:  # exclude
            return None
    return hand


def _hand_at_draw(ep: _Epoch, hand: tuple) -> tuple:
    return _end_hand(ep, hand, ep.draw)


def _successors(prev: _Epoch, nxt: _Epoch, hand: tuple):
    """Start hands of ``nxt`` reachable from ``hand`` (prev's start), given prev's facts."""
    if nxt.how == "redraw":
        end = _end_hand(prev, hand, nxt.start)
        if end is None or nxt.role not in end:
            return []
        kept = _remove(end, nxt.role)
        return sorted({_add(kept, x) for x in range(NUM_ROLES)})
    return list(MULTISETS[nxt.size])


class _Seat:
    """One opponent's epochs with their feasible start hands (forward-backward filter)."""

    def __init__(self, record: CardRecord, seat: int, checks: list[int]):
        self.seat = seat
        self.eps = _epochs(record, seat)
        starts = [ep.start for ep in self.eps] + [len(record.ops) + 1]
        for k, ep in enumerate(self.eps):
            nxt = starts[k + 1]
            if k + 1 < len(self.eps) and self.eps[k + 1].how == "exchange":
                nxt = self.eps[k + 1].start  # the draw belongs to the next epoch
            ep.checks = [c for c, at in enumerate(checks) if ep.start <= at < nxt]
        self.check_at = checks
        ok = [[h for h in MULTISETS[ep.size] if _end_hand(ep, h) is not None] for ep in self.eps]
        fwd = [set(ok[0])]
        for k in range(1, len(self.eps)):
            reach = set()
            for h in fwd[-1]:
                reach.update(_successors(self.eps[k - 1], self.eps[k], h))
            fwd.append(reach & set(ok[k]))
        back = [set() for _ in self.eps]
        back[-1] = fwd[-1]
        for k in range(len(self.eps) - 2, -1, -1):
            back[k] = {h for h in fwd[k] if any(x in back[k + 1] for x in _successors(self.eps[k], self.eps[k + 1], h))}
        self.feasible = back

    def contribution(self, k: int, hand: tuple, prev_at_draw: tuple | None) -> dict:
        """{check index: role counts} of epoch ``k`` starting with ``hand``."""
        ep = self.eps[k]
        out = {}
        for c in ep.checks:
            at = self.check_at[c]
            if ep.how == "exchange" and at == ep.start:
                cards = _union(prev_at_draw, hand)
            else:
                cards = _end_hand(ep, hand, at)
            out[c] = _counts(cards)
        return out

    def lower(self, k: int) -> dict:
        """{check index: fewest cards of each role} over the epoch's feasible hands."""
        ep = self.eps[k]
        out = {}
        for c in ep.checks:
            at = self.check_at[c]
            rows = [_counts(_end_hand(ep, h, at)) for h in self.feasible[k]]
            out[c] = [min(row[r] for row in rows) for r in range(NUM_ROLES)] if rows else [0] * NUM_ROLES
        return out


def _fixed_counts(record: CardRecord):
    """Check points (op indices: -1 the deal, then every draw) and, at each, the cards
    outside the deck that the recording seat knows: every revealed card, its own hand
    and its own drawn cards."""
    me = record.seat
    hand, drawn = list(record.hand), []
    revealed = [0] * NUM_ROLES

    def known():
        own = _counts(hand + drawn)
        return [revealed[r] + own[r] for r in range(NUM_ROLES)]

    checks, fixed = [-1], [known()]
    for i, (kind, s, role, cards) in enumerate(record.ops):
        if kind == "reveal":
            revealed[role] += 1
            if s == me:
                hand.remove(role)
        elif s == me and kind == "redraw":
            hand.remove(role)
            hand.append(cards[0])
        elif s == me and kind == "draw":
            drawn = list(cards)
        elif s == me and kind == "keep":
            hand, drawn = list(cards), []
        elif s == me and kind == "return":
            drawn = []
        if kind in ("redraw", "draw"):
            checks.append(i)
            fixed.append(known())
    return checks, fixed


# ---------------------------------------------------------------- the search
def find_world(record: CardRecord, hint: World | None = None, limit: int = NODE_LIMIT,
               stats: dict | None = None) -> World | None:
    """A world that fits the whole record (module doc), the ``hint``'s values first; None
    if there is none.  Raises `SearchLimit` after ``limit`` candidates; ``stats`` (a dict)
    receives ``nodes``, the candidates visited."""
    checks, fixed = _fixed_counts(record)
    cap = [[COPIES - f[r] for r in range(NUM_ROLES)] for f in fixed]
    if any(x < 0 for row in cap for x in row):
        return None
    seats = [_Seat(record, s, checks) for s in record.opponents()]
    if any(not feas for st in seats for feas in st.feasible):
        return None
    total = [[0] * NUM_ROLES for _ in checks]
    lows = {}
    for st in seats:
        for k in range(len(st.eps)):
            lows[st.seat, k] = st.lower(k)
            for c, row in lows[st.seat, k].items():
                for r in range(NUM_ROLES):
                    total[c][r] += row[r]
    if any(total[c][r] > cap[c][r] for c in range(len(checks)) for r in range(NUM_ROLES)):
        return None
    # decisions in time order over all seats: (start op index, seat position, epoch)
    order = sorted((ep.start, j, k) for j, st in enumerate(seats) for k, ep in enumerate(st.eps))
    chosen: dict = {}
    budget = [limit]
    failed: set = set()  # (decision, every seat's current hand): the rest cannot be completed

    def fits(delta):
        return all(total[c][r] + delta[c][r] <= cap[c][r] for c in delta for r in range(NUM_ROLES))

    def shift(delta, sign):
        for c, row in delta.items():
            t = total[c]
            for r in range(NUM_ROLES):
                t[r] += sign * row[r]

    def room(delta):
        return min((cap[c][r] - total[c][r] - delta[c][r] for c in delta for r in range(NUM_ROLES)), default=COPIES)

    def place(d: int, current: tuple) -> bool:
        """Choose decision ``d`` onwards; ``current``: each seat's current epoch start hand.
        The counts still to check depend only on ``current``, so a failure is remembered."""
        if d == len(order):
            return True
        if (d, current) in failed:
            return False
        _, j, k = order[d]
        st, prev_hand = seats[j], current[j]
        ep = st.eps[k]
        if k == 0:
            options = list(st.feasible[0])
        else:
            options = [h for h in _successors(st.eps[k - 1], ep, prev_hand) if h in st.feasible[k]]
        at_draw = _hand_at_draw(st.eps[k - 1], prev_hand) if ep.how == "exchange" else None
        kept = _remove(_end_hand(st.eps[k - 1], prev_hand, ep.start), ep.role) if ep.how == "redraw" else None
        low = lows[st.seat, k]
        scored = []
        for h in options:
            budget[0] -= 1
            if budget[0] < 0:
                raise SearchLimit(f"the world search visited {limit} candidate hands without an answer")
            contrib = st.contribution(k, h, at_draw)
            delta = {c: [contrib[c][r] - low[c][r] for r in range(NUM_ROLES)] for c in contrib}
            if fits(delta):
                wanted = _hinted(hint, ep, h, kept)
                scored.append((not wanted, -room(delta), h, delta))
        scored.sort(key=lambda x: x[:3])
        for _, _, h, delta in scored:
            shift(delta, +1)
            chosen[ep.var] = _minus(h, kept)[0] if ep.how == "redraw" else h
            if place(d + 1, current[:j] + (h,) + current[j + 1:]):
                return True
            shift(delta, -1)
            del chosen[ep.var]
        failed.add((d, current))
        return False

    try:
        found = place(0, (None,) * len(seats))
    finally:
        if stats is not None:
            stats["nodes"] = limit - budget[0]
    if not found:
        return None
    world = World({}, {}, {})
    for (kind, key), value in chosen.items():
        getattr(world, kind)[key] = value
    return world


def _hinted(hint: World | None, ep: _Epoch, hand: tuple, kept: tuple | None) -> bool:
    """The hint chose this start hand (for a redraw: this redrawn card)."""
    value = None if hint is None else hint.get(ep.var)
    if value is None:
        return False
    return hand == (_add(kept, value) if ep.how == "redraw" else tuple(value))


# ---------------------------------------------------------------- layouts
def layout(record: CardRecord, world: World, upto: int | None = None, order: dict | None = None):
    """The hidden cards after ``ops[:upto]`` (all by default) in ``world``.

    Returns (hands, drawn, deck): hands [n] lists (the recording seat's in hand-index
    order as the engine keeps it, the others sorted, or in ``order[seat]`` when given),
    drawn: the exchanging seat's drawn cards ([] if none; another seat's draw holds the
    cards its keep needs), deck: the rest (role order; its order is unseen).
    """
    n, me = record.num_players, record.seat
    ops = record.ops if upto is None else record.ops[:upto]
    hands = [list(world.hands[s]) if s != me else list(record.hand) for s in range(n)]
    revealed = [0] * NUM_ROLES
    drawn, drawer, drew_at = [], None, None
    for i, (kind, s, role, cards) in enumerate(ops):
        if kind == "reveal":
            hands[s].remove(role)  # the other card moves to index 0, as in the engine
            revealed[role] += 1
        elif kind == "redraw":
            if s == me:
                slot = 0 if hands[s][0] == role else 1
                hands[s][slot] = cards[0]
            else:
                hands[s] = sorted(_remove(tuple(hands[s]), role) + (world.redraw[i],))
        elif kind == "draw":
            drawer, drew_at = s, i
            drawn = list(cards) if s == me else []
        elif kind == "keep":
            hands[s] = list(cards) if s == me else list(world.keep[i])
            drawn, drawer = [], None
        elif kind == "return":
            drawn, drawer = [], None
    if drawer is not None and drawer != me:
        nxt = next((j for j in range(drew_at + 1, len(record.ops)) if record.ops[j][0] == "keep"
                    and record.ops[j][1] == drawer), None)
        drawn = _minus(tuple(world.keep[nxt]), tuple(hands[drawer])) if nxt is not None else []
    held = _counts([c for h in hands for c in h] + drawn)
    rest = [COPIES - held[r] - revealed[r] for r in range(NUM_ROLES)]
    if any(x < 0 for x in rest):
        raise AssertionError(f"the world breaks card conservation: {rest}")
    if drawer is not None and drawer != me:
        while len(drawn) < 2:  # any cards of the deck complete another seat's draw
            r = next(r for r in range(NUM_ROLES) if rest[r] > 0)
            rest[r] -= 1
            drawn.append(r)
    deck = [r for r in range(NUM_ROLES) for _ in range(rest[r])]
    if order:
        for s, want in order.items():
            if sorted(want) == sorted(hands[s]):
                hands[s] = list(want)
    return hands, drawn, deck
