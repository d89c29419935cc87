"""Scenario tests of the JAX engine through `Match`: explicit positions for every rule
and edge case of docs/rules.md.

Every deal is explicit (`deal` below): the deck starts with ``first`` and holds the
remaining cards in role order, so draws before any reshuffle are known.  `play` plays a
list of protocol names and checks card conservation (hands + deck + drawn + revealed =
3 of each role) after every step.  After a proven claim the deck counts as reshuffled,
so a replacement card (``redraw``) is random: tests only rely on where it lands.
"""
from __future__ import annotations

import collections
import itertools

import jax
import numpy as np
import pytest

from coupjax import rules
from coupjax.match import Match, compiled

D, A, CA, AM, CO = rules.ROLES  # duke, assassin, captain, ambassador, contessa
FULL = {r: 3 for r in rules.ROLES}
MAIN_FREE = ["income", "foreign_aid", "tax", "exchange"]


# ---------------------------------------------------------------- helpers
def cards(m: Match) -> collections.Counter:
    return collections.Counter([c for h in m.hands for c in h] + m.deck + m.drawn
                               + [c for r in m.revealed for c in r])


def assert_conserved(m: Match) -> None:
    assert cards(m) == FULL


def deal(hands, first=(), coins=None, revealed=None, current_player=0, turn=0, seed=0) -> Match:
    """An explicit deal; the deck is ``first`` then the remaining cards in role order."""
    n = len(hands)
    revealed = revealed or [[] for _ in range(n)]
    left = collections.Counter(FULL)
    for c in [c for h in hands for c in h] + [c for r in revealed for c in r] + list(first):
        left[c] -= 1
    assert min(left.values()) >= 0, f"bad test deal: {left}"
    deck = list(first) + [r for r in rules.ROLES for _ in range(left[r])]
    m = Match(num_players=n, hands=hands, deck=deck, coins=coins, revealed=revealed,
              current_player=current_player, turn=turn, seed=seed)
    assert m.hands == [list(h) for h in hands] and m.deck == deck and m.revealed == [list(r) for r in revealed]
    assert_conserved(m)
    return m


def play(m: Match, *names) -> list[dict]:
    """Play the names in order; return their events; check conservation at every step."""
    events = []
    for name in names:
        events.append(m.play(name))
        assert_conserved(m)
    return events


def legal(m: Match) -> list[str]:
    return sorted(m.legal_actions())


def formable_keeps(pool, size) -> list[str]:
    """Every keep name formable from the multiset ``pool`` with ``size`` cards."""
    combos = {tuple(sorted(c, key=rules.ROLES.index)) for c in itertools.combinations(pool, size)}
    return sorted("keep:" + "+".join(c) for c in combos)


def reveal(seat, role):
    """A reveal item of an event, without its private hand index."""
    return {"seat": seat, "role": role}


def reveals(ev):
    return [{"seat": r["seat"], "role": r["role"]} for r in ev["reveals"]]


def rewards(m: Match) -> list[float]:
    return [float(x) for x in np.asarray(m.state.rewards)]


def expected_rewards(n, winner):
    return [1.0 if s == winner else -1.0 / (n - 1) for s in range(n)]


# A 4-seat table: D2 A1 CA1 AM2 CO2 in hands; deck (role order) D A A CA CA AM CO.
BASE4 = [[D, CA], [A, CO], [AM, CO], [D, AM]]


# ================================================================ main actions
def test_income_resolves():
    m = deal(BASE4)
    assert legal(m) == sorted(MAIN_FREE + ["steal:1", "steal:2", "steal:3"])
    v = m.view()
    assert v["phase"] == "action" and v["current_player"] == 0 and v["turn"] == 0 and not v["done"]
    (ev,) = play(m, "income")
    assert ev["seat"] == 0 and ev["phase"] == "action" and ev["action"] == "income" and not ev["forfeit"]
    assert ev["main_action"] == "income" and ev["claim"] is None and ev["challenge"] is None
    assert ev["resolved"] and ev["turn_ended"] and not ev["game_over"] and ev["reveals"] == []
    v = m.view()
    assert v["coins"] == [3, 2, 2, 2] and v["turn"] == 1 and v["current_player"] == 1 and v["phase"] == "action"


def test_foreign_aid_resolves_when_all_pass():
    m = deal(BASE4)
    (ev,) = play(m, "foreign_aid")
    assert ev["claim"] is None and not ev["resolved"] and not ev["turn_ended"]
    for seat in (1, 2, 3):  # clockwise from the actor; block or pass, never challenge
        assert m.view()["phase"] == "react" and m.current_player == seat
        assert legal(m) == ["block:duke", "pass"]
        ev = m.play("pass")
    assert ev["resolved"] and ev["turn_ended"]
    assert m.view()["coins"] == [4, 2, 2, 2] and m.current_player == 1


def test_tax_resolves_when_all_pass():
    m = deal(BASE4)
    (ev,) = play(m, "tax")
    assert ev["claim"] == "duke" and ev["main_action"] == "tax"
    for seat in (1, 2, 3):
        assert m.current_player == seat and legal(m) == ["challenge", "pass"]
        ev = m.play("pass")
    assert ev["resolved"] and ev["turn_ended"]
    assert m.view()["coins"] == [5, 2, 2, 2] and m.current_player == 1


