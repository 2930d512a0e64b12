"""The TypeScript client (clients/typescript): its stubs are those of proto/, and its example
plays a whole game against a bot over gRPC, and watches it, on a real engine.

Needs Node.js and the package's npm packages (tests/run installs them with `npm ci`)."""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from clients.embedded import EmbeddedEngine
from tests.clients.conftest import requires_ai
from tests.web.conftest import missing

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
PROTO = PACKAGE.parent.parent / "proto"
BIN = PACKAGE / "node_modules" / ".bin"

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def built() -> Path:
    """The package compiled (tsc into dist/), its npm packages installed."""
    if shutil.which("node") is None:
        missing("Node.js")
    if not (BIN / "tsc").exists():
        missing("clients/typescript/node_modules (npm ci)")
    done = subprocess.run(
        [str(BIN / "tsc")], cwd=PACKAGE, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return PACKAGE / "dist"


def test_the_stubs_are_those_of_proto() -> None:
    if not (BIN / "buf").exists():
        missing("clients/typescript/node_modules (npm ci)")
    with tempfile.TemporaryDirectory(prefix="ascension-ts-") as tmp:
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        done = subprocess.run(
            [str(BIN / "buf"), "generate", "--template", "buf.gen.yaml", "--output", tmp, str(PROTO)],
            cwd=PACKAGE, capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        fresh, committed = Path(tmp) / "src" / "gen", PACKAGE / "src" / "gen"
        names = sorted(p.relative_to(fresh) for p in fresh.rglob("*.ts"))
        assert names == sorted(p.relative_to(committed) for p in committed.rglob("*.ts"))
        stale = [str(n) for n in names if not filecmp.cmp(fresh / n, committed / n, shallow=False)]
        assert not stale, f"regenerate with `npm run gen` in clients/typescript: {stale}"


@requires_ai
def test_the_example_plays_a_game_against_a_bot_and_watches_it(built: Path) -> None:
    with EmbeddedEngine(ai_processes=1) as engine:
        done = subprocess.run(
            ["node", str(built / "examples" / "play.js"), engine.address],
            cwd=PACKAGE, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert re.search(rf"game \S+ created on {re.escape(engine.address)}", out)
    assert re.search(r"seat 2 \(greedy-honor\): \d+ Honor", out), out  # the "easy" level's bot
    m = re.search(
        r"game over after version (\d+): .+ wins; (\d+) moves submitted, (\d+) updates", out
    )
    assert m, out
    version, submitted, watched = (int(g) for g in m.groups())
    assert submitted > 20
    # the spectator stream saw every update of the game, from the first to the last
    assert watched == version


def test_a_wrong_address_fails_with_the_reason(built: Path) -> None:
    done = subprocess.run(
        ["node", str(built / "examples" / "play.js"), "127.0.0.1:1"],
        cwd=PACKAGE, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "ECONNREFUSED" in done.stderr or "unavailable" in done.stderr.lower()
