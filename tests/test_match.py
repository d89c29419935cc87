"""Saved matches: every match replays exactly, and loading is strict.

Round trips: seeded matches at 2-6 players (random deals, whose deck counts as
shuffled) with early exchanges, redraws after proven claims, forfeits and games capped
at 200 turns, and explicit deals; each reloaded match must give every event and the
very same final state.  Loading: every kind of broken line raises a `ReplayError`
naming the file, the line and the field, and a broken line anywhere fails the load.
"""
from __future__ import annotations

import json
import random

import jax
import numpy as np
import pytest

from coupjax import rules
from coupjax.events import (EVENT_KEYS, FieldError, check_event, event_fields, event_from_dict, event_to_dict,
                            last_event)
from coupjax.game import deal
from coupjax.match import FORMAT_VERSION, Match, ReplayError
from tests.play import stalling_choice

D, A, CA, AM, CO = rules.ROLES


# ---------------------------------------------------------------- playing
def _stalling(rng, m, legal):
    """Never adds coins (exchange, steal, pass): the match runs to the turn cap."""
    return stalling_choice(rng, legal)


def _eager(rng, m, legal):
    """Exchanges often, unchallenged in the first turns (draws from the dealt deck), then
    challenges often too (proven claims redraw)."""
    early = m.view()["turn"] < 3
    for pick, p in (("exchange", 0.7 if early else 0.4), ("pass", 1.0 if early else 0.0), ("challenge", 0.35)):
        if pick in legal and rng.random() < p:
            return pick
    return rng.choice(legal)


def play_out(m: Match, seed: int, style=_eager, illegal_rate=0.02) -> Match:
    rng = random.Random(seed)
    every = rules.all_protocol_names(m.num_players)
    while not m.done:
        legal = m.legal_actions()
        if rng.random() < illegal_rate:
            m.play(rng.choice([x for x in every if x not in legal]))  # forfeits
        else:
            m.play(style(rng, m, legal))
    return m


def _same_state(a, b) -> bool:
    return all(jax.tree.leaves(jax.tree.map(lambda x, y: bool(np.array_equal(np.asarray(x), np.asarray(y))),
                                            a, b)))


def replay_differs(m: Match, path) -> str | None:
    """Save ``m``, load it, and say what differs (None: an exact replay)."""
    m.save(path)
    try:
        r = Match.load(path)
    except ValueError as err:
        return f"load failed: {err}"
    for what, x, y in (("events", r.events, m.events), ("hands", r.hands, m.hands), ("deck", r.deck, m.deck),
                       ("drawn", r.drawn, m.drawn), ("coins", deal.coins(r.state), deal.coins(m.state)),
                       ("revealed", r.revealed, m.revealed), ("placements", r.placements(), m.placements()),
                       ("deck_shuffled", deal.deck_shuffled(r.state), deal.deck_shuffled(m.state)),
                       ("view", r.view(), m.view())):
        if x != y:
            return what
    if not _same_state(r.state, m.state):
        return "state"
    r.save(str(path) + ".again")
    with open(path) as f, open(str(path) + ".again") as g:
        if f.read() != g.read():
            return "file saved again"
    return None


def _early_exchange(events) -> bool:
    """The match's first draw is an exchange's (from the dealt deck, before any return)."""
    for e in events:
        if e["redraw"] or (e["phase"] == "exchange"):
            return False
        if e["exchange_drawn"]:
            return True
    return False


GAMES_PER_SIZE = 8


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_seeded_matches_replay_exactly(n, tmp_path):
    matches = [play_out(Match(n, seed=s), seed=s) for s in range(GAMES_PER_SIZE)]
    matches.append(play_out(Match(n, seed=100 + n), seed=n, style=_stalling, illegal_rate=0.0005))
    events = [m.events for m in matches]
    assert sum(map(_early_exchange, events)) >= 2
    assert any(e["redraw"] for ev in events for e in ev)
    assert any(e["forfeit"] for ev in events for e in ev)
    assert matches[-1].view()["turn"] == rules.TURN_CAP and matches[-1].done  # capped
    bad = [(i, d) for i, m in enumerate(matches) if (d := replay_differs(m, tmp_path / f"{i}.jsonl"))]
    assert not bad, f"{len(bad)} of {len(matches)} matches at {n} players do not replay: {bad}"


