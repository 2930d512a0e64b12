"""OpenTelemetry tracing (off by default) and the log formats.

test_one_trace_per_move_linked_to_the_call_that_caused_it runs tracing_scenario.py: the real
engine server, a real Celery worker of ai_workers and a gRPC client in one process, their
spans in an in-memory exporter, on a real redis-server.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine_service import telemetry
from tests.service import support

SCENARIO = Path(__file__).with_name("tracing_scenario.py")


def run_scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with support.redis_server() as url:
        result = subprocess.run(
            [sys.executable, str(SCENARIO), url],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
            cwd=support.ROOT,
        )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    spans = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    logs = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    return spans, logs


def test_one_trace_per_move_linked_to_the_call_that_caused_it() -> None:
    spans, logs = run_scenario()
    by_id = {s["span_id"]: s for s in spans}
    traces: dict[str, list[dict[str, Any]]] = {}
    for s in spans:
        traces.setdefault(s["trace_id"], []).append(s)

    def parent(span: dict[str, Any]) -> dict[str, Any]:
        return by_id[span["parent_id"]]

    def root_of(trace_id: str) -> dict[str, Any]:
        (root,) = [s for s in traces[trace_id] if s["parent_id"] is None]
        return root

    # The client's CreateGame: its own trace (client span -> the engine's server span).
    (create,) = [s for s in spans if s["name"].endswith("/CreateGame") and s["kind"] == "CLIENT"]
    assert create["parent_id"] is None, "the client's call starts the trace"
    (created,) = [s for s in traces[create["trace_id"]]
                  if s["name"].endswith("/CreateGame") and s["kind"] == "SERVER"]  # fmt: skip
    assert parent(created) is create
    assert not [s for s in traces[create["trace_id"]] if s["kind"] in ("PRODUCER", "CONSUMER")], (
        "the AI's move is not in the trace of the call that caused it"
    )
    tasks = [s for s in spans if s["kind"] == "CONSUMER"]
    assert len(tasks) >= 3, "three AI moves at least"
    assert len({t["trace_id"] for t in tasks}) == len(tasks), "one trace per AI move"
    cause = created
    followed = 0
    logged: list[int] = []  # "chose action" lines of each move, in its trace
    while True:  # follow the moves from CreateGame, each linked to the one before
        moves = [s for s in spans if s["name"] == "ascension.ai_move" and s["links"]
                 and s["links"][0]["span_id"] == cause["span_id"]]  # fmt: skip
        if not moves:
            break
        (move,) = moves
        trace = traces[move["trace_id"]]
        assert root_of(move["trace_id"]) is move, "the move's dispatch starts its trace"
        assert move["links"] == [{"trace_id": cause["trace_id"], "span_id": cause["span_id"]}]
        assert move["trace_id"] != cause["trace_id"]
        assert move["attributes"]["ascension.game_id"] == move["game_id"]
        assert move["attributes"]["ascension.bot"] == "random"
        assert "ascension.token" not in json.dumps(move)
        received_ = [s for s in trace if s["kind"] == "SERVER" and s["name"].endswith(
            "/SubmitAction")]  # fmt: skip
        if not received_:  # the move in flight when the game was deleted: no further checks
            break
        # engine -> Celery -> worker -> engine, all in the move's trace.
        (publish,) = [s for s in trace if s["kind"] == "PRODUCER"]
        assert publish["name"] == "apply_async/ascension.choose_move"
        assert parent(publish) is move
        (task,) = [s for s in trace if s["kind"] == "CONSUMER"]
        assert task["name"] == "run/ascension.choose_move" and parent(task) is publish
        calls = {s["name"].rsplit("/", 1)[1]: s for s in trace
                 if s["kind"] == "CLIENT" and s["parent_id"] == task["span_id"]}  # fmt: skip
        assert set(calls) == {"GetGame", "SubmitAction"}, calls
        (received,) = received_
        assert parent(received) is calls["SubmitAction"]
        assert len(trace) < 20, f"a move is a handful of spans, not {len(trace)}"
        # Log lines written inside the task carry the move's trace id (LOG_FORMAT=json).
        played = [e for e in logs if e["logger"] == "ascension.worker.runner"
                  and "chose action" in e["message"] and e.get("trace_id") == move["trace_id"]]  # fmt: skip
        logged.append(len(played))
        assert all(e["span_id"] in {s["span_id"] for s in trace} for e in played)
        cause = received
        followed += 1
    complete = [t for t in tasks if any(s["kind"] == "SERVER" and s["name"].endswith("/SubmitAction")
                                        for s in traces[t["trace_id"]])]  # fmt: skip
    assert followed >= 3 and followed == len(complete), (followed, len(complete))
    # (The last move's line may come after its submit, when the scenario had stopped.)
    assert logged[:-1] == [1] * (followed - 1) and logged[-1] <= 1, logged


def test_tracing_is_off_by_default_and_imports_nothing() -> None:
    code = (
        "import sys\n"
        "from engine_service import telemetry\n"
        "assert telemetry.configure_tracing('x') is False\n"
        "telemetry.instrument_engine(); telemetry.instrument_worker()\n"
        "print(any(m.startswith('opentelemetry') for m in sys.modules))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != telemetry.TRACING_ENV}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == "False"


def test_bad_settings_are_configuration_errors() -> None:
    with pytest.raises(ValueError, match="ASCENSION_TRACING"):
        telemetry.tracing_mode({"ASCENSION_TRACING": "jaeger"})
    with pytest.raises(ValueError, match="LOG_FORMAT"):
        telemetry.log_format({"LOG_FORMAT": "xml"})
    assert telemetry.tracing_mode({}) == "off" and telemetry.log_format({}) == "text"
    engine = subprocess.run(
        [str(support.ENGINE), "serve"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "ASCENSION_TRACING": "jaeger"},
        check=False,
    )
    assert engine.returncode == 2 and "ASCENSION_TRACING" in engine.stderr
    worker = subprocess.run(
        [str(Path(sys.executable).with_name("ascension-worker")), "check", "--local"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "LOG_FORMAT": "xml"},
        check=False,
    )
    assert worker.returncode == 2 and "LOG_FORMAT" in worker.stderr


def test_json_log_lines() -> None:
    record = logging.LogRecord(
        "ascension.engine", logging.WARNING, __file__, 1, "over %s", ("quota",), None
    )
    telemetry.TraceContextFilter().filter(record)
    line = json.loads(telemetry.JsonFormatter().format(record))
    assert line["level"] == "WARNING" and line["logger"] == "ascension.engine"
    assert line["message"] == "over quota"
    assert line["time"].endswith("Z") and "trace_id" not in line  # no span here
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record.exc_info = sys.exc_info()
    assert "RuntimeError: boom" in json.loads(telemetry.JsonFormatter().format(record))["exception"]


def test_engine_logs_json_when_asked() -> None:
    engine = support.start_engine(LOG_FORMAT="json")
    try:
        support.create(engine.stub())
    finally:
        engine.stop()
    lines = [line for line in engine.log().splitlines() if line.startswith("{")]
    assert lines, engine.log()
    parsed = [json.loads(line) for line in lines]
    assert all({"time", "level", "logger", "message"} <= set(p) for p in parsed)


def test_real_processes_share_the_trace_of_an_ai_move(tmp_path: Path) -> None:
    """`ascension-engine serve` and `ascension-worker run` (prefork pool) with
    ASCENSION_TRACING=console and LOG_FORMAT=json: the worker's log line of the move carries
    a trace id that the engine's spans carry too (the context crossed Celery and gRPC)."""
    import os
    import re
    import signal
    import time

    from engine_service.api.ascension.v1 import engine_pb2 as epb
    from engine_service.api.ascension.v1 import game_pb2 as pb

    traced = {"ASCENSION_TRACING": "console", "LOG_FORMAT": "json"}
    with support.redis_server() as url:
        engine = support.start_engine(
            url, ENGINE_AI_DISPATCH="celery", CELERY_BROKER_URL=url, **traced
        )
        log = tmp_path / "worker.log"
        env = {
            **os.environ,
            **traced,
            "CELERY_BROKER_URL": url,
            "WORKER_METRICS_PORT": "0",
            "WORKER_CONCURRENCY": "1",
            "TMPDIR": str(tmp_path),
        }
        with log.open("wb") as out:
            worker = subprocess.Popen(
                [str(Path(sys.executable).with_name("ascension-worker")), "run"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=support.ROOT,
            )
        try:
            stub = engine.stub()
            bot = epb.BotSettings(name="random", seed=1)
            seats = [epb.SeatConfig(kind=pb.SeatInfo.AI, name=f"ai-{i}", bot=bot) for i in range(2)]
            game = stub.CreateGame(epb.CreateGameRequest(sets="ss", seats=seats), timeout=10)
            deadline = time.monotonic() + 90
            played: list[dict[str, Any]] = []
            while not played:
                assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
                time.sleep(0.5)
                for line in log.read_text(errors="replace").splitlines():
                    if line.startswith("{") and '"ascension.worker.runner"' in line:
                        entry = json.loads(line)
                        if game.game_id in entry["message"] and "chose action" in entry["message"]:
                            played.append(entry)
            stub.DeleteGame(
                epb.DeleteGameRequest(game_id=game.game_id, admin_token=game.admin_token),
                timeout=10,
            )
        finally:
            try:
                if worker.poll() is None:
                    os.killpg(worker.pid, signal.SIGTERM)
                    try:  # (a warm shutdown on a loaded machine: the pool's spans flushed)
                        worker.wait(90)
                    except subprocess.TimeoutExpired:
                        os.killpg(worker.pid, signal.SIGKILL)
                        worker.wait(10)
                        raise AssertionError(
                            "the worker did not stop within 90 s of SIGTERM:\n"
                            + log.read_text(errors="replace")[-3000:]
                        ) from None
            finally:
                engine.stop()
    trace_id = played[0]["trace_id"]
    assert re.fullmatch(r"[0-9a-f]{32}", trace_id)
    # The engine's console exporter printed its spans of that trace (CreateGame, the publish).
    assert f'"trace_id": "0x{trace_id}"' in engine.log(), engine.log()[-3000:]
    worker_log = log.read_text(errors="replace")
    assert f'"trace_id": "0x{trace_id}"' in worker_log, "the pool process exported its spans"


def test_the_sdk_starts_client_spans_that_the_engine_continues() -> None:
    """Client and AsyncClient: a CLIENT span per call, in the application's trace, and the
    engine's server span of each call is its child (the context crossed in the metadata)."""
    engine = support.start_engine(ASCENSION_TRACING="console", ENGINE_CALLER_SEEDS="anyone")
    try:
        result = subprocess.run(
            [sys.executable, str(SCENARIO.with_name("sdk_tracing_scenario.py")), engine.address],
            capture_output=True, text=True, timeout=120, check=False, cwd=support.ROOT,
        )  # fmt: skip
    finally:
        engine.stop()
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    spans = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    (turn,) = [s for s in spans if s["name"] == "a player's turn"]
    calls = [s for s in spans if s["kind"] == "CLIENT"]
    names = [s["name"].rsplit("/", 1)[1] for s in calls]
    assert {"CreateGame", "GetGame", "SubmitAction"} <= set(names), names
    sync_calls = [s for s in calls if s["trace_id"] == turn["trace_id"]]
    assert {s["name"].rsplit("/", 1)[1] for s in sync_calls} >= {"CreateGame", "SubmitAction"}
    assert all(s["parent_id"] == turn["span_id"] for s in sync_calls)
    assert names.count("GetGame") >= 2, "the AsyncClient's call too"
    log = engine.log()
    for call in calls:  # the engine's span of each call: the client span's child
        assert f'"parent_id": "0x{call["span_id"]}"' in log, call
        assert f'"trace_id": "0x{call["trace_id"]}"' in log, call


def test_the_sdk_without_opentelemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The import is guarded: without the package the SDK's channels are left as they are."""
    from clients.sdk import tracing
    from clients.sdk._grpc import grpc

    monkeypatch.setitem(sys.modules, "opentelemetry.instrumentation.grpc", None)
    channel = grpc.insecure_channel("127.0.0.1:1")
    try:
        assert tracing.traced_channel(channel) is channel
        assert tracing.aio_interceptors() == []
    finally:
        channel.close()
