"""A worker restarted mid-game, as after changing a bot, costs the game no move.

Real processes on loopback: a ``redis-server`` on a free port (store and broker), the engine
dispatching AI moves to Celery, and ``ascension-worker run``. SIGTERM reaches the worker's
main process only, as ``docker stop`` and Kubernetes send it (the worker is the container's
first process), while its bot is thinking: the worker finishes that move, hands back what it
had received but not begun, and exits; the next worker plays on. No move of the game is a
fallback move, and no move is dead-lettered (``ai_workers/handoff.py``).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from tests.ai.slow_bot import install_entry_point
from tests.ai.test_celery_integration import ai, metrics, start_worker, wait_over
from tests.service import support

CALL = support.CALL_TIMEOUT
THINK_MS = 3000  # slow-opening's search of the ship's placement; 5 ms a decision afterwards


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
        ENGINE_AI_STALL_SECONDS="60",  # no re-dispatch during the restart: the queue's own copy
        ENGINE_AI_MAX_DISPATCHES="0",
        PYTHONPATH=plugin_path,
    )
    yield e
    e.stop()


@pytest.mark.parametrize("to", ["main process", "process group"])
def test_a_worker_restarted_while_thinking_costs_no_move(
    engine: support.Engine, redis_url: str, plugin_path: str, tmp_path: Path, to: str
) -> None:
    """SIGTERM to the main process (docker stop, Kubernetes) or to the whole process group
    (systemd's default, pkill): the pool processes take it from the worker only."""
    first = start_worker(redis_url, plugin_path, tmp_path, "first")
    stub = engine.stub()
    game = stub.CreateGame(epb.CreateGameRequest(sets="ss", seed=3, seats=[
        ai("slow-opening", time_ms=THINK_MS, seed=1), ai("slow-opening", time_ms=THINK_MS, seed=2)]),
        timeout=CALL)  # fmt: skip
    other = stub.CreateGame(epb.CreateGameRequest(sets="ss", seed=4, seats=[
        epb.SeatConfig(kind=pb.SeatInfo.HUMAN, name="me"), ai("heuristic", seed=3)]), timeout=CALL)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "Task ascension.choose_move" not in first.log():
            assert time.monotonic() < deadline, first.log()
            time.sleep(0.1)
        time.sleep(1.0)  # inside the first placement's search
        assert stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL).version == 1
        if to == "main process":
            os.kill(first.proc.pid, signal.SIGTERM)
        else:
            os.killpg(first.proc.pid, signal.SIGTERM)
        # Meanwhile a player's moves make AI moves of another game: sent while the worker
        # stops, they reach it as it stops consuming, and it hands them back
        stopping = time.monotonic() + 2.5
        while time.monotonic() < stopping:
            mine = stub.GetGame(epb.GetGameRequest(game_id=other.game_id, token=other.seat_tokens[0]),
                                timeout=CALL)  # fmt: skip
            if mine.to_move == 0:
                stub.SubmitAction(epb.SubmitActionRequest(
                    game_id=other.game_id, token=other.seat_tokens[0],
                    expected_version=mine.version, action=mine.legal_actions[0].id), timeout=CALL)  # fmt: skip
            time.sleep(0.05)
        first.proc.wait(60)
    finally:
        first.stop()
    log = first.log()
    assert "Warm shutdown" in log, log[-3000:]
    second = start_worker(redis_url, plugin_path, tmp_path, "second")
    try:
        final = wait_over(engine, game.game_id)
        m = metrics(second.metrics_port)
        second_log = second.log()
    finally:
        second.stop()
    later = stub.GetGame(epb.GetGameRequest(game_id=other.game_id), timeout=CALL)
    assert later.version > 3  # the other game's AI seat played on with the second worker
    for info in [*final.seat_info, *later.seat_info]:
        assert info.fallback_moves == 0, (info, log[-3000:], second_log[-3000:])
    assert sum(v for k, v in m.items() if k.startswith("ascension_worker_dead_letters_total")) == 0
    assert "dead-lettered" not in log + second_log
    # every move of the slow game was a worker's own: the first worker's (the placement it
    # was thinking on at the SIGTERM) and then the second's
    assert "succeeded" in log
    assert m['ascension_worker_moves_total{bot="slow-opening"}'] >= final.version - 2
    handed = second_log.count("delivered again without having started")
    print(f"moves handed back by the first worker and played by the second: {handed}")
