"""gRPC health checking whose Watch streams end when the server stops.

grpc_health's servicer keeps a Watch stream open for as long as the client stays: during a
graceful stop that stream alone would hold the whole grace period. Here, once the server is
stopping, each Watch stream gets its NOT_SERVING and then ends.
"""

from __future__ import annotations

import asyncio
from typing import Any

from grpc_health.v1 import health_pb2
from grpc_health.v1.health import aio as health_aio


class Health(health_aio.HealthServicer):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self._closing: asyncio.Event | None = None

    def _closing_event(self) -> asyncio.Event:
        if self._closing is None:
            self._closing = asyncio.Event()
        return self._closing

    async def Watch(self, request: health_pb2.HealthCheckRequest, context: Any) -> None:
        closing = self._closing_event()
        if closing.is_set():
            await context.write(
                health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.NOT_SERVING)
            )
            return
        watch = asyncio.ensure_future(super().Watch(request, context))
        closed = asyncio.ensure_future(closing.wait())
        try:
            await asyncio.wait({watch, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
            closed.cancel()

    async def close_streams(self) -> None:
        """Say NOT_SERVING to every Watch stream, then end them."""
        await self.enter_graceful_shutdown()
        await asyncio.sleep(0.05)  # let the streams write it
        self._closing_event().set()
