"""The stores against a real Redis (and the in-process store, which must behave the same):
compare-and-set on version and commit id, the window of updates and idempotency keys, expiry,
the hot path's connections (same replies as redis-py, reconnection after a dropped connection,
scripts loaded again after a flush, StoreError when Redis is gone), and the replica cache's
detection of a store that went back in time."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
import redis

from engine_service.store import (
    WHOLE_GAME,
    CachingStore,
    Commit,
    CommitStatus,
    MemoryStore,
    NewGame,
    Store,
    StoreError,
    StoreSettings,
    chained_commit_id,
    first_commit_id,
    keys,
    new_commit_id,
)
from engine_service.store.redis.core import CLIENTS, LEASE_MARGIN
from engine_service.store.redis.resp import pack
from engine_service.store.redis_store import RedisStore
from engine_service.store.wrapper import StoreWrapper
from tests.service import support

Body = Callable[[Any], Awaitable[None]]
SETTINGS = StoreSettings(window=4, finished_ttl=600, idle_ttl=3600)


def _run(store: Store, body: Body) -> None:
    async def main() -> None:
        try:
            await body(store)
        finally:
            await store.close()

    asyncio.run(main())


@pytest.fixture(params=["redis", "redis-py", "memory"])
def make_store(request: pytest.FixtureRequest, redis_url: str) -> Iterator[Callable[..., Store]]:
    """The Redis store with its own connection layer (the default), with redis-py's client,
    and the in-process store."""

    def make(**settings: int) -> Store:
        s = dataclasses.replace(SETTINGS, **settings)
        if request.param == "redis":
            return RedisStore(redis_url, s, timeout=2.0)
        if request.param == "redis-py":
            return RedisStore(redis_url, s, timeout=2.0, client="redis-py")
        return MemoryStore(s)

    yield make


def _game_id() -> str:
    from engine_service.server.ids import new_game_id

    return new_game_id()


async def _create(store: Store, game_id: str, ai: bytes | None = None) -> str:
    cid = new_commit_id()
    await store.create(NewGame(game_id, cid, b"state-1", b'{"m":1}', b"u1", 0, 1, ai, time.time()))
    return cid


def _commit(game_id: str, expected: int, parent: str, key: str = "", over: bool = False,
            cid: str = "") -> Commit:  # fmt: skip
    return Commit(
        game_id=game_id,
        expected_version=expected,
        expected_commit_id=parent,
        commit_id=cid or new_commit_id(),
        state=b"state-%d" % (expected + 1),
        update=b"u%d" % (expected + 1),
        seat=expected % 2,
        action=(4 << 16) | expected,
        idem_key=key,
        fingerprint=b"fp%d" % expected,
        over=over,
        to_move=1,
        updated_ms=int(time.time() * 1000),
        ai_pending=None,
        enqueued_at=time.time(),
    )


def _chained(game_id: str, expected: int, parent: str, action: int = 0) -> Commit:
    """A commit whose id is chained as the engine chains them (``action``: another history)."""
    c = _commit(game_id, expected, parent)
    c.action = action or c.action
    c.commit_id = chained_commit_id(parent, c.seat, c.action)
    return c


async def _play(store: Store, game_id: str, parent: str, start: int, n: int, key: bool = True) -> str:
    """Commit versions start+1 .. start+n; returns the last commit id."""
    for v in range(start, start + n):
        c = _commit(game_id, v, parent, key=f"k{v}" if key else "")
        res = await store.commit(c)
        assert res.status is CommitStatus.OK, res
        parent = c.commit_id
    return parent


def test_pack_encodes_like_redis_py() -> None:
    from redis.asyncio.connection import Connection

    args: tuple[Any, ...] = ("EVALSHA", "ab", 2, "k:{é}", b"\x00\r\n", 10**20, -1, "")
    assert pack(*args) == b"".join(Connection().pack_command(*args))


def test_the_commit_is_packed_as_the_generic_packing_would() -> None:
    """The commit's command is packed by hand (its game's keys once, its text in one piece):
    the bytes are those of pack on its arguments, whatever they hold (non-ASCII ids and keys,
    states longer than the table of headers, a pending AI move)."""
    from engine_service.store.redis import core

    store = RedisStore("redis://127.0.0.1:1/0", SETTINGS)
    sent: list[bytes] = []

    async def call(key: str, packed: bytes, replies: int = 1, **_: Any) -> list[Any]:
        sent.append(packed)
        return [[b"ok", b"2", b"c"]]

    store._hot.call = call  # type: ignore[method-assign]
    gid = _game_id()
    for cid, parent, key, state, ai, clock in (
        ("0123456789abcdef", "fedcba9876543210", "k1", b"s" * 10, None, 0),
        ("ü-2", "é-1", "clé", b"s" * 5000, b'{"seat":1}', 0),
        ("x", "", "", b"", None, 1_796_435_331_041),
    ):
        c = dataclasses.replace(_commit(gid, 7, parent, key=key, cid=cid), state=state,
                                ai_pending=ai, enqueued_at=12.5, clock_deadline_ms=clock)  # fmt: skip
        asyncio.run(store.commit(c))
        ks = keys.game_keys(gid)
        _, active, ai_index = keys.index_keys(keys.bucket_of(gid))
        st = SETTINGS
        args = (
            gid, 7, parent, cid, c.attempt, 0, c.to_move, c.updated_ms, "12.5" if ai else "",
            state, keys.pack_window_entry(8, False, cid, parent, c.update, c.attempt),
            keys.pack_log_entry(c.seat, c.action), key, c.fingerprint, ai or b"", st.window,
            st.idle_ttl * 1000, st.idle_ttl * 1000 + st.idle_ttl * 1000 // LEASE_MARGIN,
            st.finished_ttl, st.finished_window_ttl, core.NEWS_LENGTH, str(clock) if clock else "",
        )  # fmt: skip
        b = keys.bucket_of(gid)
        expected = pack("EVALSHA", store._commit.sha, 8, *ks, active, ai_index, keys.news_key(b), keys.clock_key(b), *args)  # fmt: skip
        assert sent.pop() == expected


def test_non_ascii_commit_ids_and_keys(redis_url: str) -> None:
    """Ids that are not ASCII (as written by earlier versions) and keys that are not: the
    commit's packing still frames them right (Redis would refuse the command otherwise)."""

    async def body(store: RedisStore) -> None:
        gid = _game_id()
        await store.create(NewGame(gid, "é-1", b"s", b'{"m":1}', b"u1", 0, 1, None, time.time()))
        res = await store.commit(_commit(gid, 1, "é-1", key="clé", cid="ü-2"))
        assert (res.status, res.version, res.commit_id) == (CommitStatus.OK, 2, "ü-2")
        dup = await store.commit(_commit(gid, 1, "é-1", key="clé", cid="ü-2"))
        assert dup.status is CommitStatus.DUPLICATE and dup.prior is not None
        assert dup.prior.version == 2
        rec = await store.load(gid)
        assert rec is not None and (rec.version, rec.commit_id) == (2, "ü-2")

    _run(RedisStore(redis_url, SETTINGS, timeout=2.0), body)


