"""Command line: ``python -m coupjax`` (or ``coupjax``) runs the main job on CPU defaults.

``python -m coupjax [train]``: a short training run on the embedded default config
(`training.config.QUICKSTART`) into a new run directory (default
``runs/quickstart-<date>-<time>``, so the job can be run again and again), then its
evaluation: the seat table (`coupjax.seat_tables.play_tables`) of the trained policy and of
every policy of the evaluation pool over the same seeded tables, printed and written
to ``RUN_DIR/seat_table.json``.

``python -m coupjax simulate``: batched uniform-random self-play with its figures.

``python -m coupjax arena --bot NAME=COMMAND ... --policy SPEC ...``: matches between
programs speaking the bot protocol (docs/bots.md) and our policies
(`coupjax.botarena`), results to ``--out`` and each match beside it.

``python -m coupjax replay FILE.jsonl [--seat N] [--json]``: every step of a saved game
(a full match or a seat record, `coupjax.tracker`) as one seat saw it, with the
beliefs and the advice at that seat's decisions; a bad line is reported with its line
number after the valid steps before it, with exit status 1.

``python -m coupjax policies``: every registered policy, one per line with its one-line
doc: the names ``--policy``, the page's practice and the adapters accept.

``python -m coupjax cache info|clear``: where the persistent compilation cache is and how
big (`coupjax.compile_cache`; every command uses it), or empty it.

``python -m coupjax serve [--host H] [--port P] [--games-dir DIR]``: the player's page
(`coupjax.web`): a game at a real table entered by taps with advice, replay of any
saved game, practice against our policies (registered ones, and the exports under
``--policies-dir DIR``).  On an address other than 127.0.0.1 it prints a session token
that the page asks for (docs/security.md).

Options mean the same before or after the subcommand.  Every mistake (a missing
config, an unknown key, a count that is not positive, a run directory that already
holds a run, a tuning seed) is reported as one line with exit status 2 before any
work starts.  This is the only module of the package that imports ``training`` and
``evals``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from rich.table import Table

from coupjax import console
from coupjax.args import Parser, fail, positive_int, rate, report_seed, require_extra, seconds
from coupjax.seeds import REPORT_SEED

PROG = "coupjax"


def _simulate(args) -> None:
    from coupjax.simulate import simulate

    terminal = console.console()
    with terminal.status(f"simulating {args.games:,} random {args.players}-player matches (compiling first)..."):
        figures = simulate(args.players, args.games, args.seed)
    table = Table(title="coupjax batched simulation (uniform random legal play)")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for k, v in figures.items():
        table.add_row(k, json.dumps(v))
    terminal.print(table)
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2))


def fresh_run_dir(root="runs") -> Path:
    """A new run directory for the main job: ``runs/quickstart-<date>-<time>``, with a
    suffix if that one is taken (two runs in the same second)."""
    base = Path(root) / time.strftime("quickstart-%Y%m%d-%H%M%S")
    path, k = base, 1
    while path.exists():
        k += 1
        path = base.with_name(f"{base.name}-{k}")
    return path


def _prepare_training(args):
    """Load the config and check the run directory: every mistake before any work."""
    from training.config import QUICKSTART, ConfigError, config_from_dict, config_to_dict, load_config
    from training.runs import RunDirError, check_run_dir

    try:
        cfg = load_config(args.config, args.set) if args.config else config_from_dict(QUICKSTART, args.set)
        if getattr(cfg, "algo", "") == "bc":
            raise ConfigError("the main job trains a DQN or self-play config; run behaviour cloning with "
                              "python -m training.train")
        run_dir = Path(args.run_dir) if args.run_dir else fresh_run_dir()
        check_run_dir(run_dir, config_to_dict(cfg), args.resume)
    except (ConfigError, RunDirError) as err:
        fail(PROG, err)
    return cfg, run_dir


def _train_and_evaluate(args) -> None:
    cfg, run_dir = _prepare_training(args)
    os.environ.setdefault("WANDB_MODE", "offline")
    from coupjax.devices import use_host_cores

    use_host_cores(args.host_devices)  # before JAX starts: the training step shards its games over them
    from coupjax.seat_tables import play_tables
    from coupjax.env import Env
    from coupjax.policies.pools import OPPONENTS
    from evals.seat_table import render_table
    from training.train import run_training

    terminal = console.console()
    terminal.print(f"[bold]training[/bold] {args.config or 'the embedded quickstart config'} ({cfg.algo}) into "
                  f"{run_dir} ({cfg.num_chunks} chunks x {cfg.updates_per_chunk} updates, {cfg.num_envs} games in "
                  f"parallel)")
    summary = run_training(cfg, run_dir, resume=args.resume, use_wandb=not args.no_wandb)
    terminal.print(f"trained in {seconds(summary['wall_seconds'])} (compile {seconds(summary['compile_seconds'])}), "
                  f"{summary['env_steps']:,} env steps at {rate(summary['env_steps_per_s'], 'env steps')}")

    specs = [str(run_dir), *OPPONENTS]
    terminal.print(f"[bold]evaluating[/bold] {args.games:,} seeded {cfg.num_players}-player tables per policy "
                  f"(the other seats drawn from {', '.join(OPPONENTS)}), seed {args.seed}")
    t0 = time.time()
    with console.progress(to=console.console(stderr=True), transient=True) as progress:
        rows = play_tables(Env(cfg.num_players), specs, args.games, args.seed, progress=progress)
    terminal.print(render_table(rows, f"seat table: {args.games:,} tables per policy, seed {args.seed} "
                                     f"({seconds(time.time() - t0)})", labels={str(run_dir): "trained"}))
    keys = ("wall_seconds", "compile_seconds", "train_seconds", "env_steps", "env_steps_per_s")
    out = run_dir / "seat_table.json"
    out.write_text(json.dumps({"training": {k: summary[k] for k in keys if k in summary}, "seat_table": rows,
                               "seed": args.seed}, indent=2))
    terminal.print(f"written: {out}")


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {value}")
    return value


def _prepare_arena(args):
    """The entrants, the arena (policies resolved) and its files: every mistake before any match."""
    from coupjax.botarena import Arena, ArenaError, parse_bot, parse_policy

    out = Path(args.out)
    save_dir = out.with_suffix("") if out.suffix else out.with_name(out.name + "-matches")
    try:
        entrants = [parse_bot(b) for b in args.bot] + [parse_policy(p) for p in args.policy]
        if (save_dir / "matches").is_dir() and any((save_dir / "matches").iterdir()):
            raise ArenaError(f"{save_dir / 'matches'} already holds matches; choose another --out")
        return Arena(entrants, args.players, move_timeout=args.move_timeout, save_dir=save_dir, seed=args.seed)
    except ArenaError as err:
        fail(PROG, err)


def _arena(args) -> None:
    from coupjax.botarena import results_table

    arena = _prepare_arena(args)
    terminal = console.console()
    with terminal.status("compiling the engine and the policies..."):
        arena.warm_up()
    with console.progress(to=console.console(stderr=True), transient=True) as progress:
        task = progress.add_task(f"{args.matches} matches", total=args.matches)
        report = arena.play(args.matches, args.concurrency, on_match=lambda _: progress.advance(task))
    arena.close()
    terminal.print(results_table(report))
    fig = report["figures"]
    terminal.print(f"{fig['moves']:,} moves in {seconds(fig['wall_seconds'])} ({rate(fig['moves_per_s'], 'moves')}); "
                  f"{len(report['forfeits'])} forfeits, each with its reason in {args.out} and "
                  f"{arena.save_dir / 'arena.log'}; matches in {arena.save_dir / 'matches'}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))


def _replay(args) -> None:
    from coupjax.tracker.replay import frame, load_game, render

    if not Path(args.file).exists():
        fail(PROG, f"{args.file}: no such file")
    game = load_game(args.file)  # never raises on a bad file: the error comes after the good steps
    seat = args.seat if args.seat is not None else (game.seat or 0)
    if game.num_players and not 0 <= seat < game.num_players:
        fail(PROG, f"argument --seat: seat {seat} is not at this {game.num_players}-player table")
    if game.seat is not None and seat != game.seat:
        fail(PROG, f"argument --seat: {args.file} is a seat record of seat {game.seat}: it shows only that seat")
    terminal = console.console()
    for step in range(len(game.states)):
        fr = frame(game, step, seat, use_search=not args.no_search)
        if args.json:
            print(json.dumps(fr), flush=True)
        else:
            render(fr, terminal)
    if game.error is not None:
        print(f"{PROG}: error: {game.error}", file=sys.stderr)
        raise SystemExit(1)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number (1-65535), got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number (1-65535), got {value}")
    return value


def _serve(args) -> None:
    require_extra(PROG, "coupjax serve", "the page's extra", "web", "fastapi", "uvicorn")
    from coupjax.web.server import serve
    from coupjax.web.store import default_games_dir

    games_dir = Path(args.games_dir) if args.games_dir else default_games_dir()
    try:
        games_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        fail(PROG, f"argument --games-dir: {err}")
    if not games_dir.is_dir():
        fail(PROG, f"argument --games-dir: {games_dir} is not a directory")
    policies_dir = None
    if args.policies_dir is not None:
        policies_dir = Path(args.policies_dir).expanduser()
        if not policies_dir.is_dir():
            fail(PROG, f"argument --policies-dir: {policies_dir} is not a directory")
        policies_dir = policies_dir.resolve()
    serve(args.host, args.port, games_dir, search=not args.no_search, warm=not args.no_warm_up,
          policies_dir=policies_dir)


def first_sentence(text: str) -> str:
    """The doc's first sentence, on one line."""
    first = " ".join(text.split()).split(". ", 1)[0]
    return first if first.endswith(".") else first + "."


