"""Exploit probes: the tuning and the paired measure behind ``python -m
evals.exploit_probe`` (its module doc says what they do), here so that the report
(`evals.report.suite`) probes with the same functions."""
from __future__ import annotations

import numpy as np

from coupjax import rules, seat_tables
from coupjax.seeds import check_tuning_seed
from evals.lib.paired import play_paired, table_player
from evals.lib.play import TablePlayer, interleave, slots_per_device
from evals.lib.stats import paired_bootstrap

TUNE_SEED = 1003
RATES = ("0.5", "1")
PROBES = tuple(f"role_bluffer:{role}:{rate}" for role in rules.ROLES for rate in RATES) + ("bluffer", "aggressive")
BOUND = 0.02


def tune(env, policy: str, games: int, seed: int, probes=None, batch: int = 1000) -> dict:
    """probe -> its seat-table row against three copies of ``policy`` on tuning ``seed``
    (``probes`` default `PROBES`): `coupjax.seat_tables.play_tables`' tables, keys and
    rows, every probe's tables interleaved in one queue split over the host's devices
    (`evals.lib.play`: one compilation, both cores busy)."""
    check_tuning_seed(seed, "exploit probe tuning")
    names = list(PROBES if probes is None else probes)
    n = env.num_players
    specs = list(dict.fromkeys([policy, *names]))  # the opponent is entry 0, as in play_tables
    seats, opp = seat_tables.draw_tables(games, n, seed, 1)
    groups = [seat_tables.seat_index(seats, opp, specs.index(x), n) for x in names]
    order = interleave(groups)
    idx = np.stack([groups[g][r] for g, r in order])
    keys = np.asarray(seat_tables.game_keys(seed, 0, games))[order[:, 1]]
    slots = min(batch, len(idx))
    capacity = TablePlayer.capacities_of(idx, len(specs), slots_per_device(slots))
    stats = table_player(n, tuple(specs), slots, len(idx), capacity).play(idx, keys)
    rows = {}
    for g, name in enumerate(names):
        sel = order[:, 0] == g
        at, seat = np.arange(int(sel.sum())), seats[order[sel, 1]]
        mine = {k: np.asarray(stats[k])[sel][at, seat] for k in ("wins", "placement", "entropy", "decisions")}
        rows[name] = seat_tables.summarize(mine["wins"], mine["placement"], float(mine["entropy"].sum()),
                                           int(mine["decisions"].sum()))
    return rows


def measure(env, probe: str, policy: str, baseline: str, games: int, seeds: list[int], n_boot: int = 2000) -> dict:
    """The probe against ``policy`` and against ``baseline`` on the same tables (module doc)."""
    vs_policy = play_paired(env, [probe], [probe], games, seeds, policy)["wins"][0]
    vs_baseline = play_paired(env, [probe], [probe], games, seeds, baseline)["wins"][0]
    two_sided = paired_bootstrap(vs_policy, vs_baseline, n_boot=n_boot)
    one_sided = paired_bootstrap(vs_policy, vs_baseline, n_boot=n_boot, alpha=0.10)
    return {"win_rate_vs_policy": float(vs_policy.mean()), "win_rate_vs_baseline": float(vs_baseline.mean()),
            "diff": two_sided["diff"], "ci95_low": two_sided["ci_low"], "ci95_high": two_sided["ci_high"],
            "upper95": one_sided["ci_high"], "p_value": two_sided["p_value"]}


def strongest(rows: dict) -> str:
    """The probe of highest win rate in the tuning table (the first listed on a tie)."""
    names = list(rows)
    return max(names, key=lambda p: (rows[p]["win_rate"], -names.index(p)))


def probe(env, policy: str, baseline: str, games: int, seeds: list[int], tune_games: int, tune_seed: int = TUNE_SEED,
          n_boot: int = 2000, probes=None) -> dict:
    """Tune, then measure the strongest probe (module doc of `evals.exploit_probe`): the
    dict its ``--out`` keeps.  ``probes``: the candidates (default `PROBES`)."""
    rows = tune(env, policy, tune_games, tune_seed, probes)
    best = strongest(rows)
    out = {"policy": policy, "baseline": baseline, "tune_seed": tune_seed, "tune_games": tune_games,
           "probes": rows, "strongest": best,
           **measure(env, best, policy, baseline, games, list(seeds), n_boot), "games": games, "seeds": list(seeds),
           "bound": BOUND}
    out["within_bound"] = out["upper95"] <= BOUND
    return out