def test_compare_and_set_on_version_and_commit_id(make_store: Callable[..., Store]) -> None:
    async def body(store: Store) -> None:
        gid = _game_id()
        assert await store.load(gid) is None
        cid1 = await _create(store, gid)
        rec = await store.load(gid)
        assert rec is not None and (rec.version, rec.commit_id, rec.state, rec.meta, rec.over) == (
            1, cid1, b"state-1", b'{"m":1}', False,
        )  # fmt: skip
        first = _commit(gid, 1, cid1, key="k1")
        ok = await store.commit(first)
        assert (ok.status, ok.version, ok.commit_id) == (CommitStatus.OK, 2, first.commit_id)
        # the same commit sent again (its reply was lost) is recognised: applied once
        again = await store.commit(first)
        assert (again.status, again.version) == (CommitStatus.OK, 2)
        dup = await store.commit(_commit(gid, 1, cid1, key="k1"))
        assert dup.status is CommitStatus.DUPLICATE and dup.prior is not None
        assert (dup.prior.version, dup.prior.fingerprint) == (2, b"fp1")
        stale = await store.commit(_commit(gid, 1, cid1))
        assert (stale.status, stale.version, stale.commit_id) == (CommitStatus.CONFLICT, 2, first.commit_id)
        # the right version number on another history (another commit id) is refused too
        other = await store.commit(_commit(gid, 2, new_commit_id()))
        assert (other.status, other.version) == (CommitStatus.CONFLICT, 2)
        missing = await store.commit(_commit(_game_id(), 1, ""))
        assert missing.status is CommitStatus.MISSING
        rec = await store.load(gid)
        assert rec is not None and (rec.version, rec.state, rec.commit_id) == (2, b"state-2", first.commit_id)
        assert await store.action_log(gid) == [(1, (4 << 16) | 1)]
        assert await store.heads([gid, _game_id()]) == {gid: (2, first.commit_id)}

    _run(make_store(), body)


