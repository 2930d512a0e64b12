"""The AI workers for real: a Redis (a local ``redis-server`` on a free port: this machine has
no Docker engine for testcontainers), the engine server dispatching AI moves to Celery
(``ascension-engine serve``), and ``ascension-worker run`` processes (prefork, 2 children).

A game of two AI seats plays to the end; a scripted client seat plays a whole game against an
AI seat; a worker killed (SIGKILL to its whole process group) in the middle of a search does
not stall its game: the engine's sweeper sends the move again and a new worker plays it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from tests.ai.slow_bot import install_entry_point
from tests.service import support

WORKER = Path(sys.executable).parent / "ascension-worker"
CALL = support.CALL_TIMEOUT
GAME_SECONDS = 120


@dataclass
class Worker:
    proc: subprocess.Popen[bytes]
    env: dict[str, str]
    metrics_port: int
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def check(self, timeout: float = 3.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(WORKER), "check", "--timeout", str(timeout)], env=self.env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    def kill(self) -> None:
        """SIGKILL to the whole process group: the parent and its pool children at once."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = install_entry_point(tmp_path_factory.mktemp("plugins"))
    return f"{support.ROOT}{os.pathsep}{directory}"


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with support.redis_server() as url:
        yield url


@pytest.fixture(scope="module")
def engine(redis_url: str, plugin_path: str) -> Iterator[support.Engine]:
    e = support.start_engine(
        redis_url,
        ENGINE_AI_DISPATCH="celery",
        CELERY_BROKER_URL=redis_url,
        ENGINE_AI_SWEEP_SECONDS="1",
        ENGINE_AI_STALL_SECONDS="3",
        # these tests count the workers' moves: the engine's own fallback (after 3 dispatches
        # of 3 s, quick on a loaded machine) must not play any
        ENGINE_AI_MAX_DISPATCHES="0",
        PYTHONPATH=plugin_path,
    )
    yield e
    e.stop()


def start_worker(
    redis_url: str, plugin_path: str, tmp_path: Path, name: str, **extra_env: str
) -> Worker:
    port = support.free_port()
    env = {
        **os.environ,
        "CELERY_BROKER_URL": redis_url,
        "WORKER_METRICS_PORT": str(port),
        "WORKER_CONCURRENCY": "2",
        "WORKER_NODE_NAME": f"{name}@%h",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / f"metrics-{name}"),
        "LOG_LEVEL": "INFO",
        "PYTHONPATH": plugin_path,
        **extra_env,
    }
    log_path = tmp_path / f"{name}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([str(WORKER), "run"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=support.ROOT)  # fmt: skip
    w = Worker(proc, env, port, log_path)
    deadline = time.monotonic() + 60
    nodes = 1 if env.get("WORKER_ANALYSIS_CONCURRENCY") == "0" else 2  # moves, analyses
    while w.log().count(" ready.") < nodes:
        if proc.poll() is not None or time.monotonic() > deadline:
            w.stop()
            raise RuntimeError("the worker did not start:\n" + w.log())
        time.sleep(0.2)
    return w


@pytest.fixture(scope="module")
def worker(
    redis_url: str, plugin_path: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Worker]:
    w = start_worker(redis_url, plugin_path, tmp_path_factory.mktemp("worker"), "w1")
    yield w
    w.stop()


def ai(bot: str, *, seed: int, time_ms: int = 0) -> epb.SeatConfig:
    settings = epb.BotSettings(name=bot, seed=seed, time_ms=time_ms)
    return epb.SeatConfig(kind=pb.SeatInfo.AI, name=bot, bot=settings)


def wait_over(engine: support.Engine, game_id: str, seconds: float = GAME_SECONDS) -> pb.GameView:
    deadline = time.monotonic() + seconds
    stub = engine.stub()
    while time.monotonic() < deadline:
        view = stub.GetGame(epb.GetGameRequest(game_id=game_id), timeout=CALL)
        if view.over:
            return view
        time.sleep(0.25)
    raise AssertionError(f"game {game_id} not over after {seconds}s at version {view.version}")