def test_steal_resolves_and_only_target_may_block():
    m = deal(BASE4, coins=[2, 2, 3, 2])
    (ev,) = play(m, "steal:2")
    assert ev["claim"] == "captain" and ev["target"] == 2
    assert m.current_player == 1 and legal(m) == ["challenge", "pass"]  # not the target
    m.play("pass")
    assert m.current_player == 2 and legal(m) == ["block:ambassador", "block:captain", "challenge", "pass"]
    m.play("pass")
    assert m.current_player == 3 and legal(m) == ["challenge", "pass"]  # not the target
    ev = m.play("pass")
    assert ev["resolved"] and ev["turn_ended"]
    assert m.view()["coins"] == [4, 2, 1, 2]


def test_assassinate_resolves_target_chooses_card():
    m = deal(BASE4, coins=[3, 2, 2, 2])
    assert legal(m) == sorted(MAIN_FREE + [f"{k}:{s}" for k in ("assassinate", "steal") for s in (1, 2, 3)])
    (ev,) = play(m, "assassinate:2")
    assert ev["claim"] == "assassin" and ev["target"] == 2
    assert m.view()["coins"] == [0, 2, 2, 2]  # paid on declaration
    assert legal(m) == ["challenge", "pass"]  # seat 1, not the target
    m.play("pass")
    assert legal(m) == ["block:contessa", "challenge", "pass"]  # the target
    m.play("pass")
    assert legal(m) == ["challenge", "pass"]
    ev = m.play("pass")
    assert ev["resolved"] and not ev["turn_ended"]
    v = m.view()
    assert v["phase"] == "lose" and v["current_player"] == 2 and legal(m) == ["reveal:0", "reveal:1"]
    (ev,) = play(m, "reveal:1")
    assert ev["phase"] == "lose" and ev["reveals"] == [{"seat": 2, "role": CO, "index": 1}]
    assert ev["turn_ended"] and ev["eliminated"] == []
    assert m.hands[2] == [AM] and m.revealed[2] == [CO]
    v = m.view()
    assert v["hidden"] == [2, 2, 1, 2] and v["current_player"] == 1 and v["turn"] == 1


def test_coup_resolves_without_a_window():
    m = deal(BASE4, coins=[7, 2, 2, 2])
    assert {"coup:1", "coup:2", "coup:3"} <= set(m.legal_actions())
    (ev,) = play(m, "coup:1")
    assert ev["resolved"] and ev["claim"] is None and not ev["turn_ended"]
    v = m.view()
    assert v["coins"] == [0, 2, 2, 2] and v["phase"] == "lose" and v["current_player"] == 1
    (ev,) = play(m, "reveal:0")
    assert reveals(ev) == [reveal(1, A)] and m.hands[1] == [CO] and ev["turn_ended"]
    # a one-card target reveals automatically and is out in the same step
    m = deal([[D, CA], [CO], [AM, CO], [D, AM]], revealed=[[], [A], [], []], coins=[8, 2, 2, 2])
    (ev,) = play(m, "coup:1")
    assert reveals(ev) == [reveal(1, CO)] and ev["eliminated"] == [1] and ev["turn_ended"]
    v = m.view()
    assert v["alive"] == [True, False, True, True] and v["coins"][0] == 1 and v["current_player"] == 2


def test_exchange_two_cards_keep_choice():
    hands = [[AM, D], [A, CO], [CA, CO], [D, AM]]
    m = deal(hands, first=[D, CO])
    deck0 = m.deck
    play(m, "exchange", "pass", "pass")
    ev = m.play("pass")
    assert ev["resolved"] and not ev["turn_ended"] and ev["exchange_drawn"] == [D, CO]
    v = m.view()
    assert v["phase"] == "exchange" and v["current_player"] == 0
    assert m.drawn == [D, CO] and m.deck == deck0[2:]  # the deck's next 2 cards, in order
    assert_conserved(m)  # drawn cards count
    expected = ["keep:ambassador+contessa", "keep:duke+ambassador", "keep:duke+contessa", "keep:duke+duke"]
    assert legal(m) == expected == formable_keeps([AM, D, D, CO], 2)
    (ev,) = play(m, "keep:duke+contessa")
    assert ev["phase"] == "exchange" and ev["action"] == "keep:duke+contessa" and ev["turn_ended"]
    assert m.hands[0] == [D, CO]  # role-index order
    assert m.drawn == [] and collections.Counter(m.deck) == collections.Counter(deck0[2:] + [AM, D])
    assert m.view()["current_player"] == 1 and m.view()["turn"] == 1


def test_exchange_one_card_keeps_singles_only():
    m = deal([[AM], [A, CO], [CA, CO], [D, AM]], revealed=[[CA], [], [], []], first=[D, CA])
    deck0 = m.deck
    play(m, "exchange", "pass", "pass", "pass")
    assert m.drawn == [D, CA] and m.deck == deck0[2:]
    assert legal(m) == ["keep:ambassador", "keep:captain", "keep:duke"] == formable_keeps([AM, D, CA], 1)
    play(m, "keep:captain")
    assert m.hands[0] == [CA] and m.drawn == [] and m.view()["hidden"][0] == 1
    assert collections.Counter(m.deck) == collections.Counter(deck0[2:] + [AM, D])