def test_heads_of_many_games_over_buckets_and_script_calls(
    make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watch hub's check of its games: every game that exists, with its version and
    commit id, whatever the buckets and however many script calls it takes."""
    from engine_service.store.redis import watch

    monkeypatch.setattr(watch, "HEADS_PER_CALL", 3)

    async def body(store: Store) -> None:
        gids = [_game_id() for _ in range(12)]
        cids = {g: await _create(store, g) for g in gids}
        moved = gids[0]
        after = await store.commit(_commit(moved, 1, cids[moved]))
        one_bucket = [g for g in gids if keys.bucket_of(g) == keys.bucket_of(moved)]
        while len(one_bucket) < 7:  # more than two calls' worth in one bucket
            g = _game_id()
            if keys.bucket_of(g) == keys.bucket_of(moved):
                cids[g] = await _create(store, g)
                gids.append(g)
                one_bucket.append(g)
        assert len({keys.bucket_of(g) for g in gids}) > 1
        gone = [_game_id(), _game_id()]
        heads = await store.heads([*gone[:1], *gids, *gone[1:]])
        want = {g: (1, cids[g]) for g in gids}
        want[moved] = (2, after.commit_id)
        assert heads == want
        assert await store.heads([]) == {}

    _run(make_store(), body)


def test_the_window_of_updates_and_idempotency_keys(make_store: Callable[..., Store]) -> None:
    async def body(store: Store) -> None:
        gid = _game_id()
        cid = await _create(store, gid)
        last = await _play(store, gid, cid, 1, 6)  # versions 2..7; the window keeps 4..7
        assert await store.first_update_version(gid) == 4
        ups = (await store.read_updates({gid: 0}, 0))[gid]
        assert [u.version for u in ups] == [4, 5, 6, 7]
        assert all(b.parent_id == a.commit_id for a, b in itertools.pairwise(ups))
        assert ups[-1].commit_id == last and ups[-1].update == b"u7"
        assert await store.idempotent(gid, "k2") is None  # left with version 3
        rec6 = await store.idempotent(gid, "k6")
        assert rec6 is not None and rec6.version == 7
        u7 = await store.update_at(gid, 7)
        assert u7 is not None and u7.commit_id == last
        assert await store.update_at(gid, 2) is None
        assert len(await store.action_log(gid)) == 6  # the replay log is whole

    _run(make_store(), body)


def test_idempotency_keys_leave_the_hash_with_their_versions(redis_url: str) -> None:
    """The idempotency hash holds the keys of the window's versions and nothing more (but the
    field that marks it as having an expiry), however long the game, with keyed and unkeyed
    versions mixed (the key of the version that leaves the window is found by its version,
    not by walking the hash). A key that is a version's
    field name in UTF-8 ("\\u00ad41": what byte 255 becomes when escaped in Python rather than
    in Lua, a bug this once had) is a key unknown to the hash."""

    async def body(store: Store) -> None:
        r: Any = redis.Redis.from_url(redis_url)
        gid = _game_id()
        parent = await _create(store, gid)
        for v in range(1, 41):  # versions 2..41, a key on two of every three
            c = _commit(gid, v, parent, key="" if v % 3 == 0 else f"k{v}")
            assert (await store.commit(c)).status is CommitStatus.OK
            parent = c.commit_id
        in_window = [v for v in range(38, 42) if (v - 1) % 3]  # keys of versions 38..41
        held = r.hgetall(keys.game_keys(gid)[3])
        assert sorted(k for k in held if not k.startswith(b"\xff")) == sorted(
            f"k{v - 1}".encode() for v in in_window
        )
        assert sorted(k for k in held if k.startswith(b"\xff")) == sorted(
            [b"\xff", *(b"\xff%d" % v for v in in_window)]  # (b"\xff": its expiry is set)
        )
        assert await store.idempotent(gid, "k36") is None  # version 37: left
        rec = await store.idempotent(gid, "k40")
        assert rec is not None and rec.version == 41
        assert await store.idempotent(gid, "\u00ad41") is None
        r.close()

    _run(RedisStore(redis_url, SETTINGS, timeout=2.0), body)


def test_damaged_window_entries_are_left_out_not_raised(redis_url: str) -> None:
    """An entry of a game's window that does not unpack (damaged bytes) is read as a gap: the
    updates after it are read, those before it are not (the watch hub rebuilds them from the
    log), and a version whose entry is damaged is not in the window. A damaged top is no news.
    No read of the window raises: once, reading a game whose window holds such an entry
    failed, as INTERNAL or as an unavailable store."""

    async def body(store: Store) -> None:
        r: Any = redis.Redis.from_url(redis_url)
        gid = _game_id()
        last = await _play(store, gid, await _create(store, gid), 1, 6)  # the window: 4..7
        window = keys.game_keys(gid)[1]
        r.lset(window, 1, b"\x00\x00\x00\x05\x00\x09ab")  # version 5: ids past its end
        ups = (await store.read_updates({gid: 3}, 0))[gid]
        assert [u.version for u in ups] == [6, 7] and ups[-1].commit_id == last
        assert await store.update_at(gid, 5) is None
        assert (u6 := await store.update_at(gid, 6)) is not None and u6.update == b"u6"
        r.lset(window, 0, b"\xff")  # version 4: too short for a version
        assert await store.first_update_version(gid) is None
        other = _game_id()
        await _play(store, other, await _create(store, other), 1, 2)
        r.lset(keys.game_keys(other)[1], -1, b"zz")  # its top (version 3)
        news = await store.read_updates({gid: 6, other: 2}, 0)
        assert [u.version for u in news[gid]] == [7] and not news.get(other)
        assert await store.update_at(other, 3) is None
        # A top whose version reads lower than the reader's cursor (zeroed bytes): not the
        # store going back (the record is still at 3), so no StoreError for the bucket's reader.
        r.lset(keys.game_keys(other)[1], -1, bytes(24))
        await _play(store, gid, last, 7, 1)
        news = await store.read_updates({gid: 7, other: 3}, 0)
        assert [u.version for u in news[gid]] == [8] and not news.get(other)
        r.close()

    _run(RedisStore(redis_url, SETTINGS, timeout=2.0), body)


def test_a_commit_on_a_damaged_log_is_not_failed_by_its_compression(redis_url: str) -> None:
    """Every LOG_CHUNK versions the store compresses the log after the commit, best effort: a
    damaged log is left as it is, and the commit (done) answers OK, not an error."""

    async def body(store: Store) -> None:
        r: Any = redis.Redis.from_url(redis_url)
        gid = _game_id()
        last = await _play(store, gid, await _create(store, gid), 1, keys.LOG_CHUNK - 2, key=False)
        r.set(keys.game_keys(gid)[2], b"\xfe\x00\x00\x00\x09abc")  # a head that does not unpack
        await _play(store, gid, last, keys.LOG_CHUNK - 1, 1, key=False)  # version LOG_CHUNK: OK
        rec = await store.load(gid)
        assert rec is not None and rec.version == keys.LOG_CHUNK
        r.close()

    _run(RedisStore(redis_url, SETTINGS, timeout=2.0), body)


def test_a_finished_game_keeps_its_window_a_while_then_what_replay_needs(make_store: Callable[..., Store]) -> None:
    """Over: the window stays a little while (watchers behind at the end catch up), with the
    last idempotency key only; then the record, the log and that key remain."""

    async def body(store: Store) -> None:
        gid = _game_id()
        cid = await _create(store, gid)
        cid = await _play(store, gid, cid, 1, 3)
        end = _commit(gid, 4, cid, key="last", over=True)
        assert (await store.commit(end)).status is CommitStatus.OK
        ups = (await store.read_updates({gid: 0}, 0))[gid]
        assert [(u.version, u.over) for u in ups] == [(2, False), (3, False), (4, False), (5, True)]
        assert await store.idempotent(gid, "k3") is None
        last = await store.idempotent(gid, "last")
        assert last is not None and last.version == 5
        assert len(await store.action_log(gid)) == 4
        rec = await store.load(gid)
        assert rec is not None and rec.over
        assert await store.active_games() >= 0
        assert gid not in {g.game_id for g in await store.list_games("", 500, active_only=True)}
        deadline = time.monotonic() + 5
        while await store.first_update_version(gid) is not None:  # the window's time is 1 s here
            assert time.monotonic() < deadline, "the window of a finished game was kept"
            await asyncio.sleep(0.1)
        assert await store.read_updates({gid: 0}, 0) == {} and await store.update_at(gid, 5) is None
        assert (await store.idempotent(gid, "last")) == last and len(await store.action_log(gid)) == 4
        assert (await store.load(gid)) == rec

    _run(make_store(finished_window_ttl=1), body)


def test_a_long_game_log_reads_whole(make_store: Callable[..., Store]) -> None:
    """The Redis store keeps the log compressed every LOG_CHUNK (128) versions (and whole at the end):
    it reads the same, and is smaller than 4 bytes per version."""

    async def body(store: Store) -> None:
        gid = _game_id()
        cid = await _create(store, gid)
        cid = await _play(store, gid, cid, 1, 600, key=False)
        expected = [(v % 2, (4 << 16) | v) for v in range(1, 601)]
        assert await store.action_log(gid) == expected
        if isinstance(store, RedisStore):
            stored = await store.r.get(keys.game_keys(gid)[2])
            assert stored[:1] == b"\xfe" and len(stored) < 4 * 600  # the last 88 plain
        assert (await store.commit(_commit(gid, 601, cid, over=True))).status is CommitStatus.OK
        assert await store.action_log(gid) == [*expected, (1, (4 << 16) | 601)]
        if isinstance(store, RedisStore):
            stored = await store.r.get(keys.game_keys(gid)[2])
            assert stored[:1] == b"\xff" and len(stored) < 4 * 601 / 2

    _run(make_store(), body)


def test_a_blocking_read_wakes_on_a_commit(make_store: Callable[..., Store]) -> None:
    """read_updates waits for news of the games it is given (not of others), up to its time."""

    async def body(store: Store) -> None:
        gids = [_game_id() for _ in range(3)]
        cids = [await _create(store, g) for g in gids]
        t0 = time.monotonic()
        assert await store.read_updates({g: 1 for g in gids[:2]}, 300) == {}
        assert time.monotonic() - t0 >= 0.25

        async def later() -> None:
            await asyncio.sleep(0.2)
            await store.commit(_commit(gids[2], 1, cids[2]))  # not watched: no wake-up for it
            await asyncio.sleep(0.2)
            await store.commit(_commit(gids[1], 1, cids[1]))

        task = asyncio.ensure_future(later())
        news = await store.read_updates({g: 1 for g in gids[:2]}, 5000)
        await task
        assert list(news) == [gids[1]] and [u.version for u in news[gids[1]]] == [2]
        assert 0.3 < time.monotonic() - t0 - 0.3 < 4

    _run(make_store(), body)


def test_expiry_idle_then_finished(redis_url: str) -> None:
    async def body(store: RedisStore) -> None:
        gid = _game_id()
        cid = await _create(store, gid)
        cid = await _play(store, gid, cid, 1, 2)
        r = redis.Redis.from_url(redis_url)
        g, u, lg, i = keys.game_keys(gid)
        lease = 3600_000 + 3600_000 // LEASE_MARGIN
        for k in (g, u, lg, i):
            assert 3600_000 - 5000 < r.pttl(k) <= lease, k  # idle expiry: see the next test
        assert (await store.commit(_commit(gid, 3, cid, key="x", over=True))).status is CommitStatus.OK
        for k in (g, lg, i):
            assert 500 < r.ttl(k) <= 600, k  # finished expiry
        assert 200 < r.ttl(u) <= 300  # the window goes sooner (finished_window_ttl)

    _run(RedisStore(redis_url, SETTINGS, timeout=2.0), body)


def test_an_unfinished_games_keys_live_a_lease_past_its_last_move(redis_url: str) -> None:
    """Its idle time, and at most 1/LEASE_MARGIN of it longer: a move renews the expiry of
    all its keys once less than the idle time is left (not at every move), and keys that a
    move creates (the log at the first, the idempotency hash at the first keyed one, however
    late) get it at once. The active index dates the game no earlier than its lease's end
    less the idle time, so that tidying drops it no sooner than its keys expire."""

    async def body(store: RedisStore) -> None:
        r: Any = redis.Redis.from_url(redis_url)
        idle, lease = 3600_000, 3600_000 + 3600_000 // LEASE_MARGIN
        gid = _game_id()
        ks = keys.game_keys(gid)
        active = keys.index_keys(keys.bucket_of(gid))[1]
        cid = await _create(store, gid)
        cid = await _play(store, gid, cid, 1, 3, key=False)  # the log made: a lease
        assert r.pttl(ks[3]) == -2  # (no idempotency hash yet)
        for k in ks[:3]:
            assert lease - 5000 < r.pttl(k) <= lease, k
        for k in ks[:3]:
            r.pexpire(k, idle + 60_000)  # more than the idle time left: not renewed
        t0 = int(time.time() * 1000)
        cid = await _play(store, gid, cid, 4, 1)  # the first keyed move makes the hash
        assert idle < r.pttl(ks[0]) <= idle + 60_000
        assert lease - 5000 < r.pttl(ks[3]) <= lease  # the new hash: a lease for all
        for k in ks[:3]:
            assert lease - 5000 < r.pttl(k) <= lease, k
        assert r.zscore(active, gid) >= t0 + lease - idle
        for k in ks:
            r.pexpire(k, idle + 60_000)
        cid = await _play(store, gid, cid, 5, 2)  # within the lease: nothing renewed
        for k in ks:
            assert idle < r.pttl(k) <= idle + 60_000, k
        for k in ks:
            r.pexpire(k, idle - 1000)  # less than the idle time left: renewed
        t1 = int(time.time() * 1000)
        cid = await _play(store, gid, cid, 7, 1)
        for k in ks:
            assert lease - 5000 < r.pttl(k) <= lease, k
        assert r.zscore(active, gid) >= t1 + lease - idle
        r.close()

    _run(RedisStore(redis_url, SETTINGS, timeout=2.0), body)


def test_window_entries_logs_and_metadata_as_kept() -> None:
    """What the scripts store, and read back: window entries (commit ids as 8 bytes, any
    other id as text), finished logs and metadata compressed."""
    cid, parent = new_commit_id(), new_commit_id()
    for args in ((7, True, cid, parent, b"u|7"), (1, False, cid, "", b""), (3, False, "x-1", "é", b"\x00")):
        entry = keys.pack_window_entry(*args)
        assert keys.unpack_window_entry(entry) == args
    assert len(keys.pack_window_entry(7, False, cid, parent, b"")) == 21
    # The attempt id of the Commit that wrote it (8 bytes more), read apart; entries written
    # without one (before attempts existed) read as before.
    attempt = new_commit_id()
    entry = keys.pack_window_entry(7, True, cid, parent, b"u|7", attempt)
    assert len(entry) == 21 + 8 + 3
    assert keys.unpack_window_entry(entry) == (7, True, cid, parent, b"u|7")
    assert keys.unpack_window_entry_attempt(entry) == (7, True, cid, parent, attempt, b"u|7")
    old = keys.pack_window_entry(7, True, cid, parent, b"u|7")
    assert keys.unpack_window_entry_attempt(old)[4] == ""
    entries = [(seat, (kind << 16) | arg) for seat in range(6) for kind in (1, 4) for arg in (0, 7, 300)] * 20
    raw = b"".join(keys.pack_log_entry(s, a) for s, a in entries)
    assert keys.unpack_log(raw) == keys.unpack_log(keys.pack_log(raw, over=True)) == entries
    assert len(keys.pack_log(raw, over=True)) < len(raw) / 4
    going_on = keys.pack_log(raw, over=False)  # its last entries after a compressed head
    assert going_on.endswith(raw[-4 * (len(entries) % keys.LOG_CHUNK) :]) and len(going_on) < len(raw) / 2
    more = going_on + keys.pack_log_entry(1, 5)  # what the commit script appends
    assert keys.unpack_log(more) == [*entries, (1, 5)]
    assert keys.unpack_log(keys.pack_log(keys.unpack_log_bytes(more), over=False)) == [*entries, (1, 5)]
    meta = b'{"seats":[' + b",".join(b'{"digest":"%064x"}' % i for i in range(7)) + b"]}"
    assert keys.unpack_meta(keys.pack_meta(meta)) == meta and len(keys.pack_meta(meta)) < len(meta)
    assert keys.unpack_meta(b'{"m":1}') == b'{"m":1}'


def test_keys_of_a_game_and_its_indexes_share_one_slot() -> None:
    """What one script touches must be one Redis Cluster slot."""
    for _ in range(50):
        gid = _game_id()
        b = keys.bucket_of(gid)
        assert len({_slot(k) for k in (*keys.game_keys(gid), *keys.index_keys(b))}) == 1


def _slot(key: str) -> int:
    """Redis Cluster's slot of a key (CRC16/XMODEM of its hash tag, mod 16384)."""
    start = key.find("{")
    if start >= 0:
        end = key.find("}", start + 1)
        if end > start + 1:
            key = key[start + 1 : end]
    crc = 0
    for byte in key.encode():
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc % 16384


