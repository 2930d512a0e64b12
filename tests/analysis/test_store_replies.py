"""The store's replies (an analysis's answer left by the replica a worker reached, for the one
that waits): taken once, gone after their TTL; in memory and in a real Redis."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from engine_service.store import MemoryStore, Store
from engine_service.store.redis_store import RedisStore
from tests.service import support


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with support.redis_server() as url:
        yield url


async def check(store: Store) -> None:
    try:
        assert await store.take_reply("g1", "an:1") is None
        await store.put_reply("g1", "an:1", b"answer", 30.0)
        assert await store.take_reply("g2", "an:1") is None  # another game's key
        assert await store.take_reply("g1", "an:1") == b"answer"
        assert await store.take_reply("g1", "an:1") is None  # taken once
        await store.put_reply("g1", "an:2", b"late", 0.05)
        await asyncio.sleep(0.1 + 0.05)
        assert await store.take_reply("g1", "an:2") is None  # expired
    finally:
        await store.close()


def test_memory_store() -> None:
    asyncio.run(check(MemoryStore()))


def test_redis_store(redis_url: str) -> None:
    asyncio.run(check(RedisStore(redis_url)))
