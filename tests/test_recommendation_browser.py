"""The issue's scenario entered on the page in a real Chromium: Ann, caught bluffing Duke,
claims Duke again; the one recommendation shown is the challenge, settled by the public
fact (the data behind it: tests/test_recommendation.py)."""
from __future__ import annotations

from tests.test_recommendation import caught_duke_claims_again
from tests.test_web_browser import browser, enter_event, open_page, server, start_table  # noqa: F401 (fixtures)


def test_a_public_fact_recommends_the_challenge_on_the_page(server, browser):  # noqa: F811
    m = caught_duke_claims_again()
    page = open_page(browser, server.url)
    start_table(page, ("assassin", "ambassador"), first=0, seat=1)
    for ev in m.events:
        enter_event(page, ev, 1)
    page.wait_for_selector("#advice[data-ready]")
    assert page.locator("#advice #recommended").count() == 1
    assert "challenge" in page.text_content("#advice #recommended b").lower()
    assert "public fact" in page.text_content("#advice #recommended")
    assert "cannot hold a Duke" in page.text_content("#advice #reasons")
    assert page.locator("#advice #block-call").count() == 0 and "Challenge call" not in page.text_content("#advice")
    assert not page.errors
