"""Practice and saved games on a phone (issue 43, point 4): three different opponents
chosen seat by seat in the form, and "Advice, please" with its answer on the first screen
at a decision with 10 options; a game renamed with spaces, downloaded and uploaded back
with its players' names.  A real server and headless Chromium (the driver of
tests/test_web_browser.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_web_browser import PHONE, browser, serve_games, open_page, start_table, tap  # noqa: F401 - a fixture

OPPONENTS = {1: "honest", 2: "aggressive", 3: "random"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from serve_games(tmp_path_factory, "practice-phone", search=False)


def first_screen(page, selector) -> bool:
    """The element's box lies within the phone's first screen, the page not scrolled."""
    box = page.eval_on_selector(selector, "e => { const r = e.getBoundingClientRect(); "
                                          "return [r.top + window.scrollY, r.bottom + window.scrollY]; }")
    return page.evaluate("window.scrollY") == 0 and 0 <= box[0] and box[1] <= 844


def start_practice(page, server):
    page.goto(server.url + "#/")
    page.wait_for_selector("#start-practice")
    page.select_option("#p-players", "4")
    for seat, spec in OPPONENTS.items():
        page.select_option(f"#p-policy-{seat}", spec)
    page.fill("#p-name-2", "Cal Mc Coy")  # a name with spaces
    tap(page, "#start-practice")
    page.wait_for_selector("#prompt, #game-over")


def ten_options(page) -> bool:
    """Play income, then pass, until a main action with 10 options (False if the match ends first)."""
    for _ in range(60):
        if page.locator("#game-over").count():
            return False
        acts = page.locator("[data-testid=choice]").evaluate_all("els => els.map(e => e.dataset.action)")
        if len(acts) == 10 and "income" in acts:
            return True
        pick = "income" if "income" in acts else "pass" if "pass" in acts else acts[0]
        tap(page, f'[data-testid=choice][data-action="{pick}"]')
    return False


def test_practice_against_three_opponents_with_advice_on_the_first_screen(server, browser):
    page = open_page(browser, server.url, PHONE)
    for _ in range(5):  # a match's seed is the clock's: the bots may put me out first, then play another
        start_practice(page, server)
        bots = page.locator(".seat .bot").all_text_contents()
        assert bots == ["Bot: Honest", "Bot: Aggressive", "Bot: Random"], bots
        assert "Cal Mc Coy" in page.text_content("#strip")
        if ten_options(page):
            break
    else:
        pytest.fail("no decision with 10 options in 5 matches")
    page.evaluate("window.scrollTo(0, 0)")
    assert first_screen(page, "#ask-advice")
    tap(page, "#ask-advice")
    page.wait_for_selector("#recommended")
    page.evaluate("window.scrollTo(0, 0)")
    assert first_screen(page, "#recommended") and first_screen(page, "#reasons"), "the answer is below the fold"
    assert page.text_content("#recommended b") in page.locator("[data-testid=choice]").all_text_contents()
    assert page.errors == []


def test_a_game_renamed_with_spaces_downloaded_and_uploaded_back_with_its_names(server, browser, tmp_path):
    page = open_page(browser, server.url, PHONE)
    start_table(page, ("duke", "captain"), first=0, names=["Ann", "Bea Li", "Cal"])
    page.goto(server.url + "#/")
    row = page.locator("#saved li", has_text="Ann, Bea Li, Cal").first
    row.locator("button.rename").click()
    assert page.input_value(".rename-input") == "Ann, Bea Li, Cal"  # the name the list shows
    page.fill(".rename-input", "Friday night game #1")
    tap(page, page.get_by_role("button", name="Save name"))
    row = page.locator('#saved li[data-id="Friday-night-game-1"]')
    assert row.locator(".g-name").text_content() == "Friday night game #1"
    with page.expect_download() as dl:
        row.get_by_role("link", name="Download Friday night game #1").click()
    text = Path(dl.value.path()).read_text()
    assert json.loads(text.splitlines()[0])["names"] == ["Ann", "Bea Li", "Cal"]
    upload = tmp_path / "friday.jsonl"
    upload.write_text(text)
    page.set_input_files("#upload", str(upload))
    page.wait_for_url("**/#/replay/**")
    page.wait_for_selector("#strip")
    strip = page.text_content("#strip")
    assert "Bea Li" in strip and "Seat 1" not in strip, strip
    assert page.errors == []