def metrics(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def test_two_ai_seats_play_to_the_end(engine: support.Engine, worker: Worker) -> None:
    stub = engine.stub()
    game = stub.CreateGame(epb.CreateGameRequest(sets="both", seed=5, seats=[
        ai("ismcts", time_ms=10, seed=1), ai("heuristic", seed=2)]), timeout=CALL)  # fmt: skip
    final = wait_over(engine, game.game_id)
    assert final.winner in (0, 1) and len(final.scores) == 2
    m = metrics(worker.metrics_port)  # samples of the pool's children, served by the parent
    assert m['ascension_worker_moves_total{bot="ismcts"}'] > 10
    assert m['ascension_worker_moves_total{bot="heuristic"}'] > 10
    played = (
        m['ascension_worker_moves_total{bot="ismcts"}']
        + m['ascension_worker_moves_total{bot="heuristic"}']
    )
    assert played >= final.version - 1  # every move of the game was a worker's
    assert (
        m['ascension_worker_decision_seconds_count{bot="ismcts"}']
        >= m['ascension_worker_moves_total{bot="ismcts"}']
    )
    assert m["ascension_worker_queue_wait_seconds_count"] >= played
    assert m["ascension_worker_mcts_iterations_per_second"] > 0
    assert m["ascension_worker_task_failures_total"] == 0


def test_a_scripted_client_against_an_ai_seat(engine: support.Engine, worker: Worker) -> None:
    """Seat 0 is this test, playing through the API with its token; seat 1 is an AI seat (it
    also answers the choices it gets during seat 0's turns: Fate banishes, Raids)."""
    import random

    stub = engine.stub()
    game = stub.CreateGame(epb.CreateGameRequest(sets="ss", seed=8, seats=[
        epb.SeatConfig(kind=pb.SeatInfo.HUMAN, name="script"), ai("ismcts", time_ms=10, seed=3)]),
        timeout=CALL)  # fmt: skip
    token = game.seat_tokens[0]
    rng = random.Random(1)
    mine = 0
    deadline = time.monotonic() + GAME_SECONDS
    while time.monotonic() < deadline:
        view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=token), timeout=CALL)
        if view.over:
            break
        if view.to_move != 0:
            time.sleep(0.02)
            continue
        try:
            stub.SubmitAction(epb.SubmitActionRequest(game_id=game.game_id, token=token,
                                                      expected_version=view.version,
                                                      action=support.pick(view, rng)), timeout=CALL)  # fmt: skip
            mine += 1
        except grpc.RpcError as e:
            assert e.code() in (grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION)
    assert view.over, f"not over at version {view.version}"
    assert mine > 20 and view.version - 1 - mine > 20  # both seats played their part


def test_worker_check_pings_the_worker_through_the_broker(worker: Worker) -> None:
    ok = worker.check()
    assert ok.returncode == 0, ok.stderr
    assert "pong" in ok.stdout
    absent = subprocess.run([str(WORKER), "check", "--timeout", "1"],
                            env={**worker.env, "WORKER_NODE_NAME": "nobody@%h"},
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert absent.returncode == 1 and "did not answer" in absent.stderr


def test_a_worker_killed_during_a_search_does_not_stall_the_game(
    engine: support.Engine, worker: Worker, redis_url: str, plugin_path: str, tmp_path: Path
) -> None:
    worker.stop()  # the module's worker would take the move: this test needs its own
    doomed = start_worker(redis_url, plugin_path, tmp_path, "doomed")
    stub = engine.stub()
    game = stub.CreateGame(epb.CreateGameRequest(sets="ss", seed=3, seats=[
        ai("slow-opening", time_ms=4000, seed=1), ai("slow-opening", time_ms=4000, seed=2)]),
        timeout=CALL)  # fmt: skip
    deadline = time.monotonic() + 30
    while "Task ascension.choose_move" not in doomed.log():
        assert time.monotonic() < deadline, doomed.log()
        time.sleep(0.1)
    time.sleep(1.5)  # well inside the 4 s search of the ship's placement
    doomed.kill()
    version = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL).version
    assert version == 1, "the move was made before the kill: the test did not kill a search"
    assert "succeeded" not in doomed.log()
    rescuer = start_worker(redis_url, plugin_path, tmp_path, "rescuer")
    try:
        final = wait_over(engine, game.game_id)
        assert final.winner in (0, 1)
        m = metrics(rescuer.metrics_port)
        assert m['ascension_worker_moves_total{bot="slow-opening"}'] >= final.version - 1
        text = urllib.request.urlopen(
            f"http://127.0.0.1:{engine.metrics_port}/metrics", timeout=5
        ).read()
        sweeps = [ln for ln in text.decode().splitlines() if ln.startswith("ascension_ai_moves_enqueued_total")
                  and 'reason="sweep"' in ln]  # fmt: skip
        assert sweeps and float(sweeps[0].split()[-1]) >= 1  # the engine sent the move again
    finally:
        rescuer.stop()
