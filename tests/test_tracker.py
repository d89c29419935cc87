"""The public-information tracker: a seat's record of a real game (`coupjax.tracker`).

* Random games at 2-6 players (every seat in turn; uniform play and long games full of
  exchanges and claims; forfeits): a tracker fed only the public events and the seat's
  own cards and draws gives, at every step, exactly the engine's observation for that
  seat and the engine's public state, and its world breaks no public fact (the oracle
  of tests/public_record.py, including the facts the posterior ignores).  ``-m slow``
  plays thousands and reports the cost per entry.
* The world search is exact: brute force over every world of small random records.
* The advice for a record equals the advisor's and the search's on the engine state.
* Impossible entries are refused with the rule they break; the record stays as it was.
* Seat records: round trip, strict loading (line and field), `Match.load` refuses them.
"""
from __future__ import annotations

import itertools
import json
import os
import random
import time
from collections import Counter

import jax
import numpy as np
import pytest

from coupjax import rules
from coupjax import search
from coupjax.advice.action_ev import recommend_action
from coupjax.advice.recommend import advice_params, recommend
from coupjax.advice.explain import challenge_advice
from coupjax.events import event_to_dict, last_event
from coupjax.game import deal
from coupjax.match import Match, ReplayError, compiled
from coupjax.tracker import Tracker, TrackerError, card_timeline
from coupjax.tracker import core
from tests.play import stalling_choice
from tests.public_record import PublicRecord

PUBLIC_FIELDS = ("current_player", "rewards", "terminated", "truncated", "_step_count", "_turn", "_phase", "_revealed",
                 "_coins", "_deck_size", "_shuffled", "_actor", "_action", "_target", "_blocker", "_block_role",
                 "_after_loss", "_elim_order", "_num_elim", "_claims", "_blocks", "_challenges_won",
                 "_challenges_lost", "_renewals", "_disproven")


# ---------------------------------------------------------------- random games
STYLES = {  # the actions a style prefers (80 %): long games full of claims and exchanges
    "long": lambda name: name in ("pass", "exchange", "tax", "income") or name.startswith(("steal", "keep", "reveal")),
}


def _pick(rng, style, legal, names):
    if style == "uniform":
        return rng.choice(legal)
    if style == "stall":  # to the turn cap (tests/play.py)
        named = {names(a): a for a in legal}
        return named[stalling_choice(rng, list(named))]
    calm = [a for a in legal if STYLES[style](names(a))]
    return rng.choice(calm) if calm and rng.random() < 0.8 else rng.choice(legal)


def random_game(n: int, seed: int, style: str = "uniform", illegal: float | None = None):
    """Yield (engine state after each step, its private event dict) of one random game
    (``illegal``: the share of actions outside the legal set, 1.5 % unless stalling to the cap)."""
    illegal = (0.0 if style == "stall" else 0.015) if illegal is None else illegal
    _, init, step, _ = compiled(n)
    rng = random.Random(seed)
    state = init(jax.random.PRNGKey(seed))
    yield state, None
    k = 0
    while not bool(state.terminated):
        mask = np.asarray(state.legal_action_mask)
        if rng.random() < illegal:
            a = rng.choice(list(np.flatnonzero(~mask)))
        else:
            p = int(state.current_player)
            a = _pick(rng, style, list(np.flatnonzero(mask)), lambda a: rules.action_name(a, p, n))
        k += 1
        state = step(state, np.int32(a), np.asarray([seed, k], np.uint32))  # a raw PRNG key
        yield state, event_to_dict(last_event(state), n)


def own_facts(private: dict, seat: int) -> dict:
    """What the recording seat adds to a public event: its keep, redraw and exchange draw."""
    out = {}
    if private["seat"] == seat and private["phase"] == "exchange" and not private["forfeit"]:
        out["keep"] = private["action"]
    ch = private["challenge"]
    if ch and ch["seat"] == seat and not ch["bluff_caught"]:
        out["redraw"] = private["redraw"]
    if private["exchange_drawn"] and private["actor"] == seat:
        out["drawn"] = private["exchange_drawn"]
    return out


