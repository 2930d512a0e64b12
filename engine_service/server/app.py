"""Build and run the gRPC server: engine, health, reflection, metrics, housekeeping, shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from engine_service import redis_urls, rules
from engine_service.api.ascension.v1 import engine_pb2
from engine_service.server import bots
from engine_service.server.analysis import Analyses
from engine_service.server.auth import parse_keys
from engine_service.server.config import Settings
from engine_service.server.dispatch import make_dispatcher, message_ttl
from engine_service.server.games import Games
from engine_service.server.grpc_compat import aio
from engine_service.server.health import Health
from engine_service.server.limits import LogLimiter
from engine_service.server.losses import describe
from engine_service.server.metrics import Metrics
from engine_service.server.review import Reviews
from engine_service.server.service import SERVICE, EngineService, GuardedServer, add_to_server
from engine_service.server.store_probe import probe_store
from engine_service.server.sweeper import Sweeper
from engine_service.server.tls import server_tls
from engine_service.server.tokens import CredentialedDispatcher
from engine_service.server.watch import WatchHub, WatchLimits
from engine_service.store import CachingStore, Store, StoreError, StoreSettings, open_store
from engine_service.store.seen import Lost
from engine_service.store.timed import TimedStore

log = logging.getLogger("ascension.engine")
rollback_log = LogLimiter(logging.getLogger("ascension.engine.store"))
KEEPALIVE_MS = 30_000


def server_options(settings: Settings) -> list[tuple[str, int]]:
    return [
        ("grpc.max_receive_message_length", settings.max_message_bytes),
        ("grpc.max_send_message_length", settings.max_message_bytes),
        ("grpc.keepalive_time_ms", KEEPALIVE_MS),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
        # gRPC cancels calls arriving while more than this many wait to be started (its default
        # is 1,000): a crowd of watchers joining at once (a popular game) would be refused.
        ("grpc.server.max_pending_requests", settings.max_pending_calls),
        ("grpc.server.max_pending_requests_hard_limit", 2 * settings.max_pending_calls),
        # Several server processes share the port (ENGINE_PROCESSES); one process alone keeps
        # the port to itself, so a second engine started by mistake fails to bind it.
        ("grpc.so_reuseport", 1 if settings.processes > 1 else 0),
    ]


def is_open(settings: Settings) -> bool:
    """Anyone who reaches the port may list, create and delete every game: no operator keys,
    and no client certificate asked for (mTLS)."""
    return not (parse_keys(settings.operator_keys) or settings.tls_client_ca_file)


def exposure(settings: Settings) -> str:
    """How the port is protected, for the "listening on" line: "open: plaintext, no operator
    keys", "TLS, operator keys", ..."""
    channel = (
        "mTLS" if settings.tls_client_ca_file else "TLS" if settings.tls_cert_file else "plaintext"
    )
    keys = "operator keys" if parse_keys(settings.operator_keys) else "no operator keys"
    return f"{'open: ' if is_open(settings) else ''}{channel}, {keys}"


def is_loopback(host: str) -> bool:
    bare = host.strip("[]")
    if bare == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def warn_if_exposed(settings: Settings, address: str) -> None:
    """One warning when an open engine listens beyond this machine."""
    if is_open(settings) and not is_loopback(settings.host):
        log.warning(
            "the engine is open on %s: anyone who reaches it may list, create and delete every "
            "game; set ENGINE_OPERATOR_KEYS (and TLS) before exposing it (docs/security.md)",
            address,
        )


def run(main: Coroutine[Any, Any, None], event_loop: str = "auto") -> None:
    """Run ``main`` on uvloop's event loop (libuv: less CPU per call than asyncio's own loop,
    measured with benchmarks/service.py), unless ENGINE_EVENT_LOOP=asyncio or uvloop is not
    installed."""
    factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    if event_loop != "asyncio":
        try:
            import uvloop
        except ImportError:
            if event_loop == "uvloop":
                raise
        else:
            factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main)


class StoreUnreachable(Exception):
    """The store did not answer within ENGINE_STORE_STARTUP_SECONDS."""


