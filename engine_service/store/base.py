"""The store's interface: where games live, written only by compare-and-set.

A game is one record (state bytes, version, static metadata) plus, written in the same atomic
step as each new version: its update (a serialized ``GameUpdate``) appended to a bounded
stream, the action appended to the action log, the idempotency key's result, and the pending
AI move (if an AI seat is to move next). Two implementations: Redis (production) and in
process (the embedded default). Both must behave the same; the service tests run on both.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GameRecord:
    game_id: str
    version: int
    state: bytes
    meta: bytes  # JSON written at creation, never changed
    over: bool


@dataclass(frozen=True, slots=True)
class GameSummaryRecord:
    game_id: str
    version: int
    meta: bytes
    over: bool
    to_move: int
    updated_ms: int


@dataclass(frozen=True, slots=True)
class PendingAI:
    """An AI move that was dispatched and not yet answered by a new version."""

    game_id: str
    version: int
    payload: bytes  # JSON: the dispatch payload (its ``enqueued_at`` is the last dispatch)
    first_enqueued: float  # when this AI turn started waiting (unix time)


@dataclass(frozen=True, slots=True)
class NewGame:
    game_id: str
    state: bytes
    meta: bytes
    update: bytes  # the creation's GameUpdate (version 1)
    to_move: int
    created_ms: int
    ai_pending: bytes | None  # payload, if an AI seat moves first
    enqueued_at: float


@dataclass(frozen=True, slots=True)
class Commit:
    """Write version ``expected_version + 1`` if the game is still at ``expected_version``."""

    game_id: str
    expected_version: int
    state: bytes
    update: bytes  # serialized GameUpdate of the new version
    log_entry: bytes  # b"seat,action" for the replay log
    idem_key: str  # "" for none
    idem_value: bytes  # what a retry with idem_key gets back
    over: bool
    to_move: int
    updated_ms: int
    ttl_seconds: int  # applied to every key of the game when ``over``
    ai_pending: bytes | None  # the next AI move's payload, or None (clears any pending one)
    enqueued_at: float


class CommitStatus(enum.Enum):
    OK = "ok"
    CONFLICT = "conflict"  # the version moved on: nothing written
    DUPLICATE = "duplicate"  # the idempotency key was used already: nothing written
    MISSING = "missing"  # no such game


@dataclass(frozen=True, slots=True)
class CommitResult:
    status: CommitStatus
    version: int  # the new version (OK) or the current one (CONFLICT)
    prior: bytes | None = None  # the stored result (DUPLICATE)


class StoreError(Exception):
    """The store could not be reached or answered nonsense (maps to UNAVAILABLE)."""


class Store(abc.ABC):
    """Every method is a coroutine; implementations are safe to share between tasks."""

    kind: str = "abstract"

    @abc.abstractmethod
    async def create(self, game: NewGame) -> None: ...

    @abc.abstractmethod
    async def load(self, game_id: str) -> GameRecord | None: ...

    @abc.abstractmethod
    async def commit(self, c: Commit) -> CommitResult: ...

    @abc.abstractmethod
    async def idempotent_result(self, game_id: str, key: str) -> bytes | None: ...

    @abc.abstractmethod
    async def updates(
        self, game_id: str, after_version: int, block_ms: int
    ) -> list[tuple[int, bytes]]:
        """Updates with a version above ``after_version``, oldest first; when there are none,
        wait up to ``block_ms`` for one (0: do not wait)."""

    @abc.abstractmethod
    async def first_update_version(self, game_id: str) -> int | None:
        """The oldest version still kept in the game's update stream (None if empty)."""

    @abc.abstractmethod
    async def action_log(self, game_id: str) -> list[bytes]: ...

    @abc.abstractmethod
    async def list_games(
        self, before_id: str, limit: int, active_only: bool
    ) -> list[GameSummaryRecord]:
        """Games with an id below ``before_id`` ("" = from the newest), newest first."""

    @abc.abstractmethod
    async def delete(self, game_id: str) -> bool: ...

    @abc.abstractmethod
    async def stalled_ai(self, waited_since: float, limit: int) -> list[PendingAI]:
        """Pending AI moves whose turn started before ``waited_since``."""

    @abc.abstractmethod
    async def claim_redispatch(self, game_id: str, old_payload: bytes, new_payload: bytes) -> bool:
        """Replace a pending AI move's payload if it is still ``old_payload`` (one replica wins)."""

    @abc.abstractmethod
    async def oldest_ai_wait_start(self) -> float | None: ...

    @abc.abstractmethod
    async def active_games(self) -> int: ...

    @abc.abstractmethod
    async def ping(self) -> None: ...

    async def close(self) -> None:
        return None
