"""coupjax.advisor: threshold rule, styles, band, explanations, belief_ev; a small advisor_quality run."""
from __future__ import annotations

import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import policies
from coupjax.advice import action_ev
from coupjax.advice import challenge
from coupjax.advice import explain
from coupjax.game import deal
from coupjax import rules
from coupjax.match import Match, compiled
from coupjax.seeds import REPORT_SEED, TUNING_SEEDS

N = 4
D, AS, C, AM, CO = range(5)
CONFIG = Path(__file__).resolve().parent.parent / "configs" / "advisor.yaml"
PRM = challenge.AdvisorParams()


def _logit(p):
    return math.log(p / (1 - p))


def _sigmoid(z):
    return 1 / (1 + math.exp(-z))


def advice(obs, belief="exact", style="balanced", params=PRM, calibrated=True):
    return explain.challenge_advice(obs, N, belief, params, style, calibrated=calibrated)


@pytest.fixture(scope="module")
def turn_one_tax():
    """Seat 0 claims tax on turn one; seat 1 (captain, contessa) is the first responder."""
    m = Match(N, seed=1, hands=[["duke", "assassin"], ["captain", "contessa"], ["ambassador", "duke"],
                                ["assassin", "captain"]])
    m.play("tax")
    assert m.current_player == 1
    return np.asarray(m.state.observation)


# ---------------------------------------------------------------- the constants
def test_the_fitted_constants_are_stored_once_and_are_the_defaults():
    """advisor.yaml holds the fitted fields (and only they) with their fit record; the
    defaults are read from it, so there is no copy to keep equal."""
    import yaml

    data = yaml.safe_load(CONFIG.read_text())
    assert set(data["params"]) == set(challenge.FITTED_FIELDS)
    assert challenge.load_params() == PRM and challenge.load_params(CONFIG) == PRM
    assert data["fit"]["seed"] in TUNING_SEEDS and data["fit"]["games_per_condition"] > 0  # every evaluation refuses it
    assert PRM.q_honest_action / PRM.q_bluff_action == 2.0 and PRM.coin == 1.0 / 7.0


def test_a_written_fit_round_trips_exactly(tmp_path):
    from evals.lib.advisor.fit import write_config

    path = tmp_path / "advisor.yaml"
    path.write_text(CONFIG.read_text())
    fitted = PRM.replace(alpha=0.3, q_honest_action=5.0 / 7.0, q_bluff_action=2.0 / 7.0)
    write_config(path, fitted, {"seed": 1000})
    assert challenge.load_params(path) == fitted
    assert "belief_ev" in yaml_keys(path)


def yaml_keys(path):
    import yaml

    return set(yaml.safe_load(path.read_text()))


def test_bases_follow_the_value_model():
    a, c, v1, vl = PRM.alpha, PRM.coin, PRM.v_one, PRM.v_last
    bases = challenge.context_bases(PRM)
    g = a * (v1 + 3 * c)
    assert bases["tax"] == pytest.approx(g / (g + v1), abs=1e-6)
    g = a * (v1 + 2 * c) + 2 * c
    assert bases["steal_me"] == pytest.approx(g / (g + v1), abs=1e-6)
    g = v1 + a * (v1 - 3 * c)
    assert bases["assassinate_me"] == pytest.approx(g / (g + vl), abs=1e-6)  # a true claim: the double loss
    g = a * (v1 + vl)
    assert bases["block_contessa"] == pytest.approx(g / (g + v1), abs=1e-6)


