"""evals.compare: paired comparisons find a planted difference, see none between equal
policies, keep their JSON keys and refuse bad input before any work; the statistics
(`evals.report.stats`: the paired bootstrap, Holm, Bonferroni, the detectable effect)
on known inputs.

One set of tables serves the planted difference, the equal policies and the command
(the same policies and sizes: `evals.compare.table_player` compiles them once).
"""
from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import seeds
from coupjax.env import Env
from coupjax.policies import make_policy
from coupjax.policies.pools import SCRIPTED_NAMES
from evals import compare
from evals.report.stats import bonferroni_alpha, holm, paired_bootstrap, smallest_detectable_difference, unit_test

ROOT = Path(__file__).resolve().parents[1]

GAMES, SEEDS = 150, [7, seeds.HELD_OUT_SEEDS[0]]  # pytest keeps the held-out look out of the ledger
RESAMPLED = "tests.test_compare:honest_resampled"


def honest_resampled(env):
    """``honest`` with its own randomness: the same distribution of play, other draws, so
    seated where ``honest`` sits it plays other games from the same tables."""
    bot = make_policy("honest", env)

    def policy(key, state):
        logits = bot(key, state)
        a = jax.random.categorical(jax.random.fold_in(key, 12345), logits)
        return jnp.where(jnp.arange(logits.shape[-1]) == a, 0.0, -jnp.inf)

    return policy


@pytest.fixture(scope="module")
def paired():
    """honest (A) and, on the same tables, random and honest_resampled (B's two units)."""
    return compare.play_paired(Env(4), ["honest"], ["random", RESAMPLED], GAMES, SEEDS, None, batch=128)


def test_a_planted_difference_is_found(paired):
    (wa, wb), (pa, pb) = paired["wins"], paired["placement"]
    assert wa.shape == (1, len(SEEDS), GAMES) and wb.shape == (2, len(SEEDS), GAMES)
    win = paired_bootstrap(wa, wb[:1], n_boot=500)
    place = paired_bootstrap(pa, pb[:1], n_boot=500)
    assert win["ci_low"] > 0 and win["p_value"] < 0.05
    assert place["ci_high"] < 0  # honest places better (lower) than random


def test_equal_policies_give_an_interval_that_covers_0(paired):
    (wa, wb), (pa, pb) = paired["wins"], paired["placement"]
    equal = wb[1:]
    assert (wa != equal).any()  # other games on the same tables: a real test, not 0 - 0
    win = paired_bootstrap(wa, equal, n_boot=500)
    place = paired_bootstrap(pa, pb[1:], n_boot=500)
    assert win["ci_low"] <= 0 <= win["ci_high"] and place["ci_low"] <= 0 <= place["ci_high"]
    assert win["ci_high"] - win["ci_low"] < 0.2


def test_a_and_b_meet_the_same_tables(paired):
    """Pairing: the same deal, seat and opponents at every table, so the results of two
    equal policies go together table by table (unpaired tables would not correlate)."""
    wa, equal = paired["wins"][0][0].ravel(), paired["wins"][1][1].ravel()
    assert np.corrcoef(wa, equal)[0, 1] > 0.2


def test_the_command_keeps_its_keys_and_records_a_held_out_seed(paired, tmp_path, monkeypatch, capsys):
    """B names two training-seed units (random and honest_resampled, far apart): the
    interval counts that spread, much wider than honest vs random alone."""
    ledger, out = tmp_path / "ledger.jsonl", tmp_path / "cmp.json"
    monkeypatch.setenv(seeds.LEDGER_ENV, str(ledger))
    res = compare.main(["--a", "honest", "--b", f"random,{RESAMPLED}", "--games", str(GAMES),
                  "--seeds", *map(str, SEEDS), "--boot", "500", "--comparisons", "3", "--batch", "128",
                  "--out", str(out)])
    kept = json.loads(out.read_text())
    assert {"diff", "ci95_low", "ci95_high", "games", "seeds"} <= set(kept) and kept == json.loads(json.dumps(res))
    assert kept["games"] == GAMES and kept["seeds"] == SEEDS and kept["tables"] == GAMES * len(SEEDS)
    assert kept["units_b"] == ["random", RESAMPLED]
    (wa, wb) = paired["wins"]
    assert kept["diff"] == pytest.approx(wa.mean() - wb.mean())
    assert kept["ci95_high"] - kept["ci95_low"] > 0.3  # a unit of B is random, the other honest
    assert kept["ci_corrected_low"] <= kept["ci95_low"] and kept["ci_corrected_high"] >= kept["ci95_high"]
    low, high = kept["ci_corrected_low"], kept["ci_corrected_high"]
    assert kept["verdict"] == ("A beats B" if low > 0 else "B beats A" if high < 0 else "no significant difference")
    assert kept["verdict"] in capsys.readouterr().out
    assert [(e["seed"], e["report"]) for e in seeds.read_ledger(ledger)] == [(SEEDS[1], compare.PROG)]


