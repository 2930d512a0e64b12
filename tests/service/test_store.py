"""The Redis store against a real Redis: load and commit go through the store's own connections
(``_HotPath``), which must behave as redis-py's ordinary path does: same replies, reconnection
after a dropped connection, scripts loaded again after a flush, StoreError when Redis is gone."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis

from engine_service.store import Commit, CommitStatus, NewGame, StoreError
from engine_service.store.redis_store import RedisStore, _pack
from tests.service import support

Body = Callable[[RedisStore], Awaitable[None]]


def _run(url: str, body: Body) -> None:
    async def main() -> None:
        store = RedisStore(url, timeout=2.0)
        try:
            await body(store)
        finally:
            await store.close()

    asyncio.run(main())


def _game_id() -> str:
    from engine_service.server.ids import new_game_id

    return new_game_id()


async def _create(store: RedisStore, game_id: str) -> None:
    await store.create(NewGame(game_id, b"state-1", b'{"m":1}', b"u1", 0, 1, None, time.time()))


def _commit(game_id: str, expected: int, key: str = "") -> Commit:
    return Commit(
        game_id=game_id,
        expected_version=expected,
        state=b"state-%d" % (expected + 1),
        update=b"u%d" % (expected + 1),
        log_entry=b"0,%d" % expected,
        idem_key=key,
        idem_value=b"fp\nu%d" % (expected + 1),
        over=False,
        to_move=1,
        updated_ms=2,
        ttl_seconds=60,
        ai_pending=None,
        enqueued_at=time.time(),
    )


def test_pack_encodes_like_redis_py() -> None:
    from redis.asyncio.connection import Connection

    args: tuple[Any, ...] = ("EVALSHA", "ab", 2, "k:{é}", b"\x00\r\n", 10**20, -1, "")
    assert _pack(*args) == b"".join(Connection().pack_command(*args))


def test_load_and_commit(redis_url: str) -> None:
    async def body(store: RedisStore) -> None:
        gid = _game_id()
        assert await store.load(gid) is None
        await _create(store, gid)
        rec = await store.load(gid)
        assert rec is not None and (rec.version, rec.state, rec.meta, rec.over) == (
            1,
            b"state-1",
            b'{"m":1}',
            False,
        )
        ok = await store.commit(_commit(gid, 1, key="k1"))
        assert (ok.status, ok.version, ok.prior) == (CommitStatus.OK, 2, None)
        dup = await store.commit(_commit(gid, 1, key="k1"))
        assert (dup.status, dup.prior) == (CommitStatus.DUPLICATE, b"fp\nu2")
        stale = await store.commit(_commit(gid, 1))
        assert (stale.status, stale.version) == (CommitStatus.CONFLICT, 2)
        missing = await store.commit(_commit(_game_id(), 1))
        assert missing.status is CommitStatus.MISSING
        rec = await store.load(gid)
        assert rec is not None and (rec.version, rec.state) == (2, b"state-2")
        assert await store.action_log(gid) == [b"0,1"]

    _run(redis_url, body)


async def _after_a_drop(call: Callable[[], Awaitable[Any]]) -> Any:
    """As with redis-py's pool (no retries configured): a call on a connection the server
    dropped fails with StoreError, and the connection is made again for the next call. A
    commit may meet two (its own, then redis-py's to load the flushed script again)."""
    for _ in range(2):
        try:
            return await call()
        except StoreError:
            pass
    return await call()


def test_dropped_connections_and_flushed_scripts_are_recovered() -> None:
    """On a Redis of its own: it drops every client's connections."""

    async def body(store: RedisStore) -> None:
        gid = _game_id()
        await _create(store, gid)
        assert (await store.commit(_commit(gid, 1))).status is CommitStatus.OK
        admin.script_flush()
        assert (await store.commit(_commit(gid, 2))).status is CommitStatus.OK
        admin.client_kill_filter(_type="normal", skipme=True)  # every connection of the store
        admin.script_flush()
        assert (
            await _after_a_drop(lambda: store.commit(_commit(gid, 3)))
        ).status is CommitStatus.OK
        admin.client_kill_filter(_type="normal", skipme=True)
        rec = await _after_a_drop(lambda: store.load(gid))
        assert rec is not None and rec.version == 4 and rec.state == b"state-4"

    with support.redis_server() as url:
        admin = redis.Redis.from_url(url)
        _run(url, body)


def test_many_concurrent_calls_beyond_the_hot_path_limit(redis_url: str) -> None:
    async def body(store: RedisStore) -> None:
        store._hot._limit = 3  # the others take redis-py's path
        gids = [_game_id() for _ in range(12)]
        await asyncio.gather(*(_create(store, g) for g in gids))
        results = await asyncio.gather(*(store.commit(_commit(g, 1)) for g in gids))
        assert all(r.status is CommitStatus.OK for r in results)
        recs = await asyncio.gather(*(store.load(g) for g in gids))
        assert all(r is not None and r.version == 2 for r in recs)
        assert store._hot._made == 3

    _run(redis_url, body)


def test_cancelled_call_leaves_no_half_read_connection(redis_url: str) -> None:
    async def body(store: RedisStore) -> None:
        store._hot._limit = 1
        gid = _game_id()
        await _create(store, gid)
        for _ in range(20):  # cancel at various points of the round trip
            task = asyncio.ensure_future(store.load(gid))
            await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            rec = await store.load(gid)
            assert rec is not None and rec.state == b"state-1"

    _run(redis_url, body)


def test_unreachable_redis_is_a_store_error() -> None:
    async def body(store: RedisStore) -> None:
        with pytest.raises(StoreError):
            await store.load(_game_id())
        with pytest.raises(StoreError):
            await store.commit(_commit(_game_id(), 1))

    _run(f"redis://127.0.0.1:{support.free_port()}/0", body)


def test_a_silent_redis_times_out_as_a_store_error() -> None:
    """The hot path's one deadline per round trip is the configured Redis timeout."""

    async def main() -> None:
        accepted: list[asyncio.StreamWriter] = []

        async def never_answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            accepted.append(w)

        server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        store = RedisStore(f"redis://127.0.0.1:{port}/0", timeout=0.3)
        try:
            for call in (
                lambda: store.load(_game_id()),
                lambda: store.commit(_commit(_game_id(), 1)),
            ):
                t0 = time.monotonic()
                with pytest.raises(StoreError, match=r"within 0\.3s"):
                    await call()
                assert time.monotonic() - t0 < 2.0
        finally:
            await store.close()
            for w in accepted:
                w.close()
            server.close()

    asyncio.run(main())
