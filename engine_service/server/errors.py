"""Errors a caller can act on: a gRPC status code, a human message, and a stable machine reason.

Every refusal the service answers with is a :class:`ServiceError`. On the wire it becomes the
status code and message (what every gRPC client shows) plus the richer error model of
``google.rpc.Status`` in the ``grpc-status-details-bin`` trailer:

- an ``ErrorInfo`` with a stable ``reason`` (one of :data:`REASONS`), the domain
  :data:`DOMAIN`, and metadata an app can use without parsing English (e.g. the game's
  ``current_version`` on ``VERSION_MISMATCH``);
- a ``BadRequest`` with the field violations of an ``INVALID_ARGUMENT``.

Existing trailers (``current-version``) are kept. docs/security.md lists every reason; the
tests check that list against :data:`REASONS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

import google.rpc.code_pb2 as code_pb2
import google.rpc.error_details_pb2 as error_details_pb2
import google.rpc.status_pb2 as status_pb2
from google.protobuf import any_pb2
from google.protobuf.message import Message

DOMAIN = "ascension.v1"
DETAILS_KEY = "grpc-status-details-bin"


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
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    DATA_LOSS = "DATA_LOSS"
    INTERNAL = "INTERNAL"


# reason -> (its status code, what it means). Stable: apps branch on these names.
REASONS: dict[str, tuple[Code, str]] = {
    "INVALID_FIELD": (Code.INVALID_ARGUMENT, "a field is missing or out of bounds (BadRequest names it)"),
    "UNDECODABLE_REQUEST": (Code.INVALID_ARGUMENT, "the request bytes are not a message of the method's request type"),
    "IDEMPOTENCY_KEY_REUSED": (Code.INVALID_ARGUMENT, "the idempotency key was used for a different request"),
    "GAME_NOT_FOUND": (Code.NOT_FOUND, "no such game (never created, deleted, or expired after it ended)"),
    "TOKEN_REQUIRED": (Code.UNAUTHENTICATED, "the call needs a seat token (or the admin token)"),
    "UNKNOWN_TOKEN": (Code.UNAUTHENTICATED, "the token matches no seat (or not the admin) of this game"),
    "OPERATOR_CREDENTIAL_REQUIRED": (Code.UNAUTHENTICATED, "the call needs `authorization: Bearer <operator key>`"),
    "UNKNOWN_OPERATOR_KEY": (Code.UNAUTHENTICATED, "the bearer key is not one of the server's operator keys"),
    "AI_CREDENTIAL_EXPIRED": (Code.UNAUTHENTICATED, "an AI move credential past its lifetime"),
    "UNKNOWN_GATEWAY_KEY": (Code.UNAUTHENTICATED, "the gateway key in `ascension-gateway-key` is not one of the server's gateway keys"),
    "ADMIN_TOKEN_REQUIRED": (Code.PERMISSION_DENIED, "a seat token cannot delete a game"),
    "SEED_NEEDS_OPERATOR": (Code.PERMISSION_DENIED, "choosing the seed of a game with a human seat needs an operator credential"),
    "REVIEW_OTHER_SEAT": (Code.PERMISSION_DENIED, "a seat token reviews its own seat only (metadata: seat)"),
    "PRACTICE_OTHER_SEAT": (Code.PERMISSION_DENIED, "a seat token practises from its own seat's decisions only while the game goes on (metadata: seat)"),
    "AI_SEAT_PLAYED_BY_WORKER": (Code.PERMISSION_DENIED, "a stored token cannot submit for a seat while it is an AI seat: its worker plays it, with the one-move credential the engine sends (metadata: seat)"),
    "NOT_YOUR_TURN": (Code.FAILED_PRECONDITION, "another seat is to move (metadata: to_move)"),
    "TIME_RAN_OUT": (
        Code.FAILED_PRECONDITION,
        "the seat's clock ran out: the engine plays for it until its part of the turn is over",
    ),
    "SEAT_RESIGNED": (Code.FAILED_PRECONDITION, "the seat resigned: it is out"),
    "ILLEGAL_ACTION": (Code.FAILED_PRECONDITION, "the rules refuse the action now (the message says why)"),
    "NOT_A_DECISION": (Code.FAILED_PRECONDITION, "practice starts at a version the seat was to move at, in a game not over then (metadata: to_move)"),
    "GAME_OVER": (Code.FAILED_PRECONDITION, "the game is over"),
    "GAME_NOT_OVER": (Code.FAILED_PRECONDITION, "a replay, or a review by the admin token or an operator key, is given only once the game is over"),
    "UNREADABLE_GAME": (Code.FAILED_PRECONDITION, "this engine cannot read the stored game"),
    "ANALYSIS_DISABLED": (Code.FAILED_PRECONDITION, "this server gives no hints (ENGINE_ANALYSIS_MAX_BUDGET_MS=0, or no AI dispatch)"),
    "REVIEW_DISABLED": (Code.FAILED_PRECONDITION, "this server gives no game reviews (ENGINE_REVIEW_MAX_BUDGET_MS=0, or no AI dispatch)"),
    "VERSION_MISMATCH": (Code.ABORTED, "the game went on: it is at a later version than the caller named (metadata: current_version, commit_id)"),
    "HISTORY_TRIMMED": (Code.OUT_OF_RANGE, "updates that old are no longer kept, or the stream fell behind (metadata: first_version or after_version)"),
    "RATE_LIMITED": (Code.RESOURCE_EXHAUSTED, "a rate limit per peer or per seat (metadata: limit, retry_after_ms)"),
    "LIVE_GAMES_LIMIT": (Code.RESOURCE_EXHAUSTED, "the cap on games not over is reached (metadata: limit)"),
    "STREAM_LIMIT": (Code.RESOURCE_EXHAUSTED, "a cap on concurrent watch streams (metadata: limit)"),
    "ANALYSIS_IN_PROGRESS": (Code.RESOURCE_EXHAUSTED, "an analysis of this seat is still running: one at a time per seat"),
    "ANALYSIS_CAPACITY": (Code.RESOURCE_EXHAUSTED, "the replica runs as many analyses as it may (metadata: limit)"),
    "REVIEW_IN_PROGRESS": (Code.RESOURCE_EXHAUSTED, "the caller has as many reviews in flight as it may (metadata: limit)"),
    "REVIEW_CAPACITY": (Code.RESOURCE_EXHAUSTED, "the reviews in flight need all the search time the server gives them (metadata: limit)"),
    "ANALYSIS_TIMEOUT": (Code.DEADLINE_EXCEEDED, "no AI worker answered the analysis within its budget and the grace (metadata: waited_ms)"),
    "ANALYSIS_UNAVAILABLE": (Code.UNAVAILABLE, "the analysis could not be handed to the AI workers, or they failed it; try again"),
    "STORE_UNAVAILABLE": (Code.UNAVAILABLE, "the game store did not answer; try again"),
    "SHUTTING_DOWN": (Code.UNAVAILABLE, "the server is stopping; try again (another replica)"),
    "DATA_LOSS": (Code.DATA_LOSS, "the store lost versions the caller saw or decided on (metadata: current_version, commit_id, first_lost_version, last_lost_version, exact)"),
    "GAME_LOST": (Code.DATA_LOSS, "the store lost a game this server served lately (metadata: game_id, last_version)"),
    "INTERNAL": (Code.INTERNAL, "a bug: the server logged it"),
}
# An error raised without a reason carries its code's name as reason (DATA_LOSS, above, is
# one); every refusal of this service names one of REASONS (tests/security checks the wire).


class ServiceError(Exception):
    """A refusal: ``ServiceError(code, message, trailers)`` as before; ``reason`` (default: the
    code's name), ``metadata`` (ErrorInfo), ``violations`` (BadRequest: field, problem) and
    ``retry_after`` (RetryInfo, seconds) are optional."""

    def __init__(
        self,
        code: Code,
        message: str,
        trailers: tuple[tuple[str, str], ...] = (),
        *,
        reason: str | None = None,
        metadata: Mapping[str, str] | None = None,
        violations: tuple[tuple[str, str], ...] = (),
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.trailers = trailers
        self.reason = reason or code.value
        self.metadata = dict(metadata or {})
        self.violations = violations
        self.retry_after = retry_after

    def status(self) -> status_pb2.Status:
        """The ``google.rpc.Status`` of this error (ErrorInfo first, then BadRequest)."""
        info = error_details_pb2.ErrorInfo(reason=self.reason, domain=DOMAIN)
        info.metadata.update(self.metadata)
        details: list[Message] = [info]
        if self.violations:
            bad = error_details_pb2.BadRequest()
            for field, problem in self.violations:
                bad.field_violations.add(field=field, description=problem)
            details.append(bad)
        if self.retry_after is not None:
            retry = error_details_pb2.RetryInfo()
            retry.retry_delay.FromNanoseconds(int(self.retry_after * 1e9))
            details.append(retry)
        packed = []
        for d in details:
            a = any_pb2.Any()
            a.Pack(d)
            packed.append(a)
        return status_pb2.Status(
            code=code_pb2.Code.Value(self.code.value), message=self.message, details=packed
        )

    def wire_trailers(self) -> tuple[tuple[str, str | bytes], ...]:
        """Trailing metadata: the error's own trailers plus the serialized status."""
        return (*self.trailers, (DETAILS_KEY, self.status().SerializeToString()))


def refused(code: Code, reason: str, message: str, **metadata: object) -> ServiceError:
    """A refusal with a reason from :data:`REASONS` and ErrorInfo metadata."""
    return ServiceError(
        code, message, reason=reason, metadata={k: str(v) for k, v in metadata.items()}
    )


def unreadable_game(game_id: str, why: str) -> ServiceError:
    """A record written by another version of the engine, or damaged: refused, not INTERNAL."""
    return refused(
        Code.FAILED_PRECONDITION,
        "UNREADABLE_GAME",
        f"game {game_id} cannot be read by this engine: {why}",
    )


def invalid(field: str, problem: str, reason: str = "INVALID_FIELD") -> ServiceError:
    """A malformed request: the message starts with the field's name; BadRequest names it."""
    return ServiceError(
        Code.INVALID_ARGUMENT,
        f"{field}: {problem}",
        reason=reason,
        metadata={"field": field},
        violations=((field, problem),),
    )


def undecodable(method: str) -> ServiceError:
    return ServiceError(
        Code.INVALID_ARGUMENT,
        f"the request is not a valid {method} request message (protobuf bytes of the "
        "method's request type, with UTF-8 strings)",
        reason="UNDECODABLE_REQUEST",
        violations=(("request", "not a valid protobuf message of the request type"),),
    )


def not_found(game_id: str) -> ServiceError:
    return refused(
        Code.NOT_FOUND,
        "GAME_NOT_FOUND",
        f"no game {game_id!r} (never created, deleted, or expired after it ended)",
        game_id=game_id,
    )


def version_mismatch(current: int, expected: int, commit_id: str = "") -> ServiceError:
    """ABORTED: keeps the ``current-version`` trailer; ErrorInfo has ``current_version`` (and
    its ``commit_id`` when known)."""
    metadata = {"current_version": str(current), "expected_version": str(expected)}
    if commit_id:
        metadata["commit_id"] = commit_id
    return ServiceError(
        Code.ABORTED,
        f"the game is at version {current}, not {expected}: another action was applied first; "
        "get the game again and decide anew",
        (("current-version", str(current)),),
        reason="VERSION_MISMATCH",
        metadata=metadata,
    )


def token_required(field: str = "token", what: str = "the seat token CreateGame returned") -> ServiceError:
    return refused(
        Code.UNAUTHENTICATED, "TOKEN_REQUIRED", f"{field} is required: pass {what}", field=field
    )


def unknown_token(message: str = "token does not match any seat of this game") -> ServiceError:
    return refused(Code.UNAUTHENTICATED, "UNKNOWN_TOKEN", message)


def ai_seat_played_by_worker(seat: int) -> ServiceError:
    return refused(
        Code.PERMISSION_DENIED,
        "AI_SEAT_PLAYED_BY_WORKER",
        f"seat {seat} is an AI seat: it is played by its worker, with the one-move credential the "
        "engine sends with each of its moves; a stored token cannot submit for it (nor report a "
        "fallback move)",
        seat=seat,
    )


def seat_resigned(seat: int) -> ServiceError:
    return refused(
        Code.FAILED_PRECONDITION,
        "SEAT_RESIGNED",
        f"seat {seat} resigned: it is out of the game (the engine plays its default)",
        seat=seat,
    )


def time_ran_out(seat: int) -> ServiceError:
    return refused(
        Code.FAILED_PRECONDITION,
        "TIME_RAN_OUT",
        f"seat {seat}'s time ran out: the engine plays for it until its part of the turn is "
        "over (the game's timeout policy, GameView.clock)",
        seat=seat,
    )


def not_your_turn(to_move: int, what: str) -> ServiceError:
    return refused(
        Code.FAILED_PRECONDITION,
        "NOT_YOUR_TURN",
        f"it is not your turn: seat {to_move} is {what}",
        to_move=to_move,
    )


def illegal_action(reason: str) -> ServiceError:
    return refused(Code.FAILED_PRECONDITION, "ILLEGAL_ACTION", reason)


def game_over() -> ServiceError:
    return refused(Code.FAILED_PRECONDITION, "GAME_OVER", "the game is over")


def store_unavailable() -> ServiceError:
    return refused(Code.UNAVAILABLE, "STORE_UNAVAILABLE", "the game store is unavailable; try again")


def internal() -> ServiceError:
    return refused(Code.INTERNAL, "INTERNAL", "internal error")