def _rows(hands, n):
    return [row + [-1] * (2 - len(row)) for row in hands]


def follow(n: int, seed: int, seat: int, style: str, counts: Counter, times: list | None = None) -> Tracker:
    """Play one game, feeding a tracker the public events and ``seat``'s own cards, and check
    every step (module doc)."""
    fn = core.functions(n)
    game = random_game(n, seed, style)
    state, _ = next(game)
    tracker = Tracker(n, seat, [rules.ROLES[c] for c in deal.hands(state)[seat]])
    oracle = PublicRecord(n)
    for state, private in game:
        public = event_to_dict(last_event(state), n, public=True)
        t0 = time.perf_counter()
        tracker.add_event(public, **own_facts(private, seat))
        if times is not None:
            times.append(time.perf_counter() - t0)
        oracle.update(public)
        _count(counts, private, seat)
        mine = tracker.state()
        where = f"n={n} seed={seed} seat={seat} step={private['step']}"
        assert np.array_equal(tracker.observation(), np.asarray(fn.observe(state, seat))), where
        a, b = jax.device_get(state), jax.device_get(mine)
        for field in PUBLIC_FIELDS:
            assert np.array_equal(getattr(a, field), getattr(b, field)), (where, field)
        assert np.array_equal(a._hands[seat], b._hands[seat]), where  # own cards, in hand-index order
        exchanging_other = int(a._phase) == rules.PH_EXCHANGE and int(a._actor) != seat
        if not exchanging_other:
            assert np.array_equal(a.legal_action_mask, b.legal_action_mask), where
        if int(a.current_player) == seat:
            assert np.array_equal(a.observation, b.observation), where
        hands = deal.hands(b)
        hands_rel = _rows([hands[(seat + k) % n] for k in range(n)], n)
        own_drawn = deal.drawn(b) if int(a._phase) == rules.PH_EXCHANGE and int(a._actor) == seat else []
        bad = oracle.contradictions(seat, hands[seat], own_drawn, hands_rel, deal.deck_order(b), deal.drawn(b))
        assert not bad, (where, bad)
        assert not oracle.located_broken(seat, hands_rel) and not oracle.kept_broken(seat, hands_rel), where
    return tracker


def _count(counts: Counter, e: dict, seat: int) -> None:
    ch = e["challenge"]
    counts["steps"] += 1
    counts["challenge proven"] += bool(ch and not ch["bluff_caught"])
    counts["bluff caught"] += bool(ch and ch["bluff_caught"])
    counts["own redraw"] += bool(ch and not ch["bluff_caught"] and ch["seat"] == seat)
    counts["block"] += e["action"].startswith("block:")
    counts["exchange"] += e["phase"] == "exchange"
    counts["own exchange"] += e["phase"] == "exchange" and e["seat"] == seat
    counts["forfeit"] += e["forfeit"]
    counts["own forfeit"] += e["forfeit"] and e["seat"] == seat
    counts["capped"] += e["game_over"] and e["turn"] == rules.TURN_CAP - 1