def test_exchange_after_truthful_challenge_draws_from_reshuffled_deck():
    m = deal([[AM, D], [A, CO], [CA, CO], [D, AM]])
    play(m, "exchange")
    (ev,) = play(m, "challenge")
    assert ev["challenge"] == {"seat": 0, "role": AM, "bluff_caught": False}
    assert m.hands[0][1] == D and m.hands[0][0] == ev["redraw"]  # replaced in place
    assert m.view()["phase"] == "lose" and m.current_player == 1
    (ev,) = play(m, "reveal:1")
    assert ev["resolved"] and m.view()["phase"] == "exchange" and len(m.drawn) == 2
    assert ev["exchange_drawn"] == m.drawn
    assert legal(m) == formable_keeps(m.hands[0] + m.drawn, 2)
    play(m, m.legal_actions()[0])
    assert len(m.hands[0]) == 2 and m.drawn == [] and m.current_player == 1


def test_forced_coup_at_ten_or_more():
    hands = [[D, CA], [A, CO], [], [D, AM]]
    for coins in (10, 13):
        m = deal(hands, revealed=[[], [], [AM, CO], []], coins=[coins, 2, 2, 2])
        assert legal(m) == ["coup:1", "coup:3"]
    (ev,) = play(m, "income")  # anything else forfeits
    assert ev["forfeit"] and ev["eliminated"] == [0]
    m = deal(hands, revealed=[[], [], [AM, CO], []], coins=[9, 2, 2, 2])
    assert "income" in m.legal_actions() and "coup:1" in m.legal_actions()


# ================================================================ blocks
@pytest.mark.parametrize("blocker", [1, 2, 3])
def test_foreign_aid_blocked_by_duke_any_responder(blocker):
    m = deal(BASE4)
    play(m, "foreign_aid", *["pass"] * (blocker - 1))
    assert m.current_player == blocker
    (ev,) = play(m, "block:duke")  # seat 2 holds no duke: an unchallenged bluff stands too
    assert ev["claim"] == "duke" and ev["seat"] == blocker and not ev["turn_ended"]
    v = m.view()
    assert v["phase"] == "answer_block" and v["current_player"] == 0
    assert v["blocker"] == blocker and v["block_role"] == "duke"
    assert legal(m) == ["challenge", "pass"]
    (ev,) = play(m, "pass")
    assert not ev["resolved"] and ev["turn_ended"]
    assert m.view()["coins"] == [2, 2, 2, 2] and m.current_player == 1


def test_assassinate_blocked_by_contessa_coins_stay_spent():
    m = deal(BASE4, coins=[5, 2, 2, 2])
    play(m, "assassinate:2")
    assert "block:contessa" not in m.legal_actions()  # seat 1 is no target
    play(m, "pass")
    (ev,) = play(m, "block:contessa")
    assert ev["claim"] == "contessa" and m.view()["phase"] == "answer_block"
    (ev,) = play(m, "pass")
    assert ev["turn_ended"] and not ev["resolved"]
    v = m.view()
    assert v["coins"] == [2, 2, 2, 2] and v["hidden"] == [2, 2, 2, 2] and v["current_player"] == 1


@pytest.mark.parametrize("role", [CA, AM])
def test_steal_blocked_by_target(role):
    m = deal(BASE4)
    play(m, "steal:2")
    assert not any(a.startswith("block") for a in m.legal_actions())  # seat 1 is no target
    play(m, "pass")
    (ev,) = play(m, f"block:{role}")
    assert ev["claim"] == role and m.view()["block_role"] == role
    play(m, "pass")
    assert m.view()["coins"] == [2, 2, 2, 2] and m.current_player == 1 and m.view()["turn"] == 1


# ================================================================ challenges of actions
def test_challenge_truthful_tax_challenger_loses_then_tax():
    m = deal([[CA, D], [A, CO], [AM, CO], [D, AM]])
    play(m, "tax")
    (ev,) = play(m, "challenge")
    assert ev["challenge"] == {"seat": 0, "role": D, "bluff_caught": False}
    assert ev["redraw"] in rules.ROLES and not ev["resolved"]
    assert len(m.hands[0]) == 2 and m.hands[0][0] == CA and m.hands[0][1] == ev["redraw"]
    assert len(m.deck) == 7  # the duke went in, the replacement came out
    v = m.view()
    assert v["phase"] == "lose" and v["current_player"] == 1 and v["coins"][0] == 2
    (ev,) = play(m, "reveal:0")
    assert reveals(ev) == [reveal(1, A)] and ev["resolved"] and ev["turn_ended"]
    v = m.view()
    assert v["coins"] == [5, 2, 2, 2] and v["current_player"] == 1 and m.hands[1] == [CO]


