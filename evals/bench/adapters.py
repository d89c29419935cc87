"""Throughput of the bot arena and of the PettingZoo / Gymnasium adapters, side by side.

Run ``python -m evals.bench_adapters`` (``--quick`` for a short run, ``--out FILE.json``
to keep the figures).  In one run it measures:

(a) **the arena**: ``--arena-matches`` 2-player matches between two copies of the
    plain-Python example bot (``examples/bots/simple_bot.py``, one process per seat per
    match, ``--concurrency`` matches at once), moves per second over the whole
    tournament (process starts, handshakes and saving included); and the same
    tournament between two in-process policies (``random``), which isolates what the
    bot processes cost.
(b) **one game at a time, one decision per Python call**, uniform random legal actions
    drawn on the host from the mask: the raw engine (``jax.jit(env.step)`` on one
    game, reading the mask, the seat to move and the end flag back each step), the
    PettingZoo AEC adapter (``agent_iter`` / ``last`` / ``step``) and the Gymnasium
    single-seat wrapper (``reset`` / ``step``, the three other seats played by ``random``
    inside its compiled loop).  Decisions per second count every seat's decisions
    (the Gymnasium figure also gives its agent steps); ratios are against the raw
    engine.  The three are timed in alternating rounds and the best round of each is
    kept, so they share the machine's load.
(c) **Gymnasium, batched**: ``coupjax.gymnasium.vector_env(num_envs)`` (every game in
    one compiled call) against ``gymnasium.vector.SyncVectorEnv`` of ``num_envs`` single
    envs (one compiled call per game), the same seat and opponents (``random``), random
    legal actions drawn on the host from ``info["action_mask"]``; agent steps per second
    summed over the games, timed in alternating rounds as in (b), with the ratio.

Batched throughput (thousands of games per call) is `evals.bench_engine`'s.
"""
from __future__ import annotations

import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

from coupjax import console
from coupjax.args import Parser, output_file, positive_int
from coupjax.env import Env

ROOT = Path(__file__).resolve().parents[2]
PYTHON_BOT = ROOT / "examples" / "bots" / "simple_bot.py"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ (a) the arena
def bench_arena(entrants, players: int, matches: int, concurrency: int, seed: int) -> dict:
    from coupjax.botarena import Arena

    with tempfile.TemporaryDirectory() as tmp:
        arena = Arena(entrants, players, move_timeout=30, save_dir=Path(tmp) / "a", seed=seed)
        arena.warm_up()
        report = arena.play(matches, concurrency)
        arena.close()
    fig = report["figures"]
    forfeits = len(report["forfeits"])
    if forfeits:
        raise RuntimeError(f"the benchmark's bots forfeited {forfeits} decisions: {report['forfeits'][:3]}")
    return {"matches": matches, "players": players, "concurrency": concurrency, "moves": fig["moves"],
            "wall_seconds": fig["wall_seconds"], "moves_per_s": fig["moves_per_s"],
            "matches_per_s": fig["matches_per_s"]}


# ------------------------------------------------------------------ (b) one game at a time
def raw_engine_run(num_players: int, decisions: int, seed: int):
    """A closure playing ``decisions`` random decisions on the jitted single-game engine."""
    env = Env(num_players)

    @jax.jit
    def step(state, action, key, t):
        s = env.step(state, action, jax.random.fold_in(key, t + 1))
        return s, (s.legal_action_mask, s.current_player, s.terminated)

    @jax.jit
    def start(key):
        s = env.init(jax.random.fold_in(key, 0))
        return s, (s.legal_action_mask, s.current_player, s.terminated)

    def run():
        rng = np.random.default_rng(seed)
        done_steps, game = 0, 0
        while done_steps < decisions:
            key = jax.random.PRNGKey(game)
            state, facts = start(key)
            mask, _, over = jax.device_get(facts)
            t = 0
            while not over and done_steps < decisions:
                a = rng.choice(np.flatnonzero(mask))
                state, facts = step(state, np.int32(a), key, np.int32(t))
                mask, _, over = jax.device_get(facts)
                t, done_steps = t + 1, done_steps + 1
            game += 1
        return {"decisions": done_steps}

    return run


