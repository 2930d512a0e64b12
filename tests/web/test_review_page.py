"""The game review in a real browser: after a game, "Review your game" opens the chart of
every seat's win chance (drawn in the page), the timeline of your decisions with their labels,
and, for a decision clicked, the board you saw then with the action played and the best one.

The game itself is played through the SDK against the page's own engine (the browser test of
a whole game is in test_browser.py); the seat's token is put where the page keeps it (this
tab's session storage), as the lobby does when it starts a game. The chart's screenshot is
saved under tests/web/artifacts/review-chart.png.

After a game the page also shows the key moments (as the SDK's key_moments chooses them), the
other seat's review with the same token (each seat's accuracy side by side), the chances that
are still a guess marked, and "Practice from here", which opens a new game at that decision.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from clients.sdk import Client
from clients.sdk.review import accuracy, key_moments
from tests.clients.conftest import requires_ai
from tests.review.support import play
from tests.web.conftest import ARTIFACTS, WebServer, start_web, stop_web
from tests.web.test_browser import (  # noqa: F401 (browser: the fixture)
    PHONE,
    browser,
    new_page,
    width_fits,
)

expect = pytest.importorskip("playwright.sync_api").expect
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


GUESS_TITLE = "Early in the game: an estimate, not yet a forecast"


def open_review(page: Any, web: WebServer, game_id: str, token: str, rated: int) -> None:
    """The review page of ``game_id`` with ``token`` kept in this tab, once all is rated."""
    page.context.add_init_script(f"sessionStorage.setItem('ascension.token.{game_id}', '{token}')")
    page.goto(f"{web.url}#/review/{game_id}")
    expect(page.locator(".review .status")).to_contain_text(
        f"All {rated} decisions rated", timeout=60_000
    )


def test_key_moments_the_other_seat_and_practice(browser: Any, web: WebServer) -> None:  # noqa: F811
    with Client(web.engine, timeout=60.0) as c:
        g, s, _ = play(c, 73)
        assert s.over
        mine = list(c.review(g.game_id, g.token(0)))
        theirs = list(c.review(g.game_id, g.token(0), seat=1))  # (a seat's token, after the game)
    page = new_page(browser)
    open_review(page, web, g.game_id, g.token(0), len(mine))

    # The key moments: the SDK's, as links that select their decision
    moments = page.locator(".review-moments button.moment")
    expect(moments).to_have_count(3)
    want = [str(r.version) for r in key_moments(mine)]
    assert [moments.nth(i).get_attribute("data-version") for i in range(3)] == want
    moments.nth(1).click()
    item = page.locator(f"button.review-item[data-version='{want[1]}']")
    expect(item).to_have_attribute("aria-pressed", "true")
    expect(page.locator(".review-detail h2").first).to_contain_text(f"version {want[1]}")

    # A chance early in the game is marked as a guess, on the timeline and on the chart
    early = next(i for i, r in enumerate(mine) if r.chance_is_guess)
    guess = page.locator("button.review-item").nth(early).locator(".chance.guess")
    expect(guess).to_have_attribute("title", GUESS_TITLE)
    expect(guess).to_contain_text("~")
    expect(page.locator("button.review-item").nth(early)).to_contain_text("(early guess)")
    assert page.locator(".review-chart rect.guess-zone").count() >= 1
    assert page.locator(".review-chart circle.pt.guess").count() == sum(
        r.chance_is_guess for r in mine
    )
    if not mine[-1].chance_is_guess:
        expect(page.locator("button.review-item").last.locator(".chance.guess")).to_have_count(0)

    # The other seat's review with the same token, each seat's accuracy side by side
    tabs = page.locator(".review-seats button.seat-tab")
    expect(tabs).to_have_count(2)
    expect(tabs.locator(".whose")).to_have_text(["Your decisions", "B's decisions"])
    expect(tabs.nth(0).locator(".accuracy")).to_have_text(f"Accuracy {accuracy(mine):.0f}%")
    expect(tabs.nth(1).locator(".accuracy")).to_have_text("not reviewed yet")
    tabs.nth(1).click()
    expect(page.locator(".review-col h2")).to_have_text("B's decisions")
    expect(page.locator(".review .status")).to_contain_text(
        f"All {len(theirs)} decisions rated", timeout=60_000
    )
    expect(tabs.nth(1)).to_have_attribute("aria-pressed", "true")
    expect(tabs.nth(1).locator(".accuracy")).to_have_text(f"Accuracy {accuracy(theirs):.0f}%")
    expect(tabs.nth(0).locator(".accuracy")).to_have_text(f"Accuracy {accuracy(mine):.0f}%")
    items = page.locator("button.review-item")
    expect(items).to_have_count(len(theirs))
    pick = next(i for i, r in enumerate(theirs) if not r.chance_is_guess and r.turn > 2)
    items.nth(pick).click()
    r = theirs[pick]
    detail = page.locator(".review-detail")
    expect(detail.locator("h2").first).to_contain_text(f"version {r.version}")
    expect(detail.locator(".review-moves dt").first).to_have_text("B played")
    expect(detail.locator("dd.played")).to_contain_text(r.description)
    assert page.locator(".review-chart polyline.seat-1.mine").count() == 1
    # The board as B saw it names B, not "You" (the reader is seat 0)
    panel = detail.locator(".review-board section.seat.mine")
    expect(panel.locator("h3")).to_contain_text("B (seat 2)")
    expect(panel.locator(".zone h4").first).to_have_text("B's hand")
    expect(detail.locator(".review-board .ship", has_text="You")).to_have_count(0)
    expect(detail.locator(".review-board .game-header")).not_to_contain_text("Your move")
    page.screenshot(path=str(ARTIFACTS / "review-other-seat-1400x900.png"), full_page=True)

    # Practice from here (B's decision: the seat is asked for), as this tab's seat in a new game
    page.click("#practice")
    page.wait_for_url(re.compile(r"#/play/(?!" + re.escape(g.game_id) + r"$)[\w-]+$"))
    origin = page.locator(".practice-origin")
    expect(origin).to_contain_text(f"Practice from turn {r.turn} (round {(r.turn - 1) // 2 + 1})")
    expect(origin.locator("a")).to_have_attribute("href", f"#/review/{g.game_id}")
    expect(page.locator(".game-top .your-move")).to_be_visible(timeout=30_000)
    expect(page.locator(".game-top .turn").first).to_have_text(f"Round {(r.turn - 1) // 2 + 1}")
    expect(page.locator("#actions-title")).to_have_text("Your move")
    practice_id = page.url.rsplit("/", 1)[1]
    token = page.evaluate(f"sessionStorage.getItem('ascension.token.{practice_id}')")
    with Client(web.engine, timeout=60.0) as c:
        view = c.get_view(practice_id, token)
    assert view.seat == 1 and view.to_move == 1
    page.screenshot(path=str(ARTIFACTS / "practice-1400x900.png"), full_page=False)
    assert not page.errors, page.errors


def test_during_the_game_only_your_seat_and_practice_on_a_phone(
    browser: Any,  # noqa: F811
    web: WebServer,
) -> None:
    """While the game goes on: no other seat to review; practice from your own decision,
    at 390 px, and back to the review from the practice game's line."""
    with Client(web.engine, timeout=60.0) as c:
        g, s, _ = play(c, 74, turns=6)
        assert not s.over
        mine = list(c.review(g.game_id, g.token(0)))
    page = new_page(browser, *PHONE)
    open_review(page, web, g.game_id, g.token(0), len(mine))
    expect(page.locator(".review-seats")).to_be_hidden()
    expect(page.locator(".review-moments button.moment")).to_have_count(min(3, len(mine)))
    width_fits(page, PHONE[0])
    page.locator(".review-moments button.moment").first.click()
    r = key_moments(mine)[0]
    # a refusal is said under the button (the engine's words, as the page says its errors)
    refusal = '{"code":"resource_exhausted","message":"RATE_LIMITED: 6 practice games a minute"}'
    route = "**/ascension.v1.Engine/PracticeFromHere"
    page.route(
        route,
        lambda rt: rt.fulfill(status=429, content_type="application/json", body=refusal),
    )
    page.click("#practice")
    expect(page.locator(".practice-message")).to_contain_text(
        "Could not start a practice game: RATE_LIMITED: 6 practice games a minute "
        "(resource exhausted)"
    )
    page.unroute(route)
    page.click("#practice")
    page.wait_for_url(re.compile(r"#/play/(?!" + re.escape(g.game_id) + r"$)[\w-]+$"))
    expect(page.locator(".practice-origin")).to_contain_text(f"Practice from turn {r.turn} ")
    expect(page.locator(".game-top .your-move")).to_be_visible(timeout=30_000)
    # this early, the hints' chances are a guess too
    page.locator("button.hint").click()
    expect(page.locator(".hint-list li").first).to_contain_text("(early guess)", timeout=30_000)
    expect(page.locator(".hint-list .chance.guess").first).to_have_attribute("title", GUESS_TITLE)
    width_fits(page, PHONE[0])
    page.screenshot(path=str(ARTIFACTS / "practice-390x844.png"), full_page=False)
    page.locator(".practice-origin a").click()
    page.wait_for_url(re.compile(r"#/review/" + re.escape(g.game_id) + "$"))
    expect(page.locator(".review .status")).to_contain_text(f"All {len(mine)} decisions rated")
    assert not page.errors, page.errors