@pytest.mark.parametrize("shuffled", [False, True])
def test_explicit_matches_replay_exactly(shuffled, tmp_path):
    for s in range(6):
        n = 2 + s % 5
        rng = random.Random(s)
        cards = [r for r in rules.ROLES for _ in range(3)]
        rng.shuffle(cards)
        hands = [cards[2 * i: 2 * i + 2] for i in range(n)]
        revealed = [[] for _ in range(n)]
        hands[n - 1], revealed[n - 1] = hands[n - 1][:1], hands[n - 1][1:]  # one seat down to one card
        m = Match(n, seed=s, hands=hands, deck=cards[2 * n:], revealed=revealed, coins=[s % 4 + 1] * n,
                  current_player=s % (n - 1), turn=150 if s % 2 else 0, deck_shuffled=shuffled)
        assert deal.deck_shuffled(m.state) is shuffled
        play_out(m, seed=s, style=_stalling if s % 2 else _eager)
        assert replay_differs(m, tmp_path / f"{s}.jsonl") is None


def test_partial_match_replays_and_plays_on(tmp_path):
    m = Match(4, seed=3)
    for name in ("exchange", "pass", "challenge"):
        m.play(name if name in m.legal_actions() else m.legal_actions()[0])
    assert replay_differs(m, tmp_path / "p.jsonl") is None
    r = Match.load(tmp_path / "p.jsonl")
    play_out(m, seed=9)
    play_out(r, seed=9)
    assert r.events == m.events and _same_state(r.state, m.state)


def test_deal_line_records_the_shuffled_deck():
    assert Match(3, seed=1)._deal["deck_shuffled"] is True
    m = Match(2, hands=[[D, A], [CA, AM]])
    assert m._deal["deck_shuffled"] is False and m._deal["version"] == FORMAT_VERSION
    with pytest.raises(FieldError, match="deck_shuffled"):
        Match(2, seed=1, deck_shuffled=False)


def test_event_dicts_pass_the_schema_and_round_trip():
    m = play_out(Match(5, seed=4), seed=4)
    assert tuple(event_fields(5)) == EVENT_KEYS
    assert event_to_dict(last_event(m.state), 5) == m.events[-1]
    for e in m.events:
        check_event(e, 5)
        assert event_to_dict(event_from_dict(e, 5), 5) == e
    with pytest.raises(FieldError, match=r"reveals\[0\]\.seat: expected an integer"):
        check_event({**m.events[0], "reveals": [{"seat": "1", "role": D, "index": 0}]}, 5)


# ---------------------------------------------------------------- strict loading
def scripted_match() -> Match:
    """Line 2: exchange (seat 0); 3: a challenge of the true ambassador (redraw); 4: seat 1
    reveals (the exchange draws); 5: the keep; 6-7: a caught bluff ... forfeits."""
    m = Match(4, seed=7, hands=[[AM, D], [A, CO], [CA, CO], [D, AM]], coins=[2, 2, 2, 3],
              deck=[D, A, A, CA, CA, AM, CO])
    for name in ("exchange", "challenge", "reveal:0"):
        m.play(name)
    m.play(m.legal_actions()[0])  # a keep
    for name in ("tax", "challenge", "foreign_aid", "income", "pass", "income", "block:captain"):
        m.play(name)
    assert m.done and m.view()["winner"] == 0
    return m


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "m.jsonl"
    m = scripted_match()
    m.save(path)
    lines = path.read_text().splitlines()
    e = [json.loads(x) for x in lines[1:]]
    assert e[1]["challenge"] == {"seat": 0, "role": AM, "bluff_caught": False} and e[1]["redraw"]
    assert e[2]["reveals"] and e[2]["exchange_drawn"]
    assert any(x["forfeit"] for x in e) and e[-1]["game_over"]
    return m, lines


def test_save_load_round_trip(saved, tmp_path):
    m, lines = saved
    assert len(lines) == 1 + len(m.events) and json.loads(lines[0])["type"] == "deal"
    assert replay_differs(m, tmp_path / "m.jsonl") is None


def _set(key, value):
    def edit(d):
        d[key] = value
    return edit


def _at(keys, value):
    def edit(d):
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
    return edit


def _drop(key):
    return lambda d: d.pop(key)


