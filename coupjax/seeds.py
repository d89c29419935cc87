"""Honest seeds: every seed's role, and a record of each look at a held-out seed.

A figure is only honest on games that played no part in choosing what it measures.
Seeds have three roles:

* **tuning** (`TUNING_SEEDS`): used to fit constants or choose defaults.  Every
  command that reports figures refuses them (`check_report_seed`); every command that
  tunes runs only on them (`check_tuning_seed`), so a new tuning seed is added here
  before it is used.
* **development** (`DEVELOPMENT_SEEDS`): free to look at while working, so a choice
  may have been made on them; a figure on them is a working figure, never a final claim.
  Seed 7, long the default report seed, is one: choices were made on its results.
* **held-out** (`HELD_OUT_SEEDS`): for final reports.  A look at one is never refused
  but always recorded: `check_report_seed` appends what ran (command, arguments,
  report, commit, seed, UTC time, the criterion it answers) to the ledger committed in the
  repository (`ledger_path`), so anyone can see whether a held-out seed was looked at
  before the claim it supports was fixed (docs/experiments/README.md).

Any other seed is accepted and not recorded.  Seeds of different commands index
different games (seat tables, advisor games, training runs), but a seed used to tune
by any of them is kept out of every report.
"""
from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

TUNING_SEEDS: dict[int, str] = {
    0: "evals.seat_table tables on which the search defaults and the dqn_cpu and selfplay_* configs were chosen; "
       "training seed of the runs the selfplay_* configs were chosen on",
    1000: "evals.advisor_quality --fit: the advisor's claim likelihoods, calibration and value constants",
    1001: "evals.advisor_quality --seat-table: belief_ev's play overrides (PLAY_OVERRIDES); "
          "evals.exploit --tune: the frozen best response once shipped as configs/best_responses/selfplay_seed0 (deleted 2026-12-02); "
          "evals.advice_fit: the advice's challenge constants for games won (coupjax.advice.recommend."
          "ADVICE_OVERRIDES)",
    1002: "evals.exploit --tune: the best responses on which the self-play exploiter's settings, "
          "the frozen best response's weight and selfplay_psro_cpu's PSRO variants were compared",
    1003: "evals.exploit_probe: the tables on which the strongest scripted probe against the policy under test "
          "is chosen (its tuning step)",
}

DEVELOPMENT_SEEDS: dict[int, str] = {
    7: "the reporting commands' default seed (REPORT_SEED), looked at while choosing: the main job's cut "
       "(a DQN cut rejected on its seed-7 win rate, the 6-chunk self-play cut adopted), the league exploiter "
       "(switched on and back off by seed-7 best responses), the frozen best response's weights and the "
       "PSRO variants of selfplay_psro_cpu (judged on seed-7 best responses)",
    8: "best-response seed beside 7 in the PSRO and exploiter comparisons (README figures)",
    9: "best-response seed beside 7 in the PSRO and exploiter comparisons (README figures)",
}

# Final reports run here; a look at any of them is recorded in the ledger.
HELD_OUT_SEEDS = range(100, 200)

# The default seed of the reporting commands: a development seed, so that a casual run
# neither uses a tuning seed nor spends a held-out one.
REPORT_SEED = 7

# The ledger's path can be moved (tests and CI point it at a temporary file); while a
# test or CI runs, the committed ledger is never written.
LEDGER_ENV = "COUPJAX_LEDGER"
# The criterion (docs/experiments/<date>-<name>.md, or its commit) a held-out run answers.
CRITERION_ENV = "COUPJAX_CRITERION"
REPO_ROOT = Path(__file__).resolve().parent.parent
COMMITTED_LEDGER = REPO_ROOT / "docs" / "experiments" / "ledger.jsonl"


class SeedError(ValueError):
    """A seed used for the wrong purpose; the message says which list it is (not) in."""


def seed_role(seed: int) -> str:
    """"tuning", "development", "held-out" or "other"."""
    seed = int(seed)
    if seed in TUNING_SEEDS:
        return "tuning"
    if seed in DEVELOPMENT_SEEDS:
        return "development"
    return "held-out" if seed in HELD_OUT_SEEDS else "other"


def check_report_seed(seed: int, what: str = "this report") -> int:
    """``seed`` if it was never used to tune; SeedError otherwise.  A held-out seed is
    accepted and its use appended to the ledger (`record_held_out_use`)."""
    seed = int(seed)
    if seed in TUNING_SEEDS:
        raise SeedError(f"seed {seed} was used to tune ({TUNING_SEEDS[seed]}); {what} refuses it: "
                        f"report on a seed never used to tune, e.g. {REPORT_SEED} while working "
                        f"or a held-out seed ({HELD_OUT_SEEDS.start}..{HELD_OUT_SEEDS.stop - 1}) for a final report")
    if seed in HELD_OUT_SEEDS:
        record_held_out_use(seed, what)
    return seed