def test_challenge_truthful_one_card_challenger_pays_at_once():
    m = deal([[CA, D], [A, CO], [AM], [D, AM]], revealed=[[], [], [CO], []])
    play(m, "tax", "pass")
    (ev,) = play(m, "challenge")
    assert ev["challenge"]["bluff_caught"] is False and reveals(ev) == [reveal(2, AM)]
    assert ev["eliminated"] == [2] and ev["resolved"] and ev["turn_ended"]
    assert m.view()["coins"] == [5, 2, 2, 2] and m.current_player == 1


@pytest.mark.parametrize("action", ["tax", "steal:2", "exchange"])
def test_challenge_bluff_actor_loses_action_cancelled(action):
    m = deal([[CA, CO], [A, D], [AM, CO], [D, AM]] if action != "steal:2" else [[D, CO], [A, CA], [AM, CO], [D, AM]])
    hands0 = m.hands
    play(m, action, "pass")
    (ev,) = play(m, "challenge")
    assert ev["challenge"]["seat"] == 0 and ev["challenge"]["bluff_caught"] is True and ev["redraw"] is None
    v = m.view()
    assert v["phase"] == "lose" and v["current_player"] == 0 and legal(m) == ["reveal:0", "reveal:1"]
    (ev,) = play(m, "reveal:1")
    assert reveals(ev) == [reveal(0, hands0[0][1])] and not ev["resolved"] and ev["turn_ended"]
    v = m.view()
    assert v["coins"] == [2, 2, 2, 2] and m.drawn == [] and m.hands[1:] == hands0[1:]
    assert v["current_player"] == 1 and v["phase"] == "action"


def test_no_block_window_after_actor_wins_challenge():
    m = deal([[CA, D], [A, CO], [AM, CO], [D, AM]], coins=[2, 2, 3, 2])
    play(m, "steal:2")
    (ev,) = play(m, "challenge")  # seat 1, not the target, challenges the real captain
    assert m.view()["phase"] == "lose" and m.current_player == 1
    (ev,) = play(m, "reveal:1")  # ...and the steal resolves at once: the target gets no block
    assert ev["resolved"] and ev["turn_ended"]
    assert m.view()["coins"] == [4, 2, 1, 2] and m.current_player == 1


def test_losses_paid_one_at_a_time_in_order():
    m = deal([[A, D], [CA, CO], [AM, CO], [D, AM]], coins=[3, 2, 2, 2])
    play(m, "assassinate:2")
    (ev,) = play(m, "challenge")  # seat 1 challenges the real assassin
    assert m.view()["phase"] == "lose" and m.current_player == 1
    (ev,) = play(m, "reveal:0")  # the challenger's loss first; then the assassination
    assert reveals(ev) == [reveal(1, CA)] and ev["resolved"] and not ev["turn_ended"]
    assert m.view()["phase"] == "lose" and m.current_player == 2
    (ev,) = play(m, "reveal:0")
    assert reveals(ev) == [reveal(2, AM)] and ev["turn_ended"]
    assert m.view()["hidden"] == [2, 1, 1, 2] and m.current_player == 1


# ================================================================ challenges of blocks
def test_block_challenged_blocker_truthful_block_stands():
    m = deal(BASE4)
    play(m, "foreign_aid", "pass", "pass", "block:duke")  # seat 3 holds D at index 0
    (ev,) = play(m, "challenge")
    assert ev["challenge"] == {"seat": 3, "role": D, "bluff_caught": False}
    assert m.hands[3][0] == ev["redraw"] and m.hands[3][1] == AM
    assert m.view()["phase"] == "lose" and m.current_player == 0
    (ev,) = play(m, "reveal:0")
    assert reveals(ev) == [reveal(0, D)] and not ev["resolved"] and ev["turn_ended"]
    assert m.view()["coins"] == [2, 2, 2, 2] and m.current_player == 1


def test_block_challenged_blocker_bluffed_action_resolves():
    m = deal(BASE4)
    play(m, "foreign_aid", "pass", "block:duke")  # seat 2 holds AM, CO
    (ev,) = play(m, "challenge")
    assert ev["challenge"] == {"seat": 2, "role": D, "bluff_caught": True} and ev["redraw"] is None
    assert m.view()["phase"] == "lose" and m.current_player == 2
    (ev,) = play(m, "reveal:0")
    assert reveals(ev) == [reveal(2, AM)] and ev["resolved"] and ev["turn_ended"]
    assert m.view()["coins"] == [4, 2, 2, 2] and m.current_player == 1


def test_steal_block_bluff_caught_steal_resolves():
    m = deal([[CA, D], [A, CO], [CO], [D, AM]], revealed=[[], [], [AM], []], coins=[2, 2, 5, 2])
    play(m, "steal:2", "pass", "block:captain")
    (ev,) = play(m, "challenge")
    assert ev["challenge"]["bluff_caught"] and ev["eliminated"] == [2]
    # the blocker is out, so the steal resolves against an eliminated seat: nothing moves
    assert m.view()["coins"] == [2, 2, 5, 2] and ev["turn_ended"]
    m = deal([[CA, D], [A, CO], [CO, A], [D, AM]], coins=[2, 2, 5, 2])
    play(m, "steal:2", "pass", "block:ambassador", "challenge", "reveal:1")
    assert m.view()["coins"] == [4, 2, 3, 2] and m.hands[2] == [CO]


