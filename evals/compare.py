"""Paired comparison: does A do better than B in the same seat of the same tables?

    python -m evals.compare --a SPEC --b SPEC [--opponents SPEC|CONDITION] --games N --seeds S [S ...]
                            [--comparisons M] [--out FILE.json]

A and B each take the same (uniformly drawn) seat of the same tables: the same other
seats and the same game keys per table seed (common random numbers), so most of the
luck of the deal cancels in the difference.  The other seats are drawn from an opponent
condition (`coupjax.policies.pools.CONDITIONS`, default ``aggressive_heavy``), or all
play ``--opponents SPEC`` (head to head).  ``--games`` tables per seed.

A spec names a policy (`coupjax.policies.spec`) or several training runs of one recipe,
comma-separated or as a glob (``'runs/sp_s*'``): each is a training-seed unit, all
playing the same tables, so the interval counts what varies between training seeds.

Printed and kept (A minus B): the difference in win rate and in mean placement with a
hierarchical paired bootstrap 95% interval over table seeds, training seeds and tables
(`evals.report.stats.paired_bootstrap`); with ``--comparisons M`` (the pairs one report
ranks) also the Bonferroni interval at 1 - 0.05 / M and the p-value a report corrects
with `evals.report.stats.holm`.  The verdict names a winner only where the (corrected)
interval excludes 0, else "no significant difference".  ``--out`` keeps at its top
level ``diff``, ``ci95_low``, ``ci95_high`` (win rate, A minus B), ``games`` (tables per
seed) and ``seeds``.  Tuning seeds are refused, a held-out seed is recorded
(`coupjax.seeds`).
"""
from __future__ import annotations

import functools
import glob
import json
from pathlib import Path

import numpy as np
from rich.table import Table

from coupjax import seat_tables
from coupjax import console
from coupjax.args import Parser, fail, positive_int
from coupjax.env import Env
from coupjax.policies import PolicySpecError
from coupjax.policies.pools import CONDITIONS, SCRIPTED_NAMES
from coupjax.policies.spec import describe_spec, locate, resolve_policy
from coupjax.seeds import REPORT_SEED, SeedError, check_report_seed, seed_role
from evals.report.play import (TablePlayer, condition_weights, draw_condition_tables, interleave, seat_rows,
                               slots_per_device)
from evals.report.policies import fits_table
from evals.report.stats import bonferroni_alpha, paired_bootstrap

DEFAULT_CONDITION = "aggressive_heavy"
PROG = "python -m evals.compare"


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
    win = paired_bootstrap(wa, wb, n_boot=n_boot)
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
        "comparisons": comparisons, "n_boot": n_boot,
    }
    low, high = out["ci95_low"], out["ci95_high"]
    if comparisons > 1:
        adj = paired_bootstrap(wa, wb, n_boot=n_boot, alpha=bonferroni_alpha(0.05, comparisons))
        out["ci_corrected_low"], out["ci_corrected_high"] = low, high = adj["ci_low"], adj["ci_high"]
    out["verdict"] = ("A beats B" if low > 0 else "B beats A" if high < 0 else "no significant difference")
    return out


def render(out: dict) -> Table:
    """The comparison as a rich table: each side's figures, then A minus B."""
    table = Table(title=f"{out['a']} vs {out['b']}: {out['games']:,} tables x {len(out['seeds'])} seeds "
                        f"({', '.join(map(str, out['seeds']))}), other seats {out['opponents']}")
    for col in ("", "win rate", "95% interval", "mean place", "95% interval"):
        table.add_column(col, justify="left" if not col else "right")
    p = out["placement"]
    table.add_row(f"A: {out['a']} ({len(out['units_a'])} unit(s))", f"{out['win_rate_a']:.3f}", "",
                  f"{p['mean_a']:.2f}", "")
    table.add_row(f"B: {out['b']} ({len(out['units_b'])} unit(s))", f"{out['win_rate_b']:.3f}", "",
                  f"{p['mean_b']:.2f}", "")
    table.add_row("A - B (paired)", f"{out['diff']:+.3f}", f"[{out['ci95_low']:+.3f}, {out['ci95_high']:+.3f}]",
                  f"{p['diff']:+.2f}", f"[{p['ci95_low']:+.2f}, {p['ci95_high']:+.2f}]")
    if "ci_corrected_low" in out:
        table.add_row(f"A - B, Bonferroni over {out['comparisons']}", "",
                      f"[{out['ci_corrected_low']:+.3f}, {out['ci_corrected_high']:+.3f}]", "", "")
    return table


def main(argv=None) -> dict:
    ap = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="policy spec of A (runs: comma-separated or a glob)")
    ap.add_argument("--b", required=True, help="policy spec of B (runs: comma-separated or a glob)")
    ap.add_argument("--opponents", help=f"a condition ({', '.join(CONDITIONS)}; default {DEFAULT_CONDITION}) "
                                        "or a policy spec for every other seat")
    ap.add_argument("--games", type=positive_int, required=True, help="tables per seed")
    ap.add_argument("--seeds", type=int, nargs="+", default=[REPORT_SEED],
                    help=f"table seeds (default {REPORT_SEED}; tuning seeds are refused, held-out seeds recorded)")
    ap.add_argument("--players", type=int, default=4, choices=range(2, 7), metavar="{2..6}")
    ap.add_argument("--comparisons", type=positive_int, default=1,
                    help="pairs ranked in one report: the verdict uses the Bonferroni interval")
    ap.add_argument("--boot", type=positive_int, default=2000, help="bootstrap resamples")
    ap.add_argument("--batch", type=positive_int, default=1000,
                    help="game slots of the runner (results do not depend on it)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if len(set(args.seeds)) != len(args.seeds):
        fail(PROG, f"--seeds repeats a seed: {args.seeds}")
    tuning = [s for s in args.seeds if seed_role(s) == "tuning"]
    if tuning:
        try:
            check_report_seed(tuning[0], PROG)
        except SeedError as err:
            fail(PROG, err)
    try:
        named = expand_spec(args.a) + expand_spec(args.b)
        if args.opponents is not None and args.opponents not in CONDITIONS:
            if "," in args.opponents or any(c in args.opponents for c in "*?["):
                fail(PROG, f"--opponents names one policy or a condition, got {args.opponents!r}")
            describe_spec(args.opponents)
            named.append(args.opponents)
    except PolicySpecError as err:
        fail(PROG, err)
    for spec in named:
        where = locate(spec) if describe_spec(spec) == "path" else None
        if where is not None and not fits_table(str(where), args.players):
            fail(PROG, f"{spec} was trained for another table size than --players {args.players}")
    if args.out and not args.out.parent.is_dir():
        fail(PROG, f"--out {args.out}: no folder {args.out.parent}")
    seeds = [check_report_seed(s, PROG) for s in args.seeds]  # held-out seeds recorded, now that the run is valid
    out = compare(Env(args.players), args.a, args.b, args.games, seeds, args.opponents, args.comparisons, args.boot,
                  args.batch)
    console.console().print(render(out))
    console.console().print(f"verdict: {out['verdict']} (win rate, A minus B{', corrected' if args.comparisons > 1 else ''})")
    if args.out:
        args.out.write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