def _policies(args) -> None:
    from coupjax.policies import describe_policies

    docs = describe_policies()
    width = max(map(len, docs))
    for name, doc in docs.items():
        print(f"{name:<{width}}  {first_sentence(doc)}")
    print("Also: a run or export directory (python -m training.train writes one), and module:function.")


def _cache(args) -> None:
    from coupjax import compile_cache

    try:
        compile_cache.max_bytes()
    except ValueError as err:
        fail(PROG, err)
    if args.action == "clear":
        removed = compile_cache.clear()
        where = removed["path"] or f"nowhere (the cache is off: {compile_cache.ENV_DIR})"
        print(f"removed {removed['entries']} compiled functions ({removed['bytes'] / 2**20:.1f} MiB) from {where}")
        return
    figures = compile_cache.info()
    if not figures["enabled"]:
        print(f"the compilation cache is off ({compile_cache.ENV_DIR}={os.environ.get(compile_cache.ENV_DIR)})")
        return
    print(f"{figures['path']}: {figures['entries']} compiled functions, {figures['bytes'] / 2**20:.1f} MiB "
          f"of at most {figures['max_bytes'] / 2**20:.0f} MiB (set {compile_cache.ENV_DIR} to move it, 'off' to "
          f"turn it off; {compile_cache.ENV_MAX_MB} for the bound)")


