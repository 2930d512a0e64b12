"""A bot that fails in a tournament does not stop it, and its results say that they are not
the bot's own strength: benchmarks/strength.py and ``ascension bots`` print the same line."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ai_workers import arena, slots
from ai_workers.arena import play_game
from ai_workers.bots.specs import parse_spec
from clients import bots_runner
from engine_service import bot_plugins
from tests.ai.bad_bots import install_entry_points

ROOT = Path(__file__).resolve().parents[2]


GRACE = 0.5  # WORKER_DECISION_GRACE_SECONDS here: a decision of a 50 ms bot ends within 0.55 s


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The bad bots registered as an installed package is (a dist-info on PYTHONPATH, seen by
    this process and the bot hosts it starts), the workers' grace at 0.5 s, and this process's
    bot host and bot records fresh before and after."""
    directory = install_entry_points(tmp_path / "plugins")
    monkeypatch.syspath_prepend(str(directory))
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{directory}")
    monkeypatch.setenv("WORKER_DECISION_GRACE_SECONDS", str(GRACE))
    importlib.invalidate_caches()
    bot_plugins.scan.cache_clear()
    slots.is_builtin.cache_clear()
    arena.reset()
    yield directory
    arena.reset()
    bot_plugins.scan.cache_clear()
    slots.is_builtin.cache_clear()


def test_a_raising_bot_plays_fallback_moves_counted_per_seat(plugins: Path) -> None:
    g = play_game([parse_spec("raiser"), parse_spec("heuristic")], seed=5, sets="ss",
                  budget_ms=10)  # fmt: skip
    assert g.winner in (0, 1) and g.turns > 5  # the game went on to its end
    mine, theirs = g.stats
    assert mine.fallbacks == mine.decisions > 3
    # raised 3 times in a row, then quarantined: the reason says what it is quarantined for
    assert mine.last_fallback == "quarantined: bot_raised: ValueError"
    assert theirs.fallbacks == 0 and theirs.last_fallback == ""


@pytest.mark.parametrize(
    ("bot", "cause"),
    [
        ("sleeper", f"deadline: no answer within {0.05 + GRACE:.1f}s"),
        ("stubborn", f"deadline: no answer within {0.05 + GRACE:.1f}s"),  # ignores signals
        ("exiter", "bot_died: the bot process exited (status 3)"),
    ],
)
def test_in_process_a_bot_has_the_workers_deadline(plugins: Path, bot: str, cause: str) -> None:
    """Played in this process (as benchmarks/strength.py and the ladder play), a plug-in that
    never answers or kills its process is stopped at the seat's budget plus the grace, the
    fallback move plays, and after three in a row it is quarantined, saying why."""
    t0 = time.monotonic()
    g = play_game([parse_spec(f"{bot}@50ms"), parse_spec("heuristic")], seed=5, sets="ss")
    took = time.monotonic() - t0
    assert g.winner in (0, 1) and g.turns > 5
    mine, theirs = g.stats
    assert mine.fallbacks == mine.decisions > 3 and theirs.fallbacks == 0
    assert mine.last_fallback == f"quarantined: {cause}"
    # three decisions cost the deadline each (and a new bot process), the rest none
    assert took < 60, took


