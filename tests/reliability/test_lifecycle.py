"""Start and stop, with real processes: an engine started before its Redis waits with health
NOT_SERVING and says so in one line (or exits with one line, if told to); a stop is prompt
even with health and watch streams open; abandoned games expire."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import grpc  # type: ignore[import-untyped]
from grpc_health.v1 import health_pb2, health_pb2_grpc

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from tests.reliability.redis_proc import RedisProcess
from tests.service import support


def _serve(env: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    port = support.free_port()
    full = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL")}
    full.update({"ENGINE_GRPC_PORT": str(port), "ENGINE_HOST": "127.0.0.1", "ENGINE_METRICS_PORT": "0",
                 "ENGINE_AI_DISPATCH": "off", "PYTHONPATH": str(support.ROOT), **env})  # fmt: skip
    proc = subprocess.Popen([str(support.ENGINE), "serve"], env=full, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip
    return proc, port


def _health(port: int) -> int | None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        try:
            return int(health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=2).status)
        except grpc.RpcError:
            return None


def _wait_health(port: int, status: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _health(port) == status:
            return True
        time.sleep(0.1)
    return False


def test_waits_for_redis_not_serving_then_serves(tmp_path: Path) -> None:
    r = RedisProcess(tmp_path / "redis")  # not started yet: its port is free
    proc, port = _serve({"REDIS_URL": r.url})
    try:
        assert _wait_health(port, health_pb2.HealthCheckResponse.NOT_SERVING, 20)
        time.sleep(1.5)
        assert proc.poll() is None
        r.start()
        assert _wait_health(port, health_pb2.HealthCheckResponse.SERVING, 20)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            game = support.create(rpc.EngineStub(ch), seed=None)
            assert game.view.version == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        r.stop()
    waiting = [line for line in out.splitlines() if "waiting for the store" in line]
    assert len(waiting) == 1, out  # one line, not one per attempt
    assert f"127.0.0.1:{r.port}" in waiting[0] and "NOT_SERVING" in waiting[0]
    assert "Traceback" not in out
    assert proc.returncode == 0


def test_gives_up_with_one_line_when_told_to() -> None:
    proc, _ = _serve({"REDIS_URL": f"redis://:secret@127.0.0.1:{support.free_port()}/0",
                      "ENGINE_STORE_STARTUP_SECONDS": "2"})  # fmt: skip
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1, out
    assert "Traceback" not in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("ascension-engine: the store at redis://:***@127.0.0.1") and "within 2s" in last
    assert "secret" not in out


def test_stop_is_prompt_with_streams_open(redis_url: str) -> None:
    """An idle replica with a health Watch and a WatchGame open stops in about its drain time,
    not its 20 s grace: the streams are ended, the watchers told where to resume."""
    e = support.start_engine(redis_url, ENGINE_SHUTDOWN_GRACE_SECONDS="20", ENGINE_SHUTDOWN_DRAIN_SECONDS="0.5")
    game = support.create(e.stub())
    ended: dict[str, object] = {}
    ch = grpc.insecure_channel(e.address)

    def health_watch() -> None:
        statuses = []
        try:
            for resp in health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest(), timeout=60):
                statuses.append(resp.status)
            ended["health"] = statuses
        except grpc.RpcError as x:
            ended["health"] = x

    def game_watch() -> None:
        try:
            for _ in rpc.EngineStub(ch).WatchGame(epb.WatchGameRequest(game_id=game.game_id), timeout=60):
                pass
            ended["watch"] = "ok"
        except grpc.RpcError as x:
            ended["watch"] = x

    threads = [threading.Thread(target=health_watch), threading.Thread(target=game_watch)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    t0 = time.monotonic()
    e.proc.send_signal(signal.SIGTERM)
    assert e.proc.wait(20) == 0
    took = time.monotonic() - t0
    for t in threads:
        t.join(10)
    ch.close()
    assert took < 8, f"the stop took {took:.1f}s"
    statuses = ended["health"]
    assert isinstance(statuses, list) and statuses[-1] == health_pb2.HealthCheckResponse.NOT_SERVING
    watch_end = ended["watch"]
    assert isinstance(watch_end, grpc.RpcError) and watch_end.code() == grpc.StatusCode.UNAVAILABLE
    assert "after_version=1" in watch_end.details()


def test_abandoned_games_expire(redis_url: str) -> None:
    e = support.start_engine(redis_url, ENGINE_IDLE_GAME_TTL_SECONDS="1")
    try:
        stub = e.stub()
        game = support.create(stub)
        time.sleep(2.5)
        err = support.rpc_error(stub.GetGame, epb.GetGameRequest(game_id=game.game_id))
        assert err.code() == grpc.StatusCode.NOT_FOUND
        listed = stub.ListGames(epb.ListGamesRequest(page_size=500), timeout=10)
        assert game.game_id not in {g.game_id for g in listed.games}
    finally:
        e.stop()
