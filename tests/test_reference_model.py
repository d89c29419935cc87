"""Scenario tests of the plain-Python reference model (tests/reference_model.py)."""
import collections
import os
import random
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from reference_model import KEEP_NAMES, ROLES, RefGame  # noqa: E402

D, A, CA, AM, CO = ROLES  # duke, assassin, captain, ambassador, contessa


def game(hands, revealed=None, first=(), coins=None, **kw):
    """Explicit deal: the deck starts with ``first`` and holds the rest in role order."""
    n = len(hands)
    revealed = revealed or [[] for _ in range(n)]
    left = collections.Counter({r: 3 for r in ROLES})
    for c in [c for h in hands for c in h] + [c for r in revealed for c in r] + list(first):
        left[c] -= 1
    deck = list(first) + [r for r in ROLES for _ in range(left[r])]
    return RefGame(n, hands=hands, deck=deck, coins=coins, revealed=revealed, **kw)


def card_counts(g):
    cards = [c for h in g.hands for c in h] + [c for r in g.revealed for c in r] + g.deck + g.drawn
    return collections.Counter(cards)


def assert_conserved(g):
    assert card_counts(g) == {r: 3 for r in ROLES}


def test_income_and_random_deal():
    g = RefGame(2, seed=3)
    assert_conserved(g) and len(g.deck) == 11
    assert g.legal_actions() == sorted(["income", "foreign_aid", "tax", "exchange", "steal:1"])
    g.play("income")
    assert g.coins == [3, 2] and g.turn == 1 and g.current_player == 1 and g.phase == "action"
    assert RefGame(2, seed=3).hands == RefGame(2, seed=3).hands


def test_foreign_aid_block_stands():
    g = game([[A, CA], [D, CO], [AM, AM]])
    g.play("foreign_aid")
    assert g.phase == "react" and g.current_player == 1
    assert g.legal_actions() == ["block:duke", "pass"]
    g.play("pass")
    assert g.current_player == 2
    g.play("block:duke")  # a bluff, but unchallenged
    assert g.phase == "answer_block" and g.current_player == 0
    assert g.legal_actions() == ["challenge", "pass"]
    g.play("pass")
    assert g.coins == [2, 2, 2] and g.turn == 1 and g.current_player == 1


def test_foreign_aid_block_challenged_blocker_true():
    g = game([[A, CA], [CO, D], [AM, AM]])
    g.play("foreign_aid")
    g.play("block:duke")
    g.play("challenge")
    # the blocker's duke went into the (now shuffled) deck and was replaced in place
    assert g.shuffled and g.hands[1][0] == CO and len(g.hands[1]) == 2 and len(g.deck) == 9
    assert g.phase == "lose" and g.current_player == 0
    g.play("reveal:1")
    assert g.hands[0] == [A] and g.revealed[0] == [CA]
    assert g.coins == [2, 2, 2] and g.turn == 1 and g.current_player == 1
    assert_conserved(g)


def test_foreign_aid_block_challenged_blocker_bluff():
    g = game([[A, CA], [CO, AM], [AM, D]])
    g.play("foreign_aid")
    g.play("block:duke")
    g.play("challenge")
    assert g.phase == "lose" and g.current_player == 1 and not g.shuffled
    g.play("reveal:0")
    assert g.hands[1] == [AM] and g.revealed[1] == [CO]
    assert g.coins == [4, 2, 2] and g.turn == 1 and g.current_player == 1


def test_tax_challenged_truthful():
    g = game([[CO, D], [A, CA], [AM, AM]])
    g.play("tax")
    assert g.legal_actions() == ["challenge", "pass"]
    g.play("challenge")
    assert g.shuffled and g.hands[0][0] == CO and len(g.deck) == 9  # swap before the loss
    assert g.phase == "lose" and g.current_player == 1
    g.play("reveal:0")
    assert g.hands[1] == [CA] and g.revealed[1] == [A]
    assert g.coins == [5, 2, 2] and g.turn == 1 and g.current_player == 1
    assert_conserved(g)


def test_tax_challenged_bluff():
    g = game([[CO, A], [CA, CA], [D, AM]])
    g.play("tax")
    g.play("pass")
    g.play("challenge")
    assert g.phase == "lose" and g.current_player == 0
    g.play("reveal:1")
    assert g.hands[0] == [CO] and g.coins == [2, 2, 2] and g.turn == 1 and g.current_player == 1


