"""The suite: every cell of the design matrix, computed (or resumed) and pooled.

Cells (`evals.report.cells`), in the order they run:

* ``seat/n{N}/{condition}/s{seed}``: every policy of ``policies`` and ``advised`` in
  one seat of the same ``games`` tables (seat uniform, opponents drawn from the
  condition's weights; game keys from the seed: common random numbers);
* ``search/{condition}/s{seed}``: ``search_policies`` on the first ``search_games`` of
  those tables;
* ``players/n{k}/{condition}``: every policy of ``policies`` that fits a k-player table on
  ``player_count_games`` tables of the first seed (k = ``num_players`` is the main
  matrix's first seed);
* ``crossplay/part{i}``: each cross-play policy in one seat against three (n-1) copies
  of each (itself included), ``cross_play_games`` tables per ordered pair, in slices;
* ``mixed/part{i}``: tables whose every seat is drawn uniformly from the cross-play
  policies (the ratings' games);
* ``positions/{condition}/s{seed}``: the offline metrics (`evals.report.positions`);
* ``advisor/{condition}/s{seed}``: the advisor's records and scores (`evals.lib.advisor.metrics`);
* ``advice/{condition}``: each of ``advice_bases`` with the page's advice
  (``advised:BASE``) and without, paired on ``advice_games`` tables per seed: per-table
  wins and placements (`evals.lib.paired.play_paired`);
* ``reactions/{condition}``: ``reaction_policies``' challenge and block rates per claimed
  role on ``reaction_games`` tables of the first seed (`evals.lib.reactions`);
* ``probes/{label}``: each of ``exploit_probes``: the strongest scripted probe tuned
  against its policy, then against the policy and its baseline on ``probe_games`` tables
  of the first seed (`evals.lib.probes`);
* ``scenarios``: the scenario benchmark (`evals.report.decision_benchmark`).

Every table is played in `coupjax.seat_tables`'s loop (`evals.lib.play`).
"""
from __future__ import annotations

import time

import jax
import numpy as np

from coupjax import seat_tables
from coupjax.env import Env
from coupjax.policies import make_policy
from coupjax.policies.pools import CONDITIONS, SCRIPTED_NAMES
from evals.report import positions
from evals.report import decision_benchmark
from evals.lib import stats as ST
from evals.lib.advisor.metrics import AdvisorRecorder
from evals.report.cells import CellMissing
from evals.lib.paired import play_paired
from evals.lib.probes import probe
from evals.lib.reactions import reaction_rates
from evals.lib.play import (TablePlayer, condition_weights, draw_condition_tables, interleave, seat_rows,
                               slots_per_device)
from evals.lib.policies import build_policies, fits_table
from evals.report.progress import Silent

CROSS_SLICE = 500  # cross-play tables per ordered pair in one cell
MIXED_SLICE = 5000
POSITION_ROWS_SEARCH = 256  # logged positions a search policy is scored on (cost)