# (line, edit of the parsed line, field named, message pattern)
BROKEN = {
    "version missing": (1, _drop("version"), "version", "missing"),
    "version 1": (1, _set("version", 1), "version", "format version 1 is not supported"),
    "version as text": (1, _set("version", str(FORMAT_VERSION)), "version", "not supported"),
    "first line an event": (1, _set("type", "event"), "type", "first line must be the deal"),
    "num_players float": (1, _set("num_players", 4.0), "num_players", r"got 4\.0 \(a float\)"),
    "num_players 7": (1, _set("num_players", 7), "num_players", "out of range 2..6"),
    "seed 2**80": (1, _set("seed", 2 ** 80), "seed", "out of range"),
    "seed negative": (1, _set("seed", -1), "seed", "out of range"),
    "seed float": (1, _set("seed", 7.0), "seed", "a float"),
    "seed bool": (1, _set("seed", True), "seed", "a boolean"),
    "coins negative": (1, _at(["coins", 2], -1), r"coins\[2\]", "out of range"),
    "coins float": (1, _at(["coins", 0], 2.0), r"coins\[0\]", "a float"),
    "coins short": (1, _set("coins", [2, 2, 2]), "coins", "expected 4 items"),
    "seat outside the table": (1, _set("current_player", 4), "current_player", "out of range 0..3"),
    "seat float": (1, _set("current_player", 0.0), "current_player", "a float"),
    "turn 200": (1, _set("turn", 200), "turn", "out of range 0..199"),
    "turn negative": (1, _set("turn", -1), "turn", "out of range"),
    "deal extra key": (1, _set("comment", "hi"), "comment", "unexpected key"),
    "deal missing key": (1, _drop("deck_shuffled"), "deck_shuffled", "missing"),
    "deck_shuffled int": (1, _set("deck_shuffled", 0), "deck_shuffled", "true or false"),
    "hands a string": (1, _set("hands", "duke"), "hands", "expected a list"),
    "a role a list": (1, _at(["deck", 0], ["duke"]), r"deck\[0\]", "expected a string"),
    "unknown role": (1, _at(["hands", 1, 0], "jester"), r"hands\[1\]\[0\]", "not a role"),
    "three cards": (1, _at(["hands", 0], [AM, D, D]), r"hands\[0\]", "expected 0..2 items, got 3"),
    "cards not conserved": (1, _at(["hands", 0], [D, D]), "hands/deck/revealed", "3 of each role"),
    "seat to act out": (1, lambda d: d.update(revealed=[[AM, D], [], [], []], hands=[[], *d["hands"][1:]]),
                        "current_player", "no hidden cards"),
    "event seat float": (3, _set("seat", 1.0), "seat", "a float"),
    "event seat out of range": (3, _set("seat", 4), "seat", "out of range 0..3"),
    "event not the seat to act": (3, _set("seat", 2), "seat", "not the seat to act"),
    "event turn 200": (3, _set("turn", 200), "turn", "out of range 0..199"),
    "event step float": (3, _set("step", 1.0), "step", "a float"),
    "event extra key": (3, _set("note", 1), "note", "unexpected key"),
    "event missing key": (3, _drop("redraw"), "redraw", "missing"),
    "event type missing": (3, _drop("type"), "type", "missing"),
    "event typed deal": (3, _set("type", "deal"), "type", "expected an event line"),
    "action a list": (3, _set("action", ["challenge"]), "action", "expected a string"),
    "action unknown": (3, _set("action", "fly"), "action", "'fly' is not a protocol name"),
    "challenge seat text": (3, _at(["challenge", "seat"], "0"), r"challenge\.seat", "a string"),
    "challenge extra key": (3, _at(["challenge", "why"], 1), r"challenge\.why", "unexpected key"),
    "reveal index 2": (4, _at(["reveals", 0, "index"], 2), r"reveals\[0\]\.index", "out of range 0..1"),
    "reveal index missing": (4, lambda d: d["reveals"][0].pop("index"), r"reveals\[0\]\.index", "missing"),
    "one drawn card": (4, lambda d: d["exchange_drawn"].pop(), "exchange_drawn", "expected 0 or 2 items"),
    "forfeit int": (3, _set("forfeit", 0), "forfeit", "true or false"),
    "eliminated float": (7, _set("eliminated", [1.0]), r"eliminated\[0\]", "a float"),
    "edited outcome": (3, _at(["challenge", "bluff_caught"], True), "challenge", "the replay gives"),
    "edited reveal": (4, _at(["reveals", 0, "role"], CO), "reveals", "the replay gives"),
    "edited step": (3, _set("step", 5), "step", "the replay gives 1"),
}


