"""``ascension review GAME`` against a real engine: the decisions with their labels and the best
alternative where it differs, the win-chance sparklines, and the refusals said plainly."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator

import pytest

from clients.sdk import Client, accuracy
from tests.clients.tty import PROMPT, Terminal, ascension_command, plain
from tests.review.support import ITERATIONS, play
from tests.service import support


@pytest.fixture(scope="module")
def engine() -> Iterator[support.Engine]:
    e = support.start_engine(
        ENGINE_AI_DISPATCH="local",
        ENGINE_LOCAL_AI_PROCESSES="2",
        ENGINE_LOCAL_ANALYSIS_PROCESSES="2",
        ENGINE_ANALYSIS_MAX_ITERATIONS=str(ITERATIONS),
        ENGINE_ANALYSIS_GRACE_SECONDS="20",
    )
    yield e
    e.stop()


def ascension(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ASCENSION_ADDRESS"}
    env["COLUMNS"] = "100"
    return subprocess.run(
        [*ascension_command(), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_review_prints_every_rated_decision_and_the_win_chance(engine: support.Engine) -> None:
    with Client(engine.address, timeout=60.0) as c:
        g, _, _ = play(c, 61, turns=10)
        expected = list(c.review(g.game_id, g.token(0)))
    done = ascension("review", g.game_id, "--address", engine.address, "--token", g.token(0))
    out = plain(done.stdout)
    assert done.returncode == 0, out + done.stderr
    assert f"Review of your decisions in game {g.game_id}" in out
    head, tail = out.split("Win chance over the game:", 1)
    lines = [ln for ln in head.splitlines() if re.match(r"Round \d+\s", ln)]
    assert len(lines) == len(expected)
    for line, r in zip(lines, expected, strict=True):
        # rounds, as the table counts them (a round: one turn of each of the 2 players)
        assert line.startswith(f"Round {(r.turn - 1) // 2 + 1} ") and r.label.title in line
        assert r.description in line and f"{round(100 * r.win_probability)}%" in line
    # "better:" for inaccuracies and worse only (a GOOD move is as good as best)
    better = [ln for ln in head.splitlines() if ln.strip().startswith("better: ")]
    differing = [r for r in expected if r.differs and r.worse]
    assert len(better) == len(differing)
    assert all(r.best_description in b for b, r in zip(better, differing, strict=True))
    why = [ln for ln in head.splitlines() if ln.strip().startswith("why: ")]
    assert len(why) == sum(bool(r.explanation) for r in expected)
    sparks = re.findall(r"^(You|B)\s+([▁▂▃▄▅▆▇█]+)\s+\d+% → \d+%$", tail, re.M)
    assert [name for name, _ in sparks] == ["You", "B"]
    assert all(len(s) == min(len(expected), 100 - 32) for _, s in sparks)  # (fits the width)
    assert re.search(r"Best \d+ · Good \d+ · Inaccuracy \d+ · Mistake \d+ · Blunder \d+", tail)
    acc = accuracy(expected)
    assert acc is not None and f"Accuracy {acc:.0f}%" in tail
    moments = [ln for ln in tail.split("Key moments:", 1)[1].splitlines()
               if re.match(r"\d\. Round", ln)]  # fmt: skip
    assert len(moments) == min(3, len(expected))
    # Early chances are marked as estimates ("~"), the later ones not.
    for line, r in zip(lines, expected, strict=True):
        assert (f"~{round(100 * r.win_probability)}%" in line) == r.chance_is_guess
    assert any(r.chance_is_guess for r in expected)  # (10 turns: the first third of a game)
    # Each key moment with the command that practises from it; that command plays from there.
    commands = re.findall(r"^ascension practice .*$", tail, re.M)
    assert len(commands) == len(moments)
    versions = [int(c.rsplit("--version ", 1)[1]) for c in commands]
    assert set(versions) <= {r.version for r in expected}
    term = Terminal([*commands[0].split()[1:], "--no-clear"])
    try:
        term.expect([PROMPT], timeout=90)
        turn = next(r.turn for r in expected if r.version == versions[0])
        assert f"from turn {turn} of game {g.game_id}" in " ".join(term.output.split())
        term.send("q")
        term.expect([r"\(y/n\)"], timeout=30)  # leaving asks first
        term.send("y")
        assert term.wait_exit(60) == 0
    finally:
        term.kill()


def test_review_says_what_is_refused(engine: support.Engine) -> None:
    with Client(engine.address, timeout=60.0) as c:
        g, _, _ = play(c, 62, turns=2)
    other = ascension("review", g.game_id, "--address", engine.address, "--token", g.token(0),
                      "--seat", "2")  # fmt: skip
    assert other.returncode == 1
    assert "PERMISSION_DENIED" in other.stdout and "its own seat" in other.stdout
    early = ascension("review", g.game_id, "--address", engine.address,
                      "--admin-token", g.admin_token, "--seat", "1")  # fmt: skip
    assert early.returncode == 1 and "once the game is over" in early.stdout
    nowhere = ascension("review", g.game_id)
    assert nowhere.returncode == 2 and "needs --address" in nowhere.stdout
