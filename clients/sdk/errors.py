"""SDK exceptions: one class per gRPC status the Engine API documents, and a subclass per
machine reason an app may want to catch on its own, with the server's message.

Every error the SDK raises is an :class:`AscensionError`; ``str(error)`` is the server's own
message (e.g. the rules' reason an action is not legal), ``error.code`` the gRPC status name,
``error.reason`` the stable reason of the server's ``google.rpc.ErrorInfo`` (``NOT_YOUR_TURN``,
``VERSION_MISMATCH``, ``RATE_LIMITED``, ...; docs/security.md lists them), ``error.metadata``
its metadata and ``error.violations`` the ``BadRequest`` field violations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import google.rpc.error_details_pb2 as error_details_pb2
import google.rpc.status_pb2 as status_pb2

from clients.sdk._grpc import grpc

DOMAIN = "ascension.v1"
DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True, slots=True)
class FieldViolation:
    field: str
    description: str


class AscensionError(Exception):
    """An error reported by the engine (or by the connection to it)."""

    code: str = "UNKNOWN"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        reason: str = "",
        metadata: Mapping[str, str] | None = None,
        violations: tuple[FieldViolation, ...] = (),
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.reason = reason  # ErrorInfo.reason ("" from servers that send none)
        self.metadata: dict[str, str] = dict(metadata or {})
        self.violations = violations
        self.retry_after = retry_after  # seconds (RetryInfo), when the server says


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


class NotYourTurnError(IllegalActionError):
    """Another seat is to move (reason NOT_YOUR_TURN); ``to_move`` is that seat."""

    @property
    def to_move(self) -> int | None:
        return _int(self.metadata.get("to_move"))


class GameOverError(IllegalActionError):
    """The game is over (reason GAME_OVER)."""


class GameNotOverError(IllegalActionError):
    """GetReplay of a game that is not over (reason GAME_NOT_OVER)."""


class VersionConflictError(AscensionError):
    """Someone else moved first (ABORTED). ``current_version`` is the game's version, if known."""

    code = "ABORTED"

    def __init__(self, message: str, *, current_version: int | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        if current_version is None:
            current_version = _int(self.metadata.get("current_version"))
        self.current_version = current_version


class OperatorCredentialError(UnauthenticatedError):
    """The call needs an operator key, or the key sent is not one of the server's
    (reasons OPERATOR_CREDENTIAL_REQUIRED, UNKNOWN_OPERATOR_KEY)."""


class SeedNotAllowedError(PermissionDeniedError):
    """Only an operator may choose the seed of a game with a human seat
    (reason SEED_NEEDS_OPERATOR): leave ``seed`` unset."""


class ResourceExhaustedError(AscensionError):
    """A server limit (RESOURCE_EXHAUSTED): ``limit`` names the setting, ``retry_after`` says
    when to try again (seconds), if the server knows."""

    code = "RESOURCE_EXHAUSTED"

    @property
    def limit(self) -> str:
        return self.metadata.get("limit", "")


class RateLimitedError(ResourceExhaustedError):
    """A per-peer rate limit (reason RATE_LIMITED)."""


class LiveGamesLimitError(ResourceExhaustedError):
    """The server holds as many unfinished games as it may (reason LIVE_GAMES_LIMIT)."""


class HistoryGoneError(AscensionError):
    """WatchGame asked for updates older than the server still keeps (OUT_OF_RANGE)."""

    code = "OUT_OF_RANGE"


class DataLossError(AscensionError):
    """The store lost versions the caller had received or decided on (DATA_LOSS: a Redis
    rollback), or, with reason ``GAME_LOST``, the whole game. The game goes on from the
    store's version (``current_version``): read it again. ``lost_versions`` is the range lost
    (first, last) when the server says; ``metadata["exact"]`` is "false" when that is a lower
    bound."""

    code = "DATA_LOSS"

    @property
    def current_version(self) -> int | None:
        return _int(self.metadata.get("current_version"))

    @property
    def lost_versions(self) -> tuple[int, int] | None:
        first = _int(self.metadata.get("first_lost_version"))
        last = _int(self.metadata.get("last_lost_version"))
        return None if first is None or last is None else (first, last)


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
    "RESOURCE_EXHAUSTED": ResourceExhaustedError,
    "UNAVAILABLE": UnavailableError,
    "DEADLINE_EXCEEDED": UnavailableError,
    "DATA_LOSS": DataLossError,
}