def test_assassinate_bluff_refund():
    g = game([[CO], [CA, CA], [D, AM]], revealed=[[A], [], []], coins=[3, 2, 2])
    g.play("assassinate:1")
    assert g.coins[0] == 0
    assert g.legal_actions() == ["block:contessa", "challenge", "pass"]
    g.play("challenge")
    assert g.coins[0] == 3 and not g.alive[0] and g.elim_order == [0]
    assert g.turn == 1 and g.current_player == 1 and not g.done
    # two players: the refund stands although the loss ends the match
    g = game([[CO], [CA, CA]], revealed=[[D], []], coins=[3, 2])
    g.play("assassinate:1")
    g.play("challenge")
    assert g.done and g.winner == 1 and g.placements == [1, 0] and g.coins == [3, 2]


def test_assassinate_blocked_coins_stay_spent():
    g = game([[A, D], [CO, CA], [D, AM]], coins=[5, 2, 2])
    g.play("assassinate:2")
    g.play("pass")  # seat 1 is not the target: no block for it
    assert g.legal_actions() == ["block:contessa", "challenge", "pass"]
    g.play("block:contessa")  # bluff
    g.play("challenge")
    assert g.phase == "lose" and g.current_player == 2
    g.play("reveal:0")  # blocker loses D, then the assassination resolves: AM auto
    assert not g.alive[2] and g.revealed[2] == [D, AM] and g.coins[0] == 2
    assert g.current_player == 1 and g.turn == 1


def test_double_loss_target_challenges_real_assassin():
    g = game([[A, D], [CO, CA], [D, AM]], coins=[3, 2, 2])
    g.play("assassinate:1")
    g.play("challenge")
    assert g.phase == "lose" and g.current_player == 1
    g.play("reveal:0")
    assert g.revealed[1] == [CO, CA] and not g.alive[1] and g.elim_order == [1]
    assert g.coins[0] == 0 and g.turn == 1 and g.current_player == 2
    assert g.legal_actions() == sorted(["income", "foreign_aid", "tax", "exchange", "steal:0"])


def test_steal_from_one_and_zero_coins():
    g = game([[CA, D], [CO, A], [D, AM]], coins=[2, 1, 0])
    g.play("steal:1")
    assert g.current_player == 1 and "block:captain" in g.legal_actions()
    g.play("pass")
    assert g.legal_actions() == ["challenge", "pass"]  # not the target
    g.play("pass")
    assert g.coins == [3, 0, 0] and g.current_player == 1
    g.play("steal:2")  # from 0 coins: nothing moves
    g.play("pass")
    g.play("pass")
    assert g.coins == [3, 0, 0] and g.current_player == 2
    g.play("income")
    g.play("steal:2")  # from 1 coin
    g.play("pass")
    g.play("pass")
    assert g.coins == [4, 0, 0] and g.turn == 4


def test_exchange_two_cards():
    g = game([[D, CO], [A, A], [CA, CA]], first=[A, AM])
    g.play("exchange")
    g.play("pass")
    g.play("pass")
    assert g.phase == "exchange" and g.current_player == 0 and g.drawn == [A, AM]
    assert g.legal_actions() == sorted(["keep:duke+assassin", "keep:duke+ambassador", "keep:duke+contessa",
                                        "keep:assassin+ambassador", "keep:assassin+contessa",
                                        "keep:ambassador+contessa"])
    assert_conserved(g)
    g.play("keep:ambassador+contessa")
    assert g.hands[0] == [AM, CO] and g.drawn == [] and g.shuffled
    assert sorted(g.deck[-2:]) == sorted([D, A]) and g.turn == 1
    assert_conserved(g)


def test_exchange_one_card_after_true_challenge():
    g = game([[AM], [CA, A]], revealed=[[CO], []], first=[D, D])
    g.play("exchange")
    g.play("challenge")  # true: AM swapped (random from shuffled deck), challenger loses
    assert g.phase == "lose" and g.current_player == 1
    g.play("reveal:1")
    assert g.phase == "exchange" and len(g.drawn) == 2
    pool = set(g.hands[0] + g.drawn)
    assert g.legal_actions() == sorted("keep:" + c for c in pool)
    g.play(g.legal_actions()[0])
    assert len(g.hands[0]) == 1 and g.current_player == 1
    assert_conserved(g)


def test_forced_coup_at_ten():
    g = game([[D, D], [CO, A], [], [CA, AM]], revealed=[[], [], [A, CA], []], coins=[10, 2, 2, 2])
    assert g.legal_actions() == ["coup:1", "coup:3"]
    g.play("coup:3")
    assert g.coins[0] == 3 and g.phase == "lose" and g.current_player == 3
    g.play("reveal:1")
    assert g.hands[3] == [CA] and g.current_player == 1 and g.turn == 1


def test_match_ends_pending_effect_dropped():
    g = game([[AM, D], [CO]], revealed=[[], [A]], coins=[2, 2])
    g.play("exchange")
    g.play("challenge")  # true claim; the challenger's last card goes, no exchange choice
    assert g.done and g.phase == "done" and g.winner == 0 and g.placements == [0, 1]
    assert g.current_player is None and g.drawn == [] and g.turn == 0
    with pytest.raises(RuntimeError):
        g.play("income")
    g = game([[CA, D], [CO]], revealed=[[], [A]], coins=[2, 5])
    g.play("steal:1")
    g.play("challenge")
    assert g.done and g.coins == [2, 5]


