"""coupjax.belief: observation parsing and the CoupVisor belief / p_truth model."""
from __future__ import annotations

import functools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax.beliefs import coupvisor
from coupjax.game import deal
from coupjax.game.views import NUM_SEAT_FEATURES, SEAT_FEATURES, observation_layout
from coupjax.observation import parse
from coupjax.match import Match, compiled

D, A, C, M, T = range(5)  # duke assassin captain ambassador contessa
DEFAULT = coupvisor.CoupVisorParams()
_BELIEF = jax.jit(coupvisor.coupvisor_belief, static_argnums=1)
_TRUTH = jax.jit(coupvisor.claim_truth_probabilities, static_argnums=1)
_PARSE = jax.jit(parse, static_argnums=1)
_IMPOSSIBLE = jax.jit(jax.vmap(coupvisor.hard_impossible, in_axes=(None, None, 0)), static_argnums=1)


def belief(obs, n=4, params=DEFAULT):
    return np.asarray(_BELIEF(obs, n, params))


def truth(obs, n=4, params=DEFAULT):
    return np.asarray(_TRUTH(obs, n, params))


def impossible(obs, n=4):
    return np.asarray(_IMPOSSIBLE(obs, n, jnp.arange(5)))


@functools.lru_cache(maxsize=None)
def _observe(n):
    return jax.jit(compiled(n)[0].observe)


def observe(m, seat):
    return np.asarray(_observe(m.num_players)(m.state, seat))


def _seat_index(n, rel, field, role=0):
    start = 0
    for name, size in SEAT_FEATURES:
        if name == field:
            return observation_layout(n)["seats"][0] + NUM_SEAT_FEATURES * rel + start + role
        start += size
    raise KeyError(field)


def _table():
    return Match(4, seed=0, hands=[["duke", "assassin"], ["captain", "contessa"], ["ambassador", "duke"],
                                   ["assassin", "captain"]])


def _prior_belief(obs, n=4):
    """The no-evidence belief: prior * damp, normalised (computed here by hand)."""
    p = _PARSE(obs, n)
    remaining = np.maximum(0, 3 - np.asarray(p.visible))
    damp = np.where(remaining > 0, (remaining / 3.0) ** 0.7, 0.0)
    return damp / damp.sum()


# --------------------------------------------------------------------------- parsing
def test_parse_observation_matches_the_state():
    m = _table()
    for name in ["tax", "pass", "pass", "pass", "exchange", "pass", "pass", "pass"]:
        m.play(name)
    # seat 1 is choosing its exchange
    for seat in range(4):
        p = jax.tree.map(np.asarray, _PARSE(observe(m, seat), 4))
        order = [(seat + k) % 4 for k in range(4)]
        hands = deal.hands(m.state)
        assert p.own_cards.tolist() == hands[seat] + [-1] * (2 - len(hands[seat]))
        assert p.hidden.tolist() == [len(hands[s]) for s in order]
        claims = np.asarray(m.state._claims)[order]
        np.testing.assert_array_equal(p.claims, claims)
        assert int(p.exchanger) == (1 - seat) % 4
        drawn = deal.drawn(m.state)
        assert p.drawn.sum() == (2 if seat == 1 else 0)
        assert int(p.other_drawn) == (0 if seat == 1 else 2)
        assert int(p.deck_size) == int(m.state._deck_size)
        own = np.bincount(hands[seat] + (drawn if seat == 1 else []), minlength=5)
        np.testing.assert_array_equal(p.visible, own)
        assert int(p.num_unseen) == 15 - own.sum()
        assert int(p.turn) == 1


# --------------------------------------------------------------------------- (c) CoupVisor
TURN_ONE_TAX_BEFORE = 0.41453892  # seat 1 (captain, contessa) on seat 0, before the claim counts
TURN_ONE_TAX_AFTER = 0.55264556  # ... once the tax claim is counted


def _p_truth_by_hand(b_duke, k=3, h=2, big_n=13):
    p_hyper = 1 - math.comb(big_n - k, h) / math.comb(big_n, h)
    return 0.7 * p_hyper + 0.3 * (1 - (1 - b_duke) ** h)


