"""The SDK's client spans (run by test_tracing.py): an application with a tracer provider of
its own (spans to an in-memory exporter) plays two moves with Client and reads a view with
AsyncClient against a real engine (argv[1]); prints each span as a JSON line. Nothing here
instruments gRPC globally: the spans are the SDK's own."""

from __future__ import annotations

import asyncio
import json
import sys

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from clients.sdk import AsyncClient, Client, human

address = sys.argv[1]
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
app = trace.get_tracer("the-application")

with app.start_as_current_span("a player's turn"), Client(address, timeout=10) as client:
    game = client.create_game([human("Ann"), human("Bob")], seed=3)
    seat = game.view.to_move
    view = client.get_view(game.game_id, game.token(seat))
    client.submit(game.game_id, game.token(seat), view.legal_actions[0].id)


async def read() -> None:
    async with AsyncClient(address, timeout=10) as client:
        await client.get_view(game.game_id, game.token(0))


asyncio.run(read())
for span in exporter.get_finished_spans():
    parent = span.parent.span_id if span.parent is not None else None
    print(json.dumps({
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": format(span.context.trace_id, "032x"),
        "span_id": format(span.context.span_id, "016x"),
        "parent_id": format(parent, "016x") if parent is not None else None,
    }))  # fmt: skip
