"""The browser shows an AI seat's fallback moves: ``ascension web`` with a bot that raises on
every decision (tests/ai/bad_bots.py, installed as a plugin), a bots-only game watched in
Debian's Chromium."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ai.bad_bots import install_entry_points
from tests.clients.conftest import requires_ai
from tests.web.conftest import WebServer, start_web, stop_web
from tests.web.test_browser import browser, new_page, shot

pytestmark = [requires_ai, pytest.mark.timeout(180)]
__all__ = ["browser"]  # the fixture, from the browser tests

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def raiser_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    plugins = install_entry_points(tmp_path_factory.mktemp("plugins"))
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = f"{ROOT}{os.pathsep}{plugins}"
    try:
        server = start_web("--bot", "raiser", "--budget-ms", "20", "--seed", "5",
                           "--ai-processes", "1")  # fmt: skip
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before
    try:
        yield server
    finally:
        stop_web(server.proc)


def test_a_failing_bots_fallback_moves_are_on_its_seat(browser: object, raiser_web: WebServer) -> None:
    page = new_page(browser)
    page.goto(raiser_web.url + "?pace=0")
    page.wait_for_selector("#watch-bots")
    page.click("#watch-bots")
    note = page.locator(".others .seat .fallbacks").first
    note.wait_for(timeout=60_000)
    assert re.fullmatch(
        r"\d+ fallback moves? \(latest: (quarantined: )?bot_raised: ValueError\)", note.inner_text()
    ), note.inner_text()
    panel = page.locator(".others .seat", has=page.locator(".fallbacks")).first
    assert "raiser" in (panel.get_attribute("aria-label") or "")
    assert "a bug" not in page.content()  # the bot's own message stays in the worker's log
    shot(page, "fallbacks-1280x800")
    assert not page.errors, page.errors
