"""A store wrapper that reports how long each Redis-facing operation took
(``ascension_store_seconds``)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from engine_service.store.base import (
    Commit,
    CommitResult,
    GameRecord,
    IdempotentRecord,
    NewGame,
    Store,
    StoredUpdate,
)
from engine_service.store.wrapper import StoreWrapper

Observer = Callable[[str, float], None]
T = TypeVar("T")


class TimedStore(StoreWrapper):
    """Times the operations of requests; housekeeping walks and blocking reads are not timed
    (a blocking read's time is the wait, not the store's speed)."""

    def __init__(self, inner: Store, observe: Observer) -> None:
        super().__init__(inner)
        self._observe = observe

    async def _timed(self, op: str, call: Awaitable[T]) -> T:
        t0 = time.perf_counter()
        try:
            return await call
        finally:
            self._observe(op, time.perf_counter() - t0)

    async def create(self, game: NewGame) -> None:
        await self._timed("create", self.inner.create(game))

    async def load(self, game_id: str, *, fresh: bool = True) -> GameRecord | None:
        return await self._timed("load", self.inner.load(game_id, fresh=fresh))

    async def load_if_changed(
        self, game_id: str, known_commit_id: str, want_meta: bool
    ) -> tuple[int, str, bool, bytes | None, bytes | None] | None:
        return await self._timed(
            "load", self.inner.load_if_changed(game_id, known_commit_id, want_meta)
        )

    async def commit(self, c: Commit) -> CommitResult:
        return await self._timed("commit", self.inner.commit(c))

    async def idempotent(self, game_id: str, key: str) -> IdempotentRecord | None:
        return await self._timed("idempotent", self.inner.idempotent(game_id, key))

    async def update_at(self, game_id: str, version: int) -> StoredUpdate | None:
        return await self._timed("update_at", self.inner.update_at(game_id, version))

    async def action_log(self, game_id: str) -> list[tuple[int, int]]:
        return await self._timed("action_log", self.inner.action_log(game_id))

    async def delete(self, game_id: str) -> bool:
        return await self._timed("delete", self.inner.delete(game_id))

    async def read_updates(
        self,
        cursors: Mapping[str, int],
        block_ms: int,
        position: dict[str, Any] | None = None,
    ) -> dict[str, list[StoredUpdate]]:
        if block_ms > 0:
            return await self.inner.read_updates(cursors, block_ms, position)
        return await self._timed("read_updates", self.inner.read_updates(cursors, 0, position))