def test_turn_cap_ranking():
    hands = [[D, D], [CO, A], [CA], []]
    revealed = [[], [], [A], [AM, AM]]
    g = game(hands, revealed=revealed, coins=[2, 3, 9, 5], turn=199)
    g.play("income")
    assert g.done and g.turn == 200 and g.placements == [0, 1, 2, 3] and g.winner == 0
    g = game(hands, revealed=revealed, coins=[2, 4, 9, 5], turn=199)
    g.play("income")
    assert g.placements == [1, 0, 2, 3]


def test_forfeit_in_action_and_answer_block():
    g = game([[D, D], [CO, A], [CA, AM]])
    g.play("coup:1")  # a protocol name, not legal with 2 coins
    assert g.revealed[0] == [D, D] and not g.alive[0] and g.elim_order == [0]
    assert g.turn == 1 and g.current_player == 1
    g.play("foreign_aid")
    g.play("block:duke")
    g.play("reveal:0")  # illegal in answer_block: the actor forfeits -> 2 wins
    assert g.done and g.winner == 2 and g.placements == [2, 1, 0]


def test_forfeit_in_react_and_lose():
    g = game([[CA, D], [CO, A], [D, AM]], coins=[2, 5, 4])
    g.play("steal:1")
    g.play("income")  # the target forfeits: as a pass, then the steal finds it eliminated
    assert not g.alive[1] and g.current_player == 2 and g.phase == "react"
    g.play("pass")
    assert g.coins == [2, 5, 4] and g.turn == 1 and g.current_player == 2
    g = game([[D, CO], [A, CA], [AM, AM]])
    g.play("tax")
    g.play("challenge")
    g.play("keep:duke")  # forfeit while choosing the loss: loss counts as paid, tax resolves
    assert not g.alive[1] and g.coins == [5, 2, 2] and g.current_player == 2 and g.turn == 1


def test_forfeit_in_exchange():
    g = game([[D, CO], [A, A], [CA, CA]], first=[AM, AM])
    g.play("exchange")
    g.play("pass")
    g.play("pass")
    g.play("income")
    assert not g.alive[0] and g.drawn == [] and len(g.deck) == 9 and g.shuffled
    assert g.current_player == 1 and g.turn == 1
    assert_conserved(g)


def test_six_players_responder_order_and_errors():
    hands = [[D, D], [], [A, A], [CA, CA], [AM, AM], [CO, CO]]
    g = game(hands, revealed=[[], [D, A], [], [], [], []], current_player=4)
    assert g.elim_order == [1]
    g.play("tax")
    order = []
    while g.phase == "react":
        order.append(g.current_player)
        g.play("pass")
    assert order == [5, 0, 2, 3] and g.coins[4] == 5 and g.current_player == 5
    with pytest.raises(ValueError, match="legal"):
        g.play("coup:6")
    with pytest.raises(ValueError):
        RefGame(3, hands=[[D, D], [D, A], [A, A]], deck=[])


def test_random_playouts_invariants():
    rng = random.Random(0)
    names = ["income", "pass", "challenge", "reveal:1", "keep:duke", "coup:0"]
    for i in range(150):
        n = 2 + i % 5
        g = RefGame(n, seed=i)
        steps = 0
        while not g.done:
            legal = g.legal_actions()
            assert legal and (g.phase == "exchange") == bool(g.drawn)
            g.play(rng.choice(names) if rng.random() < 0.01 else rng.choice(legal))
            steps += 1
            assert steps < 5000
        assert_conserved(g)
        assert sorted(g.placements) == list(range(n)) and g.winner == g.placements[0]


def test_keep_names_match_rules():
    rules = pytest.importorskip("coupjax.rules")
    assert tuple(rules.KEEP_NAMES) == KEEP_NAMES and tuple(rules.ROLES) == ROLES


def test_set_hidden_keeps_shuffle_flag():
    g = game([[D, CO], [A, A], [CA, CA]], first=[AM, AM])
    g.play("exchange")
    g.play("pass")
    g.play("pass")
    deck = list(g.deck)
    g.set_hidden([[CO, D], [A, A], [CA, CA]], deck, [AM, AM])
    assert g.hands[0] == [CO, D] and not g.shuffled
    with pytest.raises(ValueError):
        g.set_hidden([[CO], [A, A], [CA, CA]], deck + [D], [AM, AM])
    g.play("keep:duke+ambassador")
    assert g.hands[0] == [D, AM] and sorted(g.deck[-2:]) == sorted([AM, CO])
