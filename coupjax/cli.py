"""Command line: ``python -m coupjax`` (or ``coupjax``) runs the main job on CPU defaults.

``python -m coupjax [train]``: a short DQN run on the embedded default config
(`training.config.QUICKSTART`: win-aligned reward, opponents drawn from the scripted
pool) into ``--run-dir`` (default ``runs/quickstart``), then its evaluation: the seat
table (`evals.seat_table`) of the trained policy and of every scripted bot over the same
seeded tables, printed and written to ``RUN_DIR/seat_table.json``.

``python -m coupjax simulate``: batched uniform-random self-play with its figures.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from rich.console import Console
from rich.table import Table


def _print_table(console: Console, title: str, rows: dict) -> None:
    table = Table(title=title)
    table.add_column("figure")
    table.add_column("value", justify="right")
    for k, v in rows.items():
        table.add_row(k, json.dumps(v))
    console.print(table)


def _simulate(args) -> None:
    from coupjax.simulate import simulate

    console = Console()
    with console.status(f"simulating {args.games} random {args.players}-player matches (compiling first)..."):
        figures = simulate(args.players, args.games, args.seed)
    _print_table(console, "coupjax batched simulation (uniform random legal play)", figures)
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2))


def _train_and_evaluate(args) -> None:
    os.environ.setdefault("WANDB_MODE", "offline")
    from coupjax.devices import use_host_cores

    use_host_cores(args.host_devices)  # before JAX starts: the DQN step shards its games over them
    from rich.progress import Progress

    from coupjax.arena import play_tables
    from coupjax.env import Env
    from coupjax.policies.pools import OPPONENTS
    from evals.seat_table import render_table
    from training.config import QUICKSTART, config_from_dict, load_config
    from training.train import run_dqn

    console = Console()
    cfg = load_config(args.config, args.set) if args.config else config_from_dict(QUICKSTART, args.set)
    run_dir = Path(args.run_dir)
    console.print(f"[bold]training[/bold] {args.config or 'the embedded quickstart config'} into {run_dir} "
                  f"({cfg.num_chunks} chunks x {cfg.updates_per_chunk} updates, {cfg.num_envs} games in parallel)")
    summary = run_dqn(cfg, run_dir, use_wandb=not args.no_wandb)
    brief = {k: summary[k] for k in ("wall_seconds", "compile_seconds", "env_steps", "env_steps_per_s") if k in summary}
    _print_table(console, "training", brief)

    specs = [str(run_dir), *OPPONENTS]
    console.print(f"[bold]evaluating[/bold] {args.games} seeded 4-player tables per policy "
                  "(3 opponents drawn from the six bots)")
    with Progress(console=console, transient=True) as progress:
        rows = play_tables(Env(cfg.num_players), specs, args.games, args.seed, progress=progress)
    console.print(render_table(rows, f"seat table: {args.games} games per policy, seed {args.seed}",
                               labels={str(run_dir): "trained"}))
    out = run_dir / "seat_table.json"
    out.write_text(json.dumps({"training": brief, "seat_table": rows}, indent=2))
    console.print(f"written: {out}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="coupjax", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    train = sub.add_parser("train", help="short CPU training run plus its evaluation (the default job)")
    sim = sub.add_parser("simulate", help="batched random self-play with its figures")
    for p in (parser, train):
        p.add_argument("--config", help="a YAML config instead of the embedded quickstart default")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key")
        p.add_argument("--run-dir", default="runs/quickstart")
        p.add_argument("--games", type=int, default=1000, help="evaluation games per policy")
        p.add_argument("--seed", type=int, default=0, help="evaluation seed")
        p.add_argument("--no-wandb", action="store_true")
        p.add_argument("--host-devices", type=int, default=None,
                       help="on a CPU, XLA devices for the data-parallel step (default: one per core)")
    sim.add_argument("--players", type=int, default=4)
    sim.add_argument("--games", type=int, default=4096)
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--out", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    if args.command == "simulate":
        _simulate(args)
    else:
        _train_and_evaluate(args)


if __name__ == "__main__":
    main()
