"""The page in a real browser (Debian's headless Chromium, driven by Playwright).

One run plays a whole game against a bot from the lobby, with the keyboard where it can
(keys 1-9 take the listed actions, A plays the whole hand), then watches a bots-only game
from the lobby's list to its end, and looks at the page on a phone-sized screen.
Screenshots are saved under tests/web/artifacts/.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.clients.conftest import requires_ai
from tests.web.conftest import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, WebServer, have_chromium, missing

pytestmark = [requires_ai, pytest.mark.timeout(240)]

sync_api = pytest.importorskip("playwright.sync_api")
Page = Any  # playwright.sync_api.Page
GAME_TIMEOUT_S = 150


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not have_chromium():
        missing(f"Chromium ({CHROMIUM})")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def new_page(browser: Any, width: int = 1280, height: int = 800) -> Any:
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    return page


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def choose(labels: list[str]) -> int:
    """A quick player: play cards, then defeat or acquire, answer choices, then end the turn."""

    def first(pattern: str) -> int | None:
        return next((i for i, t in enumerate(labels) if re.search(pattern, t)), None)

    for pattern in (
        r"^Play (?!all)",
        r"^Defeat",
        r"^Acquire",
        r"^(?!End your turn|Move your ship)",
    ):
        i = first(pattern)
        if i is not None:
            return i
    return 0


def changed(page: Any, version: str | None, timeout: float = 30.0) -> None:
    """Wait until the action list is gone or shows another version of the game.

    (Polled from here: the page's Content-Security-Policy forbids the string evaluation that
    Playwright's wait_for_function would need.)"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        actions = page.query_selector(".action-list")
        if actions is None or actions.get_attribute("data-version") != version:
            return
        time.sleep(0.02)
    pytest.fail(f"the page still shows version {version} after {timeout} s")


def play_to_the_end(page: Any) -> int:
    moves = 0
    deadline = time.monotonic() + GAME_TIMEOUT_S
    per_turn = 0
    while time.monotonic() < deadline:
        page.wait_for_selector(".action-list button.act, .scores", timeout=60_000)
        if page.query_selector(".scores"):
            return moves
        actions = page.query_selector(".action-list")
        if actions is None:
            continue
        version = actions.get_attribute("data-version")
        buttons = actions.query_selector_all("button.act")
        labels = [re.sub(r"^[1-9A]\s*", "", b.inner_text()).strip() for b in buttons]
        if not labels:
            continue
        if "Play all your cards" in labels and moves % 2 == 0:
            page.keyboard.press("a")  # the whole hand at once, by the keyboard
        else:
            i = choose([lb for lb in labels if lb != "Play all your cards"])
            per_turn = 0 if labels[i].startswith("End") else per_turn + 1
            if per_turn > 30 and "End your turn" in labels:  # never loop within one turn
                i = labels.index("End your turn")
            if i < 9:
                page.keyboard.press(str(i + 1))
            else:
                buttons[i].click()
        moves += 1
        changed(page, version)
    pytest.fail(f"the game did not end within {GAME_TIMEOUT_S} s ({moves} moves)")


def game_of(page: Any) -> str:
    m = re.search(r"#/(?:play|watch)/([\w-]+)$", page.url)
    assert m, page.url
    return m.group(1)


def test_play_a_whole_game_against_a_bot_then_watch_one(browser: Any, web: WebServer) -> None:
    page = new_page(browser)
    page.goto(web.url + "?pace=0")
    page.wait_for_selector("#start")
    shot(page, "lobby-1280x800")
    # The play options of `ascension web` fill the form.
    assert page.input_value("#bots") == "random" and page.input_value("#seed") == "7"
    page.click("#start")
    page.wait_for_selector(".action-list button", timeout=30_000)
    assert "#/play/" in page.url
    game_id = game_of(page)
    # What a player sees: the ring of spaces (six center-row spaces and The Deep) ...
    assert page.locator(".ring > li.space").count() == 7
    assert "The Deep" in (page.locator(".ring .deep").get_attribute("aria-label") or "")
    assert page.get_by_role("group", name=re.compile(r"^Thukal")).count() >= 1
    # ... costs on the center row, the piles, your hand, the other seat, the log, the actions.
    assert re.search(r"\b\d+[RP]\b", page.locator(".ring").inner_text())
    assert page.get_by_role("group", name=re.compile(r"^Mystic, Hero")).count() == 1
    assert page.get_by_role("group", name=re.compile(r"^Your hand: 5 cards")).count() == 1
    assert "Seat 2 (random)" in page.locator(".others-area").inner_text()
    assert page.get_by_role("log").count() == 1 and page.get_by_role("status").count() == 1
    shot(page, "game-start-1280x800")
    # The first choice is where to place the ship: offered on the spaces too.
    place = page.locator(".ring .card-actions button").first
    assert place.inner_text() == "Place ship"
    moves = play_to_the_end(page)
    assert moves > 20
    page.wait_for_selector(".scores")
    result = page.locator(".scores h2").inner_text()
    assert re.match(r"You win!|Seat 2 \(random\) wins\.|The game is over\.", result)
    assert page.locator(".scores tbody tr").count() == 2
    log = page.locator(".log").inner_text()
    assert re.search(r"Seat 2 \(random\) (played|acquired|defeated)", log), (
        "the bot's moves, in words"
    )
    assert re.search(r"You (played|acquired|defeated)", log)
    shot(page, "game-over-1280x800")
    assert not page.errors, page.errors

    # Spectators (over gRPC-Web): one starts a bots-only game and watches it from its start;
    # another finds it in the lobby's list of games and watches it from there.
    first = new_page(browser)
    first.goto(web.url + "?pace=0&protocol=grpc-web")
    first.wait_for_selector("#watch-bots")
    first.click("#watch-bots")
    first.wait_for_url(re.compile(r"#/watch/"))
    bots_game = game_of(first)
    first.wait_for_selector(".ring")
    second = new_page(browser)
    second.goto(web.url + "?pace=0")
    row = second.locator(f'tr[data-game="{bots_game}"]')
    row.wait_for(timeout=10_000)
    assert "over" in second.locator(f'tr[data-game="{game_id}"]').inner_text()
    shot(second, "lobby-games-1280x800")
    row.get_by_role("link", name=f"Watch game {bots_game}").click()
    second.wait_for_selector(".ring")
    for watcher in (first, second):
        assert watcher.locator(".actions").is_hidden(), "a spectator has no actions"
        assert watcher.get_by_role("heading", name="Players").count() == 1
        watcher.wait_for_selector(".scores", timeout=GAME_TIMEOUT_S * 1000)
        assert re.search(r"wins\.|The game is over\.", watcher.locator(".scores h2").inner_text())
        assert not watcher.errors, watcher.errors
    assert first.locator(".log li.entry").count() > 20, "every move, from the start"
    shot(first, "spectator-over-1280x800")


def test_phone_sized_screen(browser: Any, web: WebServer) -> None:
    page = new_page(browser, 390, 844)
    page.goto(web.url + "?pace=0")
    page.wait_for_selector("#start")
    shot(page, "lobby-phone")
    page.click("#start")
    page.wait_for_selector(".action-list button", timeout=30_000)
    # Nothing is wider than the screen: no sideways scrolling.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # The actions stay in reach: on screen, at its bottom, without scrolling.
    box = page.locator(".actions").bounding_box()
    assert box is not None and box["y"] > 844 / 2 and box["y"] + box["height"] <= 844 + 1
    shot(page, "game-phone")
    # Every button has a name a screen reader can say.
    for button in page.query_selector_all("button"):
        assert (button.get_attribute("aria-label") or button.inner_text()).strip()
    assert not page.errors, page.errors


def test_others_moves_are_shown_one_at_a_time(browser: Any, web: WebServer) -> None:
    """With a pace, each of the bot's moves is announced in turn before your actions return."""
    page = new_page(browser)
    page.goto(web.url + "?pace=400")
    page.wait_for_selector("#start")
    page.click("#start")
    page.wait_for_selector(".action-list button.act", timeout=30_000)
    announced: list[str] = []
    while True:  # end our turns until the bot has had one
        actions = page.query_selector(".action-list")
        assert actions is not None
        labels = [b.inner_text() for b in actions.query_selector_all("button.act")]
        end = next((i for i, t in enumerate(labels) if "End your turn" in t), 0)
        version = actions.get_attribute("data-version")
        page.keyboard.press(str(end + 1))
        changed(page, version)
        deadline = time.monotonic() + 60
        while (
            time.monotonic() < deadline and page.query_selector(".action-list button.act") is None
        ):
            text = page.inner_text(".status")
            bot_move = "Seat 2 (random)" in text and not text.endswith("is thinking…")
            if bot_move and (not announced or announced[-1] != text):
                announced.append(text)
            time.sleep(0.03)
        if len(announced) >= 2:
            break
    assert len(set(announced)) >= 2, announced
    log = page.locator(".log li.entry").all_inner_texts()
    for text in set(announced):
        assert text in log, f"{text!r} is in the log too"
    assert not page.errors, page.errors
