"""Where game states live: Redis (production, standalone or Cluster) or in process (the
embedded default)."""

from __future__ import annotations

from engine_service.store.base import (
    WHOLE_GAME,
    Commit,
    CommitResult,
    CommitStatus,
    GameRecord,
    GameSummaryRecord,
    IdempotentRecord,
    NewGame,
    PendingAI,
    Store,
    StoredUpdate,
    StoreError,
    StoreSettings,
    UnreadableData,
    chain_ids,
    chained_commit_id,
    first_commit_id,
    new_commit_id,
)
from engine_service.store.caching import CachingStore
from engine_service.store.memory import MemoryStore


def open_store(
    redis_url: str,
    settings: StoreSettings | None = None,
    timeout: float = 5.0,
    *,
    mode: str = "standalone",
    retry_seconds: float = 5.0,
    wait_replicas: int = 0,
    wait_timeout_ms: int = 1000,
    client: str = "hand",
) -> Store:
    """A Redis store for a ``redis://`` (or ``rediss://``, ``unix://``, ``redis+sentinel://``:
    engine_service/redis_urls.py) URL, else in process. ``mode="cluster"``: the URL names any
    node of a Redis Cluster; ``client``: the Redis client library (see
    engine_service/store/redis/connection.py)."""
    if not redis_url:
        return MemoryStore(settings)
    from engine_service.store.redis_store import RedisStore

    return RedisStore(
        redis_url,
        settings,
        timeout,
        mode=mode,
        retry_seconds=retry_seconds,
        wait_replicas=wait_replicas,
        wait_timeout_ms=wait_timeout_ms,
        client=client,
    )


__all__ = [
    "WHOLE_GAME",
    "CachingStore",
    "Commit",
    "CommitResult",
    "CommitStatus",
    "GameRecord",
    "GameSummaryRecord",
    "IdempotentRecord",
    "MemoryStore",
    "NewGame",
    "PendingAI",
    "Store",
    "StoreError",
    "StoreSettings",
    "StoredUpdate",
    "UnreadableData",
    "chain_ids",
    "chained_commit_id",
    "first_commit_id",
    "new_commit_id",
    "open_store",
]
