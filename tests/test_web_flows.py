"""The long flows of the page in headless Chromium (slow): a whole advised 4-player game
entered by taps -- a rule-breaking entry corrected, an undo, the server killed and
restarted mid-game and the game resumed -- then replayed step by step; a practice match
played to the end; the same game on a phone-sized viewport.  One server (with the
search) per module; the driver is `tests/test_web_browser.py`'s.
"""
from __future__ import annotations


import pytest

from coupjax.tracker import Tracker, public_view
from tests.test_web_browser import (DESKTOP, PHONE, answer, bad_words, browser, check_first_screen,  # noqa: F401
                                    choice, enter_event, open_page, scripted_match, small_targets, start_table,
                                    serve_games, steps_shown, tap)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from serve_games(tmp_path_factory, "flows", search=True)


def game_id(page) -> str:
    return page.url.split("#/game/")[1].split("/")[0]


def advice_shown(page):
    """(for whom, the recommended action) of the advice on screen, or None."""
    g = page.evaluate("(() => { const s = window.coupjax.state; return s.screen === 'replay' ? s.replay : s.game; })()")
    rec = (g.get("advice") or {}).get("recommendation")
    return (g.get("advice_for"), rec["action"]) if rec else None


def phone_checks(page, where, words):
    """At a decision on a phone: the first screen, the 44 px rule; the words are collected."""
    check_first_screen(page, where)
    small = small_targets(page)
    assert not small, f"{where}: {small}"
    words.update(bad_words(page))


def play_whole_game(page, server, seed, restart_at=None, undo_at=None, each=None):
    """Enter every step of `scripted_match(seed)` by taps as seat 0 (``each(k)`` before
    step k); returns (game id, match)."""
    m = scripted_match(seed)
    start_table(page, ("duke", "duke"), first=1)
    gid = game_id(page)
    advised, undone = 0, False
    for k, ev in enumerate(m.events):
        if k == 2:  # Cal loses a card: first a fourth Duke (refused, kept as a warning), then corrected
            tap(page, choice(page, "reveal", 2) + '[data-role="duke"]')
            assert page.is_visible("#warnings") and "Duke" in page.text_content("#warnings .rule")
            assert steps_shown(page) == 2
            tap(page, "#warnings button.primary")
            answer(page, ev["reveals"][0]["role"])
            assert page.is_hidden("#warnings")
            continue
        if undo_at is not None and k >= undo_at and not undone and ev["phase"] == "action" and ev["seat"] != 0:
            undone = True
            wrong = [a for a in page.locator("[data-testid=choice]").evaluate_all(
                "els => els.map(e => e.dataset.action)") if a != ev["action"]][0]
            tap(page, choice(page, wrong, ev["seat"]))
            assert steps_shown(page) == k + 1
            tap(page, "#undo")
            assert steps_shown(page) == k
        if k == restart_at:
            server.kill()
            server.start()
            page.reload()
            page.wait_for_selector("[data-testid=choice]")
            assert steps_shown(page) == k
        if each is not None:
            each(k)
        if ev["seat"] == 0 and ev["phase"] == "action":
            assert page.locator("#advice #recommended").count() == 1, f"no advice at step {k}"
            assert page.locator("#advice .val-row").count() >= 1  # the search's values
            advised += 1
        enter_event(page, ev, me=0)
        assert steps_shown(page) == k + 1, f"step {k}: {ev}"
    assert page.locator("#game-over").count() == 1
    assert advised >= 1 and undone == (undo_at is not None)
    return gid, m


def check_record(server, gid, m):
    t = Tracker.load(server.games_dir / f"{gid}.jsonl")
    assert [public_view(e) for e in t.events] == [public_view(e) for e in m.events]


def test_whole_advised_game_with_warning_undo_restart_and_replay(server, browser):
    """Quick twin: test_taps_a_warning_corrected_advice_undo_and_reload."""
    page = open_page(browser, server.url, DESKTOP)
    gid, m = play_whole_game(page, server, seed=11, restart_at=9, undo_at=6)
    check_record(server, gid, m)
    page.goto(server.url + f"#/replay/{gid}")
    page.wait_for_selector("#step-label")
    assert page.text_content("#step-label") == f"Step 0 of {len(m.events)}"
    tap(page, "#forward")
    tap(page, "#forward")
    assert page.text_content("#step-label") == f"Step 2 of {len(m.events)}"
    tap(page, "#back")
    assert page.text_content("#step-label") == f"Step 1 of {len(m.events)}"
    assert "challenges" in page.text_content("#replay-event")
    for _ in range(5):
        tap(page, "#forward")
    tap(page, "#last")
    assert "Game over" in page.text_content("#replay-event")
    assert page.errors == []


