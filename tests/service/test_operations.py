"""Operating the server: health, reflection, metrics, configuration, graceful shutdown."""

from __future__ import annotations

import random
import signal
import subprocess
import threading
import time
import urllib.request

import grpc  # type: ignore[import-untyped]
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from tests.service import support
from tests.service.support import CALL_TIMEOUT

METRICS = (
    "ascension_grpc_requests_total", "ascension_grpc_request_seconds_bucket", "ascension_actions_applied_total",
    "ascension_cas_conflicts_total", "ascension_store_seconds_bucket", "ascension_games_created_total",
    "ascension_games_finished_total", "ascension_games_active", "ascension_ai_moves_enqueued_total",
    "ascension_ai_seat_wait_seconds",
)  # fmt: skip


def test_health_and_reflection(engine: support.Engine) -> None:
    with grpc.insecure_channel(engine.address) as ch:
        health = health_pb2_grpc.HealthStub(ch)
        for service in ("", "ascension.v1.Engine"):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=CALL_TIMEOUT)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        refl = reflection_pb2_grpc.ServerReflectionStub(ch)
        answers = list(refl.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                                 timeout=CALL_TIMEOUT))  # fmt: skip
        names = {s.name for s in answers[0].list_services_response.service}
        assert {"ascension.v1.Engine", "grpc.health.v1.Health"} <= names
        files = list(refl.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(file_containing_symbol="ascension.v1.Engine")]),
            timeout=CALL_TIMEOUT))  # fmt: skip
        assert files[0].file_descriptor_response.file_descriptor_proto


def test_metrics_endpoint(engine: support.Engine, stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    support.rpc_error(stub.GetGame, epb.GetGameRequest(game_id="0" * 22))
    view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[game.view.to_move]),
                        timeout=CALL_TIMEOUT)  # fmt: skip
    stub.SubmitAction(epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[view.to_move],
                                              expected_version=1, action=view.legal_actions[0].id),
                      timeout=CALL_TIMEOUT)  # fmt: skip
    text = urllib.request.urlopen(f"http://127.0.0.1:{engine.metrics_port}/metrics", timeout=5).read().decode()
    for name in METRICS:
        assert f"\n{name}" in text, name
    assert 'ascension_grpc_requests_total{code="NOT_FOUND",method="GetGame"}' in text
    assert 'ascension_actions_applied_total{kind="place_ship"}' in text
    assert 'ascension_store_seconds_bucket{le="0.001",op="commit"}' in text


