"""One recommendation per decision (`coupjax.advice.recommend`): a public fact is never
outvoted by the search's values, ties are broken by the advice's reason, close calls
are labelled, and the tracker, the page and ``coupjax replay`` carry exactly one."""
from __future__ import annotations

import functools
import io

import jax
import pytest
from rich.console import Console

from coupjax import rules
from coupjax.advice.recommend import recommend
from coupjax.match import Match, compiled
from coupjax.tracker import seat_report
from coupjax.tracker import replay
from coupjax.web import advice_text

N = 4
HANDS = [["captain", "contessa"], ["assassin", "ambassador"], ["duke", "captain"], ["assassin", "contessa"]]
PASS, CHALLENGE = rules.action_id("pass", 1, N), rules.action_id("challenge", 1, N)


@functools.lru_cache(maxsize=None)
def _observe():
    return jax.jit(compiled(N)[0].observe)


def caught_duke_claims_again() -> Match:
    """The issue's scenario: seat 0 (Dan) is caught bluffing Duke, reveals, and claims Duke
    again; seat 1 is to react."""
    m = Match(N, seed=0, hands=HANDS)
    m.play("tax")
    assert m.play("challenge")["challenge"] == {"seat": 0, "role": "duke", "bluff_caught": True}
    m.play("reveal:0")
    for name in ["income", "income", "income", "tax"]:
        m.play(name)
    assert int(m.state.current_player) == 1
    return m


def first_tax() -> Match:
    m = Match(N, seed=0, hands=HANDS)
    m.play("tax")
    return m


def search_values(values: dict) -> dict:
    """A search dict as `coupjax.search.advise` gives it: action -> (value, se)."""
    return {"searched": True, "actions": [{"action": a, "id": rules.action_id(a, 1, N), "value": v, "se": s}
                                          for a, (v, s) in values.items()]}


def rec(m: Match, search=None) -> dict:
    obs = _observe()(m.state, 1)
    return recommend(obs, m.state.legal_action_mask, N, 1, search)


@pytest.mark.parametrize("values", [
    None,
    {"pass": (0.25, 0.06), "challenge": (0.25, 0.06)},  # the issue: the search ties them
    {"pass": (0.25, 0.06), "challenge": (0.24, 0.06)},  # pass ahead within noise
    {"pass": (0.60, 0.01), "challenge": (-0.20, 0.01)},  # pass far ahead: rollout noise still does not decide
])
def test_a_disproven_claim_is_challenged_whatever_the_search_says(values):
    r = rec(caught_duke_claims_again(), values and search_values(values))
    assert r["action"] == "challenge" and r["action_id"] == CHALLENGE
    assert r["source"] == "public fact" and r["settled"] and not r["close_call"]
    assert "caught bluffing Duke" in r["reasons"][0] and "cannot hold a Duke" in r["reasons"][0]
    assert [a["action"] for a in r["alternatives"]] != [] and {a["action"] for a in r["alternatives"]} == {
        "pass", "challenge"}


def test_advisor_and_search_disagree_one_recommendation():
    m = first_tax()
    own = rec(m)
    assert own["source"] == "challenge advisor" and own["action"] in ("pass", "challenge")
    other = "challenge" if own["action"] == "pass" else "pass"
    # the search clearly prefers the other action: it decides, and the reasons say so
    r = rec(m, search_values({own["action"]: (-0.5, 0.02), other: (0.3, 0.02)}))
    assert r["action"] == other and r["source"] == "search" and not r["close_call"]
    assert any(f"The advice alone would say {own['action']}" in x for x in r["reasons"])
    # tied in the search, whichever is listed first or valued a hair higher: the advice's reason decides
    for values in ({other: (0.3, 0.05), own["action"]: (0.29, 0.05)}, {own["action"]: (0.3, 0.05), other: (0.3, 0.05)}):
        r = rec(m, search_values(values))
        assert r["action"] == own["action"] and r["source"] == "search, tie broken by the advice"
        assert r["close_call"] and any(x.startswith("Close call") for x in r["reasons"])
        assert all(a["tied"] for a in r["alternatives"])


def test_close_call_labelling():
    m = first_tax()
    own = rec(m)["action"]
    other = "challenge" if own == "pass" else "pass"
    clear = rec(m, search_values({own: (0.40, 0.02), other: (0.10, 0.02)}))
    assert clear["action"] == own and not clear["close_call"]
    near = rec(m, search_values({own: (0.40, 0.05), other: (0.35, 0.05)}))  # 0.05 < 2 * hypot(0.05, 0.05)
    assert near["action"] == own and near["close_call"]
    assert [a["tied"] for a in near["alternatives"]] == [True, True]


def _count_key(tree, key: str) -> int:
    if isinstance(tree, dict):
        return sum((k == key) + _count_key(v, key) for k, v in tree.items())
    if isinstance(tree, list):
        return sum(_count_key(x, key) for x in tree)
    return 0


def test_tracker_page_and_replay_carry_exactly_one_recommendation(tmp_path):
    m = caught_duke_claims_again()
    adv = seat_report.advice(m.state, 1, use_search=False)
    assert _count_key(adv, "recommendation") == 1 and adv["recommendation"]["action"] == "challenge"
    assert "challenge" in adv and adv["challenge"]["impossible"]  # the evidence stays, without a call of its own
    words = advice_text.describe(adv, ["Ann", "Bob", "Cy", "Dan"], 1, seat_report.table(m.state, 1), ["assassin", "ambassador"],
                        "balanced")
    assert _count_key(words, "recommended") == 1 and _count_key(words, "call") == 0 and "block" not in words
    assert words["recommended"]["action"] == "challenge" and words["recommended"]["source"] == "public fact"
    assert "note" not in words.get("challenge", {})
    # coupjax replay prints one recommended line and no other verdict line
    path = tmp_path / "game.jsonl"
    m.save(path)
    game = replay.load_game(path)
    fr = replay.frame(game, len(game.states) - 1, 1, use_search=False)
    assert fr["advice"]["recommendation"] == adv["recommendation"]
    out = io.StringIO()
    replay.render(fr, Console(file=out, width=400))
    lines = out.getvalue().splitlines()
    assert sum(x.startswith("recommended: challenge") for x in lines) == 1
    assert not any(x.startswith(("challenge advice", "search:")) for x in lines)
    # with the search's values (the tie): still one recommendation, the values beneath it
    fr["advice"]["search"] = search_values({"pass": (0.25, 0.06), "challenge": (0.25, 0.06)})
    fr["advice"]["recommendation"] = rec(m, fr["advice"]["search"])
    out = io.StringIO()
    replay.render(fr, Console(file=out, width=400))
    lines = out.getvalue().splitlines()
    assert sum(x.startswith("recommended:") for x in lines) == 1
    assert any(x.startswith("recommended: challenge · public fact") for x in lines)
    assert any(x.startswith("search values: pass +0.25 ± 0.06, challenge +0.25 ± 0.06") for x in lines)


def test_page_style_moves_the_one_recommendation():
    m = first_tax()
    calls = {s: advice_text.advice(m.state, 1, s, use_search=False)["recommendation"] for s in advice_text.STYLES}
    assert all(c["style"] == advice_text.STYLES[s] for s, c in calls.items())
    assert all(_count_key(advice_text.advice(m.state, 1, s, use_search=False), "recommendation") == 1 for s in advice_text.STYLES)