@pytest.mark.parametrize("argv, message", [
    (["--a", "honest", "--b", "random", "--games", "10", "--seeds", str(min(seeds.TUNING_SEEDS))], "used to tune"),
    (["--a", "honest", "--b", "random", "--games", "0"], "must be a positive integer"),
    (["--a", "honest", "--b", "no_such_policy", "--games", "10"], "no_such_policy"),
    (["--a", "honest", "--b", "no/such/runs_*", "--games", "10"], "matches nothing"),
    (["--a", "honest", "--b", "random", "--opponents", "nobody", "--games", "10"], "nobody"),
    (["--a", "honest", "--b", "random", "--games", "10", "--seeds", "7", "7"], "repeats a seed"),
    (["--a", "honest", "--b", str(ROOT / "evals" / "reference" / "dqn" / "export"), "--games", "10", "--players", "3"], "table size"),
    (["--a", "honest", "--b", "random", "--games", "10", "--out", str(ROOT / "README.md" / "x.json")], "cannot make the folder"),
])
def test_bad_input_is_one_line_and_status_2_before_any_work(argv, message, capsys, tmp_path, monkeypatch):
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(seeds.LEDGER_ENV, str(ledger))
    monkeypatch.setattr(compare, "compare", lambda *a, **k: pytest.fail("work started on bad input"))
    with pytest.raises(SystemExit) as err:
        compare.main([*argv, "--seeds", str(seeds.HELD_OUT_SEEDS[5])] if "--seeds" not in argv else argv)
    assert err.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and lines[0].startswith(compare.PROG)
    assert not ledger.exists()  # a run refused is no look at a held-out seed


def test_the_other_seats_come_from_the_condition_or_the_opponent_spec():
    seats, opp, specs = compare.condition_tables(400, 4, 7, None)
    assert specs == list(SCRIPTED_NAMES) and opp.shape == (400, 3) and set(np.unique(seats)) == {0, 1, 2, 3}
    share = np.bincount(opp.ravel(), minlength=len(specs)) / opp.size
    assert share[specs.index("aggressive")] > share[specs.index("honest")]  # aggressive_heavy, the default
    same = compare.condition_tables(400, 4, 7, compare.DEFAULT_CONDITION)
    assert np.array_equal(same[0], seats) and np.array_equal(same[1], opp)
    other = compare.condition_tables(400, 4, 7, "honest_heavy")[1]
    assert (np.bincount(other.ravel(), minlength=5) / other.size)[specs.index("honest")] > 0.3
    h_seats, h_opp, h_specs = compare.condition_tables(400, 4, 7, "belief_ev")
    assert h_specs == ["belief_ev"] and not h_opp.any() and np.array_equal(h_seats, seats)


