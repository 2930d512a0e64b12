"""Where game states live: Redis (production) or in process (the embedded default)."""

from __future__ import annotations

from engine_service.store.base import (
    Commit,
    CommitResult,
    CommitStatus,
    GameRecord,
    GameSummaryRecord,
    NewGame,
    PendingAI,
    Store,
    StoreError,
)
from engine_service.store.memory import MemoryStore


def open_store(redis_url: str, stream_maxlen: int = 10000, timeout: float = 5.0) -> Store:
    """A Redis store for a ``redis://`` (or ``rediss://``, ``unix://``) URL, else in process."""
    if not redis_url:
        return MemoryStore(stream_maxlen)
    from engine_service.store.redis_store import RedisStore

    return RedisStore(redis_url, stream_maxlen, timeout)


__all__ = [
    "Commit",
    "CommitResult",
    "CommitStatus",
    "GameRecord",
    "GameSummaryRecord",
    "MemoryStore",
    "NewGame",
    "PendingAI",
    "Store",
    "StoreError",
    "open_store",
]