# ---------------------------------------------------------------- scenarios
def test_turn_one_tax_is_not_challenged(turn_one_tax):
    obs = turn_one_tax
    # CoupVisor (Appendix A): one tax claim (LR 5.7), seat 1 sees its captain and contessa
    d = (2 / 3) ** 0.7
    b = 1.14 / (1.14 + 0.4 + 0.4 * d)
    p_hyper = 1 - math.comb(10, 2) / math.comb(13, 2)
    cv_raw = 0.7 * p_hyper + 0.3 * (1 - (1 - b) ** 2)
    # exact: the claimant's 2 cards are a hypergeometric draw from 13 unseen cards (3 dukes), one claim with
    # likelihood ratio q_honest / q_bluff
    lr = PRM.q_honest_action / PRM.q_bluff_action
    ex_raw = lr * p_hyper / (lr * p_hyper + 1 - p_hyper)
    # calibration features on turn one: no challenges, turn 0, nothing revealed, the claimant has 2 cards,
    # 2 coins and has claimed one role (duke), the observer has 2 cards
    feats = np.array([0, 0, 0, 0, 0, 0, 0, 2 / 7, 1, 0, 0])
    assert len(feats) == len(challenge.CAL_FEATURES)
    cv_cal = _sigmoid(PRM.cv_cal_scale[0] * _logit(cv_raw) + PRM.cv_cal_shift[0] + feats @ np.array(PRM.cv_cal_weights))
    ex_cal = _sigmoid(PRM.cal_scale[0] * _logit(ex_raw) + PRM.cal_shift[0] + feats @ np.array(PRM.cal_weights))
    theta = PRM.alpha * (1 + 3 * PRM.coin) / (PRM.alpha * (1 + 3 * PRM.coin) + PRM.v_one)
    # pinned with the constants of configs/advisor.yaml as fitted
    assert cv_raw == pytest.approx(0.552653, abs=1e-5) and ex_raw == pytest.approx(0.594595, abs=1e-5)
    assert cv_cal == pytest.approx(0.882692, abs=1e-4) and ex_cal == pytest.approx(0.871252, abs=1e-4)
    assert theta == pytest.approx(0.588235, abs=1e-5)
    for belief, raw, cal in (("coupvisor", cv_raw, cv_cal), ("exact", ex_raw, ex_cal)):
        a = advice(obs, belief)
        assert a["decision"] and a["kind_name"] == "tax" and a["role_name"] == "duke" and a["claimant"] == 3
        assert a["p_raw"] == pytest.approx(raw, abs=1e-5)
        assert a["p_truth"] == pytest.approx(cal, abs=1e-4)
        assert a["base"] == pytest.approx(theta, abs=1e-6) and a["theta"] == pytest.approx(theta, abs=1e-6)
        assert a["adj_observer"] == a["adj_claimant"] == a["adj_threat"] == a["style"] == 0.0
        assert not a["challenge"] and a["recommendation"] == "don't challenge"
    # without its calibration map, CoupVisor's belief sits below this threshold: the calibration is what
    # keeps the EV threshold meaningful for it
    assert advice(obs, "coupvisor", calibrated=False)["challenge"]


def test_three_copies_accounted_for_is_impossible():
    m = Match(N, seed=2, hands=[["captain", "assassin"], ["duke", "duke"], ["ambassador"], ["assassin", "captain"]],
              revealed=[[], [], ["duke"], []])
    m.play("tax")  # a bluff: seat 1 holds two dukes and the third is revealed
    obs = np.asarray(m.state.observation)
    for belief in challenge.BELIEFS:
        a = advice(obs, belief)
        assert a["impossible"] and a["p_truth"] == 0.0 and a["challenge"] and a["recommendation"] == "challenge"
        assert "impossible: all 3 dukes are accounted for (1 revealed, 2 in your hand" in a["explanation"]
        assert "p_truth" not in a["explanation"]  # certainty, not a probability
    # even the most conservative style challenges an impossible claim
    assert advice(obs, "exact", "conservative")["challenge"]


def test_assassinated_with_one_card_left_challenges():
    m = Match(N, seed=3, hands=[["assassin", "duke"], ["captain"], ["ambassador", "duke"], ["contessa", "captain"]],
              revealed=[[], ["contessa"], [], []], coins=[3, 2, 2, 2])
    m.play("assassinate:1")
    obs = np.asarray(m.state.observation)
    a = advice(obs, "exact")
    assert a["kind_name"] == "assassinate" and challenge.CONTEXTS[a["context"]] == "assassinate_me"
    # L = 0: it dies whether it passes or loses the challenge, so theta -> theta_max
    assert a["theta"] == pytest.approx(0.99, abs=1e-6)
    assert a["adj_observer"] == pytest.approx(0.99 - a["base"], abs=1e-6)
    assert 0.4 < a["p_truth"] < 0.98 and a["challenge"]
    assert "you have one influence left" in a["explanation"]
    # with two cards the same claim is a double-loss risk: a much lower threshold
    m2 = Match(N, seed=3, hands=[["assassin", "duke"], ["captain", "ambassador"], ["ambassador", "duke"],
                                 ["contessa", "captain"]], coins=[3, 2, 2, 2])
    m2.play("assassinate:1")
    a2 = advice(np.asarray(m2.state.observation), "exact")
    assert a2["theta"] == pytest.approx(a2["base"], abs=1e-6) and a2["theta"] < 0.6


