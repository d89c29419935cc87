"""Public facts bind the beliefs and the sampled worlds.

A caught bluff proves the claimant holds no card of the role until its hand is renewed
(a redraw after a proven claim, or an exchange).  The oracle (`tests.public_record`)
follows each match through its PUBLIC event dicts only and checks every sampled world
(`beliefs.posterior.sample_worlds`, with the default claim likelihoods and the search's)
against the revealed cards, hidden counts, proven-absent roles and card conservation.
Scenario tests with explicit deals pin the reproduction of the flaw and the lifting of
the fact; the advisor calls a claim of a disproven role impossible.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import Env, rules as R
from coupjax.advice.explain import challenge_advice
from coupjax.beliefs import coupvisor
from coupjax.beliefs import posterior
from coupjax.events import event_to_dict
from coupjax.game.deal import hidden_hands
from coupjax.match import Match, compiled
from coupjax.observation import parse
from tests.public_record import PublicRecord

D, A, C, M, T = range(5)  # duke assassin captain ambassador contessa
DEFAULT = posterior.PosteriorParams()
SEARCH = posterior.PosteriorParams(0.98, 0.02, 0.98, 0.02)
LIKELIHOODS = {"default": DEFAULT, "search": SEARCH}
WORLDS = 4  # per decision and likelihood setting
QUICK_GAMES, QUICK_SEED = 150, 11


# --------------------------------------------------------------------------- random matches
@functools.lru_cache(maxsize=None)
def _runner(num_players: int, num_games: int, steps: int):
    env = Env(num_players)

    def policy(key, s):
        u = jax.random.uniform(key, s.legal_action_mask.shape)
        return jnp.argmax(jnp.where(s.legal_action_mask, u, -1.0)).astype(jnp.int32)

    @jax.jit
    def run(key):
        k0, k1 = jax.random.split(key)
        s = jax.vmap(env.init)(jax.random.split(k0, num_games))

        def body(s, k):
            ka, ks = jax.random.split(k)
            deck = jax.vmap(lambda d, size: jnp.roll(d[::-1], size - R.DECK_SIZE))(s._deck, s._deck_size)
            deck = jnp.where(jnp.arange(R.DECK_SIZE)[None] < s._deck_size[:, None], deck, -1)  # draw order
            before = (s.observation, s.current_player, hidden_hands(s), s._drawn, deck, ~s.terminated)
            a = jax.vmap(policy)(jax.random.split(ka, num_games), s)
            s = jax.vmap(env.step)(s, a, jax.random.split(ks, num_games))
            return s, (before, s._event)

        return jax.lax.scan(body, s, jax.random.split(k1, steps))[1]

    return run


@functools.lru_cache(maxsize=None)
def _sampler(num_players: int, num_worlds: int):
    one = lambda key, obs, params: posterior.sample_worlds(key, obs, num_players, num_worlds, params)  # noqa: E731
    return jax.jit(jax.vmap(one, in_axes=(0, 0, None)))


def _sample(num_players, obs, key, params, chunk=4096):
    """Worlds for every observation (fixed-size chunks: one compilation)."""
    out = []
    for i in range(0, len(obs), chunk):
        part = obs[i:i + chunk]
        pad = np.concatenate([part, np.repeat(part[-1:], chunk - len(part), axis=0)])
        w = _sampler(num_players, WORLDS)(jax.random.split(jax.random.fold_in(key, i), chunk), jnp.asarray(pad), params)
        out.append(jax.tree.map(lambda x: np.asarray(x)[: len(part)], w))
    return posterior.Worlds(*(np.concatenate(parts) for parts in zip(*out)))


@functools.lru_cache(maxsize=None)
def play(num_players: int, num_games: int, seed: int, steps: int):
    """Random matches: per step and game the acting seat's (observation, seat, every
    hidden hand, drawn cards, deck in draw order, live), and the step's event."""
    return jax.device_get(_runner(num_players, num_games, steps)(jax.random.PRNGKey(seed)))


def _decisions(live):
    t_idx, g_idx = np.nonzero(live)
    order = np.lexsort((t_idx, g_idx))  # game by game, in step order
    return t_idx[order], g_idx[order]


