"""The evaluation suite and its report: every policy and advisor on the same games.

    python -m evals.report --config configs/eval.yaml --out DIR [--resume] [--only STAGE[,STAGE]] [--no-wandb] [--quiet]
    python -m evals.report --config configs/eval.yaml --final [--runs DIR] [--seeds S ...] [--results FILE]

Reads the design matrix (`evals.report.config`; a wrong key or value, or a tuning seed,
stops it with a one-line error and exit status 2), plays every cell of it in
`coupjax.seat_tables`'s loop (`evals.report.suite`, each cell stored in ``DIR/cells`` as it
finishes; ``--resume`` reuses stored cells of the same config), then writes
``DIR/report.md`` (the headline tables and the figures), ``DIR/report.json`` (every
figure with its raw counts; `evals.report.results`), ``DIR/figures/*.png``,
``DIR/config.yaml`` and ``DIR/meta.json`` (versions, git commit, the seconds of every
stage and cell), and logs a W&B run (offline unless ``WANDB_MODE`` says otherwise) with
the figures and the folder as an artifact.

While it runs it prints one plain line per stage and per cell, with the time left, and
a line at least every 20 seconds (`evals.report.progress`; Rich's bars in a terminal).
``--only seat,advice`` plays those stages afresh and takes every other stage's cells
from ``DIR/cells`` (a stage not all stored there is left out of the report): one stage
re-run while working on it.  The stages, in the order they run: `STAGES`; with
``--final`` its trained runs always play after them (``--only final``: no matrix cell
is played, every one is taken from the folder).

``--final`` (`evals.report.final`) plays the matrix on held-out seeds instead of the
config's (``--seeds``, default the first as many of `coupjax.seeds.HELD_OUT_SEEDS`; each
look recorded in the ledger), then the runs ``python -m evals.experiments`` trained into
``--runs`` (default ``runs/experiments``), and writes ``--results`` (default
``docs/results.md``) from report.json, naming the criterion of ``COUPJAX_CRITERION``
(required) in its ``Criterion: <commit>`` line; ``--out`` defaults to ``RUNS/report``.
"""
from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import time
from pathlib import Path

import yaml

from coupjax.args import Parser, fail, positive_int, require_extra
from evals.report.config import EvalConfigError, load_config

PROG = "python -m evals.report"
STAGES = ("seat", "search", "players", "crossplay", "mixed", "positions", "advisor", "advice", "advice_search",
          "reactions", "probes", "scenarios")  # evals.report.suite.STAGES' names (a test keeps the two equal)


def parse_only(text: str | None, final: bool) -> set | None:
    """``--only``'s stages (None: every stage); an unknown name is one line of error."""
    if text is None:
        return None
    known = (*STAGES, "final") if final else STAGES
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        fail(PROG, f"--only needs stage names, one or more of {', '.join(known)}")
    for x in names:
        if x not in known:
            extra = " (with --final)" if x == "final" else ""
            fail(PROG, f"--only: no stage {x!r}{extra}; the stages: {', '.join(known)}")
    return set(names)


def git_commit() -> str:
    """The code the report ran (`coupjax.seeds.code_version`: the run record it reads and
    the ledger it appends to do not make it ``+dirty``)."""
    from coupjax.seeds import code_version

    return code_version()