def test_styles_shift_the_threshold(turn_one_tax):
    bal = advice(turn_one_tax, "exact", "balanced")
    con = advice(turn_one_tax, "exact", "conservative")
    agg = advice(turn_one_tax, "exact", "aggressive")
    assert con["theta"] == pytest.approx(bal["theta"] - 0.05, abs=1e-6)
    assert agg["theta"] == pytest.approx(bal["theta"] + 0.07, abs=1e-6)
    assert con["style"] == pytest.approx(-0.05, abs=1e-6) and agg["style"] == pytest.approx(0.07, abs=1e-6)
    assert "style aggressive" in agg["explanation"] and "+0.0700" in agg["explanation"]
    # the table-state adjustments, on the threshold function itself
    f, t = jnp.array(False), jnp.array(True)
    th = lambda me, cl, thr, style="balanced": challenge.threshold_parts(jnp.int32(0), me, cl, thr, 2, PRM, style)  # noqa: E731
    assert float(th(t, f, f)["adj_observer"]) < 0  # (a) my last card: L grows
    assert float(th(f, t, f)["adj_claimant"]) > 0  # (b) catching it eliminates it: G grows
    assert float(th(f, f, t)["adj_threat"]) > 0  # (c) a coup next turn: G grows
    with pytest.raises(KeyError):
        th(f, f, f, "reckless")


def test_margin_band_blocks_a_close_call(turn_one_tax):
    p = advice(turn_one_tax, "exact")["p_truth"]
    target = p + 0.005  # theta just above p_truth: without a band this is a challenge
    k = 1 + 3 * PRM.coin
    alpha = target / ((1 - target) * k)
    no_band = advice(turn_one_tax, "exact", params=PRM.replace(alpha=alpha, band=0.0))
    assert no_band["theta"] == pytest.approx(target, abs=1e-5) and no_band["challenge"]
    banded = advice(turn_one_tax, "exact", params=PRM.replace(alpha=alpha, band=0.02))
    assert not banded["challenge"] and banded["close_call"]
    assert banded["recommendation"] == "close call: don't challenge"
    assert "close call: don't challenge" in banded["explanation"] and "+/-0.0200" in banded["explanation"]


def test_explanation_names_the_numbers(turn_one_tax):
    a = advice(turn_one_tax, "exact")
    text = a["explanation"]
    for number in (a["p_truth"], a["p_raw"], a["theta"], a["base"]):
        assert f"{number:.4f}" in text
    assert "seat +3 claims duke (tax)" in text
    assert "made 1 duke claim(s) and 0 duke block(s)" in text
    assert "0 of 3 dukes visible to you" in text
    assert "hand sizes: you 2, seat +1 2, seat +2 2, seat +3 2" in text
    assert "no coin threat" in text and "base" in text
    assert "seat 0 claims duke" in explain.challenge_advice(turn_one_tax, N, observer_seat=1)["explanation"]
    # a block decision: the actor answers
    m = Match(N, seed=4, hands=[["duke", "assassin"], ["captain", "contessa"], ["ambassador", "duke"],
                                ["assassin", "captain"]])
    m.play("foreign_aid")
    m.play("block:duke")
    b = advice(np.asarray(m.state.observation))
    assert b["decision"] and b["kind_name"] == "block_duke" and b["claimant"] == 1
    assert "seat +1 blocks with a duke claim (block_duke)" in b["explanation"]
    # no decision in the action phase
    m2 = Match(N, seed=4)
    assert not advice(np.asarray(m2.state.observation))["decision"]