def test_strength_reports_a_failing_bot_without_crashing(plugins: Path) -> None:
    """Its row shows no win rate of its own (a dash), the line below says why, and a paired
    comparison with it as the baseline says that it is a comparison with the fallback."""
    out = subprocess.run(
        [sys.executable, "benchmarks/strength.py", "--bots", "raiser,heuristic", "--vs", "random",
         "--games", "2", "--budget-ms", "10", "--workers", "1", "--sets", "ss"],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
        env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{plugins}"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    (row,) = [x for x in lines if x.startswith("raiser vs random ")]
    assert row.split()[3:6] == ["2", "2", "—"], row  # games, wins, no win rate
    assert "%" not in row.split("50%")[1], row  # nor interval nor ratio
    (own,) = [x for x in lines if x.startswith("heuristic vs random ")]
    assert "100.0%" in own and "(!)" not in own
    (line,) = [x for x in lines if x.startswith("  (!) raiser vs random")]
    assert line.startswith("  (!) raiser vs random: raiser: ")
    assert "(100%) were fallback moves (latest: quarantined: bot_raised: ValueError)" in line
    assert line.endswith("these results are not raiser's own strength; no win rate is shown for it")
    (baseline,) = [x for x in lines if x.startswith("  (!) heuristic against raiser")]
    assert "raiser played fallback moves on 100% of its decisions" in baseline
    # the traceback once per bot process, not once per decision
    assert out.stderr.count("Traceback") == 1, out.stderr[-3000:]


def test_the_bots_runner_says_the_same() -> None:
    """Forced moves are not the bot's decisions; a bot whose decisions were mostly fallback
    moves has no win rate in its row; one with some has it marked."""
    results = [
        bots_runner.GameResult(0, "g0", ["raiser", "random"], scores=[3, 20], winner=1,
                               moves=[40, 41], forced=[5, 6], fallbacks=[30, 0],
                               last_fallback=["bot_raised: ValueError", ""]),
        bots_runner.GameResult(1, "g1", ["random", "raiser"], scores=[25, 5], winner=0,
                               moves=[38, 37], forced=[4, 3], fallbacks=[0, 34],
                               last_fallback=["", "quarantined: deadline: no answer within 6.0s"]),
    ]  # fmt: skip
    (note,) = bots_runner.fallback_notes(results)
    assert note == bots_runner.fallback_note(
        "raiser", 64, 69, "quarantined: deadline: no answer within 6.0s"
    )
    assert note.startswith("raiser: 64 of its 69 decisions (93%) were fallback moves (latest: "
                           "quarantined: deadline")  # fmt: skip
    assert note.endswith("not raiser's own strength; no win rate is shown for it")
    stats = {s.name: s for s in bots_runner.stats(results)}
    assert (stats["random"].fallbacks, stats["random"].decisions) == (0, 69)
    table = bots_runner.results_table(bots_runner.BotsConfig(("raiser", "random")), results)
    rows = {cells[0]: cells for cells in zip(*(c._cells for c in table.columns), strict=True)}
    assert rows["raiser (!)"][3] == "—" and rows["raiser (!)"][6] == "64/69"
    assert rows["random"][3] == "100%"
    assert bots_runner.win_rate_text("48%", 10, 69) == "48% (!)"
    assert bots_runner.win_rate_text("48%", 0, 69) == "48%"


def test_ascension_bots_keeps_the_private_engines_log_when_a_bot_failed(plugins: Path) -> None:
    """Without --address, `ascension bots` plays on a private engine whose log is a temporary
    file: when a bot failed, it is kept and its path printed (it holds the traceback)."""
    ascension = Path(sys.executable).with_name("ascension")
    out = subprocess.run(
        [str(ascension), "bots", "--bots", "raiser,random", "--games", "1", "--budget-ms", "50",
         "--parallel", "1", "--seed", "3"],
        capture_output=True, text=True, timeout=240,
        env={**os.environ, "COLUMNS": "300", "PYTHONPATH": f"{ROOT}{os.pathsep}{plugins}"},
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (line,) = [x for x in out.stdout.splitlines() if "Why the bots failed" in x]
    path = Path(line.split("the private engine's log, kept: ")[1].strip())
    try:
        text = path.read_text()
        assert "Traceback" in text and "ValueError: a bug, on a hand of" in text, text[-3000:]
    finally:
        path.unlink(missing_ok=True)


def test_the_ladder_rates_no_bot_made_of_fallback_moves(plugins: Path) -> None:
    out = subprocess.run(
        [sys.executable, "benchmarks/ladder.py", "--bots", "random,heuristic,raiser", "--games",
         "2", "--workers", "1", "--sets", "ss", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
        env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{plugins}"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    (row,) = [x for x in lines if " raiser (!) " in x]
    assert row.split()[3:5] == ["—", "—"], row  # no Elo, no interval
    (note,) = [x for x in lines if x.startswith("  (!) raiser: ")]
    assert note.endswith("no rating is shown for it")
    ratings = {r["bot"]: r for r in json.loads(lines[-1])["ratings"]}
    assert not ratings["raiser"]["own"] and ratings["heuristic"]["own"]
