"""Benchmark of the player's page: the time from an entered event to the advice on screen.

``python -m evals.bench_page [--rounds 8] [--warm-up-rounds 1] [--out FILE]`` starts
``python -m coupjax serve`` (with the search at its default budget) on a free port
and a temporary games directory, opens the page in headless Chromium (Debian's
``chromium`` through Python playwright) and enters a 4-player game by taps.  Each
round each seat in turn claims Captain and steals from the next (everybody passes;
the coins go round), so the page advises you after four of the round's eight events:
at each opponent's claim (the challenge and block calls; the advice if everyone before
you passes) and at your main action.  The time of one event is measured in the page, from the tap
that sends the entry to two animation frames after the new table and its advice are
drawn (`window.coupjax.timings`).  The first rounds warm up (compilation) and are not
counted.  Prints the median and the 95th percentile over the counted events.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

from coupjax.args import output_file

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# (seat, action) per round; seat 0 is you
ROUND = [(1, "steal:0"), (None, "all_passed"), (2, "steal:1"), (None, "all_passed"), (3, "steal:2"),
         (None, "all_passed"), (0, "steal:3"), (None, "all_passed")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, proc, seconds: float = 180) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit("bench_page: the server exited")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("bench_page: the server did not answer")


def _tap(page, sel) -> None:
    v = page.get_attribute("#app", "data-version")
    page.locator(sel).first.click()
    page.wait_for_function(f"document.querySelector('#app').dataset.version !== '{v}'")


def screenshots(browser, url: str, out: Path) -> list[Path]:
    """The main screens as small PNGs: start, table with advice, warning, replay, practice, phone."""
    out.mkdir(parents=True, exist_ok=True)
    shots = []

    def shot(page, name, full=False):
        path = out / f"{name}.png"
        page.screenshot(path=str(path), full_page=full)
        shots.append(path)

    page = browser.new_page(viewport={"width": 1180, "height": 760})
    page.set_default_timeout(600_000)
    page.goto(url)
    page.wait_for_selector("#start-table")
    shot(page, "start")
    page.select_option("#t-card-0", "duke")
    page.select_option("#t-card-1", "duke")
    page.select_option("#t-first", "1")
    page.click("#start-table")
    page.wait_for_selector("[data-testid=choice]")
    for sel in ('[data-action="steal:2"][data-seat="1"]', '[data-action="all_passed"]', '[data-action="tax"][data-seat="2"]'):
        _tap(page, "[data-testid=choice]" + sel)
    _tap(page, '[data-testid=choice][data-action="challenge"][data-seat="3"]')
    _tap(page, '[data-testid=option][data-value="false"]')
    _tap(page, '[data-testid=choice][data-action="reveal"][data-seat="3"]')
    _tap(page, '[data-testid=option][data-value=\'"duke"\']')
    shot(page, "warning")
    _tap(page, "#warnings button.primary")
    _tap(page, '[data-testid=option][data-value=\'"contessa"\']')
    _tap(page, '[data-testid=choice][data-action="steal:0"][data-seat="3"]')
    shot(page, "table-advice")
    gid = page.url.split("#/game/")[1]
    phone = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=1, is_mobile=True,
                             has_touch=True)
    phone.set_default_timeout(600_000)
    phone.goto(url + f"#/game/{gid}")
    phone.wait_for_selector("#advice[data-ready]")
    shot(phone, "phone", full=False)
    page.goto(url + f"#/replay/{gid}/3")
    page.wait_for_selector("#step-label")
    shot(page, "replay")
    page.goto(url)
    page.wait_for_selector("#start-practice")
    page.select_option("#p-policy", "belief_ev")
    page.click("#start-practice")
    page.wait_for_selector("[data-testid=choice], #game-over")
    _tap(page, "#ask-advice")
    shot(page, "practice")
    return shots


def run(rounds: int, warm_rounds: int, chromium: str, shots_dir=None) -> dict:
    from playwright.sync_api import sync_playwright

    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen([sys.executable, "-m", "coupjax", "serve", "--port", str(port), "--games-dir", tmp],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}/"
            wait_until_up(url + "api/info", proc)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(300_000)
                page.goto(url)
                page.wait_for_selector("#start-table")
                page.select_option("#t-card-1", "captain")
                page.select_option("#t-first", "1")
                page.click("#start-table")
                page.wait_for_selector("[data-testid=choice]")
                counted = []
                for r in range(warm_rounds + rounds):
                    for seat, action in ROUND:
                        sel = f'[data-testid=choice][data-action="{action}"]' + (
                            f'[data-seat="{seat}"]' if seat is not None else "")
                        v = page.get_attribute("#app", "data-version")
                        n = page.evaluate("window.coupjax.timings.length")
                        page.click(sel)
                        page.wait_for_function(f"window.coupjax.timings.length > {n} && "
                                               f"document.querySelector('#app').dataset.version !== '{v}'")
                        t = page.evaluate("window.coupjax.timings[window.coupjax.timings.length - 1]")
                        if r >= warm_rounds and t["advice"]:
                            assert page.locator("#advice[data-ready] .val-row").count() >= 1, "no search values shown"
                            counted.append(t["ms"])
                shots = screenshots(browser, url, Path(shots_dir)) if shots_dir else []
                browser.close()
        finally:
            proc.terminate()
            proc.wait(30)
    ms = np.asarray(counted)
    return {"events": int(ms.size), "median_ms": float(np.median(ms)), "p95_ms": float(np.percentile(ms, 95)),
            "max_ms": float(ms.max()), "mean_ms": float(ms.mean()), "rounds": rounds, "warm_up_rounds": warm_rounds,
            "search_budget": "default (coupjax.search.default_config('expected'))",
            "load_average": os.getloadavg(), "screenshots": [str(x) for x in shots]}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m evals.bench_page", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=8, help="counted rounds (4 advised events each; default 8)")
    ap.add_argument("--warm-up-rounds", type=int, default=1, help="rounds before counting (default 1)")
    ap.add_argument("--chromium", default="/usr/bin/chromium", help="the Chromium binary (default Debian's)")
    ap.add_argument("--out", type=output_file, default=None, help="also write the figures as JSON here")
    ap.add_argument("--screenshots", default=None, metavar="DIR",
                    help="after the timing, also save the main screens as PNGs here (docs/screenshots)")
    args = ap.parse_args(argv)
    if not Path(args.chromium).exists():
        raise SystemExit(f"bench_page: {args.chromium} not found (apt-get install chromium)")
    fig = run(args.rounds, args.warm_up_rounds, args.chromium, args.screenshots)
    print(f"event -> advice on screen over {fig['events']} advised events (after {fig['warm_up_rounds']} warm-up "
          f"round(s)): median {fig['median_ms']:.0f} ms, p95 {fig['p95_ms']:.0f} ms, max {fig['max_ms']:.0f} ms "
          f"(load average {', '.join(f'{x:.2f}' for x in fig['load_average'])})")
    if args.out:
        Path(args.out).write_text(json.dumps(fig, indent=2))


if __name__ == "__main__":
    main()