def audit(num_players: int, num_games: int, seed: int, steps: int = 200) -> dict:
    """Play random matches; at every decision sample worlds from the acting seat's view
    under both likelihood settings and check each against the public-record oracle.

    Returns counts: ``decisions``, ``with_fact`` (decisions where an opponent of the
    acting seat is proven not to hold a role), ``max_hidden_disproven`` (most hidden
    cards a seat with a proven-absent role held at another seat's decision), per setting
    ``contradictions`` (worlds breaking a fact) and the facts the posterior ignores:
    ``kept_decisions`` / ``kept_broken`` and ``located_decisions`` / ``located_broken``
    (decisions where the fact holds / where some sampled world breaks it).
    """
    n = num_players
    (obs, player, hands, drawn, deck, live), events = play(n, num_games, seed, steps)
    t_idx, g_idx = _decisions(live)
    worlds = {name: _sample(n, obs[t_idx, g_idx], jax.random.PRNGKey(seed + 1), prm)
              for name, prm in LIKELIHOODS.items()}
    out = dict(decisions=len(t_idx), with_fact=0, max_hidden_disproven=0, kept_decisions=0, located_decisions=0,
               examples=[], truth_breaks=0, unfinished=int(live[-1].sum()))
    for name in LIKELIHOODS:
        out[f"contradictions_{name}"] = out[f"kept_broken_{name}"] = out[f"located_broken_{name}"] = 0
    record, game = None, -1
    for i, (t, g) in enumerate(zip(t_idx, g_idx)):
        if g != game:
            record, game = PublicRecord(n), g
        seat = int(player[t, g])
        own = [int(c) for c in hands[t, g, seat] if c >= 0]
        own_drawn = [int(c) for c in drawn[t, g] if c >= 0] if record.exchanger == seat else []
        facts = record.active_disproven(seat)
        out["with_fact"] += bool(facts)
        for s, _ in facts:
            out["max_hidden_disproven"] = max(out["max_hidden_disproven"], record.hidden(s))
        # the true world breaks no fact (the oracle is right), including the ignored ones
        true_rel = [hands[t, g, (seat + k) % n] for k in range(n)]
        true_drawn = drawn[t, g] if record.exchanger is not None else []
        out["truth_breaks"] += bool(record.contradictions(seat, own, own_drawn, true_rel, deck[t, g], true_drawn)
                                    or record.kept_broken(seat, true_rel) or record.located_broken(seat, true_rel))
        out["kept_decisions"] += bool(record.kept_facts(seat))
        out["located_decisions"] += bool(record.located_facts())
        for name, w in worlds.items():
            kept = located = False
            for k in range(WORLDS):
                bad = record.contradictions(seat, own, own_drawn, w.hands[i, k], w.deck[i, k], w.drawn[i, k])
                out[f"contradictions_{name}"] += bool(bad)
                if bad and len(out["examples"]) < 5:
                    out["examples"].append((name, int(g), int(t), bad))
                kept |= record.kept_broken(seat, w.hands[i, k])
                located |= record.located_broken(seat, w.hands[i, k])
            out[f"kept_broken_{name}"] += kept
            out[f"located_broken_{name}"] += located
        record.update(event_to_dict(jax.tree.map(lambda x: x[t, g], events), n, public=True))
    return out


def _report(n, got):
    d = got["decisions"]
    print(f"\n{n} players: {d} decisions ({got['unfinished']} matches cut at the step limit), "
          f"{got['with_fact']} with a proven-absent role "
          f"({got['with_fact'] / d:.1%}); worlds contradicting a fact: "
          + ", ".join(f"{name} {got[f'contradictions_{name}']}/{d * WORLDS}" for name in LIKELIHOODS))
    print(f"  ignored facts: kept card known not a role at {got['kept_decisions']} decisions "
          f"({got['kept_decisions'] / d:.2%}), broken at "
          + ", ".join(f"{name} {got[f'kept_broken_{name}']}" for name in LIKELIHOODS)
          + f"; proven claim located a card at {got['located_decisions']} decisions "
          f"({got['located_decisions'] / d:.1%}), some world breaks it at "
          + ", ".join(f"{name} {got[f'located_broken_{name}']} ({got[f'located_broken_{name}'] / d:.2%})"
                      for name in LIKELIHOODS))


def _check(got):
    assert got["truth_breaks"] == 0, "the oracle contradicts the true world"
    assert got["with_fact"] > 0.02 * got["decisions"], "the matches must exercise the fact"
    for name in LIKELIHOODS:
        assert got[f"contradictions_{name}"] == 0, got["examples"]
    # a caught bluff costs the claimant a card: a seat with a proven-absent role never holds
    # two cards at another seat's decision, so a one-card redraw never keeps a card with a fact
    assert got["max_hidden_disproven"] == 1 and got["kept_decisions"] == 0


