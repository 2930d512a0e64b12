"""Logging format and optional OpenTelemetry tracing, shared by the engine and the workers.

Tracing is off by default. ``ASCENSION_TRACING=otlp`` sends spans to an OTLP collector
(``OTEL_EXPORTER_OTLP_ENDPOINT``, default ``http://localhost:4317``, gRPC) through the
maintained instrumentations: the engine's gRPC server, the workers' gRPC client, and Celery
on both sides (the engine publishes the move task, the worker runs it). The W3C trace
context travels in gRPC metadata and in the Celery message headers. One trace per move: a
client's call and what the engine does for it; an AI move (its dispatch, the task, the
worker's calls back to the engine) is a trace of its own, whose first span links to the call
that made it the AI's turn (:func:`new_trace`).
``ASCENSION_TRACING=console`` prints spans instead (for a look without a collector).
Sampling follows the SDK's ``OTEL_TRACES_SAMPLER``/``OTEL_TRACES_SAMPLER_ARG`` (default: every
trace a caller did not decline).

``LOG_FORMAT=json`` writes one JSON object per log line; with tracing on, every line (text
or JSON) carries the current ``trace_id`` and ``span_id``.

The OpenTelemetry packages are the ``tracing`` extra (``pip install 'ascension-engine[tracing]'``;
the image has them); nothing of them is imported while tracing is off.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Iterator, Mapping
from typing import Any

TRACING_ENV = "ASCENSION_TRACING"
LOG_FORMAT_ENV = "LOG_FORMAT"
TRACING_MODES = ("off", "otlp", "console")
LOG_FORMATS = ("text", "json")
# Every variable this module reads (the deployment tests check the chart and compose set
# no others); the OTEL_* ones are read by the SDK and the exporter themselves.
ENVIRONMENT = frozenset(
    {
        TRACING_ENV,
        LOG_FORMAT_ENV,
        "OTEL_SERVICE_NAME",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_INSECURE",
        "OTEL_TRACES_SAMPLER",
        "OTEL_TRACES_SAMPLER_ARG",
        "OTEL_RESOURCE_ATTRIBUTES",
    }
)
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
TRACED_TEXT_FORMAT = (
    "%(asctime)s %(levelname)s %(name)s [trace=%(trace_id)s span=%(span_id)s]: %(message)s"
)

_enabled = False


def tracing_mode(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    mode = env.get(TRACING_ENV, "").strip().lower() or "off"
    if mode not in TRACING_MODES:
        raise ValueError(f"{TRACING_ENV}={mode!r}: expected one of {', '.join(TRACING_MODES)}")
    return mode


def log_format(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    fmt = env.get(LOG_FORMAT_ENV, "").strip().lower() or "text"
    if fmt not in LOG_FORMATS:
        raise ValueError(f"{LOG_FORMAT_ENV}={fmt!r}: expected text or json")
    return fmt


def tracing_enabled() -> bool:
    return _enabled


# ---- logging ---------------------------------------------------------------------------------


class TraceContextFilter(logging.Filter):
    """Adds ``trace_id`` and ``span_id`` (hex, "-" outside a span) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        trace_id = span_id = "-"
        if _enabled:
            from opentelemetry import trace

            context = trace.get_current_span().get_span_context()
            if context.is_valid:
                trace_id = format(context.trace_id, "032x")
                span_id = format(context.span_id, "016x")
        record.trace_id = trace_id
        record.span_id = span_id
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (RFC 3339, UTC), level, logger, message, the trace
    context, and the exception when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        line: dict[str, Any] = {
            "time": f"{stamp}.{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
        }
        for key in ("trace_id", "span_id"):
            value = getattr(record, key, "-")
            if value != "-":
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def configure_logging(level: str, env: Mapping[str, str] | None = None) -> None:
    """The root logger's handler on stderr, in LOG_FORMAT, with the trace context."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(TraceContextFilter())
    if log_format(env) == "json":
        handler.setFormatter(JsonFormatter())
    else:
        # Worker pools set tracing up in each child, after the parent configured logging.
        traced = _enabled or tracing_mode(env) != "off"
        handler.setFormatter(logging.Formatter(TRACED_TEXT_FORMAT if traced else TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())


# ---- tracing ---------------------------------------------------------------------------------


def configure_tracing(
    service_name: str, env: Mapping[str, str] | None = None, exporter: Any = None
) -> bool:
    """Set up the tracer provider when tracing is on (or an exporter is given, as tests do);
    returns whether it is on. Instrumentations are installed by instrument_engine() and
    instrument_worker()."""
    global _enabled
    mode = tracing_mode(env)
    if mode == "off" and exporter is None:
        return False
    from opentelemetry import trace
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    env = os.environ if env is None else env
    resource = Resource.create({SERVICE_NAME: env.get("OTEL_SERVICE_NAME") or service_name})
    provider = TracerProvider(resource=resource)
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    elif mode == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    else:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _enabled = True
    return True


def shutdown_tracing() -> None:
    """Flush the spans still queued (at exit)."""
    if not _enabled:
        return
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    shutdown = getattr(provider, "shutdown", None)
    if shutdown is not None:
        shutdown()


def instrument_engine() -> None:
    """The engine's gRPC server (every RPC a server span, parented by the caller's context)
    and its Celery publisher (the move task carries the context in its headers)."""
    if not _enabled:
        return
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.grpc import GrpcAioInstrumentorServer

    GrpcAioInstrumentorServer().instrument()  # type: ignore[no-untyped-call]
    CeleryInstrumentor().instrument()  # type: ignore[no-untyped-call]


@contextlib.contextmanager
def new_trace(name: str, attributes: Mapping[str, str | int] | None = None) -> Iterator[None]:
    """Run the block in a span that starts a trace of its own, linked to the current span (the
    call that caused it), when tracing is on.

    An AI move is played later, by a worker, as its own unit of work: its dispatch, the task
    and the worker's calls make one trace per move, which links back to the submit (or
    CreateGame) that made it the AI's turn. Were the task's trace the submit's, a whole
    AI-vs-AI game would be one trace of thousands of spans, sampled all or nothing."""
    if not _enabled:
        yield
        return
    from opentelemetry import context, trace

    cause = trace.get_current_span().get_span_context()
    tracer = trace.get_tracer("ascension.engine")
    with tracer.start_as_current_span(
        name,
        context=context.Context(),  # no parent: a new trace
        links=[trace.Link(cause)] if cause.is_valid else None,
        attributes=attributes,
    ):
        yield


def instrument_worker() -> None:
    """A worker (pool) process: Celery task runs continue the publisher's trace, and the
    gRPC calls to the engine carry it on. Channels made before this are not traced: call
    it before the first move (``worker_process_init``)."""
    if not _enabled:
        return
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.grpc import GrpcInstrumentorClient

    CeleryInstrumentor().instrument()  # type: ignore[no-untyped-call]
    GrpcInstrumentorClient().instrument()  # type: ignore[no-untyped-call]
