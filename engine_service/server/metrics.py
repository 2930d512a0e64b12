"""Prometheus metrics of the engine (names are a contract: deploy/ dashboards and alerts use them).

Every registry also carries the standard process (CPU, memory, file descriptors, start time),
platform and garbage-collector collectors. No ``_created`` series are exported: they would
double the series count and no rule or dashboard reads them. Labelled counters whose values
are known in advance are exported at 0 from the start, so dashboards show 0, not "no data".

With several server processes (``ENGINE_PROCESSES``) each writes its samples to files in
``PROMETHEUS_MULTIPROC_DIR`` (prometheus-client's multiprocess mode, chosen when the module
is first imported) and the parent serves them merged (:func:`merged_registry`): counters and
histograms summed, each gauge as its ``multiprocess_mode`` says, ``process_*`` summed over the
parent and its server processes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import (
    GC_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    start_http_server,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from engine_service.api.ascension.v1 import engine_pb2
from engine_service.rules import KIND_NAMES

# Process-wide switch of prometheus_client; set before any metric is built.
disable_created_metrics()  # type: ignore[no-untyped-call]

# The `code` values exported at 0 for every method: success and the two server-side failures
# the error-rate alert and the dashboard divide by (the other codes appear when they happen).
PREINITIALISED_CODES = ("OK", "INTERNAL", "UNAVAILABLE")
RPC_METHODS = tuple(m.name for m in engine_pb2.DESCRIPTOR.services_by_name["Engine"].methods)
ENQUEUE_REASONS = ("turn", "sweep")
# WatchGame refusals: too many streams on the replica or from one caller, too many histories
# rebuilt for one caller (ENGINE_WATCH_REBUILDS_PER_MINUTE).
WATCH_REFUSALS = ("per_replica", "per_peer", "rebuilds")
# (reason, limit) of the refusals by a limit that are exported at 0 from the start.
LIMIT_REFUSALS = (
    ("RATE_LIMITED", "ENGINE_LIMIT_CREATE_PER_MINUTE"),
    ("RATE_LIMITED", "ENGINE_LIMIT_SUBMIT_PER_SECOND"),
    ("RATE_LIMITED", "ENGINE_WATCH_REBUILDS_PER_MINUTE"),
    ("RATE_LIMITED", "ENGINE_ANALYSIS_PER_MINUTE"),
    ("RATE_LIMITED", "ENGINE_REVIEW_PER_MINUTE"),
    ("REVIEW_IN_PROGRESS", "ENGINE_REVIEW_PER_CALLER"),
    ("REVIEW_CAPACITY", "ENGINE_REVIEW_MAX_TOTAL_MS"),
    ("STREAM_LIMIT", "ENGINE_WATCH_MAX_STREAMS"),
    ("STREAM_LIMIT", "ENGINE_WATCH_MAX_STREAMS_PER_PEER"),
    ("LIVE_GAMES_LIMIT", "ENGINE_MAX_LIVE_GAMES"),
    ("ANALYSIS_CAPACITY", "ENGINE_ANALYSIS_MAX_IN_FLIGHT"),
)

_LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
_STORE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


class Metrics:
    """One set of metrics in its own registry (so tests can build several servers)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        if GC_COLLECTOR is not None:
            GCCollector(registry=r)
        self.requests = Counter(
            "ascension_grpc_requests",
            "gRPC requests by method and status code",
            ["method", "code"],
            registry=r,
        )
        self.request_seconds = Histogram(
            "ascension_grpc_request_seconds",
            "gRPC request latency",
            ["method"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.actions = Counter(
            "ascension_actions_applied", "actions applied, by kind", ["kind"], registry=r
        )
        self.cas_conflicts = Counter(
            "ascension_cas_conflicts", "commits that lost a version race", registry=r
        )
        self.store_seconds = Histogram(
            "ascension_store_seconds",
            "store operation latency",
            ["op"],
            buckets=_STORE_BUCKETS,
            registry=r,
        )
        self.games_created = Counter("ascension_games_created", "games created", registry=r)
        self.games_finished = Counter(
            "ascension_games_finished", "games that reached their end", registry=r
        )
        # Whole-store gauges are set by the one process that does the housekeeping (the
        # others hold 0); the processes' streams add up.
        self.games_active = Gauge(
            "ascension_games_active",
            "games not over (whole store)",
            registry=r,
            multiprocess_mode="livemax",
        )
        # 1 while this process's last look at the store (a PING every few seconds,
        # engine_service/server/store_probe.py) was answered; the pod's is its worst process's.
        self.store_up = Gauge(
            "ascension_store_up",
            "1 if the store answered this process's last health probe (a PING), else 0",
            registry=r,
            multiprocess_mode="livemin",
        )
        self.ai_enqueued = Counter(
            "ascension_ai_moves_enqueued",
            "AI moves dispatched (incl. re-dispatches)",
            ["reason"],
            registry=r,
        )
        self.ai_fallback_moves = Counter(
            "ascension_ai_fallback_moves",
            "AI moves the engine played itself (the first legal action) after"
            " ENGINE_AI_MAX_DISPATCHES dispatches went unanswered",
            registry=r,
        )
        self.clock_timeouts = Counter(
            "ascension_clock_timeouts",
            "human seats whose time ran out, by the game's timeout policy (forced_move, bot, forfeit)",
            ["policy"],
            registry=r,
        )
        self.ai_wait = Gauge(
            "ascension_ai_seat_wait_seconds",
            "longest current wait of an AI seat to move",
            registry=r,
            multiprocess_mode="livemax",
        )

        self.rollbacks_detected = Counter(
            "ascension_store_rollbacks_detected",
            "histories of games the store lost, found by a replica that had seen them (a Redis "
            "rollback: snapshot restore, failover to a lagging replica, lost AOF tail); each "
            "loss counted once summed over the replicas, by the first replica to find it",
            registry=r,
        )
        self.games_lost = Counter(
            "ascension_store_games_lost",
            "games this replica served lately that the store no longer holds, though they were "
            "neither deleted nor can have expired (Redis restarted without its data, an older "
            "snapshot restored, a failover); each counted once summed over the replicas, by the "
            "first replica to find it gone",
            registry=r,
        )
        self.watch_streams = Gauge(
            "ascension_watch_streams",
            "WatchGame streams open on this replica",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.watch_refused = Counter(
            "ascension_watch_refused",
            "WatchGame streams refused by a limit",
            ["limit"],
            registry=r,
        )
        for limit in WATCH_REFUSALS:
            self.watch_refused.labels(limit)
        self.limit_refusals = Counter(
            "ascension_limit_refusals",
            "calls refused by a limit (RESOURCE_EXHAUSTED), by reason and by the setting that "
            "set the limit",
            ["reason", "limit"],
            registry=r,
        )
        for reason, limit in LIMIT_REFUSALS:
            self.limit_refusals.labels(reason, limit)
        self.watch_rebuilt = Counter(
            "ascension_watch_rebuilt_updates",
            "updates sent to watchers from a history rebuilt from the game's replay log (older "
            "than the store's window: a late spectator, or a stream that fell behind)",
            registry=r,
        )

        # TLS of the gRPC port (engine_service/server/tls.py); the workers export the same
        # names for the client certificate they present (role client).
        self.tls_expiry = Gauge(
            "ascension_tls_certificate_expiry_timestamp_seconds",
            "notAfter (Unix time) of the TLS certificate this process serves (role server) or "
            "presents (role client): the one new connections get",
            ["role"],
            registry=r,
            multiprocess_mode="livemin",
        )
        self.tls_reloads = Counter(
            "ascension_tls_reloads",
            "renewed TLS files taken (result loaded) or refused (result refused: a key not of "
            "its certificate, an unreadable file; the set in use is kept)",
            ["role", "result"],
            registry=r,
        )
        self.tls_refused = Gauge(
            "ascension_tls_files_refused",
            "1 while the TLS files on disk differ from those in use and cannot be used",
            ["role"],
            registry=r,
            multiprocess_mode="livemax",
        )
        self.tls_ca_expiry = Gauge(
            "ascension_tls_ca_expiry_timestamp_seconds",
            "the soonest notAfter (Unix time) in the CA bundle this process trusts: the client "
            "CA under mutual TLS (role server), the CA of the engine's certificate (role client)",
            ["role"],
            registry=r,
            multiprocess_mode="livemin",
        )

        # Children by label values: ``labels()`` costs a lock and a tuple build on every call.
        self._store_children: dict[str, Any] = {}
        self._rpc_children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._action_children: dict[str, Any] = {}
        # Exported as 0 before the first event.
        for reason in ENQUEUE_REASONS:
            self.ai_enqueued.labels(reason)
        for method in RPC_METHODS:
            for code in PREINITIALISED_CODES:
                self.requests.labels(method, code)
        for kind in KIND_NAMES.values():
            self.actions.labels(kind)

    def refused(self, reason: str, limit: str) -> None:
        self.limit_refusals.labels(reason, limit).inc()

    def observe_store(self, op: str, seconds: float) -> None:
        child = self._store_children.get(op)
        if child is None:
            child = self._store_children[op] = self.store_seconds.labels(op)
        child.observe(seconds)

    def action_applied(self, kind: str) -> None:
        child = self._action_children.get(kind)
        if child is None:
            child = self._action_children[kind] = self.actions.labels(kind)
        child.inc()

    def observe_rpc(self, method: str, code: str, started: float) -> None:
        children = self._rpc_children.get((method, code))
        if children is None:
            children = self._rpc_children[(method, code)] = (
                self.requests.labels(method, code),
                self.request_seconds.labels(method),
            )
        children[0].inc()
        children[1].observe(time.perf_counter() - started)

    def serve(self, port: int, host: str = "0.0.0.0") -> None:
        serve_registry(self.registry, port, host)


# process_* series that add up over processes; the others (start time, fd limit) are the
# parent's.
_SUMMED = frozenset(
    (
        "process_cpu_seconds",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_open_fds",
    )
)


def _constant(pid: int) -> Callable[[], int]:
    return lambda: pid


class ProcessesCollector(Collector):
    """The standard ``process_*`` series of the serving parent with its server processes'
    CPU, memory and file descriptors added (dashboards read one engine pod as one process)."""

    def __init__(self, children: Callable[[], Iterable[int]]) -> None:
        self._children = children

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for pid in (os.getpid(), *self._children()):
            for family in ProcessCollector(pid=_constant(pid), registry=None).collect():
                mine = families.get(family.name)
                if mine is None:
                    families[family.name] = family
                elif family.name in _SUMMED and family.samples and mine.samples:
                    s = mine.samples[0]
                    mine.samples[0] = s._replace(value=s.value + family.samples[0].value)
        yield from families.values()


def merged_registry(path: str, children: Callable[[], Iterable[int]]) -> CollectorRegistry:
    """What the parent of several server processes serves: their samples in ``path``
    merged, the pod's ``process_*`` and the platform's ``python_info``."""
    from prometheus_client import multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]
    registry.register(ProcessesCollector(children))
    PlatformCollector(registry=registry)
    return registry


def serve_registry(registry: CollectorRegistry, port: int, host: str = "0.0.0.0") -> None:
    start_http_server(port, addr=host, registry=registry)