def test_tidy_drops_index_entries_of_expired_games(redis_url: str) -> None:
    async def body(store: RedisStore) -> None:
        gids = [_game_id() for _ in range(3)]
        for gid in gids:
            await _create(store, gid, ai=b'{"a":1}')
        r = redis.Redis.from_url(redis_url)
        gone = gids[0]
        r.delete(*keys.game_keys(gone))  # as if it had expired
        b = keys.bucket_of(gone)
        # an idle game's entries are scored by its last move: make this one look a week old
        r.zadd(keys.index_keys(b)[1], {gone: 1})
        r.zadd(keys.index_keys(b)[2], {gone: 1})
        await store.tidy(10_000)
        games, active, ai = keys.index_keys(b)
        assert r.zscore(games, gone) is None
        assert r.zscore(active, gone) is None and r.zscore(ai, gone) is None
        for gid in gids[1:]:
            assert r.zscore(keys.index_keys(keys.bucket_of(gid))[0], gid) is not None
        stalled = await store.stalled_ai(time.time() + 1, 100)
        assert {p.game_id for p in stalled} >= set(gids[1:]) and gone not in {p.game_id for p in stalled}

    _run(RedisStore(redis_url, SETTINGS, timeout=2.0), body)


def test_a_pending_ai_move_and_its_index_entry_go_together(redis_url: str) -> None:
    """A move that leaves no AI move pending drops the pending one and its index entry (the
    entry is dropped only when there was one: a human's moves touch no index)."""

    async def body(store: RedisStore) -> None:
        r: Any = redis.Redis.from_url(redis_url)
        gid = _game_id()
        g, ai = keys.game_keys(gid)[0], keys.index_keys(keys.bucket_of(gid))[2]
        cid = await _create(store, gid, ai=b'{"a":1}')
        assert r.hget(g, "ai") == b'1|{"a":1}' and r.zscore(ai, gid) is not None
        c = dataclasses.replace(_commit(gid, 1, cid), ai_pending=b'{"a":2}', enqueued_at=7.0)
        assert (await store.commit(c)).status is CommitStatus.OK
        assert r.hget(g, "ai") == b'2|{"a":2}' and r.zscore(ai, gid) == 7.0
        cid = await _play(store, gid, c.commit_id, 2, 1)  # a human's turn now
        assert r.hget(g, "ai") is None and r.zscore(ai, gid) is None
        r.zadd(ai, {gid: 1})  # (an entry without its move: not the commit's to drop)
        await _play(store, gid, cid, 3, 1)
        assert r.zscore(ai, gid) == 1.0
        r.close()

    _run(RedisStore(redis_url, SETTINGS, timeout=2.0), body)


