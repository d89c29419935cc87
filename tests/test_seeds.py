"""Seeds with roles, the ledger of held-out looks, and the order of criteria and results
in the git history (docs/experiments/README.md).

The history checks run on this repository (skipped, with the reason, on a shallow
clone or without git) and on small repositories built here where the order is right
and where it is wrong, so they can fail.
"""
from __future__ import annotations

import datetime
import os
import re
import subprocess
from pathlib import Path

import pytest

from coupjax import seeds
from coupjax.args import report_seed

REPO = Path(__file__).resolve().parent.parent
CRITERION_FIELDS = ("Question:", "Commands:", "Thresholds:", "Seeds:", "Smallest detectable effect:")
CRITERION_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}-[\w.-]+\.md$")
CRITERION_LINE = re.compile(r"^Criterion:\s*([0-9a-fA-F]{7,40})\s*$", re.MULTILINE)


# ------------------------------------------------------------------ the checks
def git(repo: Path, *args: str) -> str | None:
    return seeds.git(*args, cwd=repo)


def history_missing(repo: Path) -> str | None:
    """Why the history cannot be checked (no git, no repository, a shallow clone), or None."""
    if git(repo, "rev-parse", "--git-dir") is None:
        return "git or the repository is missing"
    if git(repo, "rev-parse", "--is-shallow-repository") == "true":
        return "shallow clone: the criterion commits may be missing (fetch the full history to check)"
    return None


def is_results_file(rel: str) -> bool:
    name = Path(rel).name
    return rel.startswith("docs/") and (name == "results.md" or name.endswith("-results.md"))


def is_criterion_file(rel: str) -> bool:
    name = Path(rel).name
    return rel.startswith("docs/experiments/") and bool(CRITERION_NAME.match(name)) and not is_results_file(rel)


def commit_time(repo: Path, commit: str) -> int:
    return int(git(repo, "show", "-s", "--format=%ct", commit))


def changed_files(repo: Path, commit: str) -> list[str]:
    return (git(repo, "show", "--name-only", "--format=", commit) or "").splitlines()