def test_sampled_worlds_respect_public_facts():
    got = audit(4, QUICK_GAMES, seed=QUICK_SEED)
    _report(4, got)
    _check(got)


@pytest.mark.slow
@pytest.mark.parametrize("num_players", [2, 3, 4, 5, 6])
def test_sampled_worlds_respect_public_facts_many_games(num_players, request):
    """Quick twin: test_sampled_worlds_respect_public_facts."""
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("slow: select with -m slow")
    parts = [audit(num_players, 250, seed=100 * num_players + b, steps=300) for b in range(4)]  # 1000 matches
    got = {k: (sum(p[k] for p in parts) if k != "max_hidden_disproven" else max(p[k] for p in parts))
           for k in parts[0] if k != "examples"}
    got["examples"] = [e for p in parts for e in p["examples"]]
    _report(num_players, got)
    _check(got)


def test_observation_flags_follow_the_public_record():
    """The engine's ``disproven`` block (every relative row) equals the oracle's facts."""
    n = 4
    (obs, player, _, _, _, live), events = play(n, QUICK_GAMES, QUICK_SEED, 200)
    t_idx, g_idx = _decisions(live)
    flags = np.asarray(jax.jit(jax.vmap(lambda o: parse(o, n).disproven))(jnp.asarray(obs[t_idx, g_idx])))
    record, game, seen = None, -1, 0
    for i, (t, g) in enumerate(zip(t_idx, g_idx)):
        if g != game:
            record, game = PublicRecord(n), g
        seat = int(player[t, g])
        want = np.zeros((n, 5), bool)
        for k in range(n):
            want[k, sorted(record.disproven[(seat + k) % n])] = True
        np.testing.assert_array_equal(flags[i], want, err_msg=f"game {g} step {t}")
        seen += want.any()
        record.update(event_to_dict(jax.tree.map(lambda x: x[t, g], events), n, public=True))
    assert seen > 0.2 * len(t_idx)


# --------------------------------------------------------------------------- scenarios
REPRO_HANDS = [["captain", "contessa"], ["assassin", "ambassador"], ["duke", "captain"], ["assassin", "contessa"]]


@functools.lru_cache(maxsize=None)
def _observe(n):
    return jax.jit(compiled(n)[0].observe)


_EXACT = jax.jit(posterior.exact_posterior, static_argnums=1)
_SAMPLE = jax.jit(posterior.sample_worlds, static_argnums=(2, 3))


def p_holds(m, observer, seat, role, params=DEFAULT):
    """P(``seat`` holds ``role``) under the exact posterior of ``observer``'s view."""
    obs = _observe(m.num_players)(m.state, observer)
    return float(_EXACT(obs, m.num_players, params)["role_marginals"][(seat - observer) % m.num_players, role])


def _caught_duke(coins=None):
    """Seat 0 (captain, contessa) is caught bluffing duke and reveals its captain."""
    m = Match(4, seed=0, hands=REPRO_HANDS, coins=coins)
    m.play("tax")
    e = m.play("challenge")
    assert e["challenge"] == {"seat": 0, "role": "duke", "bluff_caught": True}
    m.play("reveal:0")
    assert m.hands[0] == ["contessa"]
    return m


def _facts_agree(m):
    """Engine flags == the oracle's facts, from the public events of the match."""
    record = PublicRecord(m.num_players)
    for e in m.events:
        record.update({**e, "reveals": [{k: v for k, v in r.items() if k != "index"} for r in e["reveals"]]})
    want = np.zeros((m.num_players, 5), bool)
    for s in range(m.num_players):
        want[s, sorted(record.disproven[s])] = True
    np.testing.assert_array_equal(np.asarray(m.state._disproven), want)
    return want