def pettingzoo_run(num_players: int, decisions: int, seed: int):
    from coupjax.pettingzoo import env as make_env

    env = make_env(num_players)

    def run():
        rng = np.random.default_rng(seed)
        done_steps, game = 0, 0
        while done_steps < decisions:
            env.reset(seed=game)
            for _ in env.agent_iter():
                obs, _, terminated, truncated, _ = env.last()
                if terminated or truncated:
                    env.step(None)
                    continue
                env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
                done_steps += 1
                if done_steps >= decisions:
                    break
            game += 1
        return {"decisions": done_steps}

    return run


def gymnasium_run(num_players: int, decisions: int, seed: int):
    from coupjax.gymnasium import env as make_env

    env = make_env(num_players, seat=0, opponents="random")

    def run():
        rng = np.random.default_rng(seed)
        agent_steps, all_decisions, game = 0, 0, 0
        while all_decisions < decisions:
            _, info = env.reset(seed=game)
            terminated = False
            while not terminated:
                a = int(rng.choice(np.flatnonzero(info["action_mask"])))
                _, _, terminated, _, info = env.step(a)
                agent_steps += 1
            all_decisions += len(env.actions)
            game += 1
        return {"decisions": all_decisions, "agent_steps": agent_steps}

    return run


def vector_run(num_envs: int, num_players: int, steps: int, seed: int, batched: bool):
    """A closure taking ``steps`` batched steps (``num_envs`` agent steps each) of the
    batched Gymnasium env or of ``SyncVectorEnv`` of the single env."""
    import gymnasium as gym

    from coupjax.gymnasium import env as make_env, vector_env

    kw = dict(num_players=num_players, seat=0, opponents="random")
    env = vector_env(num_envs, **kw) if batched else gym.vector.SyncVectorEnv(
        [lambda: make_env(**kw) for _ in range(num_envs)])

    def run():
        rng = np.random.default_rng(seed)
        _, info = env.reset(seed=seed)
        for _ in range(steps):
            mask = info["action_mask"].astype(bool)
            actions = np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)
            _, _, _, _, info = env.step(actions)
        return {"agent_steps": steps * num_envs}

    return run


def side_by_side(runs: dict, rounds: int, baseline: str = "raw_engine", count: str = "decisions") -> dict:
    """Each closure run once to compile, then ``rounds`` alternating timed rounds; the best
    round's rates per name, with its ratio to ``baseline``'s (``count`` per second)."""
    for fn in runs.values():
        fn()
    best = {name: None for name in runs}
    for r in range(rounds):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            counts = fn()
            dt = time.perf_counter() - t0
            rates = {f"{k}_per_s": v / dt for k, v in counts.items()}
            if best[name] is None or rates[f"{count}_per_s"] > best[name][f"{count}_per_s"]:
                best[name] = {**counts, "seconds": dt, **rates}
            log(f"  round {r + 1}: {name}: {rates[f'{count}_per_s']:,.0f} {count.replace('_', ' ')}/s")
    base = best[baseline][f"{count}_per_s"]
    for row in best.values():
        row[f"ratio_to_{baseline}"] = row[f"{count}_per_s"] / base
    return best


def render(figures: dict):
    from rich.table import Table

    tables = []
    if figures.get("arena"):
        t = Table(title="arena: 2-player tournaments (processes, handshakes, saving included)")
        for col in ("entrants", "players", "matches", "at once", "moves", "seconds", "moves/s", "matches/s"):
            t.add_column(col, justify="left" if col == "entrants" else "right")
        for name, row in figures["arena"].items():
            t.add_row(name, str(row["players"]), str(row["matches"]), str(row["concurrency"]), f"{row['moves']:,}",
                      f"{row['wall_seconds']:.1f}", f"{row['moves_per_s']:,.0f}", f"{row['matches_per_s']:.2f}")
        tables.append(t)
    if "single_game" in figures:
        t = Table(title=f"one game at a time, {figures['players']} players, random legal actions "
                        f"(best of {figures['rounds']} alternating rounds)")
        for col in ("loop", "decisions/s", "agent steps/s", "vs raw"):
            t.add_column(col, justify="left" if col == "loop" else "right")
        for name, row in figures["single_game"].items():
            steps = row.get("agent_steps_per_s")
            t.add_row(name, f"{row['decisions_per_s']:,.0f}", "-" if steps is None else f"{steps:,.0f}",
                      f"{row['ratio_to_raw_engine']:.2f}x")
        tables.append(t)
    if "vector" in figures:
        v = figures["vector"]
        t = Table(title=f"Gymnasium, {v['num_envs']} games at once, {figures['players']} players, opponents random, "
                        f"random legal actions (best of {figures['rounds']} alternating rounds)")
        for col in ("vector env", "agent steps/s", "vs SyncVectorEnv"):
            t.add_column(col, justify="left" if col == "vector env" else "right")
        for name, row in v["loops"].items():
            t.add_row(name, f"{row['agent_steps_per_s']:,.0f}", f"{row['ratio_to_sync_vector_env']:.1f}x")
        tables.append(t)
    return tables


