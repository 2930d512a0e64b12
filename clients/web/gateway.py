"""The browser's way in: the Engine API over Connect and gRPC-Web, forwarded to a gRPC engine.

Browsers cannot speak native gRPC (no HTTP/2 trailers from ``fetch``). The Connect project's
Python runtime (``connectrpc``) answers both browser protocols, Connect (``application/proto``,
``application/json``) and gRPC-Web (``application/grpc-web+proto``), at
``/ascension.v1.Engine/<Method>``; every method is forwarded as it is to the engine over a
gRPC channel, so the engine's servicer stays the one implementation of the API (its
validation, auth, errors and limits apply to browsers exactly as to other clients).

The endpoints are built from the service descriptor of the generated stubs, not listed by
hand: an RPC added to ``proto/`` is served here as soon as the Python stubs are regenerated.

The browser's headers go on as the call's metadata (an ``authorization`` header, for one),
except those of HTTP and those that name a client address: the gateway tells the engine who
the browser is itself (client_address.py), so that a browser cannot choose which of the
engine's per-caller counts it is charged to.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import google.rpc.status_pb2 as status_pb2
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_codecs
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from protobuf.wkt import Any as AnyDetail

from clients.sdk._grpc import grpc
from clients.web.client_address import ClientAddress
from engine_service.api.ascension.v1 import engine_pb2

SERVICE: ServiceDescriptor = engine_pb2.DESCRIPTOR.services_by_name["Engine"]
PREFIX = f"/{SERVICE.full_name}/"

# Request headers that belong to HTTP, the browser or the browser protocol, never to the
# engine's metadata (everything else, e.g. an authorization header, is passed on).
_NOT_METADATA = frozenset(
    {"host", "connection", "content-type", "content-length", "content-encoding", "accept",
     "accept-encoding", "accept-language", "user-agent", "origin", "referer", "cookie",
     "te", "keep-alive", "transfer-encoding", "upgrade", "pragma", "cache-control",
     "priority", "dnt", "x-user-agent", "x-grpc-web", "grpc-timeout", "grpc-encoding",
     "grpc-accept-encoding"}
)  # fmt: skip
_NOT_METADATA_PREFIXES = ("sec-", "connect-", ":")
# Response metadata that gRPC itself sets; the browser protocol writes its own.
_GRPC_RESERVED = frozenset({"grpc-status", "grpc-message", "grpc-status-details-bin"})
_STATUS_DETAILS = "grpc-status-details-bin"
_PEER = ClientAddress()  # no trusted proxies, no key: the browser is the connection's peer


def _metadata(
    ctx: RequestContext[Any, Any],
    default: tuple[tuple[str, str], ...] = (),
    client: ClientAddress = _PEER,
) -> list[tuple[str, str | bytes]]:
    """The browser's headers as the call's metadata, less those of HTTP and of addresses (the
    gateway says who the browser is itself: client_address.py), plus ``default``."""
    out: list[tuple[str, str | bytes]] = []
    headers = ctx.request_headers.allitems()
    for key, value in headers:
        k = key.lower()
        if k in _NOT_METADATA or k.startswith(_NOT_METADATA_PREFIXES) or not client.passes(k):
            continue
        if k.endswith("-bin"):  # binary metadata travels base64-encoded in HTTP headers
            try:
                out.append((k, base64.b64decode(value + "=" * (-len(value) % 4))))
            except ValueError:
                continue
        else:
            out.append((k, value))
    given = {k for k, _ in out}
    out.extend((k, v) for k, v in default if k not in given)
    out.extend(client.metadata(ctx.client_address, headers))
    return out


def _copy_metadata(metadata: Any, target: Any) -> None:
    """gRPC (initial or trailing) metadata into the browser response's headers or trailers."""
    if not metadata:
        return
    for key, value in metadata:
        if key in _GRPC_RESERVED:
            continue
        if isinstance(value, bytes):
            target.add(key, base64.b64encode(value).decode())
        else:
            target.add(key, value)


def _error(e: Any, ctx: RequestContext[Any, Any]) -> ConnectError:
    """The engine's status as the browser protocol's error: same code, message and details."""
    code = e.code()
    name = "CANCELED" if code == grpc.StatusCode.CANCELLED else code.name
    details: list[ErrorDetail] = []
    trailing = e.trailing_metadata() or ()
    for key, value in trailing:
        if key == _STATUS_DETAILS and isinstance(value, bytes):
            details = _status_details(value)
    _copy_metadata(trailing, ctx.response_trailers)
    return ConnectError(Code[name], e.details() or "", details)