def test_turn_one_tax_pinned():
    m = _table()
    before = observe(m, 1)
    m.play("tax")
    after = observe(m, 1)
    np.testing.assert_array_equal(after, np.asarray(m.state.observation))
    rel = 3  # seat 0 seen from seat 1
    assert truth(before)[rel, D] == pytest.approx(TURN_ONE_TAX_BEFORE, abs=1e-6)
    assert truth(after)[rel, D] == pytest.approx(TURN_ONE_TAX_AFTER, abs=1e-6)
    assert float(jax.jit(coupvisor.claim_truth_probability, static_argnums=1)(after, 4, rel, D)) == pytest.approx(
        TURN_ONE_TAX_AFTER, abs=1e-6)
    # by hand: seat 1 sees its captain and contessa (damp (2/3)**0.7), N = 13 unseen
    d = (2 / 3) ** 0.7
    assert TURN_ONE_TAX_BEFORE == pytest.approx(_p_truth_by_hand(0.2 / (0.6 + 0.4 * d)), abs=1e-6)
    assert TURN_ONE_TAX_AFTER == pytest.approx(_p_truth_by_hand(1.14 / (1.14 + 0.4 + 0.4 * d)), abs=1e-6)
    # both above the 0.25 tax threshold the paper quotes (the raw 0.20 prior is below it)
    assert TURN_ONE_TAX_BEFORE > 0.25
    b = belief(after)
    np.testing.assert_allclose(b.sum(axis=1), 1.0, atol=1e-6)
    assert b[rel, D] == pytest.approx(1.14 / (1.14 + 0.4 + 0.4 * d), abs=1e-6)
    np.testing.assert_allclose(b[0], [0, 0, 0.5, 0, 0.5])  # the observer's own hand
    assert truth(after)[0].tolist() == [0, 0, 1, 0, 1]


def test_hard_impossible_gives_exactly_zero():
    m = Match(4, seed=1, hands=[["duke", "duke"], ["captain", "contessa"], ["ambassador"], ["assassin", "captain"]],
              revealed=[[], [], ["duke"], []], current_player=1)
    m.play("tax")  # seat 1 bluffs a duke
    obs0 = observe(m, 0)  # seat 0 holds two dukes and sees the third revealed
    assert impossible(obs0).tolist() == [True, False, False, False, False]
    t = truth(obs0)
    assert (t[1:, D] == 0.0).all() and t[0, D] == 1.0
    assert (belief(obs0)[1:, D] == 0.0).all()
    assert (t[1:, 1:] > 0).all()
    obs2 = observe(m, 2)  # seat 2 sees only the revealed duke: possible, and likely after the claim
    assert not impossible(obs2).any()
    assert 0.0 < truth(obs2)[3, D] < 1.0  # seat 1 seen from seat 2
    # only the revealed + own + drawn copies count: a custom observation with 3 revealed
    o = np.array(obs2)
    o[_seat_index(4, 3, "revealed", C)] = 3
    assert impossible(o).tolist() == [False, False, True, False, False]
    assert (truth(o)[1:, C] == 0.0).all()


def test_repeated_claims_stay_bounded():
    m = _table()
    m.play("tax")
    obs = observe(m, 1)
    rel = 3
    o = np.array(obs)
    o[_seat_index(4, rel, "claims", D)] = 30
    b, t = belief(o), truth(o)
    assert t[rel, D] < 0.999
    assert b[rel, A] > 1e-3 and t[rel, A] > 1e-3 and b[rel, T] > 1e-3
    # the cap binds from the second claim on
    o2 = np.array(obs)
    o2[_seat_index(4, rel, "claims", D)] = 2
    np.testing.assert_allclose(belief(o2), b, atol=1e-7)
    # mixed claims and blocks share the cap per (seat, role)
    o3 = np.array(o)
    o3[_seat_index(4, rel, "blocks", D)] = 30
    np.testing.assert_allclose(belief(o3), b, atol=1e-7)
    # without the cap, 30 claims crush every other role (CoupVisor cases E1/E4)
    uncapped = coupvisor.CoupVisorParams(evidence_cap=float("inf"))
    assert belief(o, params=uncapped)[rel, A] < 1e-20
    assert np.isfinite(truth(o, params=uncapped)).all()