def main(argv=None) -> dict:
    p = Parser(prog="python -m evals.bench_adapters", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer matches and decisions (a smoke run)")
    p.add_argument("--arena-matches", type=positive_int, default=None, help="arena matches per entry (default 60)")
    p.add_argument("--concurrency", type=positive_int, default=8, help="arena matches at once (default 8)")
    p.add_argument("--decisions", type=positive_int, default=None,
                   help="decisions per timed round of each single-game loop (default 3000)")
    p.add_argument("--rounds", type=positive_int, default=3, help="alternating timed rounds (default 3)")
    p.add_argument("--players", type=int, default=4, choices=range(2, 7), metavar="{2..6}",
                   help="players of the single-game loops (default 4)")
    p.add_argument("--num-envs", type=positive_int, default=None,
                   help="games of the batched Gymnasium comparison (default 64; --quick 8)")
    p.add_argument("--vector-steps", type=positive_int, default=None,
                   help="batched steps per timed round of that comparison (default 100; --quick 20)")
    p.add_argument("--only-vector", action="store_true", help="only (c), the batched Gymnasium comparison")
    p.add_argument("--seed", type=int, default=7, help="seed of the arena's deals and the random actions")
    p.add_argument("--out", type=output_file, default=None, help="also write the figures as JSON here")
    args = p.parse_args(argv)
    matches = args.arena_matches or (12 if args.quick else 60)
    decisions = args.decisions or (600 if args.quick else 3000)

    from coupjax.botarena import parse_bot, parse_policy

    bot = f"{sys.executable} {PYTHON_BOT}"
    figures = {"players": args.players, "rounds": args.rounds, "arena": {},
               "machine": {"platform": platform.platform(), "jax": jax.__version__,
                           "devices": [str(d) for d in jax.devices()]}}
    if not args.only_vector:
        log(f"(a) arena: {matches} 2-player matches, two Python bots")
        figures["arena"]["2 Python bots"] = bench_arena([parse_bot(f"py_a={bot}"), parse_bot(f"py_b={bot}")], 2,
                                                          matches, args.concurrency, args.seed)
        log(f"(a) arena: {matches} 2-player matches, two in-process policies")
        figures["arena"]["2 policies"] = bench_arena(
            [parse_policy("a=random"), parse_policy("b=random")], 2, matches, args.concurrency, args.seed)
        log(f"(b) one game at a time: {decisions} decisions per round, {args.rounds} rounds")
        runs = {"raw_engine": raw_engine_run(args.players, decisions, args.seed),
                "pettingzoo": pettingzoo_run(args.players, decisions, args.seed),
                "gymnasium": gymnasium_run(args.players, decisions, args.seed)}
        figures["single_game"] = side_by_side(runs, args.rounds)
    num_envs = args.num_envs or (8 if args.quick else 64)
    vsteps = args.vector_steps or (20 if args.quick else 100)
    log(f"(c) Gymnasium, batched: {num_envs} games, {vsteps} steps per round, {args.rounds} rounds")
    runs = {"sync_vector_env": vector_run(num_envs, args.players, vsteps, args.seed, batched=False),
            "vector_env": vector_run(num_envs, args.players, vsteps, args.seed, batched=True)}
    figures["vector"] = {"num_envs": num_envs, "steps": vsteps,
                         "loops": side_by_side(runs, args.rounds, "sync_vector_env", "agent_steps")}
    terminal = console.console()
    for t in render(figures):
        terminal.print(t)
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    main()