def _add_options(p, top: bool) -> None:
    """The options, on the top-level parser (with defaults) and on each subcommand
    (without: a value given after the subcommand overrides one given before it, and an
    absent one leaves it alone), so they mean the same before or after it."""
    d = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)  # noqa: E731
    p.add_argument("--config", default=d(None), help="train: a YAML config instead of the embedded quickstart default")
    p.add_argument("--set", action="append", default=d([]), metavar="KEY=VALUE", help="train: override a config key")
    p.add_argument("--run-dir", default=d(None), help="train: run directory (default: runs/quickstart-<date>-<time>)")
    p.add_argument("--resume", action="store_true", default=d(False), help="train: continue the run in --run-dir")
    p.add_argument("--games", type=positive_int, default=d(None),
                   help="train: evaluation tables per policy (default 1000); simulate: matches (default 4096)")
    p.add_argument("--seed", type=int, default=d(None),
                   help=f"train, arena: evaluation seed (default {REPORT_SEED}; seeds used to tune are refused); "
                        f"simulate: match seed (default 0)")
    p.add_argument("--no-wandb", action="store_true", default=d(False), help="train: no W&B logging")
    p.add_argument("--host-devices", type=positive_int, default=d(None),
                   help="train: on a CPU, XLA devices for the data-parallel step (default: one per core)")
    p.add_argument("--players", type=int, default=d(4), choices=range(2, 7), metavar="{2..6}",
                   help="simulate, arena: players per match")
    p.add_argument("--out", default=d(None), help="simulate: also write the figures as JSON here; arena: the "
                   "results (default arena/results.json; matches and logs go to the same path without .json)")
    p.add_argument("--bot", action="append", default=d([]), metavar="NAME=COMMAND",
                   help="arena: a program speaking docs/bots.md on stdin/stdout")
    p.add_argument("--policy", action="append", default=d([]), metavar="[NAME=]SPEC",
                   help="arena: one of our policies (registered name, run or export directory, module:function)")
    p.add_argument("--matches", type=positive_int, default=d(100), help="arena: matches to play (default 100)")
    p.add_argument("--move-timeout", type=_positive_seconds, default=d(30.0), metavar="SECONDS",
                   help="arena: a bot's time per decision; past it the decision forfeits (default 30)")
    p.add_argument("--concurrency", type=positive_int, default=d(8), help="arena: matches played at once (default 8)")
    p.add_argument("--seat", type=int, default=d(None), help="replay: the seat shown (default: a seat record's own "
                   "seat, else 0)")
    p.add_argument("--json", action="store_true", default=d(False), help="replay: one JSON object per step")
    p.add_argument("--no-search", action="store_true", default=d(False),
                   help="replay, serve: skip the search's advice (it compiles for a minute or so on a CPU)")
    p.add_argument("--host", default=d("127.0.0.1"), help="serve: the address to listen on (default 127.0.0.1; "
                   "0.0.0.0 serves a phone on the local network and asks for a session token)")
    p.add_argument("--port", type=_port, default=d(8000), help="serve: the port (default 8000)")
    p.add_argument("--games-dir", default=d(None), metavar="DIR",
                   help="serve: where games are saved (default ~/.local/share/coupjax/games)")
    p.add_argument("--policies-dir", default=d(None), metavar="DIR",
                   help="serve: practice opponents may also be the exported checkpoints under DIR, by their path "
                        "there (default: registered policies only)")
    p.add_argument("--no-warm-up", action="store_true", default=d(False),
                   help="serve: do not compile for a 4-player table at start")