async def _wait_for_store(store: Store, where: str, seconds: float) -> None:
    """Wait until the store answers; health stays NOT_SERVING meanwhile. One warning line when
    it does not answer at once, then one every minute."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    told = -1.0
    while True:
        try:
            await store.ping()
        except StoreError as e:
            waited = loop.time() - start
            if seconds and waited >= seconds:
                raise StoreUnreachable(
                    f"the store at {where} did not answer within {seconds:.0f}s: {e}"
                ) from None
            if told < 0 or waited - told >= 60:
                log.warning(
                    "waiting for the store at %s (%s); health is NOT_SERVING until it answers",
                    where,
                    e,
                )
                told = waited
            await asyncio.sleep(1.0)
            continue
        if told >= 0:
            log.info("the store at %s answers after %.1fs", where, loop.time() - start)
        return


def build_store(settings: Settings, metrics: Metrics) -> CachingStore:
    """Redis or memory, timed, behind this replica's cache (which reports rollbacks)."""
    inner = open_store(
        settings.store_url,  # REDIS_URL with the REDIS_USERNAME/PASSWORD/TLS_* settings
        StoreSettings(
            window=settings.stream_maxlen,
            finished_ttl=settings.game_ttl_seconds,
            idle_ttl=settings.idle_game_ttl_seconds,
        ),
        settings.redis_timeout_seconds,
        mode=settings.redis_mode,
        retry_seconds=settings.redis_retry_seconds,
        wait_replicas=settings.redis_wait_replicas,
        wait_timeout_ms=settings.redis_wait_timeout_ms,
        client=settings.redis_client,
    )

    def on_rollback(game_id: str, lost: Lost, counted: bool) -> None:
        if counted:  # (the first replica to find this loss: the sum over replicas is one)
            metrics.rollbacks_detected.inc()
        rollback_log.warning(
            "%s%s", describe(game_id, lost), "" if counted else " (counted by another replica)"
        )

    return CachingStore(TimedStore(inner, metrics.observe_store), on_rollback)


