"""How long a person waits on a first use, cold (empty compilation cache) and warm.

``python -m evals.bench_startup [--only NAME ...] [--out FILE.json] [--with-tests]``
measures, each in fresh processes and first with an empty persistent compilation cache
(a new ``COUPJAX_CACHE_DIR``) and then again with the cache that run filled:

- ``import``: ``python -c "import coupjax"``;
- ``page``: ``coupjax serve`` (search on) from its start to the first advice of a
  scripted table game entered in headless Chromium (Debian's ``chromium`` through
  playwright), and from the tap on the event that asks for that advice to the advice on
  screen (``page_event``);
- ``practice``: ``coupjax serve --no-search``, then a practice game against three
  ``belief_ev`` seated before the player: seconds from the request to the bots' first
  moves answered (``practice``) and from the server's start (``practice_from_start``);
- ``arena``: ``coupjax arena --policy belief_ev --policy honest --policy random
  --policy cautious --matches 8 --move-timeout 10``, start to ``results.json`` written;
- ``gymnasium``: the Gymnasium adapter with ``belief_ev`` opponents, from the process's
  start to its first ``step`` returned;
- ``tests`` (only with ``--with-tests``; minutes): the quick tier, ``pytest -q -n 2 -m
  "not slow"``.

Each figure is printed with the load average beside it: on a shared 2-core machine a
figure measured under load is not comparable to one measured idle.  Nothing here is
asserted by a test: figures come from this benchmark only.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from coupjax.args import output_file
from evals.bench.page import CHROMIUM_ARGS, free_port, wait_until_up

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARENA_POLICIES = ("belief_ev", "honest", "random", "cautious")
GYM_PROGRAM = """
import time; t0 = time.time()
import gymnasium
env = gymnasium.make("coupjax.gymnasium:coupjax/Coup-v1", opponents="belief_ev")
obs, info = env.reset(seed=0)
import numpy as np
env.step(int(np.flatnonzero(info["action_mask"])[0]))
print(time.time() - t0)
"""


def _env(cache_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env.update(COUPJAX_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT), WANDB_MODE="offline")
    return env


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def bench_import(cache_dir: Path) -> dict:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import coupjax"], env=_env(cache_dir), check=True, cwd=ROOT)
    return {"import": time.perf_counter() - t0}


class _Server:
    def __init__(self, cache_dir: Path, games_dir: str, search: bool):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        cmd = [sys.executable, "-m", "coupjax", "serve", "--port", str(self.port), "--games-dir", games_dir]
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(cmd + ([] if search else ["--no-search"]), cwd=ROOT, env=_env(cache_dir),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until_up(self.url + "api/info", self.proc)

    def close(self):
        self.proc.terminate()
        self.proc.wait(30)


def bench_page(cache_dir: Path) -> dict:
    """A table game where Bea (seat 1) moves first and steals from you: the page advises
    you on the challenge, with the search's values, as soon as the steal is entered."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as games:
        server = _Server(cache_dir, games, search=True)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(600_000)
                page.goto(server.url)
                page.wait_for_selector("#start-table")
                page.select_option("#t-card-1", "captain")
                page.select_option("#t-first", "1")
                page.click("#start-table")
                page.wait_for_selector("[data-testid=choice]")
                t_event = time.perf_counter()
                page.click('[data-testid=choice][data-action="steal:0"][data-seat="1"]')
                page.wait_for_selector("#advice[data-ready] .val-row")
                t_advice = time.perf_counter()
                browser.close()
        finally:
            server.close()
    return {"page": t_advice - server.t0, "page_event": t_advice - t_event}


def bench_practice(cache_dir: Path) -> dict:
    with tempfile.TemporaryDirectory() as games:
        server = _Server(cache_dir, games, search=False)
        try:
            body = json.dumps({"num_players": 4, "seat": 3, "opponents": "belief_ev", "seed": 1}).encode()
            request = urllib.request.Request(server.url + "api/practice", data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
            t0 = time.perf_counter()
            with urllib.request.urlopen(request, timeout=600) as r:
                r.read()
            t1 = time.perf_counter()
        finally:
            server.close()
    return {"practice": t1 - t0, "practice_from_start": t1 - server.t0}


def bench_arena(cache_dir: Path) -> dict:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "coupjax", "arena", *[a for p in ARENA_POLICIES for a in ("--policy", p)],
               "--matches", "8", "--move-timeout", "10", "--out", f"{out}/results.json"]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, env=_env(cache_dir), check=True, stdout=subprocess.DEVNULL)
        assert Path(out, "results.json").is_file()
        return {"arena": time.perf_counter() - t0}


def bench_gymnasium(cache_dir: Path) -> dict:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", GYM_PROGRAM], cwd=ROOT, env=_env(cache_dir), check=True,
                         capture_output=True, text=True)
    return {"gymnasium": time.perf_counter() - t0, "gymnasium_in_process": float(out.stdout.split()[-1])}


def bench_tests(cache_dir: Path) -> dict:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-m", "not slow", "-p", "no:cacheprovider"],
                   cwd=ROOT, env=_env(cache_dir), check=True, stdout=subprocess.DEVNULL)
    return {"tests": time.perf_counter() - t0}


BENCHES = {"import": bench_import, "page": bench_page, "practice": bench_practice, "arena": bench_arena,
           "gymnasium": bench_gymnasium, "tests": bench_tests}


def run(names, cache_dir: Path, out: Path | None) -> dict:
    """Each bench from an empty cache (cold), then at once again (warm: the second start,
    with what the first compiled); written after each figure, so a cut run keeps them."""
    figures: dict = {"cache_dir": str(cache_dir), "cold": {}, "warm": {}}
    for name in names:
        subprocess.run([sys.executable, "-m", "coupjax", "cache", "clear"], cwd=ROOT, env=_env(cache_dir),
                       check=True, stdout=subprocess.DEVNULL)
        for phase in ("cold", "warm"):
            load = _load()
            try:
                result = BENCHES[name](cache_dir)
            except Exception as err:  # noqa: BLE001 - a failed bench is recorded, the others run
                result = {name: None, f"{name}_error": f"{type(err).__name__}: {err}"[:500]}
            for key, value in result.items():
                figures[phase][key] = value
                shown = "-" if value is None else value if isinstance(value, str) else f"{value:7.2f} s"
                print(f"{phase:5} {key:22} {shown}   load {load:.2f} -> {_load():.2f}", flush=True)
            figures[phase][f"{name}_load"] = [load, _load()]
            if out:
                out.write_text(json.dumps(figures, indent=2))
    return figures


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m evals.bench_startup", description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", choices=[n for n in BENCHES if n != "tests"], default=None,
                    help="measure only these (default: all but the test tier)")
    ap.add_argument("--with-tests", action="store_true", help="also time the quick test tier (minutes)")
    ap.add_argument("--cache-dir", default=None, help="the cache folder to fill (default: a new temporary one)")
    ap.add_argument("--out", type=output_file, default=None, help="write the figures as JSON here (after each figure)")
    args = ap.parse_args(argv)
    names = list(args.only or [n for n in BENCHES if n != "tests"]) + (["tests"] if args.with_tests else [])
    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = Path(args.cache_dir) if args.cache_dir else Path(tmp) / "cache"
        run(names, cache_dir, Path(args.out) if args.out else None)


if __name__ == "__main__":
    main()