def check_tuning_seed(seed: int, what: str = "tuning") -> int:
    """``seed`` if it is recorded in `TUNING_SEEDS`; SeedError otherwise."""
    seed = int(seed)
    if seed not in TUNING_SEEDS:
        raise SeedError(f"{what} runs only on recorded tuning seeds ({', '.join(map(str, TUNING_SEEDS))}); "
                        f"add seed {seed} to coupjax.seeds.TUNING_SEEDS first, and it will be kept out of every report")
    return seed


# ------------------------------------------------------------------ the ledger
def ledger_path() -> Path | None:
    """Where held-out uses are appended: ``$COUPJAX_LEDGER`` if set (empty: nowhere);
    else the committed ledger, except while a test or CI runs (nowhere then: their
    seeds are no looks at held-out games) or outside a checkout (no ledger to keep)."""
    override = os.environ.get(LEDGER_ENV)
    if override is not None:
        return Path(override) if override else None
    if os.environ.get("PYTEST_CURRENT_TEST") or os.environ.get("CI"):
        return None
    return COMMITTED_LEDGER if COMMITTED_LEDGER.parent.is_dir() else None


def git(*args: str, cwd: Path = REPO_ROOT) -> str | None:
    """``git args`` in ``cwd``, its stdout stripped; None where git or the repository is missing."""
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def criterion_commit(criterion: str | None, cwd: Path = REPO_ROOT) -> str | None:
    """The commit a criterion names: a criterion file's last commit, or a commit itself."""
    if not criterion:
        return None
    if (cwd / criterion).is_file():
        return git("log", "-1", "--format=%H", "--", criterion, cwd=cwd) or None
    return git("rev-parse", "--verify", "--quiet", f"{criterion}^{{commit}}", cwd=cwd)


def running_command() -> str:
    """The program that runs, as typed: ``python -m evals.seat_table`` for a module of
    this repository, else the script's name."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is None or script.name == "-c":
        return "python -c"
    try:
        rel = script.resolve().relative_to(REPO_ROOT).with_suffix("")
    except ValueError:
        return script.name
    parts = rel.parts[:-1] if rel.name == "__main__" else rel.parts
    return f"python -m {'.'.join(parts)}"


# Outputs, not code: the ledger itself and the committed run record that the same
# commands write, so a resumed plan's later items do not read as run from a changed tree.
NOT_CODE = (COMMITTED_LEDGER.relative_to(REPO_ROOT).as_posix(), "runs")


def tree_is_dirty(cwd: Path = REPO_ROOT) -> bool:
    """Whether tracked files other than `NOT_CODE` differ from HEAD."""
    return bool(git("status", "--porcelain", "--untracked-files=no", "--", ".",
                    *(f":!{p}" for p in NOT_CODE), cwd=cwd))


def code_version(cwd: Path = REPO_ROOT) -> str:
    """HEAD's hash, with ``+dirty`` where code differs from it (`tree_is_dirty`: the run
    record and the ledger are outputs, not code); ``unknown`` outside a checkout."""
    head = git("rev-parse", "HEAD", cwd=cwd)
    return head + ("+dirty" if tree_is_dirty(cwd) else "") if head else "unknown"


_recorded: set = set()  # (seed, what) already appended by this process


def record_held_out_use(seed: int, what: str, path: Path | None = None) -> dict | None:
    """Append one JSON line for a look at held-out ``seed`` (once per process, seed and
    command) to ``path`` (default `ledger_path`); returns the entry, None if nothing was
    written.  The committed ledger is refused while a test or CI runs, whatever the path."""
    path = ledger_path() if path is None else Path(path)
    if path is None or (seed, what, str(path)) in _recorded:
        return None
    testing = os.environ.get("PYTEST_CURRENT_TEST") or os.environ.get("CI")
    if testing and path.resolve() == COMMITTED_LEDGER.resolve():
        return None
    criterion = os.environ.get(CRITERION_ENV) or None
    entry = {
        "command": running_command(),
        "report": what,
        "argv": sys.argv[1:],
        "commit": git("rev-parse", "HEAD"),
        "dirty": tree_is_dirty(),
        "seed": int(seed),
        "time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "criterion": criterion,
        "criterion_commit": criterion_commit(criterion),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")
    _recorded.add((seed, what, str(path)))
    return entry


def read_ledger(path: Path = COMMITTED_LEDGER) -> list[dict]:
    """The ledger's entries, in order (an absent ledger has none)."""
    path = Path(path)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