# ================================================================ assassinate coins
def test_assassinate_bluff_refund_before_loss():
    m = deal([[D, CA], [A, CO], [AM, CO], [D, AM]], coins=[3, 2, 2, 2])
    play(m, "assassinate:1")
    assert m.view()["coins"][0] == 0
    (ev,) = play(m, "challenge")  # the target challenges
    assert ev["challenge"] == {"seat": 0, "role": A, "bluff_caught": True}
    v = m.view()
    assert v["coins"][0] == 3 and v["phase"] == "lose" and v["current_player"] == 0  # refund first
    play(m, "reveal:0")
    v = m.view()
    assert v["coins"] == [3, 2, 2, 2] and v["hidden"] == [1, 2, 2, 2] and v["current_player"] == 1


def test_assassinate_refund_stands_when_loss_ends_match():
    m = deal([[D], [A, CO]], revealed=[[CA], []], coins=[3, 2])
    play(m, "assassinate:1")
    (ev,) = play(m, "challenge")
    assert ev["game_over"] and ev["eliminated"] == [0]
    v = m.view()
    assert v["done"] and v["winner"] == 1 and v["placements"] == [1, 0] and v["coins"] == [3, 2]


def test_assassinate_block_survives_counter_challenge_coins_stay_spent():
    m = deal(BASE4, coins=[4, 2, 2, 2])
    play(m, "assassinate:1", "block:contessa")  # seat 1 holds CO at index 1
    (ev,) = play(m, "challenge")
    assert ev["challenge"] == {"seat": 1, "role": CO, "bluff_caught": False}
    assert m.hands[1][0] == A and m.hands[1][1] == ev["redraw"]
    play(m, "reveal:1")
    v = m.view()
    assert v["coins"] == [1, 2, 2, 2] and v["hidden"] == [1, 2, 2, 2] and v["revealed"][0] == [CA]
    assert v["current_player"] == 1 and v["turn"] == 1


# ================================================================ double losses
def test_double_loss_target_challenges_real_assassin():
    m = deal([[A, D], [CO, CA], [AM, CO], [D, AM]], coins=[3, 2, 2, 2])
    play(m, "assassinate:1")
    (ev,) = play(m, "challenge")
    assert ev["challenge"] == {"seat": 0, "role": A, "bluff_caught": False} and ev["redraw"] is not None
    assert m.view()["phase"] == "lose" and m.current_player == 1
    (ev,) = play(m, "reveal:1")  # the chosen loss, then the assassination takes the other
    assert reveals(ev) == [reveal(1, CA), reveal(1, CO)] and ev["eliminated"] == [1]
    assert ev["resolved"] and ev["turn_ended"]
    v = m.view()
    assert v["alive"] == [True, False, True, True] and v["coins"][0] == 0 and v["current_player"] == 2
    assert m.revealed[1] == [CA, CO]


def test_double_loss_after_bluffed_contessa():
    m = deal([[A, D], [D, CA], [AM, CO], [CO, AM]], coins=[3, 2, 2, 2])
    play(m, "assassinate:1", "block:contessa")
    (ev,) = play(m, "challenge")
    assert ev["challenge"] == {"seat": 1, "role": CO, "bluff_caught": True}
    assert m.view()["phase"] == "lose" and m.current_player == 1
    (ev,) = play(m, "reveal:0")
    assert reveals(ev) == [reveal(1, D), reveal(1, CA)] and ev["eliminated"] == [1] and ev["resolved"]
    v = m.view()
    assert v["alive"] == [True, False, True, True] and v["coins"][0] == 0 and v["current_player"] == 2


# ================================================================ steal amounts, void effects
@pytest.mark.parametrize("target_coins,moved", [(0, 0), (1, 1), (2, 2), (5, 2)])
def test_steal_amount(target_coins, moved):
    m = deal(BASE4, coins=[2, 2, target_coins, 2])
    assert "steal:2" in m.legal_actions()
    (*_, ev) = play(m, "steal:2", "pass", "pass", "pass")
    assert ev["resolved"] and ev["turn_ended"]
    assert m.view()["coins"] == [2 + moved, 2, target_coins - moved, 2]


def test_steal_void_when_target_dies_challenging():
    m = deal([[CA, D], [A, CO], [CO], [D, AM]], revealed=[[], [], [AM], []], coins=[2, 2, 5, 2])
    play(m, "steal:2", "pass")
    (ev,) = play(m, "challenge")
    assert ev["challenge"]["bluff_caught"] is False and ev["eliminated"] == [2] and ev["turn_ended"]
    v = m.view()
    assert v["coins"] == [2, 2, 5, 2] and v["current_player"] == 1 and not v["done"]


def test_assassination_void_when_target_dies_challenging():
    m = deal([[A, D], [A, CO], [CO], [D, AM]], revealed=[[], [], [AM], []], coins=[3, 2, 2, 2])
    play(m, "assassinate:2", "pass")
    (ev,) = play(m, "challenge")
    assert reveals(ev) == [reveal(2, CO)] and ev["eliminated"] == [2] and ev["turn_ended"]
    v = m.view()
    assert v["coins"] == [0, 2, 2, 2] and v["hidden"] == [2, 2, 0, 2] and v["current_player"] == 1