def versions() -> dict:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("jax", "jaxlib", "flax", "numpy", "openskill", "matplotlib", "wandb", "coupjax"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    return out


def stage_times(timings: dict, cpu: dict, reused=(), wall: dict | None = None) -> dict:
    """stage -> ``seconds`` (its cells' seconds, as recorded when each was computed),
    ``cpu_seconds`` (cells computed in this run), ``cells``, ``cells_reused`` and, for a
    stage played in this run, ``wall_seconds`` (the stage from start to end)."""
    out = {}
    for name, sec in timings.items():
        stage = name.split("/")[0]
        d = out.setdefault(stage, {"seconds": 0.0, "cpu_seconds": 0.0, "cells": 0, "cells_reused": 0})
        d["seconds"] += sec
        d["cpu_seconds"] += cpu.get(name, 0.0)
        d["cells"] += 1
        d["cells_reused"] += name in reused
    for stage, sec in (wall or {}).items():
        if stage in out:
            out[stage]["wall_seconds"] = sec
    return out


def cell_times(timings: dict, cpu: dict, reused=()) -> dict:
    """cell -> ``seconds`` (when computed), ``cpu_seconds`` (this run) and ``reused``."""
    return {name: {"seconds": sec, "cpu_seconds": cpu.get(name), "reused": name in reused}
            for name, sec in timings.items()}


def log_wandb(out: Path, rep: dict, figures: list, meta: dict, cfg_dict: dict) -> str | None:
    os.environ.setdefault("WANDB_MODE", "offline")
    os.environ.setdefault("WANDB_SILENT", "true")
    import wandb

    run = wandb.init(project="coupjax", job_type="eval-report", dir=str(out), config=cfg_dict, name=out.name,
                     reinit="finish_previous")
    log = {f"figures/{f}": wandb.Image(str(out / "figures" / f)) for f in figures}
    for label, conds in rep["policies"].items():
        for cond, r in conds.items():
            log[f"win_rate/{cond}/{label}"] = r["win_rate"]
    for belief, conds in rep["advisor"].items():
        for cond, m in conds.items():
            log[f"advisor/{cond}/{belief}/f1"] = m["f1"]
            log[f"advisor/{cond}/{belief}/ece"] = m["ece"]
    run.log(log)
    run.summary.update({"seconds_total": meta["seconds_total"], "git_commit": meta["git_commit"]})
    art = wandb.Artifact("eval-report", type="report", metadata={"git_commit": meta["git_commit"]})
    for name in ("report.md", "report.json", "config.yaml", "meta.json"):
        art.add_file(str(out / name))
    art.add_dir(str(out / "figures"), name="figures")
    run.log_artifact(art)
    run_dir = run.dir
    run.finish()
    return run_dir


def prepare_final(args) -> dict:
    """--final's checks, before any work: the criterion, the held-out seeds, the runs
    (`evals.report.final`); fills in ``--out`` and ``--results``.  Each mistake is one line."""
    from coupjax.seeds import CRITERION_ENV, HELD_OUT_SEEDS, criterion_commit
    from evals.report.final import FinalReportError, check_boot, read_experiments, units

    criterion = os.environ.get(CRITERION_ENV)
    commit = criterion_commit(criterion)
    if not commit:
        fail(PROG, f"--final needs {CRITERION_ENV} set to the committed criterion file (or its commit) the report "
                   f"answers, got {criterion!r} (docs/experiments/README.md)")
    try:
        raw = yaml.safe_load(Path(args.config).read_text()) if Path(args.config).is_file() else {}
        seeds = raw.get("seeds") if isinstance(raw, dict) else None
        count = len(seeds) if isinstance(seeds, list) and seeds else 5
    except yaml.YAMLError:
        count = 5  # load_config names the error
    seeds = args.seeds or list(HELD_OUT_SEEDS[:count])
    outside = [s for s in seeds if s not in HELD_OUT_SEEDS]
    if outside:
        fail(PROG, f"--final reports on held-out seeds only ({HELD_OUT_SEEDS.start}..{HELD_OUT_SEEDS.stop - 1}), "
                   f"got {outside[0]}")
    if len(set(seeds)) != len(seeds):
        fail(PROG, f"--seeds repeats a seed: {seeds}")
    try:
        experiments = read_experiments(args.runs)
        units(experiments, args.runs)
        check_boot(experiments, args.boot)
    except FinalReportError as err:
        fail(PROG, err)
    if args.out is None:
        args.out = args.runs / "report"
    if args.results is None:
        args.results = Path(__file__).resolve().parents[2] / "docs" / "results.md"
    return {"seeds": seeds, "experiments": experiments, "criterion": {"path": criterion, "commit": commit}}


def main(argv=None) -> int:
    ap = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="configs/eval.yaml", help="the design matrix (YAML)")
    ap.add_argument("--out", type=Path, default=None, help="output folder (required unless --final)")
    ap.add_argument("--resume", action="store_true", help="reuse the cells already stored in --out")
    ap.add_argument("--no-wandb", action="store_true", help="do not log a W&B run")
    ap.add_argument("--only", default=None, metavar="STAGE[,STAGE]",
                    help=f"play these stages afresh, take the others' cells from --out ({', '.join(STAGES)}; "
                         "final with --final)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    ap.add_argument("--host-devices", type=int, default=None,
                    help="XLA CPU devices to split the host into (default: one per core; results do not depend on it)")
    ap.add_argument("--final", action="store_true",
                    help="held-out seeds, the trained runs of --runs, and --results (docs/results.md)")
    ap.add_argument("--runs", type=Path, default=Path("runs/experiments"),
                    help="--final: the folder python -m evals.experiments trained (default runs/experiments)")
    ap.add_argument("--seeds", type=int, nargs="+", default=None,
                    help="--final: held-out table seeds (default: as many as the config has seeds, the first of "
                         "coupjax.seeds.HELD_OUT_SEEDS: 100-104)")
    ap.add_argument("--results", type=Path, default=None, help="--final: the results file (default docs/results.md)")
    ap.add_argument("--boot", type=positive_int, default=2000, help="--final: bootstrap resamples of each ranking")
    args = ap.parse_args(argv)
    if not args.final and (args.seeds or args.results):
        fail(PROG, "--seeds and --results belong to --final (a report on held-out seeds)")
    only = parse_only(args.only, args.final)
    final = prepare_final(args) if args.final else None
    if args.out is None:
        fail(PROG, "--out is required (a folder for the report)")
    require_extra(PROG, "the report", "its extra (figures, intervals, ratings)", "report", "matplotlib", "scipy",
                  "openskill")
    from coupjax.devices import use_host_cores

    use_host_cores(args.host_devices)  # one XLA device per core (before JAX starts; else changes nothing)
    try:
        cfg = load_config(args.config, seeds=final["seeds"] if final else None)
    except EvalConfigError as err:
        fail(PROG, err)
    if args.out.exists() and not args.out.is_dir():
        fail(PROG, f"--out {str(args.out)!r} exists and is not a folder")
    if not args.resume and only is None and (args.out / "cells").is_dir() and any((args.out / "cells").iterdir()):
        fail(PROG, f"--out {str(args.out)!r} already holds cells of a report; pass --resume to continue it, "
                   "--only STAGE to play some stages again, or choose another folder")
    with stage_log(args.quiet) as (log, progress):
        return report(args, cfg, final, only, log, progress)


