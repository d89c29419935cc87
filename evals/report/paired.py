"""Paired play: A and B in the same seat of the same tables (common random numbers).

The core of ``python -m evals.compare`` (its command, table and verdict line live there),
here so that the report (`evals.report.final`) ranks policies with the same functions:
`expand_spec` (a spec's training-seed units), `condition_tables`, `play_paired` (per-table
results of every unit) and `compare` (the difference with its interval and test: Welch's t
on the training-seed units' means where a side has several, `evals.report.stats.unit_test`,
whose false-positive rate holds with few units; the paired hierarchical bootstrap over
seeds and tables, `evals.report.stats.paired_bootstrap`, for one unit a side).
"""
from __future__ import annotations

import functools
import glob

import numpy as np

from coupjax import seat_tables
from coupjax.env import Env
from coupjax.policies import PolicySpecError
from coupjax.policies.pools import CONDITIONS, SCRIPTED_NAMES
from coupjax.policies.spec import describe_spec, resolve_policy
from evals.report.play import (TablePlayer, condition_weights, draw_condition_tables, interleave, seat_rows,
                               slots_per_device)
from evals.report.stats import bonferroni_alpha, paired_bootstrap, unit_test

DEFAULT_CONDITION = "aggressive_heavy"


def expand_spec(spec: str) -> list[str]:
    """The training-seed units a spec names: its comma-separated parts, a glob expanded
    to the matching paths (sorted); PolicySpecError for a part that names nothing."""
    units = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            raise PolicySpecError(f"spec {spec!r} has an empty part")
        matches = sorted(glob.glob(part)) if any(c in part for c in "*?[") else [part]
        if not matches:
            raise PolicySpecError(f"spec {part!r}: the glob matches nothing")
        for unit in matches:
            describe_spec(unit)
            units.append(unit)
    return units


def condition_tables(games: int, num_players: int, seed: int, opponents: str | None):
    """(tested seat [G], opponents [G, n-1] as indices into the opponent specs, those
    specs) of ``seed``'s tables: drawn from the condition over the scripted bots, or every
    other seat ``opponents`` (a spec)."""
    if opponents is None or opponents in CONDITIONS:
        seats, opp = draw_condition_tables(games, num_players, seed, condition_weights(opponents or DEFAULT_CONDITION))
        return seats, opp, list(SCRIPTED_NAMES)
    seats, opp = draw_condition_tables(games, num_players, seed, [1.0])
    return seats, opp, [opponents]


@functools.lru_cache(maxsize=4)
def table_player(num_players: int, specs: tuple, slots: int, queue: int, capacity: tuple) -> TablePlayer:
    """The runner of ``specs`` (policy entries, in order), kept: a second comparison of
    the same policies and sizes (a report's, a test's) plays without compiling again."""
    env = Env(num_players)
    return TablePlayer(env, [resolve_policy(spec, env) for spec in specs], None, batch=slots, capacity=capacity,
                       queue=queue)