def test_recommend_action():
    env, _, _, position = compiled(N)
    hands = np.array([[D, AS], [C, CO], [AM, D], [AS, C]], np.int32)
    deck = deal.deck_array([D, AM, CO, CO, AM, C, AS])
    s = position(hands, deck, np.array([7, 2, 2, 5], np.int32), np.full((N, 2), -1, np.int32), 0, 0)
    f = jax.jit(lambda o, msk: action_ev.recommend_action(o, msk, N))
    r = jax.tree.map(np.asarray, f(s.observation, s.legal_action_mask))
    mask = np.asarray(s.legal_action_mask)
    main = mask & (env.layout.main_kind >= 0)
    assert np.isfinite(r["ev"][main]).all() and np.isneginf(r["ev"][~main]).all()
    assert mask[r["best"]]
    assert rules.action_name(int(r["best"]), 0, N) == "coup:3"  # 7 coins: coup the leader (5 coins)
    text = explain.explain_action(r, N, observer_seat=0)
    assert text.startswith("best: coup:3") and "EV" in text
    # exchange is a bluff here (no ambassador) and is penalised
    assert r["bluff"][3] and not r["bluff"][2]
    assert r["rejected_bluff"][3] and r["ev"][3] < -action_ev.REJECTED_BLUFF_PENALTY / 2
    shown = next(part for part in explain.explain_action(r, N, observer_seat=0, top=20).split("; ")
                 if part.startswith("exchange EV"))
    assert "(a bluff not worth its risk)" in shown
    assert f"EV {r['ev'][3] + action_ev.REJECTED_BLUFF_PENALTY:+.2f} coins" in shown  # shown without the penalty
    # 3 coins and an assassin: assassinate beats income
    s = position(hands, deck, np.array([3, 2, 2, 2], np.int32), np.full((N, 2), -1, np.int32), 0, 0)
    r = jax.tree.map(np.asarray, f(s.observation, s.legal_action_mask))
    assert rules.action_name(int(r["best"]), 0, N).split(":")[0] in ("assassinate", "tax")
    assert r["ev"][env.layout.assassinate + 1] > r["ev"][0]


# ---------------------------------------------------------------- belief_ev
def test_belief_ev_is_registered_and_plays_legally():
    env = compiled(N)[0]
    assert "belief_ev" in policies.policy_names() and policies.describe_policies()["belief_ev"].endswith(".")
    pol = jax.jit(policies.make_policy("belief_ev", env))
    step = compiled(N)[2]
    key = jax.random.PRNGKey(0)
    phases = set()
    for g in range(3):
        s = compiled(N)[1](jax.random.PRNGKey(100 + g))
        for _ in range(400):
            if bool(s.terminated):
                break
            key, k1, k2 = jax.random.split(key, 3)
            logits = np.asarray(pol(k1, s))
            mask = np.asarray(s.legal_action_mask)
            np.testing.assert_array_equal(np.isneginf(logits), ~mask)
            a = int(jax.random.categorical(k2, jnp.asarray(logits)))
            assert mask[a]
            phases.add(int(s._phase))
            s = step(s, np.int32(a), k2)
        assert bool(s.terminated)
    assert {rules.PH_ACTION, rules.PH_REACT, rules.PH_LOSE} <= phases


def test_belief_ev_reads_only_its_observation():
    """Re-deal every card the acting seat cannot see: the logits stay the same."""
    env = compiled(N)[0]
    pol = jax.jit(policies.make_policy("belief_ev", env))
    m = Match(N, seed=5, hands=[["duke", "assassin"], ["captain", "contessa"], ["ambassador", "duke"],
                                ["assassin", "captain"]], deck=["duke", "ambassador", "contessa", "contessa",
                                                                 "ambassador", "captain", "assassin"])
    for name in ("tax", "pass", "pass", "pass", "steal:0"):
        m.play(name)
    s = m.state  # seat 1 stole from seat 0; seat 2 reacts
    me = int(s.current_player)
    cards = [c for seat, h in enumerate(deal.hands(s)) if seat != me for c in h] + deal.deck_order(s)
    rng = np.random.default_rng(0)
    for _ in range(3):
        perm = list(rng.permutation(cards))
        hands = []
        for seat, h in enumerate(deal.hands(s)):
            hands.append(h if seat == me else [perm.pop() for _ in h])
        other = deal.replace_hidden(s, deal.hand_arrays(hands, N), deal.deck_array(perm))
        np.testing.assert_array_equal(np.asarray(other.observation), np.asarray(s.observation))
        key = jax.random.PRNGKey(1)
        np.testing.assert_array_equal(np.asarray(pol(key, other)), np.asarray(pol(key, s)))


