"""Build and run the gRPC server: engine, health, reflection, metrics, housekeeping, shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable

from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from grpc_reflection.v1alpha import reflection

from engine_service.api.ascension.v1 import engine_pb2, engine_pb2_grpc
from engine_service.server.config import Settings
from engine_service.server.dispatch import make_dispatcher
from engine_service.server.games import Games
from engine_service.server.grpc_compat import aio
from engine_service.server.metrics import Metrics
from engine_service.server.service import SERVICE, EngineService
from engine_service.server.sweeper import Sweeper
from engine_service.store import StoreError, open_store
from engine_service.store.timed import TimedStore

log = logging.getLogger("ascension.engine")
KEEPALIVE_MS = 30_000


def server_options(settings: Settings) -> list[tuple[str, int]]:
    return [
        ("grpc.max_receive_message_length", settings.max_message_bytes),
        ("grpc.max_send_message_length", settings.max_message_bytes),
        ("grpc.keepalive_time_ms", KEEPALIVE_MS),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.so_reuseport", 0),
    ]


async def _wait_for_store(store: TimedStore, seconds: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        try:
            await store.ping()
            return
        except StoreError as e:
            if loop.time() >= deadline:
                raise
            log.warning("waiting for the store: %s", e)
            await asyncio.sleep(1.0)


async def serve(
    settings: Settings,
    on_ready: Callable[[str], None] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Run until SIGTERM/SIGINT (or ``stop``), then shut down gracefully."""
    metrics = Metrics()
    store = TimedStore(
        open_store(settings.redis_url, settings.stream_maxlen, settings.redis_timeout_seconds),
        metrics.observe_store,
    )
    await _wait_for_store(store)
    server = aio.server(options=server_options(settings))
    port = server.add_insecure_port(f"{settings.host}:{settings.grpc_port}")
    if port == 0:
        raise OSError(f"cannot listen on {settings.host}:{settings.grpc_port}")
    advertise = settings.advertise_address or f"127.0.0.1:{port}"
    dispatcher = make_dispatcher(
        settings.dispatch_mode,
        settings.broker_url,
        settings.local_ai_target,
        settings.local_ai_processes,
    )
    games = Games(store, dispatcher, metrics, advertise, settings.game_ttl_seconds)
    engine_pb2_grpc.add_EngineServicer_to_server(EngineService(games, metrics), server)
    health = health_aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    names = (
        engine_pb2.DESCRIPTOR.services_by_name["Engine"].full_name,
        health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
        reflection.SERVICE_NAME,
    )
    reflection.enable_server_reflection(names, server)
    if settings.metrics_port:
        metrics.serve(settings.metrics_port, settings.host)
    await server.start()
    for name in ("", SERVICE):
        await health.set(name, health_pb2.HealthCheckResponse.SERVING)
    stop = stop or asyncio.Event()
    drain = [False]

    def on_signal(sig: signal.Signals) -> None:
        drain[0] = sig == signal.SIGTERM  # an orchestrator's stop: let load balancers notice first
        stop.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not main thread / not POSIX
            loop.add_signal_handler(sig, on_signal, sig)
    housekeeping_stop = asyncio.Event()
    sweeper = Sweeper(
        store, dispatcher, metrics, settings.ai_sweep_seconds, settings.ai_stall_seconds
    )
    housekeeping = asyncio.create_task(sweeper.run(housekeeping_stop))
    address = f"{settings.host}:{port}"
    metrics_where = (
        f"metrics on :{settings.metrics_port}" if settings.metrics_port else "metrics off"
    )
    print(
        f"ascension-engine listening on {address} (store: {store.kind}, AI dispatch: {dispatcher.name}, "
        f"{metrics_where})",
        flush=True,
    )
    if on_ready is not None:
        on_ready(address)
    await stop.wait()
    await health.enter_graceful_shutdown()
    if drain[0] and settings.shutdown_drain_seconds > 0:
        log.info("SIGTERM: health NOT_SERVING, still serving for %.1fs", settings.shutdown_drain_seconds)
        await asyncio.sleep(settings.shutdown_drain_seconds)
    log.info("shutting down: no new calls, finishing calls in flight (grace %.0fs)", settings.shutdown_grace_seconds)
    games.stopping.set()  # watch streams end with UNAVAILABLE and the version to resume after
    await server.stop(settings.shutdown_grace_seconds)
    housekeeping_stop.set()
    await housekeeping
    await dispatcher.close()
    await store.close()
    log.info("stopped")
    sys.stdout.flush()
