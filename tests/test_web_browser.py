"""The page in a real headless Chromium (Debian's ``chromium``, driven by Python playwright),
against a real server process (``python -m coupjax serve``).

This module holds the quick test of the default suite (a game started by taps, a
rule-breaking entry corrected, advice at a decision, an undo, a reload that resumes)
and the driver the long flows share (`tests/test_web_flows.py`, marked slow): a game
played by the engine is entered on the page by taps, as the recording seat saw it.
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
NAMES = ["Ann", "Bea", "Cal", "Dan"]
WAIT_MS = 240_000  # a first request compiles the engine for the table (a minute on a busy 2-core CPU)

playwright_api = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)


# ------------------------------------------------------------------ the server
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``python -m coupjax serve`` as a subprocess on a port and a games directory."""

    def __init__(self, games_dir, search: bool, port: int | None = None):
        self.games_dir, self.search, self.port = Path(games_dir), search, port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.proc = None
        self.start()

    def start(self):
        cmd = [sys.executable, "-m", "coupjax", "serve", "--port", str(self.port), "--games-dir", str(self.games_dir)]
        if not self.search:
            cmd.append("--no-search")
        env = dict(os.environ, PYTHONPATH=str(ROOT), WANDB_MODE="offline")
        self.log = open(self.games_dir.parent / f"server-{self.port}.log", "ab")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.read_log()}")
            try:
                with urllib.request.urlopen(self.url + "api/info", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"server did not answer: {self.read_log()}")

    def read_log(self) -> str:
        return (self.games_dir.parent / f"server-{self.port}.log").read_text(errors="replace")[-3000:]

    def kill(self):
        """SIGKILL: no chance to save anything on the way out."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self.log.close()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_page(browser, url, device=DESKTOP):
    ctx = browser.new_context(**device)
    page = ctx.new_page()
    page.set_default_timeout(WAIT_MS)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector("#app[data-screen]")
    page.errors = errors
    return page


# ------------------------------------------------------------------ tapping
def version(page) -> str:
    return page.get_attribute("#app", "data-version")


def tap(page, selector_or_locator):
    """Click and wait until the page has rendered again."""
    v = version(page)
    loc = page.locator(selector_or_locator) if isinstance(selector_or_locator, str) else selector_or_locator
    loc.first.click()
    # rendered since, and no request of the page's in flight (an advice poll may render first)
    page.wait_for_function(f"document.querySelector('#app').dataset.version !== '{v}' && "
                           "document.querySelector('#busy').hidden", timeout=WAIT_MS)
    # the server may still be compiling the table's first advice: the page says so and asks again
    page.wait_for_function("!document.querySelector('#advice-progress')", timeout=WAIT_MS)


def choice(page, action, seat=None):
    sel = f'[data-testid=choice][data-action="{action}"]'
    return sel + (f'[data-seat="{seat}"]' if seat is not None else "")


def start_table(page, hand, first, seat=0, names=NAMES):
    page.select_option("#t-players", str(len(names)))
    for i, n in enumerate(names):
        page.fill(f"#t-name-{i}", n)
    page.select_option("#t-seat", str(seat))
    page.select_option("#t-first", str(first))
    page.select_option("#t-card-0", hand[0])
    page.select_option("#t-card-1", hand[1])
    page.click("#start-table")
    page.wait_for_selector("[data-testid=choice]", timeout=WAIT_MS)


def answer(page, value):
    tap(page, f'[data-testid=option][data-value=\'{json.dumps(value)}\']')


def enter_event(page, ev: dict, me: int, names=NAMES):
    """Enter one engine step (a private event dict of `Match`) by taps, as seat ``me`` saw it."""
    from coupjax.web import words

    phase, s, name = ev["phase"], ev["seat"], ev["action"]
    if phase == "action":
        tap(page, choice(page, name, s))
    elif phase == "react" and name == "pass":
        own = page.locator(choice(page, "pass", s))
        tap(page, own if own.count() else page.locator(choice(page, "all_passed")))
    elif phase == "answer_block" and name == "pass":
        tap(page, choice(page, "all_passed"))
    elif phase in ("react", "answer_block"):
        tap(page, choice(page, name, s))
    elif phase == "lose" and s == me:
        tap(page, page.get_by_role("button", name=f"Lose your {words.title(ev['reveals'][0]['role'])}", exact=True))
    elif phase == "lose":  # one tap: the card revealed
        tap(page, choice(page, "reveal", s) + f'[data-role="{ev["reveals"][0]["role"]}"]')
        ev = dict(ev, reveals=ev["reveals"][1:])
    elif phase == "exchange" and s == me:
        tap(page, page.get_by_role("button", name=words.keep(name), exact=True))
    else:
        tap(page, choice(page, "keep", s))
    reveals = [x["role"] for x in ev["reveals"]]
    drawn = list(ev["exchange_drawn"])
    while page.locator(".question").count():
        field = page.get_attribute(".question", "data-field")
        if field == "bluff_caught":
            answer(page, ev["challenge"]["bluff_caught"])
        elif field == "reveals":
            answer(page, reveals.pop(0))
        elif field == "redraw":
            answer(page, ev["redraw"])
        elif field == "drawn":
            answer(page, drawn.pop(0))
        else:
            raise AssertionError(f"unexpected question {field}")


def steps_shown(page) -> int:
    text = page.text_content("#log summary")
    return int(text.split("(")[1].split(" ")[0])


# ------------------------------------------------------------------ what a phone must show
BAD_WORDS = re.compile(r"you's|\byou chooses\b|\bdoes you\b|(?<!before )\byou (takes|claims|steals|loses|passes|challenges|blocks|"
                       r"assassinates|coups|finishes)\b|\ban? (assassin|ambassador)\b(?<!an assassin)(?<!an ambassador)|"
                       r"\b1 (coins|steps|cards|games|times|files)\b|belief_ev|scripted_mix|p_truth|->", re.I)

LABELS_JS = """() => {
  const out = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const t = n.parentElement.closest('[data-testid], li, p, b, h2, h3, summary, th, td, option, label, span, button, small');
    if (n.textContent.trim()) out.push([t ? t : n.parentElement, n.textContent]);
  }
  const byEl = new Map();
  for (const [el, t] of out) byEl.set(el, (byEl.get(el) || '') + t);
  const texts = [...byEl.values()];
  for (const el of document.querySelectorAll('[aria-label], [title], [placeholder]'))
    for (const k of ['aria-label', 'title', 'placeholder']) if (el.getAttribute(k)) texts.push(el.getAttribute(k));
  return texts.map((t) => t.replace(/\\s+/g, ' ').trim());
}"""

SMALL_JS = """() => {
  const bad = [];
  for (const el of document.querySelectorAll('button, a[href], input, select, textarea, summary, [role=button], [role=switch]')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;  // not rendered (a closed fold, a hidden box)
    if (Math.min(r.width, r.height) < 44) bad.push(`${el.tagName} ${el.id || el.className} "${(el.textContent || el.value || '').trim().slice(0, 30)}" ${Math.round(r.width)}x${Math.round(r.height)}`);
  }
  return bad;
}"""

FIRST_SCREEN_JS = """() => {
  const top = (el) => el.getBoundingClientRect().top + window.scrollY;
  const bottom = (el) => el.getBoundingClientRect().bottom + window.scrollY;
  const must = [...document.querySelectorAll('#prompt, .question, #narration, [data-testid=choice], [data-testid=option]')];
  const acting = document.querySelector('#strip tr.turn');
  if (acting) must.push(acting);
  const low = must.filter((el) => bottom(el) > window.innerHeight).map((el) => `${el.id || el.tagName} "${el.textContent.slice(0, 40)}" ends at ${Math.round(bottom(el))}`);
  const advice = document.querySelector('#advice');
  const last = must.length ? Math.max(...must.map(bottom)) : 0;
  if (advice && advice.getBoundingClientRect().height && top(advice) < last) low.push(`the advice (at ${Math.round(top(advice))}) is above the buttons`);
  return { low, acting: !!acting, screen: window.innerHeight };
}"""


UNNAMED_JS = """() => [...document.querySelectorAll('button, a[href], input, select, textarea, summary')].filter((el) => {
  if (el.getAttribute('aria-label') || el.closest('label')) return false;
  if (el.id && document.querySelector(`label[for="${el.id}"]`)) return false;
  return !(el.tagName === 'BUTTON' || el.tagName === 'A' || el.tagName === 'SUMMARY') || !el.textContent.trim();
}).map((el) => `${el.tagName} ${el.id || el.className}`)"""


def unnamed(page) -> list[str]:
    """Controls a screen reader would have no name for (no text, aria-label or label)."""
    return page.evaluate(UNNAMED_JS)


def labels(page) -> list[str]:
    """Every text of the page as a person reads it (each element's own text, aria-labels, titles)."""
    return page.evaluate(LABELS_JS)


def bad_words(page) -> list[str]:
    return sorted({t for t in labels(page) if BAD_WORDS.search(t)})


def small_targets(page) -> list[str]:
    """Interactive elements under 44 px in their smaller dimension."""
    return page.evaluate(SMALL_JS)


def check_first_screen(page, where=""):
    """At a decision on a phone: the prompt, every button and the acting seat's table row
    end within the first screen (the document's first 844 px), the advice below them."""
    got = page.evaluate(FIRST_SCREEN_JS)
    assert got["acting"], f"{where}: no acting seat's row"
    assert not got["low"], f"{where}: {got['low']}"
    # the seat table keeps within the cards' margins (a row of card chips once pushed it past them)
    strip, entry = (page.locator(sel).bounding_box() for sel in ("#strip", "#entry"))
    assert strip["x"] + strip["width"] <= entry["x"] + entry["width"] + 0.5, f"{where}: the seat table is too wide"


# ------------------------------------------------------------------ games the engine plays
def scripted_match(seed: int, hand=("duke", "duke"), first: int = 1, max_steps: int = 400):
    """A 4-player match with an explicit deal (seat 0 holds ``hand``, seat 1 a Duke) that
    opens with seat 1's tax challenged and proven, then plays on with a seeded, lively
    rule of thumb (coups and claims first, some challenges and blocks) to the end."""
    from coupjax.match import Match

    rng = random.Random(seed)
    rest = [r for r in ("duke", "assassin", "captain", "ambassador", "contessa") for _ in range(3)]
    for c in list(hand) + ["duke"]:
        rest.remove(c)
    rng.shuffle(rest)
    hands = [list(hand), ["duke", rest.pop()], [rest.pop(), rest.pop()], [rest.pop(), rest.pop()]]
    m = Match(4, seed, hands=hands, deck=rest, current_player=first)
    m.play("tax")
    m.play("challenge")
    prefer = ("coup", "assassinate", "steal", "tax", "exchange", "foreign_aid", "income")
    while not m.done and len(m.events) < max_steps:
        legal = m.legal_actions()
        if m.view()["phase"] == "action":
            kinds = sorted(legal, key=lambda a: (prefer.index(a.split(":")[0]), rng.random()))
            pick = kinds[0] if rng.random() < 0.7 else rng.choice(legal)
        elif "pass" in legal:
            r = rng.random()
            others = [a for a in legal if a != "pass"]
            pick = "pass" if r < 0.75 or not others else rng.choice(others)
        else:
            pick = rng.choice(legal)
        m.play(pick)
    assert m.done, "the rule of thumb should end a match"
    return m


# ------------------------------------------------------------------ the quick test
def serve_games(tmp_path_factory, name: str, search: bool):
    """A `Server` on a fresh games folder for one test module, stopped and cleaned after
    it (the body of each browser module's ``server`` fixture)."""
    games = tmp_path_factory.mktemp(name) / "games"
    games.mkdir()
    srv = Server(games, search=search)
    yield srv
    srv.stop()
    shutil.rmtree(games, ignore_errors=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from serve_games(tmp_path_factory, "browser", search=False)


def test_taps_a_warning_corrected_advice_undo_and_reload(server, browser):
    """Start a 4-player game by taps; Bea's tax is challenged and proven, so every Duke is
    accounted for (two in my hand): Cal revealing a Duke is refused with that rule, kept
    as a warning apart from the advice, corrected; advice at my decision; undo; a reload
    resumes."""
    page = open_page(browser, server.url)
    start_table(page, ("duke", "duke"), first=1)
    assert page.text_content("#prompt") == "Bea to play (turn 1)."
    tap(page, choice(page, "tax", 1))
    labels = page.locator("[data-testid=choice]").all_text_contents()
    assert labels == ["Cal challenges Bea's Duke", "Dan challenges Bea's Duke", "You challenge Bea's Duke",
                      "Cal passes", "All passed"]
    assert page.locator("#advice[data-ready] #challenge-call").count() == 1  # advice if the others pass
    tap(page, choice(page, "challenge", 2))
    answer(page, False)  # Bea showed her Duke
    tap(page, choice(page, "reveal", 2) + '[data-role="duke"]')  # a fourth Duke: refused
    assert page.is_visible("#warnings")
    assert "Duke" in page.text_content("#warnings .rule")
    assert page.locator("#advice #recommended").count() == 0  # the warning is not advice
    assert steps_shown(page) == 2
    tap(page, "#warnings button.primary")  # correct it: the card is asked again
    assert page.get_attribute(".question", "data-field") == "reveals"
    answer(page, "contessa")
    assert page.is_hidden("#warnings") and steps_shown(page) == 3
    tap(page, choice(page, "income", 2))
    tap(page, choice(page, "steal:0", 3))  # Dan steals from me
    assert "steals from you" in page.text_content("#prompt")
    tap(page, "#undo")
    assert steps_shown(page) == 4 and page.text_content("#prompt") == "Dan to play (turn 3)."
    tap(page, choice(page, "income", 3))
    assert page.text_content("#prompt") == "You to play (turn 4)."
    assert page.locator("#advice #recommended").count() == 1  # my main action: advised
    assert "Revealed: Contessa" in page.text_content('.seat[data-seat="2"]')
    before = page.text_content("#app")
    page.reload()
    page.wait_for_selector("[data-testid=choice]")
    assert page.text_content("#app") == before
    assert page.errors == []


def test_a_phone_at_a_decision(server, browser):
    """390x844: at a reaction, at a follow-up question and at my main action, the prompt,
    the buttons and the acting seat's row are on the first screen with the advice below;
    every control is at least 44 px; the words say "your", "an Assassin", "1 coin"; a
    reload with a question open gives back the half-entered step; the start screen too."""
    page = open_page(browser, server.url, PHONE)
    assert not small_targets(page), small_targets(page)
    assert not unnamed(page), unnamed(page)
    assert page.evaluate("getComputedStyle(document.querySelector('#start-table')).outlineStyle") == "none"
    page.focus("#start-table")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")  # a keyboard's focus: a visible ring
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") == "solid"
    start_table(page, ("ambassador", "contessa"), first=1)
    tap(page, choice(page, "tax", 1))
    check_first_screen(page, "a reaction")
    assert page.locator("#advice[data-ready]").count() == 1  # if the others pass: below the buttons
    tap(page, choice(page, "challenge", 2))
    check_first_screen(page, "a question")
    assert page.text_content(".question") == "Did Bea show a Duke?"
    page.reload()
    page.wait_for_selector(".question")  # the half-entered challenge is back
    answer(page, False)
    tap(page, choice(page, "reveal", 2) + '[data-role="contessa"]')
    tap(page, choice(page, "income", 2))
    tap(page, choice(page, "income", 3))
    page.wait_for_selector("#advice[data-ready]")
    check_first_screen(page, "my main action")
    assert "1 coin" not in page.text_content("#strip") or "1 coins" not in page.text_content("#strip")
    page.locator("#advice details.why summary").first.click() if page.locator("details.why").count() else None
    page.locator("#log summary").click()
    assert not small_targets(page), small_targets(page)
    assert not unnamed(page), unnamed(page)
    assert not bad_words(page), bad_words(page)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390 + 1, f"the page is wider than the phone ({width}px)"
    assert page.errors == []


def test_saved_games_renamed_downloaded_deleted_and_a_bad_upload_refused(server, browser, tmp_path):
    """The saved games list: a game by its players, renamed, downloaded, deleted (a second
    tap confirms); a file that is no game is refused with its reason, which names no
    server path, and is not listed."""
    page = open_page(browser, server.url, PHONE)
    start_table(page, ("duke", "captain"), first=0, names=["Ann", "Bea"])
    page.goto(server.url + "#/")
    page.wait_for_selector("#saved li")
    row = page.locator("#saved li", has_text="Ann, Bea").first
    gid = row.get_attribute("data-id")
    row.locator("button.rename").click()
    page.fill(".rename-input", "friday-night")
    tap(page, page.get_by_role("button", name="Save name"))
    row = page.locator('#saved li[data-id="friday-night"]')
    assert row.count() == 1 and not (server.games_dir / f"{gid}.jsonl").exists()
    with page.expect_download() as dl:
        row.get_by_role("link", name="Download friday-night").click()
    got, disk = Path(dl.value.path()).read_text().splitlines(), (server.games_dir / "friday-night.jsonl").read_text().splitlines()
    assert got[1:] == disk[1:] and json.loads(got[0]) == {**json.loads(disk[0]), "names": ["Ann", "Bea"]}  # names kept
    row.locator("button.delete").click()
    assert row.locator("button.delete").text_content() == "Really delete?"  # nothing gone yet
    tap(page, row.locator("button.delete"))
    assert page.locator('#saved li[data-id="friday-night"]').count() == 0
    assert not (server.games_dir / "friday-night.jsonl").exists()
    junk = tmp_path / "notes.jsonl"
    junk.write_text("hello\n")
    before = sorted(p.name for p in server.games_dir.iterdir())
    page.set_input_files("#upload", str(junk))
    page.wait_for_selector("#toast:not([hidden])")
    toast = page.text_content("#toast")
    assert toast.startswith("not a game file") and "notes.jsonl" in toast and str(server.games_dir) not in toast
    assert sorted(p.name for p in server.games_dir.iterdir()) == before
    assert not small_targets(page) and not unnamed(page) and not bad_words(page)
    assert page.errors == []
