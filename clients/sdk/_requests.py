"""Request messages and policies shared by the sync and the asyncio clients."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from clients.sdk.types import SETS, Clock, SeatSpec
from engine_service.api.ascension.v1 import engine_pb2


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How the SDK repeats calls.

    ``conflicts``: how many times ``submit`` re-reads the version and submits again after an
    ABORTED (someone moved first). ``transient``: how many times a call is repeated after
    UNAVAILABLE/DEADLINE_EXCEEDED (submits only with an idempotency key, so nothing is applied
    twice). ``reconnects``: how many times in a row ``watch`` reconnects a broken stream.
    """

    conflicts: int = 3
    transient: int = 3
    reconnects: int = 5
    backoff_s: float = 0.1
    max_backoff_s: float = 2.0

    def delay(self, attempt: int) -> float:
        return float(min(self.max_backoff_s, self.backoff_s * (2**attempt)))


DEFAULT_RETRY = RetryPolicy()


def create_game_request(
    seats: Sequence[SeatSpec], sets: str, seed: int | None, clock: Clock | None = None
) -> engine_pb2.CreateGameRequest:
    if sets not in SETS:
        raise ValueError(f"sets must be one of {', '.join(SETS)}, got {sets!r}")
    req = engine_pb2.CreateGameRequest(sets=sets, seats=[s.to_proto() for s in seats])
    if seed is not None:
        req.seed = seed
    if clock is not None:
        req.clock.CopyFrom(clock.to_proto())
    return req


def submit_request(
    game_id: str,
    token: str,
    version: int,
    action: int,
    key: str,
    seat_tokens: Sequence[str] = (),
    commit_id: str = "",
) -> engine_pb2.SubmitActionRequest:
    """``commit_id``: of ``version``, as this client saw it ("" if not known): a version the
    store lost is then refused (DATA_LOSS) even if the store went on to that number since."""
    return engine_pb2.SubmitActionRequest(
        game_id=game_id,
        token=token,
        expected_version=version,
        action=action,
        idempotency_key=key,
        seat_tokens=seat_tokens,
        expected_commit_id=commit_id,
    )


def new_idempotency_key() -> str:
    return uuid.uuid4().hex


def analysis_timeout(budget_ms: int, timeout: float | None) -> float | None:
    """How long to wait for AnalyzePosition: the client's timeout plus the search's budget (a
    minute when 0 asks for the server's cap, which is below that)."""
    if timeout is None:
        return None
    return timeout + (budget_ms / 1000 if budget_ms > 0 else 60.0)
