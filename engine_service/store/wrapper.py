"""A store in front of another one: every call goes through unless a subclass says otherwise."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine_service.store.base import (
    Commit,
    CommitResult,
    GameRecord,
    GameSummaryRecord,
    IdempotentRecord,
    NewGame,
    PendingAI,
    Store,
    StoredUpdate,
)


class StoreWrapper(Store):
    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.settings = inner.settings
        self.groups = inner.groups

    def group_of(self, game_id: str) -> int:
        return self.inner.group_of(game_id)

    async def create(self, game: NewGame) -> None:
        await self.inner.create(game)

    async def load(self, game_id: str, *, fresh: bool = True) -> GameRecord | None:
        return await self.inner.load(game_id, fresh=fresh)

    async def load_if_changed(
        self, game_id: str, known_commit_id: str, want_meta: bool
    ) -> tuple[int, str, bool, bytes | None, bytes | None] | None:
        return await self.inner.load_if_changed(game_id, known_commit_id, want_meta)

    async def commit(self, c: Commit) -> CommitResult:
        return await self.inner.commit(c)

    async def idempotent(self, game_id: str, key: str) -> IdempotentRecord | None:
        return await self.inner.idempotent(game_id, key)

    async def update_at(self, game_id: str, version: int) -> StoredUpdate | None:
        return await self.inner.update_at(game_id, version)

    async def read_updates(
        self,
        cursors: Mapping[str, int],
        block_ms: int,
        position: dict[str, Any] | None = None,
    ) -> dict[str, list[StoredUpdate]]:
        return await self.inner.read_updates(cursors, block_ms, position)

    async def heads(self, game_ids: list[str]) -> dict[str, tuple[int, str]]:
        return await self.inner.heads(game_ids)

    async def first_update_version(self, game_id: str) -> int | None:
        return await self.inner.first_update_version(game_id)

    async def action_log(self, game_id: str) -> list[tuple[int, int]]:
        return await self.inner.action_log(game_id)

    async def list_games(
        self, before_id: str, limit: int, active_only: bool
    ) -> list[GameSummaryRecord]:
        return await self.inner.list_games(before_id, limit, active_only)

    async def delete(self, game_id: str) -> bool:
        return await self.inner.delete(game_id)

    async def stalled_ai(self, waited_since: float, limit: int) -> list[PendingAI]:
        return await self.inner.stalled_ai(waited_since, limit)

    async def claim_redispatch(self, game_id: str, old_payload: bytes, new_payload: bytes) -> bool:
        return await self.inner.claim_redispatch(game_id, old_payload, new_payload)

    async def oldest_ai_wait_start(self) -> float | None:
        return await self.inner.oldest_ai_wait_start()

    async def presence(
        self,
        game_id: str,
        holder: str,
        held: Sequence[int],
        let_go: Sequence[int],
        now_ms: int,
        ttl_ms: int,
    ) -> set[int]:
        return await self.inner.presence(game_id, holder, held, let_go, now_ms, ttl_ms)

    async def due_clocks(self, now_ms: int, limit: int) -> list[str]:
        return await self.inner.due_clocks(now_ms, limit)

    async def claim_clock_bot(
        self, game_id: str, version: int, commit_id: str, payload: bytes, enqueued_at: float
    ) -> bool:
        return await self.inner.claim_clock_bot(game_id, version, commit_id, payload, enqueued_at)

    async def active_games(self) -> int:
        return await self.inner.active_games()

    async def put_reply(self, game_id: str, key: str, data: bytes, ttl_seconds: float) -> None:
        await self.inner.put_reply(game_id, key, data, ttl_seconds)

    async def take_reply(self, game_id: str, key: str) -> bytes | None:
        return await self.inner.take_reply(game_id, key)

    async def peek_reply(self, game_id: str, key: str) -> bytes | None:
        return await self.inner.peek_reply(game_id, key)

    async def claim_loss(self, game_id: str, loss: str, ttl_seconds: float) -> bool:
        return await self.inner.claim_loss(game_id, loss, ttl_seconds)

    async def tidy(self, limit: int) -> int:
        return await self.inner.tidy(limit)

    async def ping(self) -> None:
        await self.inner.ping()

    async def close(self) -> None:
        await self.inner.close()