def test_list_games_walks_every_bucket_newest_first(make_store: Callable[..., Store]) -> None:
    async def body(store: Store) -> None:
        mine = [_game_id() for _ in range(40)]
        for gid in mine:
            await _create(store, gid)
        seen: list[str] = []
        before = ""
        while True:
            page = await store.list_games(before, 7, active_only=False)
            seen += [g.game_id for g in page]
            if len(page) < 7:
                break
            before = page[-1].game_id
        assert seen == sorted(seen, reverse=True)
        assert set(mine) <= set(seen)

    _run(make_store(), body)


def test_the_cache_notices_a_store_that_went_back_in_time(make_store: Callable[..., Store]) -> None:
    """A replica saw version 4; the store then holds version 3 (a snapshot restored): noticed
    once, naming version 4 exactly; the store played on from there is the game's history now
    (not noticed again). Another game, rolled back and played on to version 4 with another
    commit id before the replica reads it again: noticed too."""

    async def body(inner: Store) -> None:
        seen: list[tuple[str, int, int, bool]] = []
        store = CachingStore(inner, lambda gid, lost, _: seen.append((gid, lost.first, lost.head, lost.exact)))
        gid = _game_id()
        cid = await _create(store, gid)
        cid3 = await _play(store, gid, cid, 1, 2)
        cid4 = await _play(store, gid, cid3, 3, 1)
        assert (await store.load(gid, fresh=False)).commit_id == cid4  # type: ignore[union-attr]
        await _rewind(inner, gid, 3, cid3)
        rec = await store.load(gid)
        assert rec is not None and rec.version == 3 and seen == [(gid, 4, 4, True)]
        assert (await store.load(gid, fresh=False)).version == 3  # type: ignore[union-attr]
        # played on to version 4 (another commit id): the store's history now, nothing new lost
        other = _commit(gid, 3, cid3)
        assert (await store.commit(other)).status is CommitStatus.OK
        fresh = await store.load(gid)
        assert fresh is not None and fresh.commit_id == other.commit_id and len(seen) == 1
        # nothing builds on the lost version 4
        assert (await store.commit(_commit(gid, 4, cid4))).status is CommitStatus.CONFLICT

        # rolled back and played on while this replica was not looking: another id at 4 (ids
        # chained as the engine makes them: which versions were lost is read along the log)
        gid2 = _game_id()
        ids = [first_commit_id(gid2)]
        await store.create(NewGame(gid2, ids[0], b"state-1", b"{}", b"u1", 0, 1, None, time.time()))
        for v in (1, 2, 3):
            step = _chained(gid2, v, ids[-1])
            assert (await store.commit(step)).status is CommitStatus.OK
            ids.append(step.commit_id)
        await _rewind(inner, gid2, 3, ids[2])
        other4 = _chained(gid2, 3, ids[2], action=7)
        assert (await inner.commit(other4)).status is CommitStatus.OK
        rec2 = await store.load(gid2)
        assert rec2 is not None and rec2.version == 4 and rec2.commit_id == other4.commit_id
        assert seen[1:] == [(gid2, 4, 4, True)]

    _run(make_store(), body)