def test_steal_void_when_target_forfeits_in_window():
    m = deal(BASE4, coins=[2, 2, 5, 2])
    play(m, "steal:2", "pass")
    (ev,) = play(m, "income")  # the target forfeits: play goes on as a pass
    assert ev["forfeit"] and ev["eliminated"] == [2] and reveals(ev) == [reveal(2, AM), reveal(2, CO)]
    assert m.view()["phase"] == "react" and m.current_player == 3
    (ev,) = play(m, "pass")
    assert ev["turn_ended"]
    assert m.view()["coins"] == [2, 2, 5, 2] and m.current_player == 1


# ================================================================ end of the match
def test_immediate_end_drops_pending_tax():
    m = deal([[D, CA], [A], [], []], revealed=[[], [CO], [AM, CO], [D, AM]])
    play(m, "tax")
    (ev,) = play(m, "challenge")
    assert ev["game_over"] and ev["eliminated"] == [1] and not ev["resolved"]
    v = m.view()
    assert v["done"] and v["phase"] == "done" and v["current_player"] is None and v["winner"] == 0
    assert v["coins"] == [2, 2, 2, 2]  # no tax paid
    assert v["placements"] == [0, 1, 3, 2]  # dealt-out seats count as eliminated in seat order
    assert m.legal_actions() == [] and m.done
    assert rewards(m) == pytest.approx(expected_rewards(4, 0))


def test_immediate_end_drops_exchange_choice():
    m = deal([[AM, D], [A]], revealed=[[], [CO]], first=[CA, CA])
    play(m, "exchange")
    (ev,) = play(m, "challenge")
    assert ev["game_over"] and ev["exchange_drawn"] == [] and not ev["resolved"]
    assert m.drawn == [] and len(m.deck) == 11 and len(m.hands[0]) == 2
    assert m.view()["placements"] == [0, 1] and m.view()["phase"] == "done"


def test_forfeit_of_last_opponent_ends_match_dropping_the_action():
    m = deal([[D, CA], [A, CO]])
    play(m, "tax")
    (ev,) = play(m, "income")  # the only responder forfeits
    assert ev["forfeit"] and ev["game_over"] and ev["eliminated"] == [1]
    v = m.view()
    assert v["done"] and v["winner"] == 0 and v["coins"] == [2, 2] and v["revealed"][1] == [A, CO]


def test_forfeit_choosing_a_loss_voids_the_pending_assassination():
    m = deal([[A, D], [CO, CA], [AM, CO], [D, AM]], coins=[3, 2, 2, 2])
    play(m, "assassinate:1", "challenge")  # the target challenges the real assassin and must lose one
    (ev,) = play(m, "income")  # forfeits instead: both cards out, the loss counts as paid
    assert ev["forfeit"] and reveals(ev) == [reveal(1, CO), reveal(1, CA)] and ev["eliminated"] == [1]
    assert ev["turn_ended"]
    v = m.view()
    assert v["hidden"] == [2, 0, 2, 2] and v["coins"] == [0, 2, 2, 2] and v["current_player"] == 2


CAP_CASES = [
    # hidden beats coins; then coins; then the lower seat
    dict(id="hidden-coins-seat", hands=[[D], [A, CO], [CA, CO], [D, AM]], revealed=[[CA], [], [], []],
         coins=[8, 2, 5, 2], actions=["income"], placements=[2, 1, 3, 0]),
    # the eliminated follow, most recent first (seat 3 goes out on the last turn)
    dict(id="eliminated-recent-first", hands=[[D, CA], [], [CO, CA], [AM]], revealed=[[], [CO, A], [], [D]],
         coins=[7, 9, 0, 9], actions=["coup:3"], placements=[0, 2, 3, 1]),
    # the actor forfeits on the 200th turn: the turn ends, the cap applies
    dict(id="actor-forfeits", hands=[[D, CA], [A, CO], [CA, CO], [D, AM]], revealed=None,
         coins=[9, 1, 1, 3], actions=["block:duke"], placements=[3, 1, 2, 0]),
]


@pytest.mark.parametrize("case", CAP_CASES, ids=[c["id"] for c in CAP_CASES])
def test_turn_cap_tie_breaks(case):
    m = deal(case["hands"], revealed=case["revealed"], coins=case["coins"], turn=199)
    evs = play(m, *case["actions"])
    assert evs[-1]["turn_ended"] and evs[-1]["game_over"] and all(not e["game_over"] for e in evs[:-1])
    v = m.view()
    assert v["done"] and v["turn"] == 200 and v["phase"] == "done"
    assert v["placements"] == case["placements"] and v["winner"] == case["placements"][0]
    assert not bool(m.state.truncated) and bool(m.state.terminated)
    assert rewards(m) == pytest.approx(expected_rewards(4, case["placements"][0]))