def criterion_problems(repo: Path, commit: str, what: str) -> list[str]:
    """Why ``commit`` is no criterion commit (unknown; changes no criterion file; changes a results file)."""
    full = git(repo, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    if full is None:
        return [f"{what}: criterion commit {commit} is not in the history"]
    files = changed_files(repo, full)
    if not any(is_criterion_file(f) for f in files):
        return [f"{what}: commit {commit} changes no criterion file docs/experiments/<date>-<name>.md"]
    if any(is_results_file(f) for f in files):
        return [f"{what}: criterion commit {commit} also changes a results file (commit the criterion on its own)"]
    return []


def results_problems(repo: Path) -> list[str]:
    """Every results file under docs/ names criterion commits that are strict ancestors of its own commit."""
    problems = []
    for path in sorted((repo / "docs").rglob("*.md")):
        rel = path.relative_to(repo).as_posix()
        if not is_results_file(rel):
            continue
        named = CRITERION_LINE.findall(path.read_text())
        if not named:
            problems.append(f"{rel}: names no criterion (a line 'Criterion: <commit>')")
            continue
        # the file's own commit; HEAD stands for a change not yet committed (it will follow HEAD)
        pending = git(repo, "status", "--porcelain", "--", rel)
        own = "HEAD" if pending else git(repo, "log", "-1", "--format=%H", "--", rel)
        for commit in named:
            found = criterion_problems(repo, commit, rel)
            if found:
                problems += found
                continue
            full = git(repo, "rev-parse", commit)
            before = subprocess.run(["git", "merge-base", "--is-ancestor", full, own], cwd=repo).returncode == 0
            if not before or (not pending and full == git(repo, "rev-parse", own)):
                problems.append(f"{rel}: criterion {commit} is not an ancestor of the results' commit {own}")
    return problems


def entry_time(entry: dict) -> float:
    return datetime.datetime.strptime(entry["time"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def ledger_problems(repo: Path, entries: list[dict], reused: dict | None = None) -> list[str]:
    """Every held-out use that names a criterion comes after the criterion's commit, and so
    does every other use of the same seed (a seed looked at earlier is spent), unless the
    criterion declared that reuse before its first use (``reused``: (path, seed) -> why)."""
    problems = []
    for i, e in enumerate(entries):
        commit = e.get("criterion_commit")
        if not commit:
            continue
        what = f"ledger line {i + 1} (seed {e['seed']}, {e['time']})"
        found = criterion_problems(repo, commit, what)
        if found:
            problems += found
            continue
        if (e.get("criterion"), e["seed"]) in (reused or {}):
            continue
        fixed = commit_time(repo, commit)
        for j, f in enumerate(entries):
            if f["seed"] == e["seed"] and entry_time(f) < fixed:
                problems.append(f"{what}: seed {f['seed']} was looked at on line {j + 1} ({f['time']}), "
                                f"before its criterion {commit[:12]} was committed")
    return problems


# A criterion amended after its first held-out use, by its amending commit, with why it is let
# stand (issue 41): any other change to a criterion after its first use fails.
AMENDED_AFTER_USE = {
    ("docs/experiments/2026-12-02-final-report.md", "db257244515ad4f27879a83f4ff97ab83d6b80c1"):
        "the report matrix's sizes cut to fit 30 minutes after 36 held-out best-response runs (ledger lines "
        "31-66) and before any report run; the thresholds and the best responses unchanged; the report's "
        "ledger lines (67 on) name this commit",
    ("docs/experiments/2026-12-02-best.md", "7e8de6dc9a4de1d1322d2ebcdc82acdcc1a89ee3"):
        "the 'Smallest detectable effect:' field added with the results, after the runs (the file says so); "
        "nothing else changed",
}


# Held-out seeds a criterion reuses, declared in its "Seeds:" field before its first use, with why:
# (criterion path, seed) -> why.  Any other use of a spent seed fails.
REUSED_SEEDS = {
    ("docs/experiments/2026-12-04-recipe-final.md", seed):
        "best-response seeds 150-158, spent on the other configs' best responses, reused for new best responses "
        "against a new policy (the recipe's runs); the criterion says so in its Seeds field, committed before use"
    for seed in range(150, 159)
}


def criterion_path(repo: Path, entry: dict) -> str | None:
    """The criterion file a ledger entry answers: its ``criterion`` if that is a file's
    path, else the criterion file its ``criterion_commit`` changed."""
    named = entry.get("criterion")
    if named and is_criterion_file(named):
        return named
    commit = entry.get("criterion_commit")
    files = [f for f in changed_files(repo, commit) if is_criterion_file(f)] if commit else []
    return files[0] if len(files) == 1 else None


def drift_problems(repo: Path, entries: list[dict], allowed: dict | None = None) -> list[str]:
    """Every criterion file a ledger entry answers is, in the working tree, what it was
    at its first held-out use (the version of the commit that entry names), or what an
    amendment of ``allowed`` ((path, commit) -> why) made it."""
    first, problems = {}, []
    for i, e in enumerate(entries):
        path = criterion_path(repo, e) if e.get("criterion_commit") else None
        if path and path not in first:
            first[path] = (i + 1, e)
    for path, (line, e) in first.items():
        then = git(repo, "show", f"{e['criterion_commit']}:{path}")
        now = (repo / path).read_text().rstrip("\n") if (repo / path).is_file() else None
        if then is None or now == then.rstrip("\n"):
            continue
        if any(p == path and now == (git(repo, "show", f"{c}:{path}") or "").rstrip("\n")
               for p, c in (allowed or {})):
            continue
        problems.append(f"{path} differs from its version at its first held-out use (ledger line {line}, "
                        f"{e['time']}, commit {e['criterion_commit'][:12]}): a criterion is fixed before its "
                        "held-out seeds are looked at")
    return problems


# ------------------------------------------------------------------ roles
def test_roles_are_disjoint_and_seed_7_is_development():
    tuning, dev, held = set(seeds.TUNING_SEEDS), set(seeds.DEVELOPMENT_SEEDS), set(seeds.HELD_OUT_SEEDS)
    assert not tuning & dev and not tuning & held and not dev & held
    assert 7 in dev and "main job" in seeds.DEVELOPMENT_SEEDS[7] and seeds.REPORT_SEED == 7
    assert len(held) >= 50
    assert [seeds.seed_role(s) for s in (0, 7, 150, 42)] == ["tuning", "development", "held-out", "other"]


def test_reporting_seeds_refuse_tuning_and_accept_the_rest(tmp_path, monkeypatch):
    monkeypatch.setenv(seeds.LEDGER_ENV, str(tmp_path / "ledger.jsonl"))
    for seed in seeds.TUNING_SEEDS:
        with pytest.raises(Exception, match="used to tune"):
            report_seed(str(seed))
    assert [report_seed(str(s)) for s in (7, 42, seeds.HELD_OUT_SEEDS[0])] == [7, 42, seeds.HELD_OUT_SEEDS[0]]


# ------------------------------------------------------------------ the ledger
def test_a_held_out_seed_is_recorded_others_are_not(tmp_path, monkeypatch):
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(seeds.LEDGER_ENV, str(ledger))
    monkeypatch.setenv(seeds.CRITERION_ENV, "HEAD")
    for seed in (7, 42):
        report_seed(str(seed))
    assert not ledger.exists()
    held = seeds.HELD_OUT_SEEDS[-1]
    seeds.check_report_seed(held, "tests: a report")
    seeds.check_report_seed(held, "tests: a report")  # once per process, seed and command
    entries = seeds.read_ledger(ledger)
    assert len(entries) == 1
    e = entries[0]
    assert {"command", "report", "argv", "commit", "seed", "time", "criterion", "criterion_commit"} <= set(e)
    assert e["seed"] == held and e["report"] == "tests: a report" and e["criterion"] == "HEAD"
    assert e["command"].startswith("python") or e["command"] == Path(os.sys.argv[0]).name
    assert abs(entry_time(e) - datetime.datetime.now(datetime.timezone.utc).timestamp()) < 3600
    if history_missing(REPO) is None:
        assert e["commit"] == git(REPO, "rev-parse", "HEAD") == e["criterion_commit"]


def test_tests_never_write_the_committed_ledger(monkeypatch):
    before = seeds.COMMITTED_LEDGER.read_bytes() if seeds.COMMITTED_LEDGER.exists() else None
    monkeypatch.delenv(seeds.LEDGER_ENV, raising=False)
    assert os.environ.get("PYTEST_CURRENT_TEST") and seeds.ledger_path() is None
    seeds.check_report_seed(seeds.HELD_OUT_SEEDS[1], "tests: no ledger")
    monkeypatch.setenv(seeds.LEDGER_ENV, str(seeds.COMMITTED_LEDGER))  # even pointed at it
    assert seeds.record_held_out_use(seeds.HELD_OUT_SEEDS[2], "tests: committed ledger") is None
    monkeypatch.setenv(seeds.LEDGER_ENV, "")
    assert seeds.ledger_path() is None
    after = seeds.COMMITTED_LEDGER.read_bytes() if seeds.COMMITTED_LEDGER.exists() else None
    assert before == after


def test_the_committed_ledger_and_formats_exist():
    assert seeds.COMMITTED_LEDGER.is_file() and (seeds.COMMITTED_LEDGER.parent / "README.md").is_file()
    for e in seeds.read_ledger():
        assert {"command", "commit", "seed", "time"} <= set(e) and seeds.seed_role(e["seed"]) == "held-out"


def test_every_criterion_file_has_its_fields():
    for path in sorted((REPO / "docs" / "experiments").glob("*.md")):
        rel = path.relative_to(REPO).as_posix()
        if is_criterion_file(rel):
            text = path.read_text()
            missing = [f for f in CRITERION_FIELDS if not re.search(rf"^{re.escape(f)}", text, re.MULTILINE)]
            assert not missing, f"{rel} lacks {missing} (docs/experiments/README.md)"


# ------------------------------------------------------------------ the history, here
def test_results_and_ledger_come_after_their_criteria_in_this_repository():
    reason = history_missing(REPO)
    if reason:
        pytest.skip(reason)
    assert results_problems(REPO) == []
    assert ledger_problems(REPO, seeds.read_ledger(), REUSED_SEEDS) == []
    assert drift_problems(REPO, seeds.read_ledger(), AMENDED_AFTER_USE) == []


# ------------------------------------------------------------------ the history, built here
CRITERION = "\n".join(["# a question", *(f"{f} ..." for f in CRITERION_FIELDS)]) + "\n"


class Repo:
    """A throwaway repository whose commits get the times we choose."""

    def __init__(self, path: Path):
        self.path, self.clock = path, 1_800_000_000
        self.run("init", "-q")
        self.run("config", "user.email", "t@example.com")
        self.run("config", "user.name", "t")
        self.run("config", "commit.gpgsign", "false")

    def run(self, *args):
        env = {**os.environ, "GIT_AUTHOR_DATE": f"@{self.clock} +0000", "GIT_COMMITTER_DATE": f"@{self.clock} +0000"}
        return subprocess.run(["git", *args], cwd=self.path, env=env, check=True, capture_output=True,
                              text=True).stdout.strip()

    def commit(self, files: dict, message: str = "c") -> str:
        self.clock += 100
        for rel, text in files.items():
            (self.path / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.path / rel).write_text(text)
            self.run("add", rel)
        self.run("commit", "-q", "-m", message)
        return self.run("rev-parse", "HEAD")

    def at(self, commit: str, seconds: int) -> str:
        t = commit_time(self.path, commit) + seconds
        return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def repo(tmp_path):
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("git is missing")
    return Repo(tmp_path)


CRIT = "docs/experiments/2026-12-02-a.md"
RESULTS = "docs/experiments/2026-12-02-a-results.md"


def test_results_after_their_criterion_pass(repo):
    c = repo.commit({CRIT: CRITERION})
    repo.commit({RESULTS: f"Criterion: {c}\nA beats B.\n"})
    assert results_problems(repo.path) == []


def test_results_before_their_criterion_fail(repo):
    repo.commit({"README.md": "x"})
    repo.run("checkout", "-q", "-b", "criterion")
    c = repo.commit({CRIT: CRITERION})
    repo.run("checkout", "-q", "-")
    # results committed where the criterion is not in their history (written before it, or beside it)
    repo.commit({RESULTS: f"Criterion: {c}\n"})
    assert any("is not an ancestor" in p for p in results_problems(repo.path))
    repo.run("merge", "-q", "--no-edit", "criterion")  # a merge afterwards does not put it before them
    assert any("is not an ancestor" in p for p in results_problems(repo.path))
    repo.commit({RESULTS: f"Criterion: {c}\nrestated after the criterion\n"})
    assert results_problems(repo.path) == []


def test_results_in_the_criterion_commit_or_without_one_fail(repo):
    c = repo.commit({CRIT: CRITERION, RESULTS: "Criterion: 0000000\n"})
    repo.commit({RESULTS: f"Criterion: {c}\n"})
    assert any("also changes a results file" in p for p in results_problems(repo.path))
    other = repo.commit({"docs/notes.md": "x"})
    repo.commit({RESULTS: f"Criterion: {other}\n"})
    assert any("changes no criterion file" in p for p in results_problems(repo.path))
    repo.commit({"docs/results.md": "A beats B.\n"})
    assert any("names no criterion" in p for p in results_problems(repo.path))


def test_uncommitted_results_are_checked_against_head(repo):
    c = repo.commit({CRIT: CRITERION})
    (repo.path / "docs" / "results.md").write_text(f"Criterion: {c}\n")
    assert results_problems(repo.path) == []


def test_a_held_out_use_before_its_criterion_fails(repo):
    c = repo.commit({CRIT: CRITERION})
    late = {"seed": 150, "time": repo.at(c, 60), "criterion_commit": c}
    assert ledger_problems(repo.path, [late]) == []
    early = {"seed": 150, "time": repo.at(c, -60), "criterion_commit": c}
    assert any("before its criterion" in p for p in ledger_problems(repo.path, [early]))
    # a look without a criterion spends the seed for a criterion fixed after it
    peek = {"seed": 150, "time": repo.at(c, -60), "criterion_commit": None}
    assert any("line 1" in p for p in ledger_problems(repo.path, [peek, late]))
    other_seed = {"seed": 151, "time": repo.at(c, -60), "criterion_commit": None}
    assert ledger_problems(repo.path, [other_seed, late]) == []


def test_the_writer_names_the_criterion_commit(repo, monkeypatch):
    c = repo.commit({CRIT: CRITERION})
    assert seeds.criterion_commit(CRIT, cwd=repo.path) == c
    assert seeds.criterion_commit(c[:10], cwd=repo.path) == c
    assert seeds.criterion_commit("docs/experiments/none.md", cwd=repo.path) is None


def test_dirty_means_changed_code_not_the_run_record(tmp_path):
    """A resumed plan rewrites runs/experiments/exploit.json between its items; that must
    not mark its later held-out runs (their ledger lines, the report's meta.json) as made
    from a changed tree, while a code change must."""
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    for rel in ("evals/a.py", "runs/experiments/exploit.json", "docs/experiments/ledger.jsonl"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("0\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    assert not seeds.tree_is_dirty(tmp_path)
    (tmp_path / "runs/experiments/exploit.json").write_text("1\n")
    (tmp_path / "docs/experiments/ledger.jsonl").write_text("1\n")
    assert not seeds.tree_is_dirty(tmp_path)
    head = seeds.git("rev-parse", "HEAD", cwd=tmp_path)
    assert seeds.code_version(tmp_path) == head  # what evals.report's meta.json records
    (tmp_path / "evals/a.py").write_text("1\n")
    assert seeds.tree_is_dirty(tmp_path) and seeds.code_version(tmp_path) == head + "+dirty"
    assert seeds.code_version(tmp_path / "evals") == head + "+dirty"  # from a subfolder too


def test_a_criterion_edited_after_its_first_held_out_use_fails(repo):
    """Issue 41: the history check could not see a criterion changed after its seeds were
    looked at; a declared amendment passes, any other change fails."""
    c = repo.commit({CRIT: CRITERION})
    use = {"seed": 150, "time": repo.at(c, 60), "criterion": CRIT, "criterion_commit": c}
    assert drift_problems(repo.path, [use]) == []
    amended = repo.commit({CRIT: CRITERION + "Thresholds: a new one, after the look\n"})
    assert any("differs from its version at its first held-out use (ledger line 1" in p
               for p in drift_problems(repo.path, [use]))
    later = {"seed": 151, "time": repo.at(amended, 60), "criterion": CRIT, "criterion_commit": amended}
    assert drift_problems(repo.path, [use, later])  # a later use of the new text does not excuse it
    assert drift_problems(repo.path, [use], {(CRIT, amended): "declared"}) == []
    (repo.path / CRIT).write_text(CRITERION + "edited again, not committed\n")
    assert drift_problems(repo.path, [use], {(CRIT, amended): "declared"})
    assert drift_problems(repo.path, [{**use, "criterion": None}])  # found from the commit alone