def test_another_seat_chosen_while_yours_is_rated(browser: Any, web: WebServer) -> None:  # noqa: F811
    """Your review is left for another seat's (the engine rates one at a time per caller) and
    asked again, from its store, when you come back to it."""
    with Client(web.engine, timeout=60.0) as c:
        g, s, _ = play(c, 75)
        assert s.over
    page = new_page(browser)
    page.context.add_init_script(
        f"sessionStorage.setItem('ascension.token.{g.game_id}', '{g.token(0)}')"
    )
    page.goto(f"{web.url}#/review/{g.game_id}")
    tabs = page.locator(".review-seats button.seat-tab")
    tabs.nth(1).click()  # (as soon as it is there: yours is still being rated)
    status = page.locator(".review .status")
    expect(status).to_contain_text(re.compile(r"All \d+ decisions rated"), timeout=60_000)
    tabs.nth(0).click()
    expect(status).to_contain_text(re.compile(r"All \d+ decisions rated"), timeout=60_000)
    with Client(web.engine, timeout=60.0) as c:
        mine = list(c.review(g.game_id, g.token(0)))
        theirs = list(c.review(g.game_id, g.token(0), seat=1))
    expect(page.locator("button.review-item")).to_have_count(len(mine))
    expect(tabs.nth(1).locator(".accuracy")).to_have_text(f"Accuracy {accuracy(theirs):.0f}%")
    expect(tabs.nth(0).locator(".accuracy")).to_have_text(f"Accuracy {accuracy(mine):.0f}%")
    assert not page.errors, page.errors
