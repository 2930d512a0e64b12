"""The browser client's hints: the H key (or the Hints button) shows the three best actions
with their numbers and win chances (headless Chromium, as tests/web drives it)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.web.conftest import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, WebServer, have_chromium, missing
from tests.web.conftest import web as web  # the fixture: `ascension web` with its engine

pytestmark = pytest.mark.timeout(180)
sync_api = pytest.importorskip("playwright.sync_api")
# (the first moves of a game: "~35% to win (early guess)", an estimate, not yet a forecast)
HINT = re.compile(r"^(\d+)\s+(.+): (~?)(\d{1,3})% to win( \(early guess\))?$")


def test_h_shows_hints_in_the_browser(web: WebServer) -> None:
    if not have_chromium():
        missing(f"Chromium ({CHROMIUM})")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page: Any = browser.new_page(viewport={"width": 1280, "height": 800})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(web.url + "?pace=0")
            page.click("#start")
            page.wait_for_selector(".hints button.hint", timeout=60_000)
            labels = [re.sub(r"^[1-9A]\s*", "", b.inner_text()).strip()
                      for b in page.query_selector_all(".action-list button.act")]  # fmt: skip
            page.keyboard.press("h")
            page.wait_for_selector(".hint-list li", timeout=60_000)
            hints = [li.inner_text() for li in page.query_selector_all(".hint-list li")]
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "hints-1280x800.png"))
        finally:
            browser.close()
    assert len(hints) == min(3, len(labels)), hints
    for line in hints:
        m = HINT.match(line)
        assert m, line
        assert labels[int(m.group(1)) - 1] == m.group(2)
        assert 0 <= int(m.group(4)) <= 100
        assert m.group(3) and m.group(5)  # (the game's first turn: an early guess)
    assert not errors