@contextlib.contextmanager
def stage_log(quiet: bool):
    """(`evals.report.progress.StageLog`, Rich's bars or None): plain lines and a
    heartbeat on stderr in a file; in a terminal the lines above Rich's live bars."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from coupjax import console
    from evals.report.progress import Silent, StageLog

    if quiet:
        yield Silent(), None
        return
    err = console.console(stderr=True)
    if not err.is_terminal:
        with StageLog(err) as log:
            yield log, None
        return
    with console.progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          to=err, transient=True) as progress, StageLog(progress.console, heartbeat=None) as log:
        yield log, progress


def report(args, cfg, final, only, log, progress) -> int:
    """The report of the module doc, after its checks."""
    from evals.report import figures as F
    from evals.report import markdown
    from evals.report import results
    from evals.report.cells import CellStore
    from evals.report.suite import Suite

    t0 = time.perf_counter()
    load0 = os.getloadavg()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    cfg_dict = cfg.to_dict()
    (out / "config.yaml").write_text(yaml.safe_dump(cfg_dict, sort_keys=False))
    store = CellStore(out, cfg_dict, args.resume, only=None if only is None else only - {"final"}, log=log)
    log.line(f"report of {args.config} into {out}" + (f", only {', '.join(sorted(only))}" if only else ""))
    suite = Suite(cfg, store, progress, log)
    if final and suite.left_out():
        fail(PROG, f"--final --only: docs/results.md needs every stage, and {out} holds no cells of "
                   f"{', '.join(suite.left_out())} for these seeds; add them to --only")
    res = suite.run()
    t_play = time.perf_counter() - t0
    with log.stage("results"):
        rep = results.build(cfg, res)
    t_results = time.perf_counter() - t0 - t_play
    with log.stage("figures"):
        figures = F.draw_all(rep, out / "figures", cfg.num_players)
    t_figures = time.perf_counter() - t0 - t_play - t_results
    import jax

    meta = {"config_path": str(args.config), "out": str(out), "git_commit": git_commit(), "versions": versions(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores", "devices": len(jax.devices()),
            "only": sorted(only) if only else None,
            "seconds_results": t_results, "seconds_figures": t_figures, "load_average_start": load0,
            "load_average_end": os.getloadavg(), "seconds_play": t_play,
            "stages": stage_times(store.timings, store.cpu, store.reused, suite.stage_seconds),
            "cells": cell_times(store.timings, store.cpu, store.reused),
            "cells_reused": store.reused, "figures": figures}
    meta["seconds_total"] = time.perf_counter() - t0
    rep["meta"] = meta
    (out / "report.json").write_text(json.dumps(rep, indent=1))
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    if final:
        from evals.report import final as FIN
        from evals.report.progress import Parts

        t1 = time.perf_counter()
        with log.stage("final", total=len(FIN.final_parts(final["experiments"], args.runs))) as stage:
            parts = Parts(stage)
            rep["final"] = FIN.play_final(final["experiments"], args.runs, final["seeds"], cfg.num_players,
                                          n_boot=args.boot, batch=cfg.batch, part=parts)
        meta["seconds_final"] = time.perf_counter() - t1
        meta["final_parts"] = parts.seconds
        meta["seconds_total"] = time.perf_counter() - t0
        rep["meta"] = meta
        (out / "report.json").write_text(json.dumps(rep, indent=1))
        (out / "meta.json").write_text(json.dumps(meta, indent=1))
        from evals.report.figures import draw_final

        args.results.parent.mkdir(parents=True, exist_ok=True)
        fig_dir = args.results.with_name(args.results.stem + "-figures")  # docs/results-figures/
        made = draw_final(rep["final"], fig_dir, cfg.num_players)
        links = {k: f"{fig_dir.name}/{v}" for k, v in made.items()}
        args.results.write_text(FIN.render(rep, cfg, final["criterion"], links))
        print(f"wrote {args.results} (final runs {meta['seconds_final']:.0f} s)")
    (out / "report.md").write_text(markdown.render(rep, cfg, meta))
    if not args.no_wandb:
        with log.stage("wandb"):
            meta["wandb_dir"] = log_wandb(out, rep, figures, meta, cfg_dict)
        meta["seconds_with_wandb"] = time.perf_counter() - t0
        (out / "meta.json").write_text(json.dumps(meta, indent=1))
    stages = ", ".join(f"{k} {v['seconds']:.0f}" for k, v in meta["stages"].items())
    print(f"wrote {out / 'report.md'} and {out / 'report.json'} ({len(figures)} figures) in "
          f"{time.perf_counter() - t0:.0f} s (play {t_play:.0f} s: {stages}; results {t_results:.0f} s, "
          f"figures {t_figures:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
