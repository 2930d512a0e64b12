"""A store wrapper that reports how long each operation took (``ascension_store_seconds``)."""

from __future__ import annotations

import time
from collections.abc import Callable

from engine_service.store.base import (
    Commit,
    CommitResult,
    GameRecord,
    GameSummaryRecord,
    NewGame,
    PendingAI,
    Store,
)

Observer = Callable[[str, float], None]


class TimedStore(Store):
    def __init__(self, inner: Store, observe: Observer) -> None:
        self.inner = inner
        self.kind = inner.kind
        self._observe = observe

    def _done(self, op: str, t0: float) -> None:
        self._observe(op, time.perf_counter() - t0)

    async def create(self, game: NewGame) -> None:
        t0 = time.perf_counter()
        try:
            await self.inner.create(game)
        finally:
            self._done("create", t0)

    async def load(self, game_id: str) -> GameRecord | None:
        t0 = time.perf_counter()
        try:
            return await self.inner.load(game_id)
        finally:
            self._done("load", t0)

    async def commit(self, c: Commit) -> CommitResult:
        t0 = time.perf_counter()
        try:
            return await self.inner.commit(c)
        finally:
            self._done("commit", t0)

    async def idempotent_result(self, game_id: str, key: str) -> bytes | None:
        t0 = time.perf_counter()
        try:
            return await self.inner.idempotent_result(game_id, key)
        finally:
            self._done("idempotent_result", t0)

    async def updates(
        self, game_id: str, after_version: int, block_ms: int
    ) -> list[tuple[int, bytes]]:
        if block_ms > 0:  # a blocking read waits for news: its duration is not store latency
            return await self.inner.updates(game_id, after_version, block_ms)
        t0 = time.perf_counter()
        try:
            return await self.inner.updates(game_id, after_version, 0)
        finally:
            self._done("updates", t0)

    async def first_update_version(self, game_id: str) -> int | None:
        t0 = time.perf_counter()
        try:
            return await self.inner.first_update_version(game_id)
        finally:
            self._done("first_update_version", t0)

    async def action_log(self, game_id: str) -> list[bytes]:
        t0 = time.perf_counter()
        try:
            return await self.inner.action_log(game_id)
        finally:
            self._done("action_log", t0)

    async def list_games(
        self, before_id: str, limit: int, active_only: bool
    ) -> list[GameSummaryRecord]:
        t0 = time.perf_counter()
        try:
            return await self.inner.list_games(before_id, limit, active_only)
        finally:
            self._done("list_games", t0)

    async def delete(self, game_id: str) -> bool:
        t0 = time.perf_counter()
        try:
            return await self.inner.delete(game_id)
        finally:
            self._done("delete", t0)

    async def stalled_ai(self, waited_since: float, limit: int) -> list[PendingAI]:
        t0 = time.perf_counter()
        try:
            return await self.inner.stalled_ai(waited_since, limit)
        finally:
            self._done("stalled_ai", t0)

    async def claim_redispatch(self, game_id: str, old_payload: bytes, new_payload: bytes) -> bool:
        t0 = time.perf_counter()
        try:
            return await self.inner.claim_redispatch(game_id, old_payload, new_payload)
        finally:
            self._done("claim_redispatch", t0)

    async def oldest_ai_wait_start(self) -> float | None:
        return await self.inner.oldest_ai_wait_start()

    async def active_games(self) -> int:
        return await self.inner.active_games()

    async def ping(self) -> None:
        await self.inner.ping()

    async def close(self) -> None:
        await self.inner.close()