# ---------------------------------------------------------------- advisor_quality
def test_advisor_quality_small_run(tmp_path):
    from evals import advisor_quality

    out = tmp_path / "aq.json"
    advisor_quality.main(["--games-per-condition", "24", "--seed", "7", "--chunk", "24", "--out", str(out), "--quiet"])
    res = json.loads(out.read_text())
    keys = {"f1", "precision", "recall", "false_challenge_share", "missed_bluff_share", "brier", "ece", "claims",
            "games"}
    for cond in ("aggressive_heavy", "honest_heavy"):
        for belief in ("coupvisor", "exact"):
            m = res[cond][belief]
            assert keys <= set(m), (cond, belief)
            assert m["games"] == 24 and m["claims"] > 24
            assert m["tp"] + m["fp"] + m["fn"] + m["tn"] == m["claims"]
            assert m["false_challenge_share"] == pytest.approx(m["fp"] / m["claims"])
            assert m["missed_bluff_share"] == pytest.approx(m["fn"] / m["claims"])
        assert res[cond]["overflow"] == 0


def test_recorder_never_plays_its_padding_games():
    """A short call is padded to its compiled shape with copies of its last game; the
    copies are never played, so 5 games record the 128 claims they record alone
    (games_per_call=5) in a buffer of 4 rows per compiled game (160 rows).  Before, the
    35 copies of game 4 were played and overflowed it, as 3,000 copies of one long game
    overflowed the held-out report's advisor cell (2,000 games padded to 5,000)."""
    from coupjax.env import Env
    from coupjax.policies.pools import SCRIPTED_NAMES
    from evals.lib.advisor.record import QueueRecorder, play_condition

    env = Env(N)
    recorder = QueueRecorder(env, [policies.make_policy(x, env) for x in SCRIPTED_NAMES], slots=16, games_per_call=40,
                             rows_per_game=4)
    rec = play_condition(recorder, jax.random.PRNGKey(5), "honest_heavy", 5, 25)
    assert len(rec["label"]) == 128 and set(rec["game"].tolist()) <= set(range(5))
    assert (rec["overflow"], rec["unfinished"], rec["games"]) == (0, 0, 5)


def test_advisor_quality_keeps_tuning_and_report_seeds_apart(capsys):
    """The evaluation and the seat table refuse tuning seeds; --fit and --tune accept only
    them; all before any game is played."""
    from evals import advisor_quality

    tuning, report = min(TUNING_SEEDS), REPORT_SEED
    for argv, said in ((["--seed", str(tuning)], "was used to tune"),
                       (["--fit", "--seed", str(report)], "runs only on recorded tuning seeds"),
                       (["--seat-table", "4", "--seed", str(tuning)], "was used to tune"),
                       (["--seat-table", "4", "--tune", "--seed", str(report)], "runs only on recorded tuning seeds"),
                       (["--tune", "--seed", str(tuning)], "--tune goes with --seat-table")):
        with pytest.raises(SystemExit) as err:
            advisor_quality.main(argv + ["--quiet"])
        assert err.value.code == 2 and said in capsys.readouterr().err, argv


@pytest.mark.slow
def test_advisor_seat_table_is_the_arenas(tmp_path):
    """--seat-table: each pool policy and each belief_ev alpha variant in one seat of the
    same tables against the pool (`coupjax.seat_tables.play_tables`, the variants built).
    About 40 s on 2 CPU cores: the table compiles belief_ev twice.
    Quick twin: test_advisor_quality_small_run."""
    from coupjax.policies.pools import OPPONENTS
    from evals import advisor_quality

    out = tmp_path / "st.json"
    res = advisor_quality.main(["--seat-table", "6", "--alphas", "0.5", "--seed", str(REPORT_SEED), "--out", str(out), "--quiet"])
    assert json.loads(out.read_text())["policies"].keys() == res["policies"].keys()
    assert list(res["policies"]) == [*OPPONENTS, "belief_ev[alpha=0.5]"]
    assert res["purpose"] == "report" and res["opponents"] == list(OPPONENTS)
    for name, r in res["policies"].items():
        assert r["games"] == r["seats"] == 6 and 0 <= r["wins"] <= 6 and 1 <= r["mean_placement"] <= 4, name
        assert r["win_rate"] == r["wins"] / 6 and r["wilson95"] == [r["ci95_low"], r["ci95_high"]]