def play_paired(env, units_a: list[str], units_b: list[str], games: int, seeds: list[int], opponents: str | None,
                batch: int = 1000) -> dict:
    """Per-table results of every unit of A and B on the same tables: ``wins`` and
    ``placement`` as (A [units_a, seeds, games], B [units_b, seeds, games]).

    One runner plays every unit's tables interleaved (`evals.report.play`), so each
    policy is computed where it sits and the games of A and B differ only in the tested
    seat.  A unit named on both sides is played once."""
    n = env.num_players
    tables = {s: condition_tables(games, n, s, opponents) for s in seeds}
    units = list(dict.fromkeys(units_a + units_b))
    specs = list(dict.fromkeys(tables[seeds[0]][2] + units))
    groups, keys, order_of = [], [], []
    for u in units:
        for s in seeds:
            seats, opp, _ = tables[s]
            groups.append(seat_tables.seat_index(seats, opp, specs.index(u), n))  # opponent k is entry k
            keys.append(np.asarray(seat_tables.game_keys(s, 0, games)))
            order_of.append((u, s))
    order = interleave(groups)
    idx = np.stack([groups[g][r] for g, r in order])
    key_rows = np.stack([keys[g][r] for g, r in order])
    slots = min(batch, len(idx))
    capacity = TablePlayer.capacities_of(idx, len(specs), slots_per_device(slots))
    stats = table_player(n, tuple(specs), slots, len(idx), capacity).play(idx, key_rows)
    per = {}
    for gi, (u, s) in enumerate(order_of):
        sel = np.nonzero(order[:, 0] == gi)[0]
        rows = seat_rows({k: v[sel] for k, v in stats.items()}, tables[s][0][order[sel, 1]])
        back = np.empty(games, np.int64)
        back[order[sel, 1]] = np.arange(games)
        per[u, s] = {k: np.asarray(rows[k])[back] for k in ("wins", "placement")}

    def stack(side, key):
        return np.stack([np.stack([per[u, s][key] for s in seeds]) for u in side]).astype(np.float64)

    return {key: (stack(units_a, key), stack(units_b, key)) for key in ("wins", "placement")}


def compare(env, spec_a: str, spec_b: str, games: int, seeds: list[int], opponents: str | None = None,
            comparisons: int = 1, n_boot: int = 2000, batch: int = 1000) -> dict:
    """The paired comparison of the module doc, as the JSON ``--out`` keeps."""
    units_a, units_b = expand_spec(spec_a), expand_spec(spec_b)
    res = play_paired(env, units_a, units_b, games, seeds, opponents, batch)
    (wa, wb), (pa, pb) = res["wins"], res["placement"]
    by_units = max(len(units_a), len(units_b)) > 1  # training seeds are the unit of noise (issue 41)

    def test(alpha=0.05):
        if by_units:
            return unit_test(wa.mean((1, 2)), wb.mean((1, 2)), wa[0].size, wb[0].size, alpha=alpha)
        return paired_bootstrap(wa, wb, n_boot=n_boot, alpha=alpha)

    win = test()
    place = paired_bootstrap(pa, pb, n_boot=n_boot)
    out = {
        "a": spec_a, "b": spec_b, "units_a": units_a, "units_b": units_b,
        "opponents": opponents or DEFAULT_CONDITION, "players": env.num_players,
        "games": games, "seeds": list(seeds), "tables": games * len(seeds),
        "diff": win["diff"], "ci95_low": win["ci_low"], "ci95_high": win["ci_high"], "p_value": win["p_value"],
        "win_rate_a": float(wa.mean()), "win_rate_b": float(wb.mean()),
        "placement": {"diff": place["diff"], "ci95_low": place["ci_low"], "ci95_high": place["ci_high"],
                      "p_value": place["p_value"], "mean_a": float(pa.mean()), "mean_b": float(pb.mean())},
        "per_seed": [{"seed": s, "win_rate_a": float(wa[:, i].mean()), "win_rate_b": float(wb[:, i].mean())}
                     for i, s in enumerate(seeds)],
        "per_unit": {"a": {u: float(wa[j].mean()) for j, u in enumerate(units_a)},
                     "b": {u: float(wb[j].mean()) for j, u in enumerate(units_b)}},
        "comparisons": comparisons, "n_boot": n_boot, "test": "welch" if by_units else "paired_bootstrap",
    }
    low, high = out["ci95_low"], out["ci95_high"]
    if comparisons > 1:
        adj = test(bonferroni_alpha(0.05, comparisons))
        out["ci_corrected_low"], out["ci_corrected_high"] = low, high = adj["ci_low"], adj["ci_high"]
    out["verdict"] = verdict(low, high)
    return out


def verdict(low: float, high: float, a: str = "A", b: str = "B") -> str:
    """The words for an interval of A minus B: a winner only where it excludes 0."""
    return f"{a} beats {b}" if low > 0 else f"{b} beats {a}" if high < 0 else "no significant difference"