def test_a_spec_of_several_runs_is_several_units(tmp_path, monkeypatch):
    for name in ("sp_s2", "sp_s1", "other"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(compare, "describe_spec", lambda spec: "path")
    assert compare.expand_spec("sp_s*") == ["sp_s1", "sp_s2"]
    assert compare.expand_spec("sp_s2, other") == ["sp_s2", "other"]


# ------------------------------------------------------------------ the statistics
def test_holm_and_bonferroni_on_known_inputs():
    out = holm([0.01, 0.04, 0.03, 0.005])
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04; kept non-decreasing
    assert np.allclose(out["adjusted"], [0.03, 0.06, 0.06, 0.02])
    assert out["reject"] == [True, False, False, True]
    assert holm([0.5, 0.9])["adjusted"] == [1.0, 1.0] and holm([]) == {"adjusted": [], "reject": []}
    assert bonferroni_alpha(0.05, 5) == pytest.approx(0.01)
    with pytest.raises(ValueError):
        holm([1.5])


def test_paired_bootstrap_counts_training_seeds():
    rng = np.random.default_rng(0)
    b = (rng.random((1, 4, 400)) < 0.3).astype(float)
    same = paired_bootstrap(b, b, n_boot=200)
    assert same["diff"] == same["ci_low"] == same["ci_high"] == 0.0 and same["p_value"] == 1.0
    shifted = paired_bootstrap(b + 0.1, b, n_boot=200)
    assert shifted["diff"] == pytest.approx(0.1) and shifted["ci_low"] == pytest.approx(0.1)
    # three training seeds of A that differ by +-0.2: the interval widens to cover that spread
    units = np.stack([b[0] + d for d in (-0.2, 0.0, 0.2)])
    spread = paired_bootstrap(units, b, n_boot=400)
    assert spread["diff"] == pytest.approx(0.0, abs=1e-12)
    assert spread["ci_low"] < -0.05 and spread["ci_high"] > 0.05
    wider = paired_bootstrap(units, b, n_boot=400, alpha=bonferroni_alpha(0.05, 10))
    assert wider["ci_low"] <= spread["ci_low"] and wider["ci_high"] >= spread["ci_high"]
    with pytest.raises(ValueError):
        paired_bootstrap(b, b[:, :2])


def test_smallest_detectable_difference():
    # (1.96 + 0.8416) * sqrt(2 * 0.25 * 0.75 / 10000)
    assert smallest_detectable_difference(10_000) == pytest.approx(0.01716, abs=1e-4)
    assert smallest_detectable_difference(10_000, comparisons=3) > smallest_detectable_difference(10_000)
    assert smallest_detectable_difference(10_000, between_sd=0.05, units=3) > 0.05


@pytest.mark.slow
def test_run_directories_named_by_a_glob_are_training_seed_units(tmp_path, monkeypatch):
    """Two copies of the shipped reference DQN export as B's training runs, found by a glob: both
    play, and being the same network they win the same tables.
    Quick twin: test_a_spec_of_several_runs_is_several_units."""
    import shutil

    for name in ("br_s1", "br_s2"):
        shutil.copytree(ROOT / "evals" / "reference" / "dqn" / "export", tmp_path / name)
    monkeypatch.chdir(tmp_path)
    out = compare.compare(Env(4), "honest", "br_s*", 40, [7], n_boot=200, batch=64)
    assert out["units_b"] == ["br_s1", "br_s2"]
    assert out["per_unit"]["b"]["br_s1"] == out["per_unit"]["b"]["br_s2"]
    assert out["ci95_low"] <= out["diff"] <= out["ci95_high"]


def test_f1_interval_resamples_whole_games():
    """A game's claims share hands and bots: with each game's 10 claims alike, the
    interval is about sqrt(10) times wider than with the same claims independent, and
    both hold the point estimate."""
    from evals.report.stats import f1_interval

    rng = np.random.default_rng(0)
    games, per = 2000, 10
    game = np.repeat(np.arange(games), per)
    outcome_alike = np.repeat(rng.integers(0, 4, games), per)  # 0 tp, 1 fp, 2 fn, 3 tn
    outcome_free = rng.permutation(outcome_alike)
    widths = []
    for o in (outcome_alike, outcome_free):
        tp, fp, fn = o == 0, o == 1, o == 2
        f1 = 2 * tp.sum() / (2 * tp.sum() + fp.sum() + fn.sum())
        lo, hi = f1_interval(game, tp, fp, fn, n_boot=400)
        assert lo < f1 < hi
        widths.append(hi - lo)
    assert 2.2 < widths[0] / widths[1] < 4.5


def test_advisor_claims_say_above_only_outside_the_interval():
    """docs/results.md's advisor sentences (the criterion's claim 6): "above" only where the
    interval over games lies wholly above CoupVisor's figure; without one, it says so."""
    from evals.report.final import _advisor_claims

    def rep(lo, hi):
        m = {"f1": 0.60, "f1_ci95_low": lo, "f1_ci95_high": hi, "claims": 1000, "games": 50}
        return {"advisor": {"exact": {"aggressive_heavy": m}}, "coupvisor_paper": {"aggressive_heavy": {"f1": 0.5641}}}

    def said(lo, hi):
        return "\n".join(_advisor_claims(rep(lo, hi)))

    assert "**The `exact` advisor's F1 is above CoupVisor's published figure**" in said(0.58, 0.62)
    assert "**No significant difference between the `exact` advisor's F1" in said(0.55, 0.65)
    assert "no interval" in said(None, None)


# ------------------------------------------------------------------ a verdict valid for few units
def null_experiments(k_a: int, k_b: int, n: int = 3000, tables: int = 20_000, between_sd: float = 0.03,
                     p: float = 0.3, seed: int = 0):
    """``n`` experiments where A and B are equal: each unit's true win rate drawn around
    ``p`` with the spread of training seeds (a side of one unit is a fixed policy: exactly
    ``p``), its observed mean from ``tables`` Bernoulli games.  (A [n, k_a], B [n, k_b])."""
    rng = np.random.default_rng(seed)

    def side(k):
        true = p + (between_sd * rng.standard_normal((n, k)) if k > 1 else np.zeros((n, k)))
        return rng.binomial(tables, true) / tables

    return side(k_a), side(k_b)


@pytest.mark.parametrize("k_a, k_b", [(3, 3), (5, 5), (3, 1)])
def test_the_unit_test_rejects_a_true_null_at_most_5_percent(k_a, k_b):
    """Issue 41: with three (and five) training seeds a side, "beats" at a nominal 5% must
    not come more often than 5% when A and B are equal.  The hierarchical bootstrap did
    (16.8% of 400 simulated experiments at 3 units a side, 4,000 tables x 5 seeds each:
    the figure recorded in the issue's note); Welch's t on the unit means does not.  At
    three units Welch is conservative (about 3.4%), so the check is the binomial band's
    upper edge and a floor that keeps the test from never rejecting."""
    n, tables = 3000, 20_000
    a, b = null_experiments(k_a, k_b, n, tables)
    rejected = np.mean([unit_test(a[i], b[i], tables, tables)["p_value"] < 0.05 for i in range(n)])
    edge = 2.5 * np.sqrt(0.05 * 0.95 / n)
    assert 0.025 < rejected <= 0.05 + edge, rejected


def test_the_unit_test_is_welchs_and_finds_a_real_difference():
    from scipy.stats import ttest_ind

    a, b = [0.710, 0.705, 0.695], [0.633, 0.629, 0.676]
    res, ref = unit_test(a, b), ttest_ind(a, b, equal_var=False)
    assert res["p_value"] == pytest.approx(ref.pvalue) and res["df"] == pytest.approx(ref.df)
    assert (res["ci_low"], res["ci_high"]) == pytest.approx(tuple(ref.confidence_interval()))
    assert 0.05 < res["p_value"] < 0.06  # issue 41's "selfplay_cpu beats dqn_cpu": p = 0.054, no claim
    big_a, big_b = null_experiments(5, 5, 200, seed=1)
    found = np.mean([unit_test(x + 0.08, y)["p_value"] < 0.05 for x, y in zip(big_a, big_b)])
    assert found > 0.8  # 0.08 with 5 seeds a side of spread 0.03: shown most of the time
    fixed = unit_test([0.717], [0.698], 20_000, 20_000)  # two fixed policies: their tables' noise only
    assert fixed["units_a"] == fixed["units_b"] == 1 and fixed["ci_low"] > 0 and fixed["p_value"] < 1e-3
    with pytest.raises(ValueError, match="one unit"):
        unit_test([0.7], [0.6, 0.65])


def test_the_detectable_difference_with_few_units_uses_t_quantiles():
    # the criterion's figure (normal quantiles) is unchanged; t on 4 degrees of freedom is larger
    z = smallest_detectable_difference(20_000, p=0.3, comparisons=9, between_sd=0.04, units=3)
    assert z == pytest.approx(0.119, abs=1e-3)
    assert smallest_detectable_difference(20_000, p=0.3, comparisons=9, between_sd=0.04, units=3, df=4) > 1.3 * z
    fixed_b = smallest_detectable_difference(20_000, p=0.3, between_sd=0.04, units=3, units_b=float("inf"))
    assert fixed_b < smallest_detectable_difference(20_000, p=0.3, between_sd=0.04, units=3)
