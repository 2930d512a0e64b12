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


def _sources_of_the_package(to: Path) -> Path:
    """The package as a fresh clone has it: no node_modules, no dist (ignored by git)."""
    shutil.copytree(PACKAGE, to, ignore=shutil.ignore_patterns("node_modules", "dist"))
    return to


@requires_ai
def test_a_project_depends_on_it_by_its_path(tmp_path: Path) -> None:
    """`npm install PATH` builds it (its `prepare`: its own packages, then tsc), on this
    machine's Node.js, with no warning but npm's question whether to allow that build (the
    installing project's to answer: `npm install-scripts approve`); the project imports it
    and creates a game with it on a real engine."""
    if shutil.which("npm") is None:
        missing("npm")
    package = _sources_of_the_package(tmp_path / "engine-client")
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "app", "private": true, "type": "module"}\n')
    done = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", str(package)],
        cwd=app, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert (package / "dist" / "src" / "index.js").exists(), "built on install"
    warned = [line for line in out.splitlines() if "warn" in line.lower()]
    # npm's advisory on install scripts names the packages whose scripts it ran: ours only
    assert all(line.startswith("npm warn install-scripts") for line in warned), out
    named = set(re.findall(r"npm warn install-scripts\s+(@?[\w./-]+)@\d", out))
    assert named <= {"@ascension/engine-client"}, out
    assert "EBADENGINE" not in out and "@bufbuild/buf" not in out
    (app / "main.mjs").write_text(
        'import { engineClient, SeatInfo_Kind } from "@ascension/engine-client";\n'
        "const engine = engineClient(process.argv[2]);\n"
        "const g = await engine.createGame({ sets: 'ss', seats: [\n"
        "  { kind: SeatInfo_Kind.HUMAN, name: 'App' },\n"
        "  { kind: SeatInfo_Kind.AI, bot: { difficulty: 'easy' } }] });\n"
        "console.log(`created ${g.gameId} with ${g.seatTokens.length} seat tokens`);\n"
    )
    with EmbeddedEngine(ai_processes=1) as engine:
        run = subprocess.run(
            ["node", "main.mjs", engine.address], cwd=app, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"created \S+ with 2 seat tokens", run.stdout), run.stdout


def test_its_engines_agree_with_its_dependencies() -> None:
    """The Node.js versions it says it runs on are ones its packages say they run on."""
    import json

    lock = json.loads((PACKAGE / "package-lock.json").read_text())
    mine = lock["packages"][""]["engines"]["node"]
    floor = int(re.match(r">=\s*(\d+)", mine).group(1))  # type: ignore[union-attr]
    for name, entry in lock["packages"].items():
        wanted = (
            entry.get("engines", {}).get("node", "")
            if isinstance(entry.get("engines"), dict)
            else ""
        )
        m = re.match(r">=\s*(\d+)", wanted)
        if m:
            assert int(m.group(1)) <= floor, f"{name} needs Node {wanted}; the package says {mine}"
