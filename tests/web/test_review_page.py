"""The game review in a real browser: after a game, "Review your game" opens the chart of
every seat's win chance (drawn in the page), the timeline of your decisions with their labels,
and, for a decision clicked, the board you saw then with the action played and the best one.

The game itself is played through the SDK against the page's own engine (the browser test of
a whole game is in test_browser.py); the seat's token is put where the page keeps it (this
tab's session storage), as the lobby does when it starts a game. The chart's screenshot is
saved under tests/web/artifacts/review-chart.png.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from clients.sdk import Client
from tests.clients.conftest import requires_ai
from tests.review.support import play
from tests.web.conftest import ARTIFACTS, WebServer, start_web, stop_web
from tests.web.test_browser import (  # noqa: F401 (browser: the fixture)
    PHONE,
    browser,
    new_page,
    width_fits,
)

pytestmark = [requires_ai, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def web() -> Iterator[WebServer]:
    """``ascension web`` whose engine reviews with short searches (it reads these)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ENGINE_REVIEW_BUDGET_MS", "30")
        env.setenv("ENGINE_ANALYSIS_MAX_ITERATIONS", "30")
        env.setenv("ENGINE_ANALYSIS_GRACE_SECONDS", "20")
        server = start_web("--bot", "random", "--ai-processes", "2")
    try:
        yield server
    finally:
        stop_web(server.proc)


def test_review_after_a_game(browser: Any, web: WebServer) -> None:  # noqa: F811
    with Client(web.engine, timeout=60.0) as c:
        g, s, _ = play(c, 71)
        assert s.over
        expected = list(c.review(g.game_id, g.token(0)))
    page = new_page(browser)
    page.context.add_init_script(
        f"sessionStorage.setItem('ascension.token.{g.game_id}', '{g.token(0)}')"
    )
    page.goto(f"{web.url}#/play/{g.game_id}")
    page.wait_for_selector(".scores", timeout=30_000)
    page.click("#review-link")  # offered under the final score
    page.wait_for_url(re.compile(r"#/review/"))
    status = page.locator(".review .status")
    deadline = time.monotonic() + 60
    while "All" not in status.inner_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert f"All {len(expected)} decisions rated" in status.inner_text()

    # The chart: drawn in the page, one line per seat, one point per decision of yours
    chart = page.locator(".review-chart svg")
    assert chart.locator("polyline.line").count() == 2
    points = chart.locator("polyline.seat-0").get_attribute("points") or ""
    assert len(points.split()) == len(expected)
    assert chart.locator("circle.pt").count() == len(expected)
    assert chart.locator("text.axis", has_text="50%").count() == 1
    legend = page.locator(".review-chart figcaption").inner_text()
    assert "You" in legend and "B" in legend
    page.locator(".review-chart").screenshot(path=str(ARTIFACTS / "review-chart.png"))

    # The timeline: every decision with its label, the better move where there is one
    items = page.locator("button.review-item")
    assert items.count() == len(expected)
    for i in (0, len(expected) // 2, len(expected) - 1):
        text = items.nth(i).inner_text()
        r = expected[i]
        # rounds, as the table counts them (one turn of each of the 2 players)
        assert f"Round {(r.turn - 1) // 2 + 1}" in text
        assert r.label.title in text and r.description in text
        if r.differs and r.label.name != "BEST":
            assert f"better: {r.best_description}" in text
    tally = page.locator(".review-tally").inner_text()
    assert re.search(r"Best \d+.*Good \d+.*Inaccuracy \d+.*Mistake \d+.*Blunder \d+", tally, re.S)

    # A decision clicked: the board then, the action played and the best one among the options
    pick = next((i for i, r in enumerate(expected) if r.differs), 0)
    items.nth(pick).click()
    detail = page.locator(".review-detail")
    r = expected[pick]
    assert (
        f"Round {(r.turn - 1) // 2 + 1}, version {r.version}"
        in detail.locator("h2").first.inner_text()
    )
    assert detail.locator(".ring > li.space").count() == 7
    assert detail.locator(".seat.mine").count() == 1
    assert r.description in detail.locator("li.played").inner_text()
    assert r.best_description in detail.locator("li.best").inner_text()
    assert items.nth(pick).get_attribute("aria-pressed") == "true"
    page.screenshot(path=str(ARTIFACTS / "review-1280x800.png"), full_page=True)
    # the chart's points select too
    chart.locator("circle.pt").nth(0).click()
    assert items.nth(0).get_attribute("aria-pressed") == "true"
    assert not page.errors, page.errors


def test_the_end_and_the_review_fit_a_phone(browser: Any, web: WebServer) -> None:  # noqa: F811
    """At 390 px: the final score and the review as wide as the screen, the chart's labels
    readable and its points big enough to tap."""
    with Client(web.engine, timeout=60.0) as c:
        g, s, _ = play(c, 72)
        assert s.over
    page = new_page(browser, *PHONE)
    page.context.add_init_script(
        f"sessionStorage.setItem('ascension.token.{g.game_id}', '{g.token(0)}')"
    )
    page.goto(f"{web.url}#/play/{g.game_id}")
    page.wait_for_selector(".scores", timeout=30_000)
    width_fits(page, PHONE[0])
    headings = page.locator(".scores thead th").all_inner_texts()
    assert "Total" in headings and "Coins" not in headings  # (no coins in Skulls & Sails)
    total = page.locator(".scores thead th").last.bounding_box()
    assert total is not None and total["x"] + total["width"] <= PHONE[0]
    page.screenshot(path=str(ARTIFACTS / "end-390x844.png"), full_page=True)
    page.click("#review-link")
    status = page.locator(".review .status")
    deadline = time.monotonic() + 60
    while "All" not in status.inner_text() and time.monotonic() < deadline:
        time.sleep(0.1)  # (the chart is drawn again as each rating arrives)
    width_fits(page, PHONE[0])
    label = page.locator(".review-chart text.axis", has_text="50%").bounding_box()
    assert label is not None and label["height"] >= 10, f"a label {label} px high"
    hit = page.locator(".review-chart circle.hit").first.bounding_box()
    assert hit is not None and min(hit["width"], hit["height"]) >= 24, hit
    # a tap beside the dot, within its target, selects it
    page.locator(".review-chart circle.hit").first.click(position={"x": 4, "y": hit["height"] / 2})
    assert page.locator("button.review-item").first.get_attribute("aria-pressed") == "true"
    page.screenshot(path=str(ARTIFACTS / "review-390x844.png"), full_page=True)
    assert not page.errors, page.errors
