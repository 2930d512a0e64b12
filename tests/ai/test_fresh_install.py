"""The product installs and runs without extras, and a bot plugin installs beside it as a user
would install theirs.

``engine_service.install_check`` (also run by the container image's build) checks that every
package the code imports is a declared dependency and that every module imports. The
integration test builds a fresh virtualenv with real pip from the package index: the product
without extras (ASCENSION_BUILD_NATIVE=0: the rules run as Python, the same code), then the
example plugin project ``ai_workers/examples/bot-plugin`` (its own pyproject.toml); it runs the
install check there, starts a redis-server on a free port, ``ascension-engine serve`` with
Celery dispatch and ``ascension-worker run`` from that virtualenv, and plays a game of the
plugin's bot against the heuristic to the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine_service import install_check
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from tests.service import support

# pip on a busy machine (its wall time; its CPU time is about 17 s)
pytestmark = pytest.mark.timeout(1200)
ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "ai_workers" / "examples" / "bot-plugin"
PLUGIN_BOT = "monster-hunter"
INSTALL_SECONDS = 900  # pip with a warm cache: under a minute on an idle machine


def check_of(tmp_path: Path, source: str) -> list[str]:
    path = tmp_path / "probe.py"
    path.write_text(source)
    return install_check.undeclared_imports({"engine_service.probe": path})


def test_the_install_check_wants_top_level_imports_from_the_base_dependencies(
    tmp_path: Path,
) -> None:
    assert check_of(tmp_path, "import grpc\nfrom redis.asyncio import Redis\n") == []
    # the tracing extra's packages: inside a function (the optional feature), not at the top
    # of a module, which an installation without extras could not import
    tracing = "from opentelemetry.sdk.trace import TracerProvider\n"
    (problem,) = check_of(tmp_path, tracing)
    assert problem.startswith(
        "engine_service.probe imports opentelemetry.sdk.trace.TracerProvider (at the top of"
    )
    assert "not among the base dependencies" in problem
    assert check_of(tmp_path, "def f():\n    " + tracing) == []
    # the dev extra's tools (pyyaml) never: production installs no dev tools
    (problem,) = check_of(tmp_path, "def f():\n    import yaml\n")
    assert "(inside a function), from pyyaml" in problem
    (problem,) = check_of(tmp_path, "def f():\n    import no_such_package_here\n")
    assert "from no installed package" in problem


def test_this_environment_passes_the_install_check() -> None:
    assert install_check.main() == 0


def copy_of_the_sources(directory: Path) -> Path:
    """The repository's files as git sees them (committed or not, ignored ones left out), so
    that building the wheel writes nothing into the working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    archive = directory / "sources.tar"
    with tarfile.open(archive, "w") as tar:
        for name in filter(None, listed):
            if (ROOT / name).is_file() and "node_modules/" not in name:
                tar.add(ROOT / name, arcname=name)
    target = directory / "sources"
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    return target


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the product (no extras) and the example plugin, installed by
    one pip command (``--no-compile``: the bytecode is written on first import instead; about
    17 s of CPU with a warm cache)."""
    where = tmp_path_factory.mktemp("fresh-install")
    sources = copy_of_the_sources(where)
    env = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, timeout=120)
    targets = [str(sources), str(sources / "ai_workers" / "examples" / "bot-plugin")]
    out = subprocess.run(
        [str(env / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", *targets],
        env={**os.environ, "ASCENSION_BUILD_NATIVE": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        capture_output=True, text=True, timeout=INSTALL_SECONDS,
    )  # fmt: skip
    assert out.returncode == 0, f"pip install {' '.join(targets)}:\n{out.stdout}\n{out.stderr}"
    return env


def run_in(venv: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=120,
        cwd=venv, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )  # fmt: skip


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with support.redis_server() as url:
        yield url


def test_the_product_without_extras_passes_the_install_check(venv: Path) -> None:
    out = run_in(venv, "python", "-m", "engine_service.install_check")
    assert out.returncode == 0, out.stderr
    listed = run_in(venv, "python", "-m", "pip", "list", "--format=freeze").stdout
    assert "pytest" not in listed and "opentelemetry-sdk" not in listed  # no extras came along


def test_the_engine_and_a_worker_of_that_install_play_the_plugin_bot(
    venv: Path, redis_url: str
) -> None:
    engine = support.start_engine_of(
        venv / "bin" / "ascension-engine",
        redis_url,
        {"ENGINE_AI_DISPATCH": "celery", "CELERY_BROKER_URL": redis_url},
    )
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    log_path = venv.parent / "worker.log"
    with log_path.open("wb") as log_file:
        worker = subprocess.Popen(
            [str(venv / "bin" / "ascension-worker"), "run"],
            env={**clean, "CELERY_BROKER_URL": redis_url, "ENGINE_ADDRESS": engine.address,
                 "WORKER_CONCURRENCY": "1", "WORKER_METRICS_PORT": "0"},
            cwd=venv, stdout=log_file, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        # the engine says at start which bots it found, and from which packages
        deadline = time.monotonic() + 30
        while PLUGIN_BOT not in engine.log() and time.monotonic() < deadline:
            time.sleep(0.2)
        started = engine.log()
        assert f"bots: expert, greedy-honor, heuristic, ismcts, {PLUGIN_BOT}, random" in started
        assert "ascension-example-bot 0.1.0" in started
        stub = engine.stub()
        seats = [
            epb.SeatConfig(kind=pb.SeatInfo.AI, name="plugin",
                           bot=epb.BotSettings(name=PLUGIN_BOT, time_ms=200, seed=3)),
            epb.SeatConfig(kind=pb.SeatInfo.AI, name="heuristic",
                           bot=epb.BotSettings(name="heuristic", time_ms=200, seed=4)),
        ]  # fmt: skip
        game = stub.CreateGame(epb.CreateGameRequest(sets="ss", seats=seats, seed=11), timeout=10)
        deadline = time.monotonic() + 240
        view = game.view
        while not view.over and time.monotonic() < deadline:
            time.sleep(0.5)
            view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=10)
        assert view.over, f"the game stalled at version {view.version}"
        # every move of the plugin's seat was its own: no fallback
        plugin_seat = next(s for s in view.seat_info if s.bot_name == PLUGIN_BOT)
        assert plugin_seat.fallback_moves == 0, plugin_seat.last_fallback_reason
        # an unknown name says when and where bots are read
        bad = [epb.SeatConfig(kind=pb.SeatInfo.AI, bot=epb.BotSettings(name="mybot2", time_ms=1)),
               seats[1]]  # fmt: skip
        error = support.rpc_error(stub.CreateGame, epb.CreateGameRequest(sets="ss", seats=bad))
        assert "read when the engine and the workers start" in error.details()
        assert "ascension-example-bot 0.1.0" in error.details()
    finally:
        worker.terminate()
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(10)
        engine.stop()
    log = log_path.read_text(errors="replace")
    assert f"bots: expert, greedy-honor, heuristic, ismcts, {PLUGIN_BOT}, random" in log
    assert "Traceback" not in log, log[-3000:]
