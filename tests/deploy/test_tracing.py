"""OpenTelemetry tracing (off by default) and the log formats.

test_one_trace_follows_an_ai_move runs tracing_scenario.py: the real engine server, a real
Celery worker of ai_workers and a gRPC client in one process, their spans in an in-memory
exporter, on a real redis-server.
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


def test_one_trace_follows_an_ai_move() -> None:
    spans, logs = run_scenario()
    by_id = {s["span_id"]: s for s in spans}

    def parent(span: dict[str, Any]) -> dict[str, Any]:
        return by_id[span["parent_id"]]

    (root,) = [s for s in spans if s["name"].endswith("/CreateGame") and s["kind"] == "CLIENT"]
    assert root["parent_id"] is None, "the client's call starts the trace"
    trace = [s for s in spans if s["trace_id"] == root["trace_id"]]
    # client -> engine: the server span of CreateGame is the client span's child.
    (server,) = [s for s in trace if s["name"].endswith("/CreateGame") and s["kind"] == "SERVER"]
    assert parent(server) is root
    # engine -> Celery: the move task is published inside CreateGame...
    (publish,) = [
        s for s in trace if s["kind"] == "PRODUCER" and s["parent_id"] == server["span_id"]
    ]
    assert publish["name"] == "apply_async/ascension.choose_move"
    # ... and run by the worker as a child of the publication.
    (task,) = [s for s in trace if s["kind"] == "CONSUMER" and s["parent_id"] == publish["span_id"]]
    assert task["name"] == "run/ascension.choose_move"
    # worker -> engine: the task's GetGame and SubmitAction, received by the engine.
    calls = {
        s["name"].rsplit("/", 1)[1]: s
        for s in trace
        if s["kind"] == "CLIENT" and s["parent_id"] == task["span_id"]
    }
    assert set(calls) == {"GetGame", "SubmitAction"}
    submit = calls["SubmitAction"]
    (received,) = [
        s for s in trace if s["kind"] == "SERVER" and s["parent_id"] == submit["span_id"]
    ]
    assert received["name"] == "/ascension.v1.Engine/SubmitAction"
    # The AI's next move of the same turn continues the trace from that submit.
    assert any(s["kind"] == "PRODUCER" and s["parent_id"] == received["span_id"] for s in trace)
    # Log lines written inside the task carry its trace id (LOG_FORMAT=json).
    played = [
        entry
        for entry in logs
        if entry["logger"] == "ascension.worker.runner" and "chose action" in entry["message"]
    ]
    assert played, logs[-5:]
    assert {entry["trace_id"] for entry in played} == {root["trace_id"]}
    assert all(len(entry["span_id"]) == 16 for entry in played)


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
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                worker.wait(30)
            engine.stop()
    trace_id = played[0]["trace_id"]
    assert re.fullmatch(r"[0-9a-f]{32}", trace_id)
    # The engine's console exporter printed its spans of that trace (CreateGame, the publish).
    assert f'"trace_id": "0x{trace_id}"' in engine.log(), engine.log()[-3000:]
    worker_log = log.read_text(errors="replace")
    assert f'"trace_id": "0x{trace_id}"' in worker_log, "the pool process exported its spans"
