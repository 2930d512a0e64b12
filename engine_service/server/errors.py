"""Errors a caller can act on, each with its gRPC status code."""

from __future__ import annotations

from enum import Enum


class Code(Enum):
    """The gRPC status codes the service answers with (names as in grpc.StatusCode)."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    ABORTED = "ABORTED"
    OUT_OF_RANGE = "OUT_OF_RANGE"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    UNAVAILABLE = "UNAVAILABLE"
    DATA_LOSS = "DATA_LOSS"
    INTERNAL = "INTERNAL"


class ServiceError(Exception):
    def __init__(
        self, code: Code, message: str, trailers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.trailers = trailers


def invalid(field: str, problem: str) -> ServiceError:
    """A malformed request: the message starts with the field's name."""
    return ServiceError(Code.INVALID_ARGUMENT, f"{field}: {problem}")


def not_found(game_id: str) -> ServiceError:
    return ServiceError(
        Code.NOT_FOUND, f"no game {game_id!r} (never created, deleted, or expired after it ended)"
    )