def test_practice_match_to_the_end(server, browser):
    """Quick twin: test_practice_to_the_end_and_its_replay."""
    page = open_page(browser, server.url, DESKTOP)
    page.select_option("#p-policy", "random")
    page.click("#start-practice")
    page.wait_for_selector("[data-testid=choice], #game-over")
    asked = False
    for _ in range(300):
        if page.locator("#game-over").count():
            break
        if not asked:
            tap(page, "#ask-advice")
            assert page.locator("#ask #recommended").count() == 1
            asked = True
        tap(page, page.locator("[data-testid=choice]").first)
    assert page.locator("#game-over").count() == 1
    # the practice match shows the true hands at the end: every opponent still holding cards
    # (none when the player won; the match's seed is drawn, so either happens)
    game = page.evaluate("window.coupjax.state.game")
    assert game["true_hands"] is not None
    held = sum(1 for s, hand in enumerate(game["true_hands"]) if s != game["seat"] and hand)
    assert page.locator(".true-hand").count() == held
    assert page.errors == []


def test_whole_game_on_a_phone(server, browser):
    """Quick twin: test_a_phone_at_a_decision.

    390x844, a whole game: at every step the prompt, the buttons and the acting seat's row
    are on the first screen (advice below), every control is 44 px or more, no label says
    "you's", "a Assassin" or "1 coins"; then its replay on the phone, step by step, shows
    the advice the live page showed at the same step (the "if everyone before you passes"
    advice included) under the same rules."""
    page = open_page(browser, server.url, PHONE)
    words, live = set(), {}

    def each(k):
        phone_checks(page, f"live step {k}", words)
        live[k] = advice_shown(page)

    gid, m = play_whole_game(page, server, seed=5, each=each)
    check_record(server, gid, m)
    words.update(bad_words(page))
    assert page.locator("#game-over #narration li").count() >= 1  # the step that ended it is shown
    assert page.locator("#entry").count() == 0  # no empty box under "Game over"
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390 + 1, f"the page is wider than the phone ({width}px)"
    assert any(x and x[0] == "if_passed" for x in live.values()) and any(x and x[0] == "now" for x in live.values())
    page.goto(server.url + f"#/replay/{gid}")
    page.wait_for_selector("#step-label")
    for k in range(len(m.events)):
        if k:
            tap(page, "#forward")
        assert page.text_content("#step-label") == f"Step {k} of {len(m.events)}"
        if k in live:  # (step 2 is entered as a warning and its correction: no check before it)
            assert advice_shown(page) == live[k], f"replay step {k}: {advice_shown(page)} != live {live[k]}"
        small = small_targets(page)
        assert not small, f"replay step {k}: {small}"
        words.update(bad_words(page))
    assert not words, sorted(words)
    assert page.errors == []


def test_practice_on_a_phone(server, browser):
    """Quick twin: test_practice_names_its_bots_and_narrates_their_moves.

    A practice match on a phone to its end, a bot named: the prompt says what the bots
    did since my last move, the first-screen and 44 px rules hold at every decision, the
    ending is shown under "Game over", no label reads wrong."""
    page = open_page(browser, server.url, PHONE)
    page.select_option("#p-policy", "random")
    page.fill("#p-name-1", "Zoe")
    page.click("#start-practice")
    page.wait_for_selector("[data-testid=choice], #game-over")
    words, narrated, asked = set(), 0, False
    for k in range(300):
        if page.locator("#game-over").count():
            break
        phone_checks(page, f"practice decision {k}", words)
        narrated += page.locator("#narration li").count() > 0
        if not asked:
            tap(page, "#ask-advice")
            phone_checks(page, "practice with advice", words)
            asked = True
        tap(page, page.locator("[data-testid=choice]").first)
    assert page.locator("#game-over").count() == 1 and page.locator("#game-over #narration li").count() >= 1
    assert narrated >= 1 and "Zoe" in page.text_content("#app")
    words.update(bad_words(page))
    assert not words, sorted(words)
    assert page.errors == []
