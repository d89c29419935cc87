"""``advised:BASE``: BASE with its challenges and blocks (``:all``: and main actions) from
the one recommendation (`coupjax.advice.recommend`); a proper policy that plays exactly
what the page recommends without search."""
from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

from coupjax import Env, testing
from coupjax import rules
from coupjax.match import Match
from coupjax.policies.advised import SEARCH_STREAM, make_advised, parse_arg
from coupjax.policies.spec import PolicySpecError, describe_spec, resolve_policy
from coupjax.tracker import seat_report
from coupjax.web import advice_text

N = 4


@functools.lru_cache(maxsize=None)
def _env():
    return Env(N)


@functools.lru_cache(maxsize=None)
def _positions():
    env = _env()
    states = testing.sample_positions(env, 64, seed=3)
    return states, testing.scramble_positions(states, 4)


@functools.lru_cache(maxsize=None)
def _jitted(spec: str):
    return jax.jit(resolve_policy(spec, _env()))


def test_specs_resolve_and_bad_ones_say_why():
    assert describe_spec("advised:honest") == describe_spec("advised:honest:all") == "registered:arg"
    assert parse_arg("honest") == ("honest", "reactions", False)
    assert parse_arg("cautious:all") == ("cautious", "all", False)
    assert parse_arg("honest:search") == ("honest", "reactions", True)
    assert parse_arg("best:runs/x:all:search") == ("best:runs/x", "all", True)
    assert describe_spec("advised:honest:search") == "registered:arg"
    with pytest.raises(ValueError, match="base policy spec"):
        resolve_policy("advised:search", _env())
    with pytest.raises(ValueError, match="needs the search's values"):  # the policies' layer alone cannot search
        make_advised(_env(), "honest:search")
    with pytest.raises(ValueError, match="base policy spec"):
        resolve_policy("advised:all", _env())
    with pytest.raises(PolicySpecError):
        resolve_policy("advised:no_such_bot", _env())


@pytest.mark.parametrize("spec", ["advised:honest", "advised:cautious:all"])
def test_advised_passes_check_policy(spec):
    report = testing.check_policy(resolve_policy(spec, _env()), _env(), *_positions())
    assert report["positions"] == 64


def test_advised_keeps_the_base_where_the_advice_is_silent():
    states, _ = _positions()
    keys = jax.random.split(jax.random.PRNGKey(0), 64)
    base = np.asarray(jax.jit(jax.vmap(resolve_policy("honest", _env())))(keys, states))
    advised = np.asarray(jax.vmap(_jitted("advised:honest"))(keys, states))
    phase = np.asarray(states._phase)
    own = (phase == rules.PH_ACTION) | (phase == rules.PH_LOSE) | (phase == rules.PH_EXCHANGE)
    assert own.any() and (~own).any()
    np.testing.assert_array_equal(advised[own], base[own])


def _played(spec: str, games: int, seat: int = 1):
    """(state, logits, step: the policy's key) at each decision of ``seat`` in a few games against random."""
    policy = _jitted(spec)
    rng = np.random.default_rng(0)
    out = []
    for g in range(games):
        m = Match(N, seed=g)
        for step in range(200):
            if bool(m.state.terminated):
                break
            mask = np.asarray(m.state.legal_action_mask)
            me = int(m.state.current_player)
            if me == seat:
                logits = np.asarray(policy(jax.random.PRNGKey(step), m.state))
                out.append((m.state, logits, step))
                a = int(np.argmax(logits))
            else:
                a = int(rng.choice(np.flatnonzero(mask)))
            m.play(rules.action_name(a, me, N))
    return out


def test_advised_plays_exactly_the_page_recommendation():
    covered = 0
    for state, logits, _ in _played("advised:honest:all", games=2):
        if int(state._phase) not in (rules.PH_ACTION, rules.PH_REACT, rules.PH_ANSWER_BLOCK):
            continue
        page = advice_text.advice(state, 1, "balanced", use_search=False)
        assert page == seat_report.advice(state, 1, use_search=False)
        rec = page["recommendation"]
        assert rec is not None
        # the policy's one action (the others floored at probability 1e-30) is the page's recommendation
        assert int(np.argmax(logits)) == rec["action_id"], (rules.PHASES[int(state._phase)], rec)
        assert np.ptp(np.sort(logits[np.isfinite(logits)])[-2:]) > 60 or np.isfinite(logits).sum() == 1
        covered += 1
    assert covered >= 10


@pytest.mark.slow
def test_advised_with_search_plays_the_pages_default_recommendation():
    """Issue 41: ``advised:BASE:search`` is the page's default advice (search on, at the
    page's budget): at each covered decision it plays the recommendation the page shows
    with search, with the same search key.  Quick twin: test_specs_resolve_and_bad_ones_say_why."""
    covered = searched = 0
    for state, logits, step in _played("advised:honest:search", games=1):
        if int(state._phase) not in (rules.PH_REACT, rules.PH_ANSWER_BLOCK):
            continue
        key = jax.random.fold_in(jax.random.PRNGKey(step), SEARCH_STREAM)
        page = seat_report.advice(state, 1, use_search=True, key=key)
        rec = page["recommendation"]
        assert int(np.argmax(logits)) == rec["action_id"], (rules.PHASES[int(state._phase)], rec)
        covered += 1
        searched += rec["source"].startswith("search")
    assert covered >= 3 and searched >= 1


def test_the_fit_for_games_won_runs_only_on_a_tuning_seed(capsys):
    from evals import advice_fit

    with pytest.raises(SystemExit) as err:
        advice_fit.main(["--seed", "7", "--games", "2"])
    assert err.value.code == 2 and "tuning seeds" in capsys.readouterr().err