# Reasons with a class of their own (a subclass of the code's class).
_BY_REASON: dict[str, type[AscensionError]] = {
    "NOT_YOUR_TURN": NotYourTurnError,
    "GAME_OVER": GameOverError,
    "GAME_NOT_OVER": GameNotOverError,
    "OPERATOR_CREDENTIAL_REQUIRED": OperatorCredentialError,
    "UNKNOWN_OPERATOR_KEY": OperatorCredentialError,
    "SEED_NEEDS_OPERATOR": SeedNotAllowedError,
    "RATE_LIMITED": RateLimitedError,
    "LIVE_GAMES_LIMIT": LiveGamesLimitError,
}

def newer(known: tuple[int, str] | None, version: int, commit_id: str) -> bool:
    """Whether (``version``, ``commit_id``) is news beside the (version, commit id) a client
    knows of a game: a later version, or the same one with a commit id (the latest answer
    wins: after a store rollback the same number may name another history)."""
    if known is None or version > known[0]:
        return True
    return version == known[0] and bool(commit_id) and commit_id != known[1]


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


def _int(value: Any) -> int | None:
    try:
        return int(value.decode() if isinstance(value, bytes) else value)
    except (TypeError, ValueError, AttributeError):
        return None


def _trailers(error: grpc.RpcError) -> list[tuple[str, Any]]:
    getter = getattr(error, "trailing_metadata", None)
    if not callable(getter):
        return []
    try:
        md = getter()
    except Exception:  # an aio call whose metadata is not available
        return []
    return list(_metadata_items(md))


def current_version_of(error: grpc.RpcError) -> int | None:
    """The ``current-version`` trailing metadata of an ABORTED reply, if the server sent it."""
    for key, value in _trailers(error):
        if key.lower() == "current-version":
            return _int(value)
    return None


@dataclass(frozen=True, slots=True)
class RichStatus:
    """What the server's ``google.rpc.Status`` details say (empty when it sent none)."""

    reason: str = ""
    domain: str = ""
    metadata: Mapping[str, str] | None = None
    violations: tuple[FieldViolation, ...] = ()
    retry_after: float | None = None


def rich_status(error: grpc.RpcError) -> RichStatus:
    """The ErrorInfo, BadRequest and RetryInfo details of a gRPC error's status, if any."""
    raw = next((v for k, v in _trailers(error) if k.lower() == DETAILS_KEY), None)
    if not isinstance(raw, bytes):
        return RichStatus()
    try:
        status = status_pb2.Status.FromString(raw)
    except Exception:  # not a Status: ignore it, keep the code and message
        return RichStatus()
    reason = domain = ""
    metadata: dict[str, str] = {}
    violations: list[FieldViolation] = []
    retry_after = None
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        bad = error_details_pb2.BadRequest()
        retry = error_details_pb2.RetryInfo()
        if detail.Unpack(info):  # False (nothing unpacked) for another type
            reason, domain, metadata = info.reason, info.domain, dict(info.metadata)
        elif detail.Unpack(bad):
            violations.extend(FieldViolation(v.field, v.description) for v in bad.field_violations)
        elif detail.Unpack(retry):
            retry_after = retry.retry_delay.ToNanoseconds() / 1e9
    return RichStatus(reason, domain, metadata, tuple(violations), retry_after)


def from_rpc_error(error: grpc.RpcError) -> AscensionError:
    """The SDK exception for a gRPC error, keeping the server's message: the reason's class if
    it has one (e.g. :class:`NotYourTurnError`), else the status code's."""
    name = status_name(error)
    details = error.details() if callable(getattr(error, "details", None)) else None
    message = str(details or name)
    rich = rich_status(error)
    cls = _BY_CODE.get(name, ServerError)
    if rich.domain == DOMAIN and rich.reason in _BY_REASON:
        by_reason = _BY_REASON[rich.reason]
        if issubclass(by_reason, cls):  # a reason never changes what the code means
            cls = by_reason
    kwargs: dict[str, Any] = {
        "code": name,
        "reason": rich.reason,
        "metadata": rich.metadata,
        "violations": rich.violations,
        "retry_after": rich.retry_after,
    }
    if cls is VersionConflictError:
        return VersionConflictError(message, current_version=current_version_of(error), **kwargs)
    return cls(message, **kwargs)