async def _tidy(store: Store, stop: asyncio.Event, seconds: float = 60.0) -> None:
    """Drop index entries of expired games now and then (bounded work per round)."""
    while not stop.is_set():
        try:
            await store.tidy(2000)
        except StoreError as e:
            log.warning("tidying the store's indexes skipped: %s", e)
        except Exception:
            log.exception("tidying the store's indexes failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)


async def serve(
    settings: Settings,
    on_ready: Callable[[str], None] | None = None,
    stop: asyncio.Event | None = None,
    *,
    housekeeping: bool = True,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Run until SIGTERM/SIGINT (or ``stop``), then shut down gracefully.

    ``housekeeping``: run the AI sweeper, the gauges and the index tidying (one process of
    several does). ``announce``: told the address once the port is bound, instead of the
    "listening on" line (the parent of several processes prints one for all)."""
    metrics = Metrics()
    store = build_store(settings, metrics)
    server = aio.server(options=server_options(settings))
    listen = f"{settings.host}:{settings.grpc_port}"
    tls = server_tls(  # TLS (mTLS with a client CA) that follows renewed files, or None
        settings.tls_cert_file,
        settings.tls_key_file,
        settings.tls_client_ca_file,
        settings.tls_reload_seconds,
        metrics,
    )
    credentials = tls.credentials() if tls is not None else None
    try:
        if credentials is None:
            port = server.add_insecure_port(listen)
        else:
            port = server.add_secure_port(listen, credentials)
    except RuntimeError:  # gRPC says only "Failed to bind"; the settings were checked before
        port = 0
    if port == 0:
        raise OSError(
            f"cannot listen on {listen} (ENGINE_HOST, ENGINE_GRPC_PORT): is another process "
            "using the port?"
        )
    advertise = settings.advertise_address or f"127.0.0.1:{port}"
    ai_credentials = settings.ai_credentials()
    dispatcher = CredentialedDispatcher(
        make_dispatcher(
            settings.dispatch_mode,
            settings.broker_url,
            settings.local_ai_target,
            settings.local_ai_processes,
            message_ttl(settings.ai_stall_seconds) if settings.ai_sweep_seconds > 0 else 0.0,
            settings.local_analysis_processes,
        ),
        ai_credentials,
    )
    hub = WatchHub(
        store,
        metrics,
        WatchLimits(
            per_replica=settings.watch_max_streams,
            per_peer=settings.watch_max_streams_per_peer,
            rebuilds_per_minute=settings.watch_rebuilds_per_minute,
        ),
    )
    games = Games(store, dispatcher, metrics, advertise, hub, ai_credentials)
    analyses = Analyses(games, settings.analysis_settings())
    access = settings.access()
    reviews = Reviews(analyses, settings.review_settings(), access)
    engine = EngineService(
        games,
        metrics,
        access,
        settings.call_limits(),
        analyses,
        callers=settings.callers(),
        reviews=reviews,
    )
    add_to_server(engine, server)
    guarded = GuardedServer(server)  # undecodable requests: INVALID_ARGUMENT, no traceback
    health = Health()
    health_pb2_grpc.add_HealthServicer_to_server(health, guarded)
    names = (
        engine_pb2.DESCRIPTOR.services_by_name["Engine"].full_name,
        health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
        reflection.SERVICE_NAME,
    )
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
        reflection.aio.ReflectionServicer(names), guarded
    )
    if settings.metrics_port:
        try:
            metrics.serve(settings.metrics_port, settings.host)
        except OSError as e:
            raise OSError(
                f"cannot serve metrics on {settings.host}:{settings.metrics_port} "
                f"(ENGINE_METRICS_PORT): {e.strerror or e}"
            ) from None
    await server.start()
    for name in ("", SERVICE):
        await health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    stop = stop or asyncio.Event()
    tls_stop = asyncio.Event()
    tls_checks = asyncio.ensure_future(tls.run(tls_stop)) if tls is not None else None
    drain = [False]

    def on_signal(sig: signal.Signals) -> None:
        drain[0] = sig == signal.SIGTERM  # an orchestrator's stop: let load balancers notice first
        stop.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not main thread / not POSIX
            loop.add_signal_handler(sig, on_signal, sig)
    address = f"{settings.host}:{port}"
    metrics_where = (
        f"metrics on :{settings.metrics_port}" if settings.metrics_port else "metrics off"
    )
    log.info("%s", bots.describe_bots())
    if announce is not None:
        announce(address)
    else:
        print(
            f"ascension-engine listening on {address} ({exposure(settings)}; store: "
            f"{store.kind}, AI dispatch: {dispatcher.name}, {metrics_where}, rules: {rules.BUILD})",
            flush=True,
        )
        warn_if_exposed(settings, address)
    where = redis_urls.redacted(settings.redis_url) if settings.redis_url else "in process"
    probe_stop = asyncio.Event()
    probe = asyncio.ensure_future(
        probe_store(
            store,
            metrics.store_up,
            probe_stop,
            settings.store_probe_seconds,
            settings.redis_timeout_seconds + 1.0,
        )
    )
    waiting = asyncio.ensure_future(_wait_for_store(store, where, settings.store_startup_seconds))
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not waiting.done():
        waiting.cancel()  # stopped before the store answered
    elif waiting.exception() is not None:
        tls_stop.set()
        if tls_checks is not None:
            await tls_checks
        probe_stop.set()
        await probe
        await server.stop(0)
        await dispatcher.close()
        await store.close()
        raise waiting.exception()  # type: ignore[misc]
    housekeeping_stop = asyncio.Event()
    chores: asyncio.Future[tuple[None, None, None]] | None = None
    if not stop.is_set():
        for name in ("", SERVICE):
            await health.set(name, health_pb2.HealthCheckResponse.SERVING)
        if housekeeping:
            sweeper = Sweeper(
                store,
                dispatcher,
                metrics,
                settings.ai_sweep_seconds,
                settings.ai_stall_seconds,
                games,
                settings.ai_max_dispatches,
            )
            chores = asyncio.gather(
                sweeper.run(housekeeping_stop),
                _tidy(store, housekeeping_stop),
                sweeper.run_clocks(housekeeping_stop, settings.clock_sweep_seconds or 0.5),
            )
        if on_ready is not None:
            on_ready(address)
    await stop.wait()
    await health.enter_graceful_shutdown()
    if drain[0] and settings.shutdown_drain_seconds > 0:
        log.info(
            "SIGTERM: health NOT_SERVING, still serving for %.1fs", settings.shutdown_drain_seconds
        )
        await asyncio.sleep(settings.shutdown_drain_seconds)
    log.info(
        "shutting down: no new calls, finishing calls in flight (grace %.0fs)",
        settings.shutdown_grace_seconds,
    )
    # Streams would hold the grace period: watch streams end with UNAVAILABLE and the version
    # to resume after, health watches after telling NOT_SERVING.
    await hub.stop()
    await health.close_streams()
    await server.stop(settings.shutdown_grace_seconds)
    tls_stop.set()
    if tls_checks is not None:
        await tls_checks
    housekeeping_stop.set()
    if chores is not None:
        await chores
    probe_stop.set()
    await probe
    await dispatcher.close()
    await store.close()
    log.info("stopped")
    sys.stdout.flush()
