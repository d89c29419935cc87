"""What every training run shares: W&B logging (offline by default), the progress bar,
and the end-of-run evaluation on the arena's seat table."""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import numpy as np

from coupjax.args import Parser, positive_int
from coupjax.seat_tables import play_tables
from coupjax.policies.pools import OPPONENTS
from coupjax.seeds import REPORT_SEED
from training.config import CONFIG_CLASSES, config_to_dict


# ------------------------------------------------------------------ evaluation
def evaluate_run(env, run_dir, num_games: int, seed: int = REPORT_SEED) -> dict:
    """The seat table (`coupjax.seat_tables.play_tables`) of a run's export, of each training
    seed's export (``RUN/exports/seed_K``, self-play with several seeds) and of every
    policy of the evaluation pool, over the same seeded tables:
    {"trained" | "trained/seed_K" | name: row}."""
    run_dir = Path(run_dir)
    seeds = sorted((run_dir / "exports").glob("seed_*")) if (run_dir / "exports").is_dir() else []
    rows = play_tables(env, [str(run_dir), *map(str, seeds), *OPPONENTS], num_games, seed)
    out = {"trained": rows.pop(str(run_dir))}
    out.update({f"trained/{p.name}": rows.pop(str(p)) for p in seeds})
    return {**out, **rows}


# ------------------------------------------------------------------ W&B
def init_wandb(cfg, run_dir: Path, enabled: bool, resume: bool):
    if not enabled:
        return None
    os.environ.setdefault("WANDB_MODE", cfg.wandb_mode or "offline")
    if cfg.wandb_mode:
        os.environ["WANDB_MODE"] = cfg.wandb_mode
    os.environ.setdefault("WANDB_SILENT", "true")
    import wandb

    id_file = run_dir / "wandb_id.txt"
    run_id = id_file.read_text().strip() if (resume and id_file.is_file()) else uuid.uuid4().hex[:12]
    id_file.write_text(run_id)
    wandb_dir = Path(os.environ.get("WANDB_DIR", run_dir))
    wandb_dir.mkdir(parents=True, exist_ok=True)
    return wandb.init(project=cfg.wandb_project, dir=str(wandb_dir), config=config_to_dict(cfg), id=run_id,
                      resume="allow", name=run_dir.name, reinit="finish_previous")


def log_metrics(wb, metrics: dict, step: int):
    if wb is None:
        return
    import wandb

    out = {}
    for k, v in metrics.items():
        if k == "action_hist":
            counts = np.asarray(v)
            out["actions/hist"] = wandb.Histogram(np_histogram=(counts, np.arange(len(counts) + 1)))
            out.update({f"actions/{i}": int(c) for i, c in enumerate(counts)})
        elif np.ndim(v) == 0:
            out[k] = float(v)
    wb.log(out, step=int(step))


def progress_bar(total: int, done: int, quiet: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from coupjax.console import progress

    prog = progress(TextColumn("[bold]chunks"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TimeRemainingColumn(), TextColumn("{task.fields[info]}"), disable=quiet)
    task = prog.add_task("chunks", total=total, completed=done, info="compiling")
    return prog, task


# ------------------------------------------------------------------ run directories
# keys that may change between a checkpoint and its resumption (they do not shape the state)
RESUME_FREE_KEYS = {"num_chunks", "checkpoint_every", "max_checkpoints", "export_temperature", "export_seed",
                    "eval_games", "wandb_project", "wandb_mode"}
RUN_MARKERS = ("config.json", "checkpoints", "export", "summary.json")


class RunDirError(ValueError):
    """A run directory that cannot be used as asked; the message says why and what to do."""


def differing_keys(saved: dict, cfg_dict: dict, defaults: dict, free=(), dropped: bool = True) -> list[str]:
    """The keys, outside ``free``, whose value in ``cfg_dict`` differs from the saved
    config's; a key the saved config lacks (added to the config since) counts as its value
    in ``defaults``.  ``dropped``: a key only the saved config has (dropped since) differs too."""
    keys = set(saved) | set(cfg_dict) if dropped else set(cfg_dict)
    return sorted(k for k in keys if k not in free and saved.get(k, defaults.get(k)) != cfg_dict.get(k))


def check_run_dir(run_dir, cfg_dict: dict, resume: bool) -> None:
    """Refuse, before anything is computed or written, a run directory that exists and is
    not empty (without ``resume``), or a resumption of a run with another config or no
    checkpoint.  Only `RESUME_FREE_KEYS` may differ on resumption; a key the saved config
    lacks (added to the config after the run started) counts as its default."""
    run_dir = Path(run_dir)
    held = [m for m in RUN_MARKERS if (run_dir / m).exists()]
    if not resume:
        if held:
            raise RunDirError(f"run directory {str(run_dir)!r} already holds a run ({', '.join(held)}); "
                              f"pass --resume to continue it or choose another --run-dir")
        if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
            raise RunDirError(f"run directory {str(run_dir)!r} exists and is not an empty directory; "
                              f"choose a new --run-dir")
        return
    saved_path = run_dir / "config.json"
    if not (run_dir / "checkpoints").is_dir() or not saved_path.is_file():
        raise RunDirError(f"--resume: {str(run_dir)!r} holds no checkpointed run to continue")
    try:
        saved = json.loads(saved_path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise RunDirError(f"--resume: {str(saved_path)!r} is not a readable config ({err})") from None
    cls = CONFIG_CLASSES.get(cfg_dict.get("algo"))
    diff = differing_keys(saved, cfg_dict, {} if cls is None else config_to_dict(cls()), RESUME_FREE_KEYS)
    if diff:
        raise RunDirError(f"--resume: the run in {str(run_dir)!r} was made with another config "
                          f"(keys {', '.join(diff)} differ)")


def run_parser(prog: str, description: str, config_help: str, run_dir_help: str, resume_help: str,
               quiet_help: str = "no progress bars") -> Parser:
    """The flags every training command takes (config, run directory, resume, W&B,
    overrides, quiet, host devices), defined once so that the three commands
    (`training.train`, `training.psro`, `training.exploiter_league`) read alike."""
    ap = Parser(prog=prog, description=description)
    ap.add_argument("--config", required=True, help=config_help)
    ap.add_argument("--run-dir", required=True, help=run_dir_help)
    ap.add_argument("--resume", action="store_true", help=resume_help)
    ap.add_argument("--no-wandb", action="store_true", help="do not log to Weights & Biases")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key")
    ap.add_argument("--quiet", action="store_true", help=quiet_help)
    ap.add_argument("--host-devices", type=positive_int, default=None,
                    help="on a CPU, XLA devices to split it into for the data-parallel step "
                         "(default: one per core; 1: one device; see coupjax.devices)")
    return ap