def test_a_loss_found_by_two_replicas_is_counted_by_one(make_store: Callable[..., Store]) -> None:
    """Two replicas' caches in front of one store both saw version 4 of a game; the store goes
    back to version 3: both notice, the first to claim the loss counts it, the other does not.
    A game the store lost whole is claimed once, and never while the store holds it."""

    async def body(inner: Store) -> None:
        seen: list[tuple[str, bool]] = []
        a = CachingStore(inner, lambda gid, lost, counted: seen.append(("a", counted)))
        b = CachingStore(inner, lambda gid, lost, counted: seen.append(("b", counted)))
        gid = _game_id()
        cid3 = await _play(a, gid, await _create(a, gid), 1, 2)
        await _play(a, gid, cid3, 3, 1)
        assert (await b.load(gid)).version == 4  # type: ignore[union-attr]
        await _rewind(inner, gid, 3, cid3)
        await a.load(gid)
        await b.load(gid)
        assert seen == [("a", True), ("b", False)]

        gone = _game_id()
        await _create(inner, gone)
        assert not await a.claim(gone, WHOLE_GAME)  # the store holds it: no loss
        await inner.delete(gone)
        assert [await r.claim(gone, WHOLE_GAME) for r in (b, a, b)] == [True, False, False]

    _run(make_store(), body)