def _games(count: int, first_seed: int):
    """(n, seed, seat, style) of ``count`` games: table sizes and seats in turn, every
    style (uniform play, long games full of claims and exchanges, stalling to the cap)."""
    styles = ("uniform", "long", "long", "uniform")
    for g in range(count):
        n = 2 + g % 5
        yield n, first_seed + g, (g // 5) % n, "stall" if (g // 5) % 10 == 9 else styles[(g // 5) % 4]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_a_seat_sees_what_the_engine_shows_it(n):
    """Two games per table size (uniform play, a long game): the observation, the public
    state and a consistent world at every step (the slow test plays thousands)."""
    counts = Counter()
    for g in range(2):
        follow(n, 100 * n + g, g * (n - 1), ("uniform", "long")[g], counts)  # seat 0, the last seat
    assert counts["steps"] > 20, counts


def test_one_game_with_every_kind_of_step():
    """A 4-player game followed by seat 0 with proven claims, caught bluffs, blocks, its
    own redraw and exchange, and a forfeit."""
    counts = Counter()
    follow(4, 400, 0, "long", counts)
    for kind in ("challenge proven", "bluff caught", "own redraw", "block", "exchange", "own exchange", "forfeit"):
        assert counts[kind] > 0, (kind, counts)


@pytest.mark.slow
def test_thousands_of_games(monkeypatch):
    """Thousands of games (``COUPJAX_TRACKER_GAMES``, default 3000), every table size and
    seat; prints the cost per entry, the world search's share and its work.
    Quick twin: test_one_game_with_every_kind_of_step."""
    count = int(os.environ.get("COUPJAX_TRACKER_GAMES", "3000"))
    nodes, search_ms = [], []
    original = card_timeline.find_world

    def counted(record, hint=None, limit=card_timeline.NODE_LIMIT, stats=None):
        box, t0 = {}, time.perf_counter()
        try:
            return original(record, hint, limit, box)
        finally:
            search_ms.append((time.perf_counter() - t0) * 1000)
            nodes.append(box.get("nodes", 0))
    monkeypatch.setattr(core, "find_world", counted)
    counts, times, seats = Counter(), [], Counter()
    for n, seed, seat, style in _games(count, 10_000):
        seats[n, seat] += 1
        follow(n, seed, seat, style, counts, times)
    assert counts["own forfeit"] and counts["capped"], counts
    assert all(seats[n, s] for n in range(2, 7) for s in range(n)), seats
    t, w, ms = np.asarray(times) * 1000, np.asarray(nodes), np.asarray(search_ms)
    sizes = Counter()
    for (n, _), k in seats.items():
        sizes[n] += k
    print(f"\n{count} games (by table size {dict(sorted(sizes.items()))}, every seat), {len(t)} entries: "
          f"whole entry median {np.median(t):.2f} ms, p99 {np.percentile(t, 99):.1f} ms, max {t.max():.0f} ms; "
          f"world searches {len(w)} (one per entry that moves cards, one per deal): time median {np.median(ms):.2f} ms, "
          f"p99 {np.percentile(ms, 99):.2f} ms, max {ms.max():.1f} ms; candidate hands median {np.median(w):.0f}, "
          f"p99 {np.percentile(w, 99):.0f}, max {w.max()} (bound {card_timeline.NODE_LIMIT}); {dict(counts)}")
    assert w.max() < card_timeline.NODE_LIMIT // 20


# ---------------------------------------------------------------- the world search is exact
def _fits(record: card_timeline.CardRecord, world: card_timeline.World) -> bool:
    """An independent check of a world against a record: every fact, and at most 3 of a
    role outside the deck at every moment (another seat's exchange draws what its keep needs)."""
    me, ops = record.seat, record.ops
    hands = {s: list(world.hands[s]) for s in record.opponents()}
    hands[me] = list(record.hand)
    revealed, drawn = Counter(), []

    def counts_ok():
        total = Counter(c for h in hands.values() for c in h) + Counter(drawn) + revealed
        return all(v <= 3 for v in total.values())

    if not counts_ok():
        return False
    for i, (kind, s, role, cards) in enumerate(ops):
        if kind in ("reveal", "need") and role not in hands[s] or kind == "exclude" and role in hands[s]:
            return False
        if kind == "reveal":
            hands[s].remove(role)
            revealed[role] += 1
        elif kind == "redraw":
            hands[s].remove(role)
            hands[s].append(cards[0] if s == me else world.redraw[i])
        elif kind == "draw" and s == me:
            drawn = list(cards)
        elif kind == "draw":
            j = next((j for j in range(i + 1, len(ops)) if ops[j][:2] == ("keep", s)), None)
            need = Counter(world.keep[j]) - Counter(hands[s]) if j is not None else Counter()
            drawn = list(need.elements())
        elif kind == "keep":
            hands[s], drawn = list(cards if s == me else world.keep[i]), []
        elif kind == "return":
            drawn = []
        if not counts_ok():
            return False
    return True


def _random_record(rng: random.Random) -> card_timeline.CardRecord:
    n = rng.choice([2, 3])
    roles = rng.sample(range(5), 3)  # few roles: the facts collide
    hand = [rng.choice(roles), rng.choice(roles)]
    rec = card_timeline.CardRecord(n, 0, tuple(hand))
    hidden = [2] * n
    own = list(hand)
    unknown = n - 1  # opponents' variables: dealt hands, then renewals
    for _ in range(rng.randint(2, 7)):
        s = rng.randrange(n)
        if not hidden[s]:
            continue
        kind = rng.choice(["reveal", "reveal", "need", "exclude", "renew"])
        role = rng.choice(roles)
        if s == 0:
            role = rng.choice(own)
            if kind == "reveal":
                own.remove(role)
            elif kind == "renew":
                x = rng.choice(roles)
                rec.ops += [("need", 0, role, None), ("redraw", 0, role, (x,))]
                own[own.index(role)] = x
                continue
            elif kind == "exclude":
                continue
            rec.ops.append((kind, 0, role, None))
            hidden[0] -= kind == "reveal"
            continue
        if kind == "renew" and unknown < 3:
            unknown += 1
            if rng.random() < 0.5:
                rec.ops += [("need", s, role, None), ("redraw", s, role, None)]
            else:
                rec.ops += [("draw", s, None, None), ("keep", s, None, None)]
        elif kind != "renew":
            rec.ops.append((kind, s, role, None))
            hidden[s] -= kind == "reveal"
    return rec


def _all_worlds(rec: card_timeline.CardRecord):
    variables = [("hands", s, 2) for s in rec.opponents()]
    size = {s: 2 for s in range(rec.num_players)}
    for i, (kind, s, role, cards) in enumerate(rec.ops):
        if kind == "reveal":
            size[s] -= 1
        elif s != rec.seat and kind == "redraw":
            variables.append(("redraw", i, None))
        elif s != rec.seat and kind == "keep":
            variables.append(("keep", i, size[s]))
    domains = [range(5) if kind == "redraw" else card_timeline.MULTISETS[k] for kind, _, k in variables]
    for values in itertools.product(*domains):
        world = card_timeline.World({}, {}, {})
        for (kind, key, _), v in zip(variables, values):
            getattr(world, kind)[key] = v
        yield world


def test_world_search_agrees_with_brute_force():
    rng = random.Random(7)
    outcomes = Counter()
    for _ in range(150):
        rec = _random_record(rng)
        exists = any(_fits(rec, w) for w in _all_worlds(rec))
        world = card_timeline.find_world(rec)
        assert (world is not None) == exists, rec
        if world is not None:
            assert _fits(rec, world), (rec, world)
            card_timeline.layout(rec, world)  # conserves the cards
        outcomes[exists] += 1
    assert outcomes[True] > 20 and outcomes[False] > 20, outcomes


def test_a_proven_claim_locates_a_card():
    """A proven duke with the other two in my hand: the hands unchanged since hold none."""
    rec = card_timeline.CardRecord(3, 0, (rules.DUKE, rules.DUKE), [("need", 1, rules.DUKE, None), ("redraw", 1, rules.DUKE, None)])
    assert card_timeline.find_world(rec) is not None
    assert card_timeline.find_world(card_timeline.CardRecord(3, 0, rec.hand, rec.ops + [("reveal", 2, rules.DUKE, None)])) is None
    # the claimant may have drawn it back, and an exchange may draw it
    assert card_timeline.find_world(card_timeline.CardRecord(3, 0, rec.hand, rec.ops + [("reveal", 1, rules.DUKE, None)])) is not None
    ex = rec.ops + [("draw", 2, None, None), ("keep", 2, None, None), ("reveal", 2, rules.DUKE, None)]
    assert card_timeline.find_world(card_timeline.CardRecord(3, 0, rec.hand, ex)) is not None


# ---------------------------------------------------------------- advice
SMALL_BUDGET = {"num_worlds": 2, "rollouts_per_world": 1, "max_rollout_steps": 4, "lanes": 64,
                "rollout_policy": "random"}


@pytest.mark.parametrize("budget", [SMALL_BUDGET, pytest.param(None, marks=pytest.mark.slow)],
                         ids=["small-budget", "default-budget"])
def test_the_advice_for_a_record_is_the_advice_for_the_game(budget):
    """The tracker's advice at the recording seat's decisions equals the advisor's on the
    engine's observation and the search's on the engine state, with the same key (the
    default suite searches with a small budget; ``-m slow`` with the default one)."""
    n, seat = 3, 1
    fn = core.functions(n)
    game = random_game(n, 5, "long", illegal=0.0)
    state, _ = next(game)
    tracker = Tracker(n, seat, [rules.ROLES[c] for c in deal.hands(state)[seat]])
    phases = Counter()
    for state, private in game:
        tracker.add_event(event_to_dict(last_event(state), n, public=True), **own_facts(private, seat))
        if bool(state.terminated) or int(state.current_player) != seat:
            continue
        phase = rules.PHASES[int(state._phase)]
        if phases[phase] >= 2:
            continue
        phases[phase] += 1
        key = jax.random.PRNGKey(len(tracker.events))
        got = tracker.advice(key=key, budget=budget)
        obs = np.asarray(fn.observe(state, seat))
        assert np.array_equal(obs, tracker.observation())
        want = challenge_advice(obs, n, params=advice_params(), observer_seat=seat)
        if want["decision"]:
            assert {k: want[k] for k in got["challenge"]} == got["challenge"]
        if phase == "action":
            ev = np.asarray(recommend_action(obs, np.asarray(state.legal_action_mask), n)["ev"])
            assert got["action"]["values"] == {rules.action_name(int(a), seat, n): round(float(ev[a]), 4)
                                               for a in np.flatnonzero(np.isfinite(ev))}
        assert got["search"] == search.advise(state, key=key, budget=budget)
        assert got["recommendation"] == recommend(obs, state.legal_action_mask, n, seat, got["search"])
        if sum(phases.values()) >= 6:
            break
    assert phases["action"] and phases["react"], phases


# ---------------------------------------------------------------- refusals
def _frozen(t: Tracker):
    return json.dumps([t.view(), t.events, t.entries, t.world(), t.observation().tolist()])


def refused(t: Tracker, entry: dict, says: str, field: str | None = None):
    before = _frozen(t)
    with pytest.raises(TrackerError) as info:
        t.add(entry)
    assert says in info.value.message, info.value.message
    if field is not None:
        assert info.value.field == field
    assert _frozen(t) == before  # the record is as it was
    return info.value


def play(t: Tracker, *entries):
    for e in entries:
        t.add(e)
    return t


def test_an_action_a_seat_cannot_afford_is_refused():
    t = play(Tracker(4, 2, ["duke", "captain"]), {"action": "income"}, {"action": "income"})
    refused(t, {"seat": 2, "action": "assassinate:0"}, "seat 2 cannot assassinate with 2 coins: assassinate costs 3",
            "action")
    refused(t, {"action": "coup:3"}, "seat 2 cannot coup with 2 coins: coup costs 7")
    refused(t, {"seat": 3, "action": "income"}, "seat 2 is to choose a main action now, not seat 3", "seat")
    refused(t, {"action": "steal:2"}, "seat 2 cannot steal itself")
    play(t, {"action": "foreign_aid"})
    refused(t, {"seat": 3, "action": "challenge", "bluff_caught": True}, "foreign_aid claims no role")
    refused(t, {"seat": 0, "action": "block:contessa"}, "foreign_aid is blocked by duke, not contessa")
    refused(t, {"action": "pass", "forfeit": True}, "pass is legal here: it does not forfeit", "forfeit")
    play(t, {"seat": 0, "action": "block:duke"})
    refused(t, {"action": "block:duke"}, "seat 2 answers seat 0's block: pass (the block stands) or challenge")


def test_a_fourth_duke_is_refused():
    t = play(Tracker(4, 0, ["duke", "duke"]), {"action": "income"},
             {"seat": 1, "action": "coup:2", "forfeit": True, "reveals": ["duke", "assassin"]})
    e = refused(t, {"seat": 2, "action": "coup:3", "forfeit": True, "reveals": ["captain", "duke"]},
                "a fourth duke: all 3 are accounted for: 1 revealed, 2 in your hand", "reveals")
    assert str(e).startswith("reveals: ")
    play(t, {"seat": 2, "action": "coup:3", "forfeit": True, "reveals": ["captain", "contessa"]})
    assert t.view()["revealed"] == [[], ["duke", "assassin"], ["captain", "contessa"], []]


def test_a_card_the_record_shows_cannot_be_there_is_refused():
    """Seat 1's duke is proven while I hold the other two: seat 2's hand, unchanged since
    the deal, holds none, though no count says so at the moment of the reveal."""
    t = play(Tracker(3, 0, ["duke", "duke"]), {"action": "income"}, {"action": "tax"},
             {"seat": 2, "action": "challenge", "bluff_caught": False})
    assert t.view()["phase"] == "lose" and t.current_player == 2
    refused(t, {"action": "reveal", "reveals": ["duke"]}, "seat 2 cannot reveal a duke here: no arrangement of the "
            "cards you have not seen fits the whole record", "reveals")
    play(t, {"action": "reveal", "reveals": ["captain"]})
    # seat 1 drew a card in the duke's place: it may be that duke
    play(t, {"action": "income"}, {"action": "income"}, {"action": "steal:0"},
         {"seat": 0, "action": "challenge", "bluff_caught": True}, {"seat": 1, "action": "reveal", "reveals": ["duke"]})


def test_facts_a_seat_knows_are_checked():
    t = play(Tracker(3, 0, ["duke", "captain"]), {"action": "tax"})
    refused(t, {"seat": 1, "action": "challenge", "bluff_caught": True}, "you hold a duke: the challenge cannot catch",
            "bluff_caught")
    refused(t, {"seat": 1, "action": "challenge", "bluff_caught": False}, "give the card you drew", "redraw")
    refused(t, {"seat": 1, "action": "challenge"}, "a challenge needs its result", "bluff_caught")
    refused(t, {"seat": 1, "action": "challenge", "bluff_caught": False, "redraw": "duke", "reveals": ["captain"]},
            "this step reveals 0 card(s), the entry gives 1", "reveals")
    play(t, {"seat": 2, "action": "challenge", "bluff_caught": False, "redraw": "contessa"})  # seat 1 passed
    assert t.own_hand() == ["contessa", "captain"] and t.current_player == 2
    refused(t, {"action": "reveal", "reveals": [{"seat": 1, "role": "duke"}]}, "the card revealed here is seat 2's")
    play(t, {"action": "reveal", "reveals": ["duke"]}, {"action": "tax"},
         {"seat": 0, "action": "challenge", "bluff_caught": True})
    refused(t, {"action": "reveal", "reveals": ["duke"]}, "seat 1 cannot reveal a duke: it was caught bluffing duke")
    play(t, {"action": "reveal", "reveals": ["assassin"]}, {"action": "income"})
    refused(t, {"action": "exchange", "redraw": "duke"}, "you redraw only when a challenge proves your claim", "redraw")
    play(t, {"action": "exchange"})
    refused(t, {"action": "all_passed"}, "your exchange draws 2 cards here", "drawn")
    refused(t, {"action": "all_passed", "drawn": ["duke", "duke", "duke"]}, "expected 0 or 2 items", "drawn")
    play(t, {"action": "all_passed", "drawn": ["ambassador", "contessa"]})
    assert t.view()["drawn"] == ["ambassador", "contessa"] and t.view()["hand"] == ["contessa", "captain"]
    refused(t, {"action": "keep:duke+captain"}, "keep:duke+captain cannot be formed from seat 0's hand and drawn cards")
    refused(t, {"action": "keep:captain"}, "seat 0 holds 2 card(s): it keeps 2, not 1")
    refused(t, {"action": "keep"}, "give the cards you keep")
    play(t, {"action": "keep:ambassador+contessa"})
    assert t.own_hand() == ["ambassador", "contessa"] and t.view()["drawn"] == []
    t = play(Tracker(3, 0, ["contessa", "contessa"]), {"action": "exchange"})
    refused(t, {"action": "all_passed", "drawn": ["contessa", "contessa"]},
            "you cannot draw 2 contessas: 2 of the 3 are accounted for: 2 in your hand", "drawn")


def test_entries_are_checked_field_by_field():
    t = Tracker(4, 1, ["duke", "captain"])
    for entry, field in [({"action": "tax", "color": 1}, "color"), ({"action": "taxes"}, "action"), ({}, "action"),
                         ({"action": "tax", "seat": "0"}, "seat"), ({"action": "tax", "reveals": ["dukes"]}, "reveals[0]"),
                         ({"action": "tax", "forfeit": 1}, "forfeit"), ({"action": "tax", "drawn": ["duke"]}, "drawn")]:
        refused(t, entry, "", field)
    with pytest.raises(TrackerError) as info:
        Tracker(7, 0, ["duke", "captain"])
    assert info.value.field == "num_players"
    with pytest.raises(TrackerError) as info:
        Tracker(4, 0, ["duke", "king"])
    assert info.value.field == "hand[1]"


def test_reactions_name_their_seat_and_imply_the_passes():
    t = play(Tracker(4, 0, ["duke", "captain"]), {"action": "income"}, {"action": "tax"})
    assert t.expects()["responders"] == [2, 3, 0]
    refused(t, {"seat": 1, "action": "pass"}, "seat 2 is to react now, not seat 1", "seat")
    events = t.add({"seat": 0, "action": "pass"})  # seats 2 and 3 passed first; I pass: the tax resolves
    assert [(e["seat"], e["action"]) for e in events] == [(2, "pass"), (3, "pass"), (0, "pass")]
    assert t.view()["coins"] == [3, 5, 2, 2] and t.current_player == 2
    play(t, {"action": "steal:0"})
    events = t.add({"seat": 0, "action": "block:ambassador"})
    assert [e["seat"] for e in events] == [3, 0]
    assert t.add({"action": "all_passed"})[0]["turn_ended"]


# ---------------------------------------------------------------- seat records
@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A 4-player game followed by seat 2, saved, with the engine's last state."""
    n, seat = 4, 2
    for seed in range(300):
        game = random_game(n, seed, "long")
        state, _ = next(game)
        t = Tracker(n, seat, [rules.ROLES[c] for c in deal.hands(state)[seat]])
        for state, private in game:
            t.add_event(event_to_dict(last_event(state), n, public=True), **own_facts(private, seat))
        kinds = {e["phase"] for e in t.events if e["seat"] == seat}
        if {"exchange", "lose"} <= kinds and any(e["challenge"] and e["challenge"]["seat"] == seat for e in t.events):
            break
    path = tmp_path_factory.mktemp("seat") / "record.jsonl"
    t.save(path)
    return t, path


def test_a_seat_record_round_trips(recorded):
    t, path = recorded
    lines = path.read_text().splitlines()
    head = json.loads(lines[0])
    assert head == {"type": "seat_record", "version": 1, "num_players": 4, "seat": 2, "hand": head["hand"],
                    "first": 0}
    assert len(lines) == 1 + len(t.events)
    u = Tracker.load(path)
    assert u.events == t.events and u.view() == t.view()
    assert np.array_equal(u.observation(), t.observation())
    for e in t.events:  # only the recording seat's private parts
        if e["seat"] != 2 and e["phase"] in ("lose", "exchange"):
            assert e["action"] in ("reveal", "keep")
        assert all("index" not in x for x in e["reveals"] if x["seat"] != 2)
        assert e["redraw"] is None or e["challenge"]["seat"] == 2


def test_match_load_refuses_a_seat_record_and_back(recorded, tmp_path):
    _, path = recorded
    with pytest.raises(ReplayError) as info:
        Match.load(path)
    assert (info.value.line, info.value.field) == (1, "type")
    assert "this is a seat record of seat 2, not a full match: open it with coupjax replay or coupjax.tracker" in str(info.value)
    m = Match(num_players=3, seed=1)
    m.play("income")
    m.save(tmp_path / "match.jsonl")
    with pytest.raises(ReplayError) as info:
        Tracker.load(tmp_path / "match.jsonl")
    assert info.value.line == 1 and "this is a full match" in info.value.message


def _edit(lines, lineno, fn):
    out = list(lines)
    d = json.loads(out[lineno - 1])
    fn(d)
    out[lineno - 1] = json.dumps(d)
    return out


def _line_where(lines, test):
    return next(k for k in range(2, len(lines) + 1) if test(json.loads(lines[k - 1])))


def test_loading_a_seat_record_is_strict(recorded, tmp_path):
    t, path = recorded
    lines = path.read_text().splitlines()
    own_challenge = _line_where(lines, lambda d: d["challenge"] is not None and d["challenge"]["seat"] == 2)
    reveal = _line_where(lines, lambda d: d["reveals"] and d["reveals"][0]["seat"] != 2)
    cases = [
        (_edit(lines, 1, lambda d: d.update(version=9)), 1, "version", "not supported"),
        (_edit(lines, 1, lambda d: d.update(hand=["duke"])), 1, "hand", "expected 2 items"),
        (lines[:3] + ["{not json"] + lines[4:], 4, None, "not JSON"),
        (_edit(lines, 3, lambda d: d.update(color=1)), 3, "color", "unexpected key"),
        (_edit(lines, 3, lambda d: d.update(turn_ended=not d["turn_ended"])), 3, "turn_ended", "the replay gives"),
        (_edit(lines, 2, lambda d: d.update(seat=(d["seat"] + 1) % 4)), 2, "seat", "not the seat to act"),
        (_edit(lines, own_challenge, lambda d: d["challenge"].update(bluff_caught=not d["challenge"]["bluff_caught"])),
         own_challenge, "bluff_caught", "you hold"),
        (_edit(lines, reveal, lambda d: d["reveals"][0].update(index=0)), reveal, "reveals", "the replay gives"),
        (lines + [lines[-1]], len(lines) + 1, None, "the game is over"),
    ]
    for k, (text, line, field, says) in enumerate(cases):
        bad = tmp_path / f"bad{k}.jsonl"
        bad.write_text("\n".join(text) + "\n")
        with pytest.raises(ReplayError) as info:
            Tracker.load(bad)
        err = info.value
        assert err.line == line and says in err.message, (k, str(err))
        if field is not None:
            assert err.field == field, (k, str(err))
        prefix, error = Tracker.load_prefix(bad)
        assert error.line == line
        if line > 1:  # the valid lines before the bad one are kept
            assert prefix.num_steps == line - 2 and prefix.events == t.events[: line - 2]


def test_an_own_reveal_whose_index_and_role_disagree_is_refused():
    """issue 43 point 8: reveal:0 names your Duke; reporting a Captain with it is a contradiction."""
    t = Tracker(num_players=3, seat=0, hand=["duke", "captain"], first=1)
    t.add({"seat": 1, "action": "tax"})
    t.add({"seat": 0, "action": "challenge", "bluff_caught": False})
    steps = t.num_steps
    with pytest.raises(TrackerError, match="reveal:0 is your duke, but the entry reports captain"):
        t.add({"seat": 0, "action": "reveal:0", "reveals": ["captain"]})
    assert t.num_steps == steps  # the record is unchanged
    t.add({"seat": 0, "action": "reveal:0", "reveals": ["duke"]})
    assert t.own_hand() == ["captain"]
