"""Client spans for the SDK's calls, when OpenTelemetry is installed (optional).

With OpenTelemetry's gRPC instrumentation importable (``pip install 'ascension-engine[tracing]'``
or ``opentelemetry-instrumentation-grpc``), every call of :class:`~clients.sdk.Client` and
:class:`~clients.sdk.AsyncClient` is a CLIENT span, and its trace context travels to the
engine in the call's metadata: the engine's span of the call (and of what it causes) joins the
application's trace. The spans go to the tracer provider the application sets up; without one,
OpenTelemetry's no-op provider records nothing. Without the package nothing is imported and
the channel is used as it is.

``WatchGame`` and ``ReviewGame`` are left out: a watch lasts as long as the game (one span of
an hour says nothing), and OpenTelemetry's blocking interceptor would hand back a stream that
cannot be cancelled (a review is cancelled when its reader stops).

A channel given to the client (``channel=``) is used as it is: trace it yourself. Where the
instrumentation already traces every channel of the process (``GrpcInstrumentorClient``), the
SDK adds nothing, so that no call has two spans.
"""

from __future__ import annotations

from typing import Any


def traced_channel(channel: Any) -> Any:
    """``channel`` with a client span per call (a blocking channel)."""
    try:
        from opentelemetry.instrumentation.grpc import GrpcInstrumentorClient, client_interceptor
        from opentelemetry.instrumentation.grpc.grpcext import intercept_channel
    except ImportError:
        return channel
    if GrpcInstrumentorClient().is_instrumented_by_opentelemetry:  # type: ignore[no-untyped-call]
        return channel
    # OpenTelemetry's own intercept_channel: its interceptor is not one of grpc's classes.
    return intercept_channel(channel, client_interceptor(filter_=_not_watch()))  # type: ignore[no-untyped-call]


def aio_interceptors() -> list[Any]:
    """Interceptors giving a grpc.aio channel a client span per call (none without the package)."""
    try:
        from opentelemetry.instrumentation.grpc import (
            GrpcAioInstrumentorClient,
            aio_client_interceptors,
        )
    except ImportError:
        return []
    if GrpcAioInstrumentorClient().is_instrumented_by_opentelemetry:  # type: ignore[no-untyped-call]
        return []
    return list(aio_client_interceptors(filter_=_not_watch()))  # type: ignore[no-untyped-call]


def _not_watch() -> Any:
    from opentelemetry.instrumentation.grpc import filters

    return filters.negate(
        filters.any_of(filters.method_name("WatchGame"), filters.method_name("ReviewGame"))
    )
