"""docs/results.md's notes on the ledger: every held-out seed the results rest on that the
ledger (`coupjax.seeds`, docs/experiments/ledger.jsonl) shows looked at more than once by
the same command, or without a criterion, and which look the figures come from (issue 41).
"""
from __future__ import annotations


def repeated_looks(entries: list[dict], seeds_used, report_commit: str | None = None) -> list[dict]:
    """The held-out seeds of ``seeds_used`` that the ledger shows looked at more than once
    by the same command and arguments (the same item run again), or without a criterion,
    up to the report's own run (its commit ``report_commit``; later looks played nothing
    the file shows): seed, command, the 1-based ledger lines."""
    entries = list(enumerate(entries, 1))
    if report_commit:
        last = [i for i, e in entries if e.get("commit") == report_commit]
        entries = entries[:last[-1]] if last else entries
    groups: dict = {}
    for i, e in entries:
        if e["seed"] in seeds_used:
            groups.setdefault((e["seed"], e["command"], tuple(e.get("argv", ())), e.get("criterion")), []).append(i)
    out = []
    for (seed, command, argv, criterion), lines in groups.items():
        if len(lines) > 1 or not criterion:
            out.append({"seed": seed, "command": " ".join([command, *argv]), "lines": lines,
                        "criterion": criterion})
    return sorted(out, key=lambda g: g["lines"][0])


def repeat_notes(fin: dict, entries: list[dict], report_commit: str | None) -> list[str]:
    """docs/results.md's section on the held-out seeds of ``fin`` (its table seeds and
    best-response seeds) that the ledger's ``entries`` show looked at more than once."""
    used = set(fin["seeds"]) | {r["seed"] for e in fin.get("exploit", {}).values()
                                for rows in e.get("families", {}).values() for r in rows}
    looks = repeated_looks(entries, used, report_commit)
    if not looks:
        return []
    lines = ["## Held-out seeds looked at more than once", "",
             "Every held-out seed this file reports on that the ledger (`docs/experiments/ledger.jsonl`) shows run "
             "again by the same command, or run without a criterion, up to the run that made report.json:", ""]
    for g in looks:
        where = ", ".join(map(str, g["lines"]))
        if " evals.experiments " in f" {g['command']} ":
            why = ("the plan (`evals.experiments`) starts an item only while its record is missing, so the earlier "
                   "start wrote none (it was cut before its end); the figures here are the last start's")
        elif " --final" in g["command"]:
            why = ("the figures here are the last run's (the report is deterministic given its runs and seeds; "
                   "docs/experiments/README.md accounts for the earlier runs)")
        else:
            why = "the figures here are the last look's"
        if not g["criterion"]:
            why = "a look that names no criterion; " + why
        lines.append(f"- seed {g['seed']}: `{g['command']}` on ledger line(s) {where}: {why}.")
    return lines + [""]