def test_evidence_resets_after_a_proven_claim():
    m = _table()
    m.play("tax")
    m.play("challenge")  # seat 1 challenges seat 0, who holds the duke
    m.play("reveal:0")  # seat 1 loses its captain; seat 0 redraws; the tax resolves
    obs = observe(m, 2)
    p = _PARSE(obs, 4)
    rel = 2  # seat 0 seen from seat 2
    assert int(p.renewals[rel]) == 1 and int(p.claims[rel].sum()) == 0
    np.testing.assert_allclose(belief(obs)[rel], _prior_belief(obs), atol=1e-6)
    # a proven block resets the blocker's blocks too
    m.play("steal:2")  # seat 1 steals from seat 2 (who holds an ambassador)
    m.play("block:ambassador")
    before = observe(m, 3)
    assert belief(before)[3, M] > _prior_belief(before)[M]  # seat 2 seen from seat 3
    m.play("challenge")  # seat 1 challenges; seat 2 shows the ambassador and redraws
    after = observe(m, 3)
    assert int(_PARSE(after, 4).blocks[3].sum()) == 0
    np.testing.assert_allclose(belief(after)[3], _prior_belief(after), atol=1e-6)


def test_evidence_resets_after_an_exchange():
    m = _table()
    for name in ["tax", "pass", "pass", "pass"]:
        m.play(name)
    m.play("exchange")  # seat 1
    for _ in range(3):
        m.play("pass")
    mid = observe(m, 0)  # seat 1 is choosing: its ambassador claim counts
    assert belief(mid)[1, M] > _prior_belief(mid)[M] + 0.2
    m.play(m.legal_actions()[0])
    after = observe(m, 0)
    np.testing.assert_allclose(belief(after)[1], _prior_belief(after), atol=1e-6)
    np.testing.assert_allclose(belief(after)[2], _prior_belief(after), atol=1e-6)


# --------------------------------------------------------------------------- (d) jit / vmap
def test_jit_vmap_batch_and_single_trace():
    m = _table()
    obs = [observe(m, s) for s in range(4)]
    for name in ["tax", "pass", "pass", "pass", "steal:2", "block:ambassador", "pass", "foreign_aid", "block:duke"]:
        m.play(name)
        obs += [observe(m, s) for s in range(4)]
    stack = jnp.asarray(np.stack(obs))
    seats = jnp.arange(len(obs)) % 4
    roles = jnp.arange(len(obs)) % 5

    @jax.jit
    @chex.assert_max_traces(n=1)
    def everything(x, seat, role, params):
        return (jax.vmap(lambda o: coupvisor.coupvisor_belief(o, 4, params))(x),
                jax.vmap(lambda o: coupvisor.claim_truth_probabilities(o, 4, params))(x),
                jax.vmap(lambda o, s, r: coupvisor.claim_truth_probability(o, 4, s, r, params))(x, seat, role),
                jax.vmap(lambda o, r: coupvisor.hard_impossible(o, 4, r))(x, role))

    b, t, single, imp = everything(stack, seats, roles, DEFAULT)
    everything(stack[::-1], seats, roles, coupvisor.CoupVisorParams(prior=0.3, damp_power=1.0))  # no retrace
    for i in (0, 7, len(obs) - 1):
        np.testing.assert_allclose(np.asarray(b[i]), belief(stack[i]), atol=1e-6)
        np.testing.assert_allclose(np.asarray(t[i]), truth(stack[i]), atol=1e-6)
    np.testing.assert_allclose(np.asarray(single), np.asarray(t)[np.arange(len(obs)), seats, roles], atol=1e-6)
    assert not np.asarray(imp).any()
    assert np.asarray(t).min() >= 0 and np.asarray(t).max() <= 1
    # the steal block (4.5) moves belief less than the foreign-aid block (5.7)
    last = np.asarray(b[-4:])  # seat 3 just claimed block:duke; seat 2 block:ambassador earlier
    assert last[1, 2, D] > last[1, 1, M]  # seen by seat 1, which holds neither role