def test_bad_configuration_is_refused() -> None:
    out = subprocess.run([str(support.ENGINE), "serve", "--grpc-port", "70000"], capture_output=True, text=True,
                         timeout=30)  # fmt: skip
    assert out.returncode == 2 and "ENGINE_GRPC_PORT" in out.stderr
    out = subprocess.run([str(support.ENGINE), "serve"], capture_output=True, text=True, timeout=30,
                         env={"ENGINE_STREAM_MAXLEN": "lots", "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert out.returncode == 2 and "ENGINE_STREAM_MAXLEN" in out.stderr
    out = subprocess.run([str(support.ENGINE), "serve", "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "--redis-url" in out.stdout and "--ai-stall-seconds" in out.stdout


def test_updates_older_than_the_window_are_rebuilt() -> None:
    e = support.start_engine(ENGINE_STREAM_MAXLEN="5")
    try:
        stub = e.stub()
        game = support.create(stub)
        final, responses = support.play_to_end(stub, game, max_actions=10)
        every = support.Watcher(stub, game.game_id).until(final.version)  # the game goes on
        assert [u.version for u in every] == list(range(1, final.version + 1))
        assert [(u.seat, u.action) for u in every[1:]] == [(r.update.seat, r.update.action) for r in responses]
        tail = support.Watcher(stub, game.game_id, after_version=final.version - 5).until(final.version)
        assert [u.version for u in tail] == list(range(final.version - 4, final.version + 1))
        assert [u.commit_id for u in tail] == [r.update.commit_id for r in responses[-5:]]
    finally:
        e.stop()


def test_graceful_shutdown(redis_url: str) -> None:
    """SIGTERM: health goes NOT_SERVING while calls still succeed, calls in flight finish,
    watchers are told where to resume, nothing is half written, the process exits 0."""
    e = support.start_engine(redis_url, ENGINE_SHUTDOWN_DRAIN_SECONDS="1.5", ENGINE_SHUTDOWN_GRACE_SECONDS="5")
    stub = e.stub()
    game = support.create(stub, seed=31)
    quiet = support.create(stub, seed=32)  # watched: nothing happens in it, its stream is open at the stop
    ok: list[int] = []
    failures: list[str] = []
    watch_end: list[grpc.RpcError] = []
    stop = threading.Event()
    sigterm_at = [float("inf")]

    def submitter(seat_filter: int) -> None:
        ch = e.new_channel()
        s = rpc.EngineStub(ch)
        rng = random.Random(seat_filter)
        try:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    v = s.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[0]), timeout=5)
                    seat = v.to_move
                    v = s.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[seat]), timeout=5)
                    if v.to_move != seat or v.over:
                        continue
                    r = s.SubmitAction(epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[seat],
                                                               expected_version=v.version, action=support.pick(v, rng)),
                                       timeout=5)  # fmt: skip
                    ok.append(r.update.version)
                except grpc.RpcError as x:
                    # A call begun once the server is stopping may also find its connection
                    # accepted by the kernel but never served, and time out (a loaded machine).
                    stopping = started >= sigterm_at[0] and x.code().name == "DEADLINE_EXCEEDED"
                    if x.code().name in ("UNAVAILABLE", "CANCELLED") or stopping:
                        if e.proc.poll() is not None:
                            return
                        continue
                    if x.code().name not in ("ABORTED", "FAILED_PRECONDITION"):
                        failures.append(f"{x.code().name}: {x.details()}")
        except Exception as x:
            failures.append(repr(x))
        finally:
            ch.close()

    def watcher() -> None:
        ch = e.new_channel()
        try:
            for _ in rpc.EngineStub(ch).WatchGame(epb.WatchGameRequest(game_id=quiet.game_id), timeout=60):
                pass
        except grpc.RpcError as x:
            watch_end.append(x)
        finally:
            ch.close()

    threads = [threading.Thread(target=submitter, args=(i,)) for i in range(3)] + [threading.Thread(target=watcher)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    sigterm_at[0] = time.monotonic()
    e.proc.send_signal(signal.SIGTERM)
    statuses = set()
    with grpc.insecure_channel(e.address) as ch:
        health = health_pb2_grpc.HealthStub(ch)
        deadline = time.monotonic() + 1.2
        while time.monotonic() < deadline:
            try:
                statuses.add(health.Check(health_pb2.HealthCheckRequest(service=""), timeout=1).status)
            except grpc.RpcError:
                break
            time.sleep(0.05)
    assert health_pb2.HealthCheckResponse.NOT_SERVING in statuses
    assert e.proc.wait(20) == 0, e.log()
    stop.set()
    for t in threads:
        t.join(20)
    assert not failures, failures
    assert ok, "no action was applied before the shutdown"
    assert watch_end and watch_end[0].code().name == "UNAVAILABLE" and "after_version=1" in watch_end[0].details()
    # a new replica on the same Redis finds every acknowledged action, versions without a gap
    e2 = support.start_engine(redis_url)
    try:
        final = e2.stub().GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT)
        assert sorted(ok) == list(range(2, len(ok) + 2)) and final.version >= max(ok)
        after = final.version - (1 if final.over else 3)  # a finished game keeps its last update only
        window = support.Watcher(e2.stub(), game.game_id, after_version=after).until(final.version)
        assert [u.version for u in window] == list(range(after + 1, final.version + 1))
    finally:
        e2.stop()


def test_embedded_default_needs_nothing(memory_engine: support.Engine) -> None:
    """No REDIS_URL: the one-command setup keeps games in process."""
    assert "store: memory" in memory_engine.log()
    game = memory_engine.stub().CreateGame(
        epb.CreateGameRequest(seats=[epb.SeatConfig(kind=pb.SeatInfo.HUMAN)] * 2), timeout=CALL_TIMEOUT)  # fmt: skip
    assert game.view.version == 1
