"""The worker's side of the Engine API: one gRPC channel per engine address and process, and
what each error status means for a move.

TLS (and mutual TLS) to the engine from the ``ASCENSION_TLS*`` variables, as for the terminal
client (docs/security.md). The engine's own local AI processes inherit its environment.
"""

from __future__ import annotations

import threading
from typing import Any

import grpc  # type: ignore[import-untyped]

from clients.sdk.tls import TLS, channel
from engine_service.api.ascension.v1 import engine_pb2_grpc

CALL_TIMEOUT = 10.0
_channels: dict[str, Any] = {}
_lock = threading.Lock()


class TransientEngineError(Exception):
    """The engine could not be reached or did not answer in time: worth a retry."""


def stub(address: str) -> Any:
    """An ``EngineStub`` on a channel kept for the life of the process."""
    with _lock:
        ch = _channels.get(address)
        if ch is None:
            ch = _channels[address] = channel(
                address,
                TLS.from_env(),
                [("grpc.max_receive_message_length", 16 * 1024 * 1024)],
            )
    return engine_pb2_grpc.EngineStub(ch)


def reset(address: str) -> None:
    with _lock:
        ch = _channels.pop(address, None)
    if ch is not None:
        ch.close()


def code_of(e: BaseException) -> Any:
    return e.code() if isinstance(e, grpc.RpcError) and hasattr(e, "code") else None


def is_transient(e: BaseException) -> bool:
    return code_of(e) in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def is_lost_race(e: BaseException) -> bool:
    """ABORTED (another version) or FAILED_PRECONDITION (not this seat's move any more)."""
    return code_of(e) in (grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION)


def is_gone(e: BaseException) -> bool:
    return bool(code_of(e) == grpc.StatusCode.NOT_FOUND)


def status_name(e: BaseException) -> str:
    code = code_of(e)
    return str(code.name) if code is not None else type(e).__name__