def test_turn_cap_six_players():
    hands = [[D], [A, CO], [CA, CO], [CO, AM], [D], []]
    revealed = [[CA], [], [], [], [AM], [A, D]]
    m = deal(hands, revealed=revealed, coins=[16, 3, 3, 5, 0, 4], turn=199)
    assert legal(m) == ["coup:1", "coup:2", "coup:3", "coup:4"]
    play(m, "coup:4")
    v = m.view()
    assert v["done"] and v["coins"][0] == 9
    assert v["placements"] == [3, 1, 2, 0, 4, 5] and v["winner"] == 3
    assert rewards(m) == pytest.approx(expected_rewards(6, 3))


def test_turn_cap_coins_above_99_still_ranked():
    m = deal([[D, CA], [A, CO], [CA], [D, AM]], revealed=[[], [], [CO], []], coins=[120, 150, 0, 0], turn=199)
    play(m, "coup:2")
    assert m.view()["coins"] == [113, 150, 0, 0]
    assert m.view()["placements"] == [1, 0, 3, 2]


# ================================================================ forfeits
def test_forfeit_in_action_phase():
    m = deal(BASE4, coins=[7, 2, 2, 2])
    (ev,) = play(m, "coup:0")  # a protocol name for its own seat: never legal
    assert ev["forfeit"] and ev["action"] == "coup:0" and ev["turn_ended"] and not ev["resolved"]
    assert reveals(ev) == [reveal(0, D), reveal(0, CA)] and ev["eliminated"] == [0]
    v = m.view()
    assert v["hidden"] == [0, 2, 2, 2] and v["revealed"][0] == [D, CA] and v["coins"][0] == 7
    assert v["current_player"] == 1 and v["phase"] == "action" and v["turn"] == 1


def test_forfeit_targeting_an_eliminated_seat():
    m = deal([[D, CA], [A, CO], [], [D, AM]], revealed=[[], [], [AM, CO], []])
    (ev,) = play(m, "steal:2")
    assert ev["forfeit"] and ev["eliminated"] == [0] and m.current_player == 1


def test_forfeit_in_react_counts_as_pass():
    m = deal(BASE4)
    play(m, "tax")
    (ev,) = play(m, "block:duke")  # no block against tax: forfeit
    assert ev["forfeit"] and ev["eliminated"] == [1] and not ev["turn_ended"]
    assert m.view()["phase"] == "react" and m.current_player == 2
    play(m, "pass", "pass")
    assert m.view()["coins"] == [5, 2, 2, 2] and m.current_player == 2  # seat 1 is skipped


def test_forfeit_in_answer_block_ends_turn():
    m = deal(BASE4, coins=[3, 2, 2, 2])
    play(m, "assassinate:1", "block:contessa")
    (ev,) = play(m, "reveal:0")
    assert ev["forfeit"] and ev["eliminated"] == [0] and ev["turn_ended"] and not ev["resolved"]
    v = m.view()
    assert v["coins"] == [0, 2, 2, 2] and v["hidden"] == [0, 2, 2, 2] and v["current_player"] == 1


def test_forfeit_in_lose_phase_counts_as_paid_turn_ends():
    m = deal(BASE4, coins=[7, 2, 2, 2])
    play(m, "coup:2")
    (ev,) = play(m, "pass")
    assert ev["forfeit"] and ev["eliminated"] == [2] and ev["turn_ended"]
    assert reveals(ev) == [reveal(2, AM), reveal(2, CO)]  # both cards, no extra loss
    assert m.view()["hidden"] == [2, 2, 0, 2] and m.current_player == 1


def test_forfeit_in_lose_phase_turn_goes_on():
    m = deal(BASE4)
    play(m, "tax", "challenge")  # seat 0 holds the duke: seat 1 must choose a card
    (ev,) = play(m, "keep:duke")
    assert ev["forfeit"] and ev["eliminated"] == [1] and ev["resolved"] and ev["turn_ended"]
    assert m.view()["coins"] == [5, 2, 2, 2] and m.view()["hidden"] == [2, 0, 2, 2]


def test_forfeit_in_exchange_returns_drawn_cards():
    m = deal([[AM, D], [A, CO], [CA, CO], [D, AM]], first=[D, CO])
    deck0 = m.deck
    play(m, "exchange", "pass", "pass", "pass")
    assert m.drawn == [D, CO]
    (ev,) = play(m, "income")
    assert ev["forfeit"] and ev["phase"] == "exchange" and ev["turn_ended"] and ev["eliminated"] == [0]
    assert reveals(ev) == [reveal(0, AM), reveal(0, D)]
    assert m.drawn == [] and collections.Counter(m.deck) == collections.Counter(deck0)
    assert m.revealed[0] == [AM, D] and m.current_player == 1


def test_forfeiter_placed_at_the_moment_of_forfeit():
    m = deal([[D, CA], [A, CO], [CO], []], revealed=[[], [], [AM], [D, AM]], coins=[2, 7, 2, 2])
    play(m, "income")
    play(m, "pass")  # seat 1 forfeits in its action phase: second elimination (seat 3 dealt out)
    assert m.current_player == 2
    play(m, "income", "income")  # seat 2, then seat 0
    assert m.current_player == 2 and m.view()["coins"] == [4, 7, 3, 2]
    play(m, "steal:0", "challenge")  # seat 2 bluffs with one card: out, match over
    v = m.view()
    assert v["done"] and v["placements"] == [0, 2, 1, 3]