def _status_details(raw: bytes) -> list[ErrorDetail]:
    """The ``google.rpc.Status`` details (ErrorInfo, BadRequest, ...) the engine attached."""
    try:
        status = status_pb2.Status.FromString(raw)
    except Exception:  # a malformed status is dropped, the code and message still go through
        return []
    return [ErrorDetail(AnyDetail(type_url=d.type_url, value=d.value)) for d in status.details]


def _timeout(ctx: RequestContext[Any, Any]) -> float | None:
    ms = ctx.timeout_ms
    return None if ms is None else max(ms, 0.0) / 1000.0


Unary = Callable[[Message, RequestContext[Any, Any]], Awaitable[Message]]
ServerStream = Callable[[Message, RequestContext[Any, Any]], AsyncIterator[Message]]


class EngineForwarder:
    """Each Engine method as a Connect handler that makes the same call on a gRPC channel."""

    def __init__(
        self,
        channel: Any,
        metadata: tuple[tuple[str, str], ...] = (),
        client: ClientAddress = _PEER,
    ) -> None:
        self.channel = channel  # a grpc.aio.Channel to the engine
        # Sent with every call that does not carry its own (e.g. an operator's authorization).
        self.metadata = metadata
        self.client = client  # how the browser's address is told to the engine

    def unary(self, method: MethodDescriptor, output: type[Message]) -> Unary:
        call = self.channel.unary_unary(
            f"/{SERVICE.full_name}/{method.name}",
            request_serializer=_serialize,
            response_deserializer=output.FromString,
        )

        async def handle(request: Message, ctx: RequestContext[Any, Any]) -> Message:
            rpc = call(
                request, timeout=_timeout(ctx), metadata=_metadata(ctx, self.metadata, self.client)
            )
            try:
                response: Message = await rpc
            except grpc.aio.AioRpcError as e:
                raise _error(e, ctx) from None
            _copy_metadata(await rpc.initial_metadata(), ctx.response_headers)
            _copy_metadata(await rpc.trailing_metadata(), ctx.response_trailers)
            return response

        return handle

    def server_stream(self, method: MethodDescriptor, output: type[Message]) -> ServerStream:
        call = self.channel.unary_stream(
            f"/{SERVICE.full_name}/{method.name}",
            request_serializer=_serialize,
            response_deserializer=output.FromString,
        )

        async def handle(request: Message, ctx: RequestContext[Any, Any]) -> AsyncIterator[Message]:
            rpc = call(
                request, timeout=_timeout(ctx), metadata=_metadata(ctx, self.metadata, self.client)
            )
            try:
                async for message in rpc:
                    yield message
                _copy_metadata(await rpc.trailing_metadata(), ctx.response_trailers)
            except grpc.aio.AioRpcError as e:
                raise _error(e, ctx) from None
            finally:
                # The browser went away (or the stream ended): release the engine's stream.
                rpc.cancel()

        return handle


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()


def method_info(method: MethodDescriptor) -> MethodInfo[Any, Any]:
    """The Connect runtime's description of one Engine method (google.protobuf messages)."""
    if method.client_streaming:
        raise ValueError(f"{method.full_name}: client streaming cannot run in a browser")
    return MethodInfo(
        name=method.name,
        service_name=SERVICE.full_name,
        input=message_factory.GetMessageClass(method.input_type),
        output=message_factory.GetMessageClass(method.output_type),
        idempotency_level=IdempotencyLevel.UNKNOWN,
        stream_type=StreamType.SERVER_STREAM if method.server_streaming else StreamType.UNARY,
    )


def endpoints(forwarder: EngineForwarder) -> Mapping[str, Any]:
    """``/ascension.v1.Engine/<Method>`` -> a Connect endpoint, for every method of the service.

    (Typed loosely: the runtime's endpoint classes are private; ``Endpoint.unary`` and
    ``Endpoint.server_stream`` make them.)"""
    out: dict[str, Any] = {}
    for method in SERVICE.methods:
        info = method_info(method)
        if method.server_streaming:
            out[PREFIX + method.name] = Endpoint.server_stream(
                info, forwarder.server_stream(method, info.output)
            )
        else:
            out[PREFIX + method.name] = Endpoint.unary(info, forwarder.unary(method, info.output))
    return out


class EngineGateway(ConnectASGIApplication[EngineForwarder]):
    """The ASGI application answering Connect and gRPC-Web for the whole Engine service."""

    def __init__(
        self,
        channel: Any,
        metadata: tuple[tuple[str, str], ...] = (),
        client: ClientAddress = _PEER,
    ) -> None:
        super().__init__(
            service=EngineForwarder(channel, metadata, client),
            endpoints=endpoints,
            codecs=google_protobuf_codecs(),
        )

    @property
    def path(self) -> str:
        return PREFIX.rstrip("/")
