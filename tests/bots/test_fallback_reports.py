"""A bot that fails in a tournament does not stop it, and its results say that they are not
the bot's own strength: benchmarks/strength.py and ``ascension bots`` print the same line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ai_workers.bots import BotSettings, registry
from ai_workers.bots.arena import parse_spec, play_game
from clients import bots_runner
from engine_service import rules
from tests.ai.bad_bots import install_entry_points

ROOT = Path(__file__).resolve().parents[2]


class Raises:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        raise RuntimeError("boom")


def test_a_raising_bot_plays_fallback_moves_counted_per_seat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(registry._cache, "raises", Raises())
    g = play_game([parse_spec("raises"), parse_spec("heuristic")], seed=5, sets="ss",
                  budget_ms=10)  # fmt: skip
    assert g.winner in (0, 1) and g.turns > 5  # the game went on to its end
    mine, theirs = g.stats
    assert mine.fallbacks == mine.decisions > 0 and mine.last_fallback == "bot_raised: RuntimeError"
    assert theirs.fallbacks == 0 and theirs.last_fallback == ""


def test_strength_reports_a_failing_bot_without_crashing(tmp_path: Path) -> None:
    plugins = install_entry_points(tmp_path / "plugins")
    out = subprocess.run(
        [sys.executable, "benchmarks/strength.py", "--bots", "raiser,random", "--games", "2",
         "--budget-ms", "10", "--workers", "1", "--sets", "ss"],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
        env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{plugins}"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    (line,) = [x for x in out.stdout.splitlines() if "(!)" in x]
    assert line.startswith("  (!) raiser vs random: raiser: ")
    assert "were fallback moves (latest: bot_raised: ValueError)" in line
    assert line.endswith("these results are not raiser's own strength")
    # the traceback once per worker process, not once per decision
    assert out.stderr.count("Traceback") == 1, out.stderr[-3000:]


def test_the_bots_runner_says_the_same() -> None:
    results = [
        bots_runner.GameResult(0, "g0", ["raiser", "random"], scores=[3, 20], winner=1,
                               moves=[40, 41], fallbacks=[30, 0],
                               last_fallback=["bot_raised: ValueError", ""]),
        bots_runner.GameResult(1, "g1", ["random", "raiser"], scores=[25, 5], winner=0,
                               moves=[38, 37], fallbacks=[0, 37],
                               last_fallback=["", "deadline: no answer within 6.0s"]),
    ]  # fmt: skip
    (note,) = bots_runner.fallback_notes(results)
    assert note == bots_runner.fallback_note("raiser", 67, 77, "deadline: no answer within 6.0s")
    assert note.startswith("raiser: 67 of its 77 moves were fallback moves (latest: deadline")
    assert note.endswith("these results are not raiser's own strength")
    stats = {s.name: s for s in bots_runner.stats(results)}
    assert (stats["random"].fallbacks, stats["random"].moves) == (0, 79)
