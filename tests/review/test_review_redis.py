"""Reviews kept in Redis (a real redis-server, an engine on it): one hash per game in the game's
bucket, living exactly as long as the game's record, read and written by one script each."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio as aioredis

from clients.sdk import Client, GameNotFoundError
from engine_service.store import keys
from engine_service.store.keys import reviews_key
from engine_service.store.reviews import RedisReviews
from tests.review.support import ITERATIONS, play
from tests.service import support


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with support.redis_server() as url:
        yield url


@pytest.fixture(scope="module")
def engine(redis_url: str) -> Iterator[support.Engine]:
    e = support.start_engine(
        redis_url,
        ENGINE_AI_DISPATCH="local",
        ENGINE_LOCAL_AI_PROCESSES="2",
        ENGINE_LOCAL_ANALYSIS_PROCESSES="2",
        ENGINE_ANALYSIS_MAX_ITERATIONS=str(ITERATIONS),
        ENGINE_ANALYSIS_GRACE_SECONDS="20",
    )
    yield e
    e.stop()


def test_a_review_is_kept_with_the_games_lifetime(engine: support.Engine, redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    with Client(engine.address, timeout=60.0) as c:
        g, _, _ = play(c, 41, turns=5)
        gid = g.game_id
        got = list(c.review(gid, g.token(1)))
        record, hash_key = keys.game_keys(gid)[0], reviews_key(gid)
        assert keys.bucket_of(gid) == int(hash_key.split("{")[1][:2])  # the record's slot
        kept = r.hgetall(hash_key)
        assert sorted(kept) == sorted(f"1:{x.version}".encode() for x in got)
        assert abs(r.pttl(hash_key) - r.pttl(record)) < 5000
        # the record's lifetime changes (the game ends, say): the next read follows it
        r.pexpire(record, 600_000)
        again = list(c.review(gid, g.token(1)))
        assert all(x.stored for x in again) and len(again) == len(got)
        assert 590_000 < r.pttl(hash_key) <= 600_000
        c.delete_game(gid, g.admin_token)
        assert r.exists(hash_key) == 0  # deleted with the game, in the same script
        with pytest.raises(GameNotFoundError):
            list(c.review(gid, g.token(1)))
    r.close()

    async def after_deletion() -> tuple[dict[str, bytes], bool, int]:
        client = aioredis.Redis.from_url(redis_url)
        store = RedisReviews(client)
        try:
            found = await store.get(gid, [f"1:{x.version}" for x in got])
            written = await store.put(gid, "1:2", b"x")
            left = int(await client.exists(hash_key))
        finally:
            await client.aclose()
        return found, written, left

    found, written, left = asyncio.run(after_deletion())
    assert found == {} and not written and left == 0  # nothing outlives the game