@pytest.mark.parametrize("case", BROKEN, ids=list(BROKEN))
def test_load_rejects(case, saved, tmp_path):
    lineno, edit, field, pattern = BROKEN[case]
    _, lines = saved
    d = json.loads(lines[lineno - 1])
    edit(d)
    lines = list(lines)
    lines[lineno - 1] = json.dumps(d)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReplayError, match=rf"bad\.jsonl:{lineno}: {field}: .*{pattern}") as err:
        Match.load(path)
    assert err.value.line == lineno and err.value.path == path
    assert isinstance(err.value, ValueError)


def _line_edit(lines, lineno, text):
    return [text if i == lineno - 1 else x for i, x in enumerate(lines)]


# (text of the file from the saved lines, line, pattern)
MALFORMED = {
    "empty file": (lambda ls: "", 1, "empty file"),
    "truncated last line": (lambda ls: "\n".join(ls)[:-7], 12, "not JSON"),
    "cut mid-file": (lambda ls: "\n".join(_line_edit(ls, 5, ls[4][:30])) + "\n", 5, "not JSON"),
    "empty line": (lambda ls: "\n".join(ls[:3] + [""] + ls[3:]) + "\n", 4, "empty line"),
    "a JSON list": (lambda ls: "\n".join(_line_edit(ls, 2, "[1, 2]")) + "\n", 2, r"\(line\): expected an object"),
    "deal a JSON list": (lambda ls: "[1]\n", 1, "type: the first line must be the deal"),
    "duplicate key": (lambda ls: "\n".join(_line_edit(ls, 2, ls[1][:-1] + ', "seat": 0}')) + "\n", 2,
                      "seat: duplicate key"),
    "NaN": (lambda ls: "\n".join(_line_edit(ls, 2, ls[1].replace('"step": 0', '"step": NaN'))) + "\n", 2,
            "NaN is not a JSON value"),
    "event after the end": (lambda ls: "\n".join(ls + [ls[-1]]) + "\n", 13, "step: an event after the end"),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_load_rejects_malformed(case, saved, tmp_path):
    make, lineno, pattern = MALFORMED[case]
    _, lines = saved
    assert len(lines) == 12  # a deal line and 11 events
    path = tmp_path / "bad.jsonl"
    path.write_text(make(lines))
    with pytest.raises(ReplayError, match=rf"bad\.jsonl:{lineno}: .*{pattern}"):
        Match.load(path)


def test_load_rejects_bytes_that_are_not_utf8(saved, tmp_path):
    _, lines = saved
    path = tmp_path / "bad.jsonl"
    path.write_bytes(("\n".join(lines[:2]) + "\n").encode() + b'{"type": "\xff"}\n')
    with pytest.raises(ReplayError, match=r"bad\.jsonl:3: not UTF-8"):
        Match.load(path)


@pytest.mark.parametrize("broken_line", [3, 8, 12])
def test_a_valid_prefix_is_not_taken_for_the_whole_match(broken_line, saved, tmp_path):
    """Each prefix before the broken line loads (as a shorter match), yet the whole file
    fails: the load never stops quietly at the first bad line."""
    m, lines = saved
    prefix = tmp_path / "prefix.jsonl"
    prefix.write_text("\n".join(lines[: broken_line - 1]) + "\n")
    assert len(Match.load(prefix).events) == broken_line - 2
    for bad_text in (lines[broken_line - 1][:-3], lines[broken_line - 1].replace('"step"', '"stp"')):
        path = tmp_path / "bad.jsonl"
        path.write_text("\n".join(_line_edit(lines, broken_line, bad_text)) + "\n")
        with pytest.raises(ReplayError, match=rf":{broken_line}: "):
            Match.load(path)


def test_constructor_names_bad_arguments():
    with pytest.raises(FieldError, match="seed"):
        Match(2, seed=2 ** 80)
    with pytest.raises(FieldError, match="seed"):
        Match(2, seed=1.0)
    with pytest.raises(FieldError, match=r"coins\[1\]"):
        Match(2, hands=[[D, A], [CA, AM]], coins=[2, -1])
    with pytest.raises(FieldError, match="current_player"):
        Match(2, hands=[[D, A], [CA, AM]], current_player=2)
    with pytest.raises(FieldError, match=r"hands\[0\]\[1\]"):
        Match(2, hands=[[D, "jester"], [CA, AM]])
    with pytest.raises(FieldError, match="hands"):
        Match(2, hands="duke")
    assert Match(2, seed=np.int64(3), hands=[[D, A], [CA, AM]], coins=np.array([1, 2])).seed == 3
