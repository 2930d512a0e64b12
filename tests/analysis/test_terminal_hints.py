"""The terminal client's `h` key, in a real pseudo-terminal against its own engine (the
embedded store and local AI pool, as `ascension play` starts it)."""

from __future__ import annotations

import re

import pytest

from tests.clients.tty import PROMPT, Terminal, plain

pytestmark = pytest.mark.timeout(120)
HINT_ROW = re.compile(r"^\s*(\d{1,2}) (\S.*?)\s+(\d{1,3})% to win\s*$", re.M)


def test_h_shows_the_three_best_actions_with_their_win_chances() -> None:
    term = Terminal(["play", "--players", "2", "--bot", "random", "--seed", "1", "--budget-ms", "40"])
    try:
        term.expect([PROMPT], timeout=60)
        menu = term.menu()
        assert len(menu) >= 3, menu
        term.send("h")
        term.expect([r"Hints: a search of [\d,]+ games"], timeout=60)
        term.expect([PROMPT], timeout=60)  # asked again: a hint plays nothing
        rows = HINT_ROW.findall(plain(term.child.before or ""))
        assert len(rows) == 3, term.output[-1500:]
        for number, description, percent in rows:
            # the move as the menu says it (then, maybe, the Honor it adds at once)
            assert re.sub(r"\s+\+\d+ Honor now$", "", description.strip()) == menu[int(number)]
            assert 0 <= int(percent) <= 100
        assert len({n for n, _, _ in rows}) == 3
        term.send("q")
        term.expect([r"\(y/n\)"], timeout=10)  # leaving asks first
        term.send("y")
        assert term.wait_exit() == 0
    finally:
        term.kill()