def test_reproduction_caught_bluff_gives_zero():
    m = _caught_duke()
    obs = _observe(4)(m.state, 1)
    v = parse(obs, 4)
    rel = 3  # seat 0 seen from seat 1
    assert bool(v.disproven[rel, D]) and int(v.disproven.sum()) == 1
    assert int(v.claims[rel, D]) == 1  # the caught claim stays in the counts
    assert _facts_agree(m)[0, D]
    # before the fix: 0.654 (default likelihoods) and 0.942 (the search's)
    for params in (DEFAULT, SEARCH):
        assert p_holds(m, 1, 0, D, params) == 0.0
        worlds = _SAMPLE(jax.random.PRNGKey(0), obs, 4, 2000, params)
        assert not (np.asarray(worlds.hands)[:, rel] == D).any()
    assert p_holds(m, 1, 0, C) > 0  # the rest of its hand is possible
    assert float(coupvisor.coupvisor_belief(obs, 4)[rel, D]) == 0.0
    assert float(coupvisor.claim_truth_probabilities(obs, 4)[rel, D]) == 0.0
    np.testing.assert_allclose(np.asarray(coupvisor.coupvisor_belief(obs, 4))[rel].sum(), 1.0, atol=1e-6)
    # losing a card does not lift the fact; other seats' views agree
    for seat in (2, 3):
        assert p_holds(m, seat, 0, D) == 0.0


def test_exchange_lifts_the_fact():
    m = _caught_duke()
    for name in ["income", "income", "income", "exchange", "pass", "pass", "pass"]:
        m.play(name)
    assert m.current_player == 0 and len(m.drawn) == 2
    # choosing: its hand is unchanged, the fact holds (drawn dukes are unseen to seat 1)
    for params in (DEFAULT, SEARCH):
        assert p_holds(m, 1, 0, D, params) == 0.0
    m.play(m.legal_actions()[0])
    assert not _facts_agree(m).any()
    assert p_holds(m, 1, 0, D) > 0.05 and p_holds(m, 1, 0, D, SEARCH) > 0.05


def test_proven_claim_redraw_lifts_the_fact():
    m = _caught_duke(coins=[2, 3, 2, 2])
    for name in ["assassinate:0", "pass", "pass", "block:contessa"]:
        m.play(name)
    assert p_holds(m, 2, 0, D) == 0.0
    e = m.play("challenge")  # seat 0 shows its contessa and redraws
    assert e["challenge"] == {"seat": 0, "role": "contessa", "bluff_caught": False}
    assert not _facts_agree(m).any()
    assert p_holds(m, 2, 0, D) > 0.05 and p_holds(m, 2, 0, D, SEARCH) > 0.05


def test_caught_block_bluffs_set_the_fact():
    # block:contessa challenged by the assassin: the blocker loses both cards, the flag is set
    m = Match(4, seed=1, hands=REPRO_HANDS[1:2] + [["duke", "captain"], ["captain", "ambassador"],
                                                   ["duke", "contessa"]], coins=[3, 2, 2, 2])
    m.play("assassinate:1")
    m.play("block:contessa")  # seat 1 (duke, captain) answers first
    e = m.play("challenge")
    assert e["challenge"] == {"seat": 1, "role": "contessa", "bluff_caught": True}
    m.play("reveal:0")  # the lost challenge; then the assassination takes its last card
    assert m.hands[1] == [] and m.revealed[1] == ["duke", "captain"]
    assert _facts_agree(m)[1, T] and int(np.asarray(m.state._disproven).sum()) == 1
    # a steal block bluff caught: the blocker survives on one card that is no captain
    m = Match(4, seed=2, hands=REPRO_HANDS)
    for name in ["steal:1", "block:captain", "challenge"]:
        m.play(name)
    m.play("reveal:1")
    assert m.hands[1] == ["assassin"] and _facts_agree(m)[1, C]
    for params in (DEFAULT, SEARCH):
        assert p_holds(m, 2, 1, C, params) == 0.0 and p_holds(m, 2, 1, A, params) > 0.0


@pytest.mark.parametrize("belief", ["exact", "coupvisor"])
def test_advisor_calls_a_disproven_claim_impossible(belief):
    m = _caught_duke()
    for name in ["income", "income", "income", "tax"]:
        m.play(name)
    obs = _observe(4)(m.state, 1)
    adv = challenge_advice(obs, 4, belief, observer_seat=1)
    assert adv["decision"] and adv["disproven"] and adv["impossible"]
    assert adv["p_truth"] == 0.0 and adv["challenge"] and adv["recommendation"] == "challenge"
    assert "seat 0 was caught bluffing duke since its hand last changed" in adv["explanation"]
    assert "p_truth" not in adv["explanation"]
    # another seat's duke claim is not affected
    m = Match(4, seed=0, hands=REPRO_HANDS, current_player=2)
    m.play("tax")
    adv = challenge_advice(_observe(4)(m.state, 3), 4, belief, observer_seat=3)
    assert adv["decision"] and not adv["disproven"] and adv["p_truth"] > 0
