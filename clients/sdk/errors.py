"""SDK exceptions: one class per gRPC status the Engine API documents, with the server's message.

Every error the SDK raises is an :class:`AscensionError`; ``str(error)`` is the server's own
message (e.g. the rules' reason an action is not legal), ``error.code`` the gRPC status name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from clients.sdk._grpc import grpc


class AscensionError(Exception):
    """An error reported by the engine (or by the connection to it)."""

    code: str = "UNKNOWN"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidArgumentError(AscensionError):
    """A malformed request (INVALID_ARGUMENT); the message names the field."""

    code = "INVALID_ARGUMENT"


class GameNotFoundError(AscensionError):
    """No such game (NOT_FOUND): never created, deleted, or expired after it ended."""

    code = "NOT_FOUND"


class UnauthenticatedError(AscensionError):
    """A seat token is required but missing, or matches no seat (UNAUTHENTICATED)."""

    code = "UNAUTHENTICATED"


class PermissionDeniedError(AscensionError):
    """The token is valid but not for this call (PERMISSION_DENIED)."""

    code = "PERMISSION_DENIED"


class IllegalActionError(AscensionError):
    """The action is not legal now, or the seat is not the one to move (FAILED_PRECONDITION).

    The message is the rules' reason."""

    code = "FAILED_PRECONDITION"


class VersionConflictError(AscensionError):
    """Someone else moved first (ABORTED). ``current_version`` is the game's version, if known."""

    code = "ABORTED"

    def __init__(
        self, message: str, *, code: str | None = None, current_version: int | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.current_version = current_version


class HistoryGoneError(AscensionError):
    """WatchGame asked for updates older than the server still keeps (OUT_OF_RANGE)."""

    code = "OUT_OF_RANGE"


class DataLossError(AscensionError):
    """The store lost versions the caller had received (DATA_LOSS: a Redis rollback); the game
    goes on from the store's version: read it again."""

    code = "DATA_LOSS"


@dataclass(frozen=True, slots=True)
class Resync:
    """A watch started again from the game's current version: what it was told, the version it
    had reached, and the version it went on from (which may be lower, after DATA_LOSS)."""

    error: AscensionError
    from_version: int
    to_version: int


class UnavailableError(AscensionError):
    """The server could not be reached in time (UNAVAILABLE, DEADLINE_EXCEEDED)."""

    code = "UNAVAILABLE"


class ServerError(AscensionError):
    """Any other failure of the server (INTERNAL, UNKNOWN, ...)."""

    code = "INTERNAL"


_BY_CODE: dict[str, type[AscensionError]] = {
    "INVALID_ARGUMENT": InvalidArgumentError,
    "NOT_FOUND": GameNotFoundError,
    "UNAUTHENTICATED": UnauthenticatedError,
    "PERMISSION_DENIED": PermissionDeniedError,
    "FAILED_PRECONDITION": IllegalActionError,
    "ABORTED": VersionConflictError,
    "OUT_OF_RANGE": HistoryGoneError,
    "DATA_LOSS": DataLossError,
    "UNAVAILABLE": UnavailableError,
    "DEADLINE_EXCEEDED": UnavailableError,
}

# Status codes after which repeating the very same request may succeed.
TRANSIENT_CODES = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED"})
# A watch told these reads the game again and goes on from its current version.
RESYNC_CODES = frozenset({"OUT_OF_RANGE", "DATA_LOSS"})


def status_name(error: grpc.RpcError) -> str:
    code: Any = error.code() if callable(getattr(error, "code", None)) else None
    return str(getattr(code, "name", "UNKNOWN"))


def _metadata_items(md: Any) -> Iterable[tuple[str, Any]]:
    if md is None:
        return ()
    items: list[tuple[str, Any]] = []
    for item in md:
        key, value = item[0], item[1]
        items.append((str(key), value))
    return items


def current_version_of(error: grpc.RpcError) -> int | None:
    """The ``current-version`` trailing metadata of an ABORTED reply, if the server sent it."""
    getter = getattr(error, "trailing_metadata", None)
    if not callable(getter):
        return None
    try:
        md = getter()
    except Exception:  # an aio call whose metadata is not available
        return None
    for key, value in _metadata_items(md):
        if key.lower() == "current-version":
            try:
                return int(value.decode() if isinstance(value, bytes) else value)
            except (TypeError, ValueError):
                return None
    return None


def from_rpc_error(error: grpc.RpcError) -> AscensionError:
    """The SDK exception for a gRPC error, keeping the server's message."""
    name = status_name(error)
    details = error.details() if callable(getattr(error, "details", None)) else None
    message = str(details or name)
    cls = _BY_CODE.get(name, ServerError)
    if cls is VersionConflictError:
        return VersionConflictError(message, code=name, current_version=current_version_of(error))
    return cls(message, code=name)
