"""Two people at one table in a real browser (Debian's headless Chromium, Playwright): one
creates a game with a friend and a clock in the lobby, the friend opens the invitation link in
another browser (its own storage), both see the clocks and each other here, and they play
the game to its end."""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.clients.conftest import requires_ai
from tests.web.conftest import WebServer
from tests.web.test_browser import answer_confirm, browser, choose, new_page, shot  # noqa: F401

pytestmark = [requires_ai, pytest.mark.timeout(420)]
sync_api = pytest.importorskip("playwright.sync_api")
GAME_TIMEOUT_S = 300


def _until(what: str, check: Any, timeout: float = 30.0) -> None:
    """Wait until ``check()`` is true (polled: the page's Content-Security-Policy forbids what
    Playwright's wait_for_function would evaluate)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.05)


def _move(page: Any) -> bool:
    """One move of this page's player if it is their turn; whether one was made."""
    actions = page.query_selector(".action-list")
    if actions is None:
        return False
    buttons = actions.query_selector_all("button.act")
    labels = [re.sub(r"^[1-9A]\s*", "", b.inner_text()).strip() for b in buttons]
    labels = [lb for lb in labels if lb != "Play all your cards"]
    if not labels:
        return False
    version = actions.get_attribute("data-version")
    i = choose(labels)
    target = next(b for b in buttons if re.sub(r"^[1-9A]\s*", "", b.inner_text()).strip() == labels[i])
    try:
        target.click(timeout=5000)
        answer_confirm(page)
    except sync_api.Error:  # redrawn meanwhile (an update came in): look again
        return False
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the page took it: another version, or not our turn
        now = page.query_selector(".action-list")
        if now is None or now.get_attribute("data-version") != version:
            break
        time.sleep(0.02)
    return True


def test_two_people_play_a_game_with_clocks_through_an_invitation_link(
    browser: Any,  # noqa: F811
    web: WebServer,
) -> None:
    host = new_page(browser)
    host.goto(web.url + "?pace=0")
    host.fill("#friends", "1")
    host.select_option("#clock", index=0)  # a minute a turn
    host.click("#invite")
    host.wait_for_selector(".invite-link")
    link = host.input_value(".invite-link")
    parts = urlsplit(link)
    token = parts.fragment.rsplit("/", 1)[-1]
    assert parts.fragment.startswith("/join/") and len(token) >= 32
    assert token not in parts.path and not parts.query  # only the fragment holds it
    host.click("#to-table")

    friend = new_page(browser)  # another browser context: storage of its own
    friend.goto(link.replace(web.url, web.url + "?pace=0"))
    # (the address as the page has it: Playwright's page.url misses history.replaceState)
    def href() -> str:
        return str(friend.evaluate("location.href"))

    _until("the friend's page takes the seat", lambda: "#/play/" in href())
    assert token not in href()  # taken off the address bar

    for page in (host, friend):
        page.wait_for_selector(".clocks .clock")
        _until("both players shown here", lambda p=page: len(p.query_selector_all(".clocks .presence.here")) == 2)
    running = host.query_selector(".clocks .clock.running .time")
    assert running is not None and re.fullmatch(r"\s*\d+:\d\d", running.inner_text())
    shot(host, "friends-clocks-1400x900")

    deadline = time.monotonic() + GAME_TIMEOUT_S
    moves = 0
    while not (host.query_selector(".scores") and friend.query_selector(".scores")):
        assert time.monotonic() < deadline, f"the game did not end within {GAME_TIMEOUT_S} s ({moves} moves)"
        moved = _move(host) or _move(friend)
        moves += int(moved)
        if not moved:
            time.sleep(0.05)
    assert moves > 10
    assert not host.errors and not friend.errors, host.errors + friend.errors
    shot(friend, "friends-end-1400x900")