def parse_args(argv=None) -> argparse.Namespace:
    """The command line, with the defaults of the chosen command filled in."""
    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    _add_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    for name, text in (("train", "short CPU training run plus its evaluation (the default job)"),
                       ("simulate", "batched random self-play with its figures"),
                       ("arena", "matches between bot programs and our policies"),
                       ("replay", "every step of a saved game (a match or a seat record) with beliefs and advice"),
                       ("serve", "the player's page: advice at a real table, replay and practice in a browser"),
                       ("policies", "every registered policy with its one-line doc (the names --policy takes)"),
                       ("cache", "the persistent compilation cache: where it is and how big (info), or empty it")):
        p = sub.add_parser(name, help=text)
        if name == "replay":
            p.add_argument("file", metavar="FILE.jsonl", help="a match saved by Match.save or a seat record")
        if name == "cache":
            p.add_argument("action", choices=("info", "clear"), nargs="?", default="info")
        _add_options(p, top=False)
    args = parser.parse_args(argv)
    args.command = args.command or "train"
    if args.command in ("replay", "serve", "cache", "policies"):
        return args
    if args.command == "simulate":
        args.games = 4096 if args.games is None else args.games
        args.seed = 0 if args.seed is None else args.seed
        return args
    args.games = 1000 if args.games is None else args.games
    args.out = args.out or ("arena/results.json" if args.command == "arena" else None)
    try:
        args.seed = report_seed(str(REPORT_SEED if args.seed is None else args.seed))
    except argparse.ArgumentTypeError as err:
        fail(PROG, f"argument --seed: {err}")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.command == "simulate":
        _simulate(args)
    elif args.command == "arena":
        _arena(args)
    elif args.command == "replay":
        _replay(args)
    elif args.command == "serve":
        _serve(args)
    elif args.command == "cache":
        _cache(args)
    elif args.command == "policies":
        _policies(args)
    else:
        _train_and_evaluate(args)


if __name__ == "__main__":
    main()