def queue_size(games: int, batch: int, most: int = 16) -> int:
    """Games per call of a table player: a cell's games in the fewest calls of at most
    ``most`` batches each, split evenly (little padding, one compiled shape per player)."""
    calls = -(-games // (most * batch))
    return max(1, -(-games // calls))


def cell_batch(batch: int, games: int) -> int:
    """Slots of a table player whose cells hold ``games`` games each: the config's
    ``batch``, or fewer for small cells (the search's), whose padding slots would
    otherwise compute the expensive policy's capacity on no game."""
    return max(1, min(int(batch), int(games)))


def table_keys(seed: int, stream: int, count: int):
    """Game keys of a table set: ``fold_in(fold_in(PRNGKey(seed), stream), g)``."""
    return seat_tables.game_keys(jax.random.fold_in(jax.random.PRNGKey(seed), stream), 0, count)


# stage (the first part of its cells' names, ``--only``'s words) -> the key of `Suite.run`'s dict, in run order
STAGES = {"seat": "seat", "search": "search", "players": "players", "crossplay": "cross", "mixed": "mixed",
          "positions": "positions", "advisor": "advisor", "advice": "advice", "advice_search": "advice_search",
          "reactions": "reactions", "probes": "probes", "scenarios": "scenarios"}


class Suite:
    """Runs the cells of one config into a `evals.report.cells.CellStore`; ``progress``:
    Rich's bars per cell (a terminal), ``log``: an `evals.report.progress.StageLog`."""

    def __init__(self, cfg, store, progress=None, log=None):
        self.cfg, self.store, self.progress = cfg, store, progress
        self.log = log if log is not None else Silent()
        self._envs, self._players = {}, {}
        self.stage_seconds: dict[str, float] = {}  # wall seconds of each stage played in this run

    # ------------------------------------------------------------ helpers
    def env(self, n: int) -> Env:
        if n not in self._envs:
            self._envs[n] = Env(n)
        return self._envs[n]

    def labels_for(self, n: int, labels) -> list:
        every = {**self.cfg.policies, **self.cfg.search_policies}
        return [x for x in labels if x in self.cfg.advised or fits_table(every[x], n)]

    def task(self, description: str, total: int):
        if self.progress is None:
            return None
        return self.progress.add_task(description, total=total)

    def finish(self, task):
        if self.progress is not None and task is not None:
            self.progress.update(task, visible=False)

    def seat_player(self, n: int, tested: list, games: int) -> tuple[TablePlayer, list]:
        """A `TablePlayer` at n players whose entries are the scripted bots then ``tested``
        (capacities from the shares of both conditions' tables: one compilation)."""
        key = (n, tuple(tested))
        if key not in self._players:
            env = self.env(n)
            pols = build_policies(env, self.cfg, tested)
            entries = [make_policy(x, env) for x in SCRIPTED_NAMES] + [pols[x] for x in tested]
            base = len(SCRIPTED_NAMES)
            batch = cell_batch(self.cfg.batch, games * len(tested))
            caps = []
            for cond in self.cfg.conditions:
                seats, opp = draw_condition_tables(min(games, 4000), n, 0, condition_weights(cond))
                groups = [seat_tables.seat_index(seats, opp, base + i, n) for i in range(len(tested))]
                idx = np.stack([groups[g][r] for g, r in interleave(groups)])
                caps.append(TablePlayer.capacities_of(idx, len(entries), slots_per_device(batch)))
            # a bot the conditions can seat serves at least a few games per iteration: the
            # shares above come from other tables than a small cell's, and a seated entry
            # with no capacity would never move (its game, and the loop, would never end)
            cap = np.max(caps, axis=0)
            seatable = np.array([any(condition_weights(c)[i] > 0 for c in self.cfg.conditions) for i in range(base)])
            floor = min(8, slots_per_device(batch))
            cap[:base] = np.where(seatable, np.maximum(cap[:base], floor), cap[:base])
            player = TablePlayer(env, entries, None, batch=batch, capacity=tuple(int(c) for c in cap),
                                 queue=queue_size(games * len(tested), batch))
            self._players[key] = (player, tested)
        return self._players[key]

    def play_seat_tables(self, n: int, tested: list, cond: str, seed: int, games: int, stream: int, desc: str):
        """label -> `stats.game_sums` of each tested policy on the same ``games`` tables."""
        player, _ = self.seat_player(n, tested, games)
        seats, opp = draw_condition_tables(games, n, seed, condition_weights(cond))
        keys = np.asarray(table_keys(seed, stream, games))
        base = len(SCRIPTED_NAMES)
        groups = [seat_tables.seat_index(seats, opp, base + i, n) for i in range(len(tested))]
        order = interleave(groups)
        idx = np.stack([groups[g][r] for g, r in order])
        task = self.task(desc, len(order))
        stats = player.play(idx, keys[order[:, 1]], self.progress, task)
        self.finish(task)
        out = {}
        for gi, label in enumerate(tested):
            sel = order[:, 0] == gi
            rows = order[sel, 1]
            st = {k: v[sel] for k, v in stats.items()}
            per = seat_rows(st, seats[rows])
            out[label] = ST.game_sums(per)
        return out

    # ------------------------------------------------------------ cells
    def matrix_cells(self, prefix: str, tested: list, games: int, desc: str) -> dict:
        """(condition, seed) -> cell ``{prefix}/{condition}/s{seed}``: ``tested`` in one seat
        of the first ``games`` tables of that condition and seed."""
        n = self.cfg.num_players
        out = {}
        for ci, cond in enumerate(self.cfg.conditions):
            for seed in self.cfg.seeds:
                out[(cond, seed)] = self.store.cell(f"{prefix}/{cond}/s{seed}", lambda c=cond, s=seed, i=ci: (
                    self.play_seat_tables(n, tested, c, s, games, i, f"{desc} {c} seed {s}"), None))
        return out

    def seat_cells(self) -> dict:
        n = self.cfg.num_players
        tested = self.labels_for(n, [*self.cfg.policies, *self.cfg.advised])
        return self.matrix_cells(f"seat/n{n}", tested, self.cfg.games, "seat tables")

    def search_cells(self) -> dict:
        tested = self.labels_for(self.cfg.num_players, list(self.cfg.search_policies))
        if not tested or self.cfg.search_games == 0:
            return {}
        return self.matrix_cells("search", tested, self.cfg.search_games, "search")

    def player_cells(self) -> dict:
        cfg = self.cfg
        out = {}
        if cfg.player_count_games == 0:
            return out
        seed = cfg.seeds[0]
        for k in cfg.player_counts:
            if k == cfg.num_players:
                continue
            tested = self.labels_for(k, list(cfg.policies))  # the advised seats: at the main size only
            for ci, cond in enumerate(cfg.conditions):
                name = f"players/n{k}/{cond}"
                out[(k, cond)] = self.store.cell(name, lambda k=k, c=cond, i=ci, t=tested: (
                    self.play_seat_tables(k, t, c, seed, cfg.player_count_games, 100 + i, f"{k} players {c}"),
                    None))
        return out

    def cross_groups(self, labels: list, g: int, start: int):
        """Per ordered pair (i, j) of ``labels``, ``g`` tables seating i once (seat drawn
        from the seed) and j everywhere else; returns (pairs, seats, groups)."""
        n, P = self.cfg.num_players, len(labels)
        pairs = [(i, j) for i in range(P) for j in range(P)]
        rng = np.random.default_rng([self.cfg.seeds[0], n, 3, start])
        seats = rng.integers(0, n, g)
        groups = []
        for i, j in pairs:
            idx = np.full((g, n), j, np.int32)
            idx[np.arange(g), seats] = i
            groups.append(idx)
        return pairs, seats, groups

    def mixed_idx(self, labels: list, g: int, part: int) -> np.ndarray:
        """``g`` tables of n distinct policies of ``labels`` (each seat its own team)."""
        rng = np.random.default_rng([self.cfg.seeds[0], self.cfg.num_players, 4, part])
        return rng.random((g, len(labels))).argsort(axis=1)[:, :self.cfg.num_players].astype(np.int32)

    def pool_player(self, labels: list) -> TablePlayer:
        """One `TablePlayer` for the cross-play and the mixed tables of ``labels`` (one
        compilation): capacities cover the seat shares of both."""
        key = ("pool", tuple(labels))
        if key not in self._players:
            cfg = self.cfg
            env = self.env(cfg.num_players)
            pols = build_policies(env, cfg, labels)
            slots = slots_per_device(cfg.batch)
            caps = []
            if cfg.cross_play_games:
                _, _, groups = self.cross_groups(labels, min(CROSS_SLICE, cfg.cross_play_games), 0)
                caps.append(TablePlayer.capacities_of(np.concatenate(groups), len(labels), slots))
            if cfg.mixed_games and len(labels) >= cfg.num_players:
                caps.append(TablePlayer.capacities_of(self.mixed_idx(labels, min(MIXED_SLICE, cfg.mixed_games), 0),
                                                      len(labels), slots))
            P = len(labels)
            most = max(P * P * min(CROSS_SLICE, cfg.cross_play_games), min(MIXED_SLICE, cfg.mixed_games))
            self._players[key] = TablePlayer(env, [pols[x] for x in labels], None, batch=cfg.batch,
                                             capacity=tuple(np.max(caps, axis=0)), queue=queue_size(most, cfg.batch))
        return self._players[key]

    def cross_cells(self) -> dict:
        """(tested, opponent) -> pooled `stats.game_sums` over the slices."""
        cfg = self.cfg
        n = cfg.num_players
        labels = self.labels_for(n, cfg.cross_labels)
        if cfg.cross_play_games == 0 or not labels:
            return {}
        P = len(labels)
        pairs = [(i, j) for i in range(P) for j in range(P)]
        pooled: dict = {}
        player = None
        seed = cfg.seeds[0]
        for part, start in enumerate(range(0, cfg.cross_play_games, CROSS_SLICE)):
            g = min(CROSS_SLICE, cfg.cross_play_games - start)

            def compute(start=start, g=g):
                nonlocal player
                _, seats, groups = self.cross_groups(labels, g, start)
                if player is None:
                    player = self.pool_player(labels)
                order = interleave(groups)
                idx = np.stack([groups[a][r] for a, r in order])
                keys = np.asarray(table_keys(seed, 200 + part, g))
                task = self.task(f"cross-play slice {part + 1}", len(order))
                stats = player.play(idx, keys[order[:, 1]], self.progress, task)
                self.finish(task)
                data = {}
                for a, (i, j) in enumerate(pairs):
                    sel = order[:, 0] == a
                    per = seat_rows({k: v[sel] for k, v in stats.items()}, seats[order[sel, 1]])
                    data[f"{labels[i]}|{labels[j]}"] = ST.game_sums(per)
                return data, None

            cell = self.store.cell(f"crossplay/part{part}", compute)
            for key, sums in cell.items():
                pooled[key] = ST.add(pooled.get(key), sums)
        return {"labels": labels, "cells": pooled}

    def mixed_cells(self) -> dict:
        """Seat policies [G, n] and placements [G, n] of the mixed tables."""
        cfg = self.cfg
        n = cfg.num_players
        labels = self.labels_for(n, cfg.cross_labels)
        if cfg.mixed_games == 0 or len(labels) < n:
            return {}
        seed = cfg.seeds[0]
        player = None
        idx_all, place_all = [], []
        for part, start in enumerate(range(0, cfg.mixed_games, MIXED_SLICE)):
            g = min(MIXED_SLICE, cfg.mixed_games - start)

            def compute(part=part, g=g):
                nonlocal player
                idx = self.mixed_idx(labels, g, part)  # n distinct policies per table
                if player is None:
                    player = self.pool_player(labels)
                keys = np.asarray(table_keys(seed, 300 + part, g))
                task = self.task(f"mixed tables {part + 1}", g)
                stats = player.play(idx, keys, self.progress, task)
                self.finish(task)
                return {}, {"idx": idx, "placement": stats["placement"].astype(np.int8)}

            cell = self.store.cell(f"mixed/part{part}", compute)
            idx_all.append(np.asarray(cell["idx"]))
            place_all.append(np.asarray(cell["placement"]))
        return {"labels": labels, "idx": np.concatenate(idx_all), "placement": np.concatenate(place_all)}

    def scorers(self) -> dict:
        """label -> `positions.make_row_scorer` of every 4-player policy (compiled once,
        shared by the offline metrics and the scenarios)."""
        if not hasattr(self, "_scorers"):
            env = self.env(self.cfg.num_players)
            labels = self.labels_for(env.num_players, [*self.cfg.policies, *self.cfg.search_policies,
                                                       *self.cfg.advised])
            pols = build_policies(env, self.cfg, labels)
            self._scorers = {x: positions.make_row_scorer(env, pols[x]) for x in labels}
        return self._scorers

    def block_of(self, label: str) -> int:
        return POSITION_ROWS_SEARCH if label in self.cfg.search_policies else positions.ROW_BLOCK

    def position_cells(self) -> dict:
        cfg = self.cfg
        n = cfg.num_players
        if cfg.position_games == 0:
            return {}
        env = self.env(n)
        state = {}

        def compute(cond, seed):
            if not state:
                state["logger"] = positions.make_logger(env)
                state["ev"] = positions.make_ev(env)
            scorers = self.scorers()
            task = self.task(f"positions {cond} seed {seed}", len(scorers) + 1)
            rows = positions.log_positions(state["logger"], env, cond, cfg.position_games, seed)
            sel = positions.select_rows(rows, None, seed)
            ev = positions.blocks(state["ev"], [sel["obs"].astype(np.float32), sel["mask"]])
            if task is not None:
                self.progress.advance(task)
            data = {"rows": int(len(rows["action"])), "overflow": rows["overflow"], "games": rows["games"]}
            for x, scorer in scorers.items():
                if x in cfg.search_policies:  # a seeded subsample: search costs ~100x a bot
                    small = positions.select_rows(sel, POSITION_ROWS_SEARCH, seed)
                    ev_small = positions.blocks(state["ev"], [small["obs"].astype(np.float32), small["mask"]])
                    data[x] = positions.score_policy(env, scorer, small, ev_small, seed, self.block_of(x))
                else:
                    data[x] = positions.score_policy(env, scorer, sel, ev, seed)
                if task is not None:
                    self.progress.advance(task)
            self.finish(task)
            return data, None

        out = {}
        for cond in cfg.conditions:
            for seed in cfg.seeds:
                out[(cond, seed)] = self.store.cell(f"positions/{cond}/s{seed}",
                                                    lambda c=cond, s=seed: compute(c, s))
        return out

    def advisor_cells(self) -> dict:
        cfg = self.cfg
        if cfg.advisor_games == 0:
            return {}
        rec = {}

        def compute(cond, seed):
            if "r" not in rec:
                rec["r"] = AdvisorRecorder(batch=min(cfg.batch, 1000))
            task = self.task(f"advisor claims {cond} seed {seed}", 1)
            out = rec["r"].run(cond, seed, cfg.advisor_games)
            self.finish(task)
            scalars = {k: int(out.pop(k)) for k in ("games", "overflow", "unfinished")}
            return scalars, out

        out = {}
        for cond in cfg.conditions:
            for seed in cfg.seeds:
                out[(cond, seed)] = self.store.cell(f"advisor/{cond}/s{seed}", lambda c=cond, s=seed: compute(c, s))
        return out

    def scenario_cell(self) -> dict:
        cfg = self.cfg
        if not cfg.scenarios:
            return {}

        def compute():
            built = decision_benchmark.build_all()
            obs, mask = decision_benchmark.decision_inputs(built)
            scorers = self.scorers() if cfg.num_players == 4 else {}
            task = self.task("scenarios", len(scorers) + 2)
            data = {"scenarios": [{"name": s.name, "kind": s.kind, "reason": s.reason, "sound": list(s.sound),
                                   "advisor": s.advisor} for s, _ in built], "policies": {}, "advisors": {}}
            for x, scorer in scorers.items():
                probs = positions.policy_probs(scorer, obs, mask, self.block_of(x))
                data["policies"][x] = decision_benchmark.score_policy(None, built, probs)
                if task is not None:
                    self.progress.advance(task)
            for belief in ("exact", "coupvisor"):
                data["advisors"][belief] = decision_benchmark.score_advisor(built, belief)
                if task is not None:
                    self.progress.advance(task)
            self.finish(task)
            return data, None

        return self.store.cell("scenarios", compute)

    def advice_cells(self, search: bool = False) -> dict:
        """condition -> cell ``advice/{condition}``: wins and placements [bases, seeds,
        tables] of ``advised:BASE`` (``on``) and BASE (``off``) on the same tables; with
        ``search``, cell ``advice_search/{condition}`` of ``advised:BASE:search`` (the page's
        default advice) for ``advice_search_bases``."""
        cfg = self.cfg
        bases = list(cfg.advice_search_bases if search else cfg.advice_bases)
        games = cfg.advice_search_games if search else cfg.advice_games
        if not bases or games == 0:
            return {}
        env = self.env(cfg.num_players)
        name, tail = ("advice_search", ":search") if search else ("advice", "")

        def compute(cond):
            task = self.task(f"{name} on/off {cond}", 1)
            r = play_paired(env, [f"advised:{b}{tail}" for b in bases], bases, games, list(cfg.seeds), cond,
                            batch=cfg.batch)
            self.finish(task)
            (wa, wb), (pa, pb) = r["wins"], r["placement"]
            return {}, {"wins_on": wa.astype(np.int8), "wins_off": wb.astype(np.int8),
                        "place_on": pa.astype(np.int8), "place_off": pb.astype(np.int8)}

        return {cond: self.store.cell(f"{name}/{cond}", lambda c=cond: compute(c)) for cond in cfg.conditions}

    def reaction_cells(self) -> dict:
        """condition -> cell ``reactions/{condition}``: label -> role -> counts and rates."""
        cfg = self.cfg
        if not cfg.reaction_policies or cfg.reaction_games == 0:
            return {}
        env = self.env(cfg.num_players)
        labels = [x for x in cfg.reaction_policies if fits_table(cfg.reaction_policies[x], cfg.num_players)]

        def compute(cond):
            task = self.task(f"reaction rates {cond}", 1)
            specs = [cfg.reaction_policies[x] for x in labels]
            rates = reaction_rates(env, list(dict.fromkeys(specs)), cfg.reaction_games, cfg.seeds[0], cond,
                                   chunk=cfg.batch)
            self.finish(task)
            return {x: rates[cfg.reaction_policies[x]] for x in labels}, None

        return {cond: self.store.cell(f"reactions/{cond}", lambda c=cond: compute(c)) for cond in cfg.conditions}

    def probe_cells(self) -> dict:
        """label -> cell ``probes/{label}``: `evals.lib.probes.probe`'s dict."""
        cfg = self.cfg
        if not cfg.exploit_probes or cfg.probe_games == 0:
            return {}
        env = self.env(cfg.num_players)

        def compute(label):
            task = self.task(f"exploit probes {label}", 1)
            e = cfg.exploit_probes[label]
            out = probe(env, e["policy"], e["baseline"], cfg.probe_games, [cfg.seeds[0]], cfg.probe_tune_games)
            self.finish(task)
            return out, None

        return {label: self.store.cell(f"probes/{label}", lambda x=label: compute(x)) for label in cfg.exploit_probes}

    def plan(self) -> dict:
        """stage -> the names of its cells, in the order they run (empty: a stage the
        config turns off); the names each stage's method stores its cells under."""
        cfg, n = self.cfg, self.cfg.num_players
        grid = [(c, s) for c in cfg.conditions for s in cfg.seeds]
        cross = self.labels_for(n, cfg.cross_labels)
        out = {"seat": [f"seat/n{n}/{c}/s{s}" for c, s in grid],
               "search": [f"search/{c}/s{s}" for c, s in grid]
               if cfg.search_games and self.labels_for(n, list(cfg.search_policies)) else [],
               "players": [f"players/n{k}/{c}" for k in cfg.player_counts if k != n for c in cfg.conditions]
               if cfg.player_count_games else [],
               "crossplay": [f"crossplay/part{i}" for i in range(-(-cfg.cross_play_games // CROSS_SLICE))]
               if cross else [],
               "mixed": [f"mixed/part{i}" for i in range(-(-cfg.mixed_games // MIXED_SLICE))] if len(cross) >= n else [],
               "positions": [f"positions/{c}/s{s}" for c, s in grid] if cfg.position_games else [],
               "advisor": [f"advisor/{c}/s{s}" for c, s in grid] if cfg.advisor_games else [],
               "advice": [f"advice/{c}" for c in cfg.conditions] if cfg.advice_bases and cfg.advice_games else [],
               "advice_search": [f"advice_search/{c}" for c in cfg.conditions]
               if cfg.advice_search_bases and cfg.advice_search_games else [],
               "reactions": [f"reactions/{c}" for c in cfg.conditions]
               if cfg.reaction_policies and cfg.reaction_games else [],
               "probes": [f"probes/{x}" for x in cfg.exploit_probes] if cfg.probe_games else [],
               "scenarios": ["scenarios"] if cfg.scenarios else []}
        return out

    def left_out(self) -> list:
        """The stages `run` would leave out: outside the store's ``only`` and not all stored."""
        only = self.store.only
        if only is None:
            return []
        return [stage for stage, names in self.plan().items()
                if stage not in only and not all(self.store.stored(x) for x in names)]

    def run(self) -> dict:
        """Every stage's cells (`STAGES`' keys); a stage outside the store's ``only`` whose
        cells are not all stored is left out (empty) with a line saying so."""
        assert all(c in CONDITIONS for c in self.cfg.conditions)
        methods = {"seat": self.seat_cells, "search": self.search_cells, "players": self.player_cells,
                   "crossplay": self.cross_cells, "mixed": self.mixed_cells, "positions": self.position_cells,
                   "advisor": self.advisor_cells, "advice": self.advice_cells,
                   "advice_search": lambda: self.advice_cells(search=True), "reactions": self.reaction_cells,
                   "probes": self.probe_cells, "scenarios": self.scenario_cell}
        only = self.store.only
        out = {}
        for stage, names in self.plan().items():
            key = STAGES[stage]
            stored = sum(self.store.stored(x) for x in names) if only is None or stage not in only else 0
            if not names:
                out[key] = {}
                continue
            if only is not None and stage not in only and stored < len(names):
                self.log.line(f"{stage}: left out ({stored} of {len(names)} cells stored; --only {stage} plays it)")
                out[key] = {}
                continue
            t0 = time.perf_counter()
            with self.log.stage(stage, len(names), stored):
                try:
                    out[key] = methods[stage]()
                except CellMissing:  # a cell stored when counted, unreadable when loaded
                    self.log.line(f"{stage}: left out (a stored cell could not be read; --only {stage} plays it)")
                    out[key] = {}
            self.stage_seconds[stage] = time.perf_counter() - t0
        return out