@pytest.mark.parametrize("name", ["fly", "coup:9", "coup:-1", "keep:duke+fly", "", "steal:01"])
def test_non_protocol_name_raises_and_changes_nothing(name):
    m = deal(BASE4)
    play(m, "foreign_aid")
    before = (m.view(), m.hands, m.deck, list(m.events))
    with pytest.raises(ValueError) as err:
        m.play(name)
    msg = str(err.value)
    assert "legal actions" in msg and "block:duke" in msg and "pass" in msg
    assert (m.view(), m.hands, m.deck, list(m.events)) == before


# ================================================================ small and large tables
def test_two_player_match():
    m = deal([[D, A], [CA, CO]])
    assert legal(m) == sorted(MAIN_FREE + ["steal:1"])
    play(m, "tax")
    assert m.current_player == 1 and legal(m) == ["challenge", "pass"]
    play(m, "pass")
    assert m.view()["coins"] == [5, 2] and m.current_player == 1
    play(m, "steal:0")
    assert legal(m) == ["block:ambassador", "block:captain", "challenge", "pass"]
    (ev,) = play(m, "challenge")  # seat 1 holds the captain
    assert ev["challenge"] == {"seat": 1, "role": CA, "bluff_caught": False}
    assert m.hands[1][0] == ev["redraw"] and m.hands[1][1] == CO
    (ev,) = play(m, "reveal:1")  # seat 0 gives up the assassin, then the steal resolves
    assert ev["resolved"] and m.view()["coins"] == [3, 4] and m.hands[0] == [D]
    play(m, "assassinate:1")  # a bluff now
    assert m.view()["coins"] == [0, 4]
    (ev,) = play(m, "challenge")
    assert ev["challenge"]["bluff_caught"] and ev["eliminated"] == [0] and ev["game_over"]
    v = m.view()
    assert v["done"] and v["winner"] == 1 and v["placements"] == [1, 0] and v["coins"] == [3, 4]
    assert rewards(m) == pytest.approx([-1.0, 1.0])


def test_six_player_match():
    hands = [[D, CA], [A], [AM], [CO], [D], [AM]]
    revealed = [[], [CO], [CA], [A], [CO], [D]]
    m = deal(hands, revealed=revealed, coins=[14, 3, 2, 2, 2, 2])
    assert legal(m) == [f"coup:{s}" for s in range(1, 6)]
    (ev,) = play(m, "coup:5")
    assert ev["eliminated"] == [5] and m.current_player == 1
    # turn 1: seat 1 assassinates seat 3, who blocks truthfully; the block stands
    play(m, "assassinate:3", "pass")
    assert m.current_player == 3 and "block:contessa" in m.legal_actions()
    play(m, "block:contessa", "pass")
    assert m.view()["coins"][1] == 0 and m.current_player == 2
    # turn 2: seat 2's foreign aid, blocked by seat 4's real duke; seat 2 challenges and is out
    play(m, "foreign_aid", "pass")
    assert m.current_player == 4
    play(m, "block:duke")
    (ev,) = play(m, "challenge")
    assert ev["challenge"] == {"seat": 4, "role": D, "bluff_caught": False} and ev["eliminated"] == [2]
    assert m.current_player == 3
    # turn 3: seat 3 bluffs a steal from seat 4, who challenges
    play(m, "steal:4")
    assert m.current_player == 4
    (ev,) = play(m, "challenge")
    assert ev["eliminated"] == [3] and m.current_player == 4
    # turn 4: seat 4 takes income; turn 5: seat 0 coups seat 4
    play(m, "income")
    assert m.current_player == 0 and {"coup:1", "coup:4"} <= set(m.legal_actions())
    assert not any(a.endswith((":2", ":3", ":5")) for a in m.legal_actions())  # the out seats
    play(m, "coup:4")
    # turn 6: seat 1 (one card, assassin) bluffs a steal; seat 0 answers first (2..5 are out)
    play(m, "steal:0")
    assert m.current_player == 0 and m.view()["phase"] == "react"
    (ev,) = play(m, "challenge")
    assert ev["game_over"]
    v = m.view()
    assert v["done"] and v["winner"] == 0 and v["placements"] == [0, 1, 4, 3, 2, 5]
    assert v["turn"] == 6 and v["coins"][0] == 0
    assert rewards(m) == pytest.approx(expected_rewards(6, 0))


# ================================================================ after the end
def test_step_after_done():
    m = deal([[D], [A, CO]], revealed=[[CA], []], coins=[3, 2])
    play(m, "assassinate:1", "challenge")
    assert m.done
    with pytest.raises(RuntimeError):
        m.play("income")
    env, _, step, _ = compiled(2)
    state = m.state
    assert rewards(m) == pytest.approx([-1.0, 1.0])
    for action in (0, 5, env.num_actions - 1):
        new = step(state, np.int32(action), jax.random.PRNGKey(1))
        assert bool(new.terminated)
        assert np.all(np.asarray(new.rewards) == 0.0)
        same = jax.tree.map(lambda a, b: bool(np.array_equal(np.asarray(a), np.asarray(b))),
                            new.replace(rewards=state.rewards), state)
        assert all(jax.tree.leaves(same))
