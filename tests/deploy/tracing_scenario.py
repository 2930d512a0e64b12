"""One traced AI move with real components in one process (run by test_tracing.py).

The engine's server (ascension-engine's serve(), on a real redis-server given as argv[1]),
a real Celery worker of ai_workers (solo pool, in a thread) and a gRPC client share one
tracer provider whose spans go to an in-memory exporter. The client creates a game of two
AI seats (the random bot), waits for three moves, and deletes it. Prints each
span as a JSON line to stdout (with its links); logs JSON lines (LOG_FORMAT=json) to stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from typing import Any

redis_url = sys.argv[1]
os.environ.update(
    CELERY_BROKER_URL=redis_url,
    LOG_FORMAT="json",
    WORKER_METRICS_PORT="0",
)

from celery import signals  # noqa: E402
from celery.contrib.testing.worker import start_worker  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from engine_service import telemetry  # noqa: E402

exporter = InMemorySpanExporter()
telemetry.configure_tracing("ascension-tracing-test", exporter=exporter)
telemetry.configure_logging("INFO")
telemetry.instrument_engine()
telemetry.instrument_worker()


@signals.setup_logging.connect  # type: ignore[untyped-decorator]
def _keep_our_logging(**_: Any) -> None:
    """The worker keeps the JSON logging configured above."""


import grpc  # type: ignore[import-untyped]  # noqa: E402

from ai_workers.celery_app import app as celery_app  # noqa: E402
from engine_service.api.ascension.v1 import engine_pb2 as epb  # noqa: E402
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc  # noqa: E402
from engine_service.api.ascension.v1 import game_pb2 as pb  # noqa: E402
from engine_service.server import config  # noqa: E402
from engine_service.server.app import serve  # noqa: E402

settings = config.load(
    {
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "ENGINE_AI_DISPATCH": "celery",
        "ENGINE_GRPC_PORT": "0",
        "ENGINE_HOST": "127.0.0.1",
        "ENGINE_METRICS_PORT": "0",
        "ENGINE_AI_SWEEP_SECONDS": "0",
        "ENGINE_SHUTDOWN_DRAIN_SECONDS": "0",
        "ENGINE_SHUTDOWN_GRACE_SECONDS": "1",
    }
)
ready = threading.Event()
address: list[str] = []
loop = asyncio.new_event_loop()
stop = asyncio.Event()


def on_ready(where: str) -> None:
    address.append(where)
    ready.set()


def run_engine() -> None:
    asyncio.set_event_loop(loop)
    loop.run_until_complete(serve(settings, on_ready=on_ready, stop=stop))


engine = threading.Thread(target=run_engine, daemon=True)
engine.start()
assert ready.wait(30), "the engine did not start"

with (
    start_worker(celery_app, pool="solo", perform_ping_check=False, loglevel="WARNING"),
    grpc.insecure_channel(address[0]) as channel,
):
    stub = rpc.EngineStub(channel)
    # Two AI seats (a seed may be chosen only when no human plays): the first moves are
    # played one after the other, each by a task the previous submit dispatched.
    bot = epb.BotSettings(name="random", seed=1)
    seats = [epb.SeatConfig(kind=pb.SeatInfo.AI, name=f"ai-{i}", bot=bot) for i in range(2)]
    game = stub.CreateGame(epb.CreateGameRequest(sets="ss", seats=seats, seed=0), timeout=10)
    deadline = time.monotonic() + 60
    view = game.view
    while view.version < 4 and time.monotonic() < deadline:
        time.sleep(0.2)
        view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=10)
    assert view.version >= 4, f"the AI seats did not move (version {view.version})"
    stub.DeleteGame(
        epb.DeleteGameRequest(game_id=game.game_id, admin_token=game.admin_token), timeout=10
    )

loop.call_soon_threadsafe(stop.set)
engine.join(30)

for span in exporter.get_finished_spans():
    parent = span.parent.span_id if span.parent is not None else None
    print(
        json.dumps(
            {
                "name": span.name,
                "kind": span.kind.name,
                "trace_id": format(span.context.trace_id, "032x"),
                "span_id": format(span.context.span_id, "016x"),
                "parent_id": format(parent, "016x") if parent is not None else None,
                "links": [
                    {
                        "trace_id": format(link.context.trace_id, "032x"),
                        "span_id": format(link.context.span_id, "016x"),
                    }
                    for link in span.links
                ],
                "attributes": {
                    k: v for k, v in (span.attributes or {}).items() if k.startswith("ascension.")
                },
                "game_id": game.game_id,
            }
        )
    )
sys.stdout.flush()
os._exit(0)  # the worker's and gRPC's threads need not be joined