class _SlowReads(StoreWrapper):
    """Reads the store at once but hands the answer back only when told: a read that a
    commit of the same replica overtakes on its way back."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.read = asyncio.Event()
        self.release = asyncio.Event()
        self.slow = False

    async def load_if_changed(
        self, game_id: str, known_commit_id: str, want_meta: bool
    ) -> tuple[int, str, bool, bytes | None, bytes | None] | None:
        row = await self.inner.load_if_changed(game_id, known_commit_id, want_meta)
        if self.slow:
            self.read.set()
            await self.release.wait()
        return row


def test_a_read_overtaken_by_a_commit_is_no_rollback(make_store: Callable[..., Store]) -> None:
    """A read answered with version 3 that comes back after this replica's commit of version 4
    is not the store going back; the cache keeps version 4."""

    async def body(inner: Store) -> None:
        seen: list[str] = []
        slow = _SlowReads(inner)
        store = CachingStore(slow, lambda gid, lost, _: seen.append(gid))
        gid = _game_id()
        cid3 = await _play(store, gid, await _create(store, gid), 1, 2)
        await store.load(gid)  # (the state cached: the next read asks for the commit id only)
        slow.slow = True
        reader = asyncio.create_task(store.load(gid))
        await slow.read.wait()  # version 3 read ...
        slow.slow = False
        cid4 = await _play(store, gid, cid3, 3, 1)  # ... version 4 committed ...
        slow.release.set()  # ... and only then the read's answer arrives
        late = await reader
        assert late is not None and late.version == 3
        assert seen == []
        cached = await store.load(gid, fresh=False)
        assert cached is not None and (cached.version, cached.commit_id) == (4, cid4)
        assert (await store.load(gid)).version == 4 and seen == []  # type: ignore[union-attr]

    _run(make_store(), body)


async def _rewind(store: Store, gid: str, version: int, cid: str) -> None:
    """Make the store hold an older version, as a restored snapshot would."""
    if isinstance(store, RedisStore):
        g, u, log = keys.game_keys(gid)[:3]
        await store.r.hset(g, mapping={"version": version, "cid": cid})
        raw = keys.unpack_log_bytes(await store.r.get(log) or b"")  # (a short log: kept plain)
        await store.r.set(log, raw[: 4 * (version - 1)])
        await store.r.delete(u)  # a snapshot holds the window as it was: rebuild its tail
        await store.r.rpush(u, keys.pack_window_entry(version, False, cid, "", b"u%d" % version))
    else:
        assert isinstance(store, MemoryStore)
        game = store._games[gid]
        game.version, game.commit_id = version, cid
        del game.log[version - 1 :]
        while game.updates and game.updates[-1][0].version > version:
            game.updates.pop()


# ---- the hot path's connections -----------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_dropped_connections_and_flushed_scripts_are_recovered(client: str) -> None:
    """On a Redis of its own: it drops every client's connections; calls go on."""

    async def body(store: RedisStore) -> None:
        gid = _game_id()
        cid = await _create(store, gid)
        cid = await _play(store, gid, cid, 1, 1)
        admin.script_flush()
        cid = await _play(store, gid, cid, 2, 1)
        admin.client_kill_filter(_type="normal", skipme=True)  # every connection of the store
        admin.script_flush()
        cid = await _play(store, gid, cid, 3, 1)
        admin.client_kill_filter(_type="normal", skipme=True)
        rec = await store.load(gid)
        assert rec is not None and rec.version == 4 and rec.state == b"state-4"
        assert len(await store.action_log(gid)) == 3

    with support.redis_server() as url:
        admin = redis.Redis.from_url(url)
        _run(RedisStore(url, SETTINGS, timeout=2.0, client=client), body)


def test_many_concurrent_calls_beyond_the_hot_path_limit(redis_url: str) -> None:
    async def body(store: RedisStore) -> None:
        store._hot._limit = 3  # the others take redis-py's path
        gids = [_game_id() for _ in range(12)]
        cids = await asyncio.gather(*(_create(store, g) for g in gids))
        results = await asyncio.gather(*(store.commit(_commit(g, 1, c)) for g, c in zip(gids, cids, strict=True)))
        assert all(r.status is CommitStatus.OK for r in results)
        recs = await asyncio.gather(*(store.load(g) for g in gids))
        assert all(r is not None and r.version == 2 for r in recs)
        assert sum(store._hot._made.values()) == 3

    _run(RedisStore(redis_url, SETTINGS, timeout=2.0), body)


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

    _run(RedisStore(redis_url, SETTINGS, timeout=2.0), body)


@pytest.mark.parametrize("client", CLIENTS)
def test_unreachable_redis_is_a_store_error(client: str) -> None:
    async def body(store: RedisStore) -> None:
        t0 = time.monotonic()
        with pytest.raises(StoreError):
            await store.load(_game_id())
        with pytest.raises(StoreError):
            await store.commit(_commit(_game_id(), 1, ""))
        assert time.monotonic() - t0 < 10  # retried for ENGINE_REDIS_RETRY_SECONDS, then given up

    url = f"redis://127.0.0.1:{support.free_port()}/0"
    _run(RedisStore(url, SETTINGS, timeout=1.0, retry_seconds=1.0, client=client), body)


@pytest.mark.parametrize("client", ["hand", "redis-py"])
def test_a_silent_redis_times_out_as_a_store_error(client: str) -> None:
    """A round trip's deadline is the configured Redis timeout, and a call gives up once its
    retry time has passed (the hand-written connection names the timeout; redis-py says it
    timed out)."""

    async def main() -> None:
        accepted: list[asyncio.StreamWriter] = []

        async def never_answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            accepted.append(w)

        server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        store = RedisStore(f"redis://127.0.0.1:{port}/0", SETTINGS, timeout=0.3, retry_seconds=0.5,
                           client=client)  # fmt: skip
        said = r"within 0\.3s" if client == "hand" else "(?i)time"
        try:
            for call in (
                lambda: store.load(_game_id()),
                lambda: store.commit(_commit(_game_id(), 1, "")),
            ):
                t0 = time.monotonic()
                with pytest.raises(StoreError, match=said):
                    await call()
                assert time.monotonic() - t0 < 3.0
        finally:
            await store.close()
            for w in accepted:
                w.close()
            server.close()

    asyncio.run(main())


