"""Command line: ``python -m coupjax`` (or ``coupjax``) runs the main job on CPU defaults."""
from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table


def _simulate(args) -> None:
    from coupjax.simulate import simulate

    console = Console()
    with console.status(f"simulating {args.games} random {args.players}-player matches (compiling first)..."):
        figures = simulate(args.players, args.games, args.seed)
    table = Table(title="coupjax batched simulation (uniform random legal play)")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for k, v in figures.items():
        table.add_row(k, json.dumps(v))
    console.print(table)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(figures, f, indent=2)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="coupjax", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    sim = sub.add_parser("simulate", help="batched random self-play with its figures (the default job)")
    for p in (parser, sim):
        p.add_argument("--players", type=int, default=4)
        p.add_argument("--games", type=int, default=4096)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--out", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    _simulate(args)


if __name__ == "__main__":
    main()
