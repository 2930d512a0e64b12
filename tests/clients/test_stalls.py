"""A bot that never moves (its AI worker is broken) is reported, not waited for forever."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from rich.console import Console

from clients import bots_runner
from clients.embedded import EmbeddedEngine
from clients.sdk import AscensionError, Client, bot, human
from clients.terminal.play import PlaySession


@pytest.fixture(scope="module")
def broken_engine() -> Iterator[EmbeddedEngine]:
    """An engine whose AI seats are handed to a function that does not exist (in a module that
    does: the engine refuses to start with a target module that is not installed)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("ENGINE_LOCAL_AI_TARGET", "json:no_such_function_for_tests")
    try:
        with EmbeddedEngine() as engine:
            yield engine
    finally:
        mp.undo()


def test_play_says_why_a_bot_does_not_move(broken_engine: EmbeddedEngine) -> None:
    with Client(broken_engine.address) as c:
        game = c.create_game([human(), bot("random")], seed=3)
        console = Console(record=True, width=100, force_terminal=False)
        session = PlaySession(
            c, console, game.game_id, game.token(0), clear=False, stall_seconds=4.0,
            read=lambda prompt: "y" if "anyway" in prompt else "1",
            stall_hint=lambda: "The engine says: " + broken_engine.last_problem(),
        )  # fmt: skip
        # the engine's words come from a spawned AI process that fails on import: give it time
        threading.Timer(12.0, session.watch.cancel).start()
        with pytest.raises(AscensionError, match="event stream was closed"):
            session.run()
    text = console.export_text()
    assert "No move from Seat 2 (random) for 4 s." in text
    assert "no_such_function_for_tests" in text  # the engine's own words about the failure


def test_bots_runner_gives_up_on_a_stalled_game(broken_engine: EmbeddedEngine) -> None:
    cfg = bots_runner.BotsConfig(bots=("random",), games=2, stall_timeout_s=1.5, parallel=2)
    with Client(broken_engine.address) as c:
        results = bots_runner.run(c, cfg)
    assert [r.ok for r in results] == [False, False]
    assert all("no move for" in r.error for r in results), [r.error for r in results]
    assert all(r.seconds < 10 for r in results)