def test_each_round_trip_has_its_own_deadline() -> None:
    """Round trips in flight together (one timer for all) each time out their timeout after
    they began: not at the first one's deadline, nor later; a cancelled one stays cancelled."""

    async def main() -> None:
        accepted: list[asyncio.StreamWriter] = []

        async def never_answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            accepted.append(w)

        server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        store = RedisStore(f"redis://127.0.0.1:{port}/0", SETTINGS, timeout=0.4, retry_seconds=0)
        loop = asyncio.get_running_loop()

        async def timed_out_after(delay: float) -> float:
            await asyncio.sleep(delay)
            t0 = loop.time()
            with pytest.raises(StoreError, match=r"within 0\.4s"):
                await store.load(_game_id())
            return loop.time() - t0

        try:
            cancelled = asyncio.ensure_future(store.load(_game_id()))
            await asyncio.sleep(0.05)
            cancelled.cancel()
            calls = asyncio.gather(*(timed_out_after(d) for d in (0.0, 0.15, 0.3)))
            took = await asyncio.wait_for(calls, 5)
            assert all(0.38 <= t < 0.7 for t in took), took
            with pytest.raises(asyncio.CancelledError):
                await cancelled
            assert not store._hot._inflight and not store._hot._expired
        finally:
            await store.close()
            for w in accepted:
                w.close()
            server.close()

    asyncio.run(main())


def test_a_reader_with_a_position_reads_only_the_windows_that_changed() -> None:
    """The watch hub's reader of one group keeps a position: after its first call, a commit
    of one game among many makes it read that game's window only (counted in Redis's own
    command statistics), and nothing is missed: a game new to the reader, a burst of news
    longer than the news stream keeps."""
    from engine_service.store.redis.core import NEWS_LENGTH

    with support.redis_server() as url:
        r = redis.Redis.from_url(url)

        def lindex_calls() -> int:
            return int(r.info("commandstats").get("cmdstat_lindex", {}).get("calls", 0))

        async def body(store: RedisStore) -> None:
            bucket = keys.bucket_of(_game_id())
            gids: list[str] = []
            while len(gids) < 41:  # one bucket's games: what one reader of the hub reads
                g = _game_id()
                if keys.bucket_of(g) == bucket:
                    gids.append(g)
            cids = {g: await _create(store, g) for g in gids}
            watched, late = gids[:40], gids[40]
            cursors = {g: 1 for g in watched}
            pos: dict[str, Any] = {}
            assert await store.read_updates(cursors, 0, pos) == {}
            busy = watched[0]
            for v in range(1, 6):
                cids[busy] = await _play(store, busy, cids[busy], v, 1)
                r.config_resetstat()
                news = await store.read_updates(cursors, 1000, pos)
                assert list(news) == [busy] and [u.version for u in news[busy]] == [v + 1]
                cursors[busy] = v + 1
                assert lindex_calls() <= 1, "only the window of the game that moved"
            # Without a position, every window is read.
            r.config_resetstat()
            assert await store.read_updates(cursors, 0) == {}
            assert lindex_calls() >= len(watched)
            # A game new to the reader, which moved before it was added: read all the same.
            cids[late] = await _play(store, late, cids[late], 1, 2)
            cursors[late] = 1
            news = await store.read_updates(cursors, 0, pos)
            assert [u.version for u in news[late]] == [2, 3]
            cursors[late] = 3
            # More news than the stream keeps: the reader cannot know which games moved, so it
            # reads every window.
            other = watched[1]
            cids[busy] = await _play(store, busy, cids[busy], 6, NEWS_LENGTH + 20, key=False)
            cids[other] = await _play(store, other, cids[other], 1, 1)  # news past the first read
            news = await store.read_updates(cursors, 0, pos)
            assert [u.version for u in news[other]] == [2]
            assert news[busy][-1].version == 6 + NEWS_LENGTH + 20
            cursors[busy], cursors[other] = news[busy][-1].version, 2
            # A game of another bucket given with the same position: read too (the position
            # names one bucket; the games new since it are each placed in theirs).
            stranger = _game_id()
            while keys.bucket_of(stranger) == bucket:
                stranger = _game_id()
            cids[stranger] = await _create(store, stranger)
            cids[stranger] = await _play(store, stranger, cids[stranger], 1, 1)
            news = await store.read_updates({**cursors, stranger: 1}, 0, pos)
            assert list(news) == [stranger] and [u.version for u in news[stranger]] == [2]
            cids[stranger] = await _play(store, stranger, cids[stranger], 2, 1)
            news = await store.read_updates({**cursors, stranger: 2}, 1000, pos)
            assert [u.version for u in news[stranger]] == [3], "waited on its bucket's news"

        _run(RedisStore(url, SETTINGS, timeout=2.0), body)


def test_attempt_ids_differ_in_a_forked_child() -> None:
    """Attempt ids come from a generator in the process (not a system call per submit); a
    forked child seeds it again, or parent and child would make the same ids, and a commit of
    one would be taken for a retry of the other's."""
    import os

    from engine_service.store import new_commit_id

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, then out
        os.write(w, "".join(new_commit_id() for _ in range(4)).encode())
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    child = os.read(r, 64).decode()
    os.close(r)
    mine = "".join(new_commit_id() for _ in range(4))
    assert len(child) == len(mine) == 64 and child != mine
    assert len({child[i : i + 16] for i in range(0, 64, 16)} | {mine[i : i + 16] for i in range(0, 64, 16)}) == 8
