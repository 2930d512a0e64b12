"""Each of the store's Lua scripts (engine_service/store/redis/lua) loads into a real Redis
under the SHA1 the store sends it by, and runs once on a game of its own with the answer the
store reads from it. A script added to the package without a case here fails the test."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from engine_service.store import keys
from engine_service.store.redis import scripts

_ids = itertools.count()


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def _last_news(g: Game) -> Any:
    entries: Any = g.r.xrevrange(g.news, count=1)
    return entries[0][0]


def _run(r: redis.Redis, script: scripts.Script, keys_: list[str], *args: Any) -> Any:
    return r.evalsha(script.sha, len(keys_), *keys_, *args)


class Game:
    """A game's keys, created by create.lua with one commit by commit.lua."""

    def __init__(self, r: redis.Redis) -> None:
        self.gid = f"lua-{next(_ids)}-{id(self):x}"
        self.record, self.window, self.log, self.idem = keys.game_keys(self.gid)
        self.bucket = keys.bucket_of(self.gid)
        self.games, self.active, self.ai = keys.index_keys(self.bucket)
        self.news = keys.news_key(self.bucket)
        self.clock = keys.clock_key(self.bucket)
        self.cid1, self.cid2, self.attempt = "11" * 8, "22" * 8, "33" * 8
        self.r = r
        for script in (scripts.CREATE, scripts.COMMIT):  # (whatever the case's order)
            r.script_load(script.source)

    def create(self, clock: str = "") -> Any:
        entry = keys.pack_window_entry(1, False, self.cid1, "", b"u1")
        return _run(self.r, scripts.CREATE,
                    [self.record, self.window, self.games, self.active, self.ai, self.news,
                     self.clock],
                    self.gid, self.cid1, b"state-1", keys.pack_meta(b'{"m":1}'), entry, 0,
                    1_000, "", "", 3600, 256, clock)  # fmt: skip

    def commit(self, expected_cid: str = "", ai: bytes = b"", clock: str = "") -> Any:
        entry = keys.pack_window_entry(2, False, self.cid2, self.cid1, b"u2", self.attempt)
        return _run(self.r, scripts.COMMIT,
                    [self.record, self.window, self.log, self.idem, self.active, self.ai,
                     self.news, self.clock],
                    self.gid, 1, expected_cid or self.cid1, self.cid2, self.attempt, 0, 1, 2_000,
                    "12.5" if ai else "", b"state-2", entry, keys.pack_log_entry(0, 65536), "k1",
                    b"fp", ai, 8, 3_600_000, 3_614_062, 600, 300, 256, clock)  # fmt: skip


def _create(g: Game) -> None:
    assert g.create() == 1
    assert g.create() == 1  # sent again: recognised by its commit id
    g.cid1 = "44" * 8
    assert g.create() == 0  # another game with that id
    g.cid1 = "11" * 8
    assert g.r.hget(g.record, "version") == b"1"
    assert g.r.zscore(g.games, g.gid) == 0
    assert 0 < g.r.ttl(g.window) <= 3600
    assert g.r.zscore(g.clock, g.gid) is None  # no clock, no entry
    clocked = Game(g.r)
    assert clocked.create(clock="5000") == 1
    assert clocked.r.zscore(clocked.clock, clocked.gid) == 5000


def _commit(g: Game) -> None:
    g.create()
    assert g.commit(expected_cid="55" * 8) == [b"conflict", b"1", g.cid1.encode()]
    assert g.commit(ai=b'{"seat":1}') == [b"ok", 2, g.cid2.encode()]
    assert g.commit() == [b"ok", b"2", g.cid2.encode()]  # the same Commit again
    assert g.r.hmget(g.record, "version", "cid", "state") == [b"2", g.cid2.encode(), b"state-2"]
    assert g.r.hget(g.record, "ai") == b'2|{"seat":1}'
    assert g.r.zscore(g.ai, g.gid) == 12.5
    assert g.r.llen(g.window) == 2
    assert g.r.get(g.log) == keys.pack_log_entry(0, 65536)
    assert g.r.pttl(g.record) > 3_600_000
    assert g.r.zscore(g.clock, g.gid) is None
    clocked = Game(g.r)
    clocked.create(clock="5000")
    assert clocked.commit(clock="9000")[0] == b"ok"  # the next seat's deadline replaces it
    assert clocked.r.zscore(clocked.clock, clocked.gid) == 9000
    cleared = Game(g.r)
    cleared.create(clock="5000")
    assert cleared.commit()[0] == b"ok"  # no clock runs now (an AI seat to move)
    assert cleared.r.zscore(cleared.clock, cleared.gid) is None


def _load_if_changed(g: Game) -> None:
    g.create()
    meta = keys.pack_meta(b'{"m":1}')
    assert _run(g.r, scripts.LOAD_IF_CHANGED, [g.record], "", "1") == [
        b"1", g.cid1.encode(), b"0", b"state-1", meta]  # fmt: skip
    assert _run(g.r, scripts.LOAD_IF_CHANGED, [g.record], g.cid1, "0") == [
        b"1", g.cid1.encode(), b"0"]  # fmt: skip
    assert _run(g.r, scripts.LOAD_IF_CHANGED, [g.record + "x"], "", "0") is None


def _idempotent(g: Game) -> None:
    g.create()
    g.commit()
    assert _run(g.r, scripts.IDEMPOTENT, [g.idem], "k1", "1") == b"2|fp"
    assert _run(g.r, scripts.IDEMPOTENT, [g.idem], "k2", "0") is None


def _update_at(g: Game) -> None:
    g.create()
    g.commit()
    entry = _run(g.r, scripts.UPDATE_AT, [g.window], 2)
    assert keys.unpack_window_entry_attempt(entry)[::4] == (2, g.attempt)
    assert keys.unpack_window_entry(_run(g.r, scripts.UPDATE_AT, [g.window], 1))[0] == 1
    assert _run(g.r, scripts.UPDATE_AT, [g.window], 3) is None


def _touch(g: Game) -> None:
    g.create()
    assert _run(g.r, scripts.TOUCH, [g.record]) == 1
    assert g.r.hget(g.record, "cid") == g.cid1.encode()


def _replace(g: Game) -> None:
    g.r.set(g.log, b"abc", ex=60)
    assert _run(g.r, scripts.REPLACE, [g.log], 4, b"xyz") == 0
    assert _run(g.r, scripts.REPLACE, [g.log], 3, b"xy") == 1
    assert g.r.get(g.log) == b"xy" and g.r.ttl(g.log) > 0


def _delete(g: Game) -> None:
    g.create()
    g.commit()
    reviews = keys.reviews_key(g.gid)
    g.r.hset(reviews, "1:2", b"a rated decision")
    g.r.zadd(g.clock, {g.gid: 5000})
    ks = [g.record, g.window, g.log, g.idem, g.games, g.active, g.ai, reviews, g.clock]
    assert _run(g.r, scripts.DELETE, ks, g.gid) == 1
    assert g.r.zscore(g.clock, g.gid) is None
    assert g.r.exists(g.record, g.window, g.log, g.idem, reviews) == 0
    assert g.r.zscore(g.games, g.gid) is None
    assert _run(g.r, scripts.DELETE, ks, g.gid) == 0


def _news(g: Game) -> None:
    g.create()
    g.commit()
    last, found, behind = _run(g.r, scripts.NEWS, [g.news, g.window], 1)
    assert found[0] == 1 and [keys.unpack_window_entry(e)[0] for e in found[1]] == [2]
    assert behind == [] and last == _last_news(g)
    assert _run(g.r, scripts.NEWS, [g.news, g.window], 5)[2] == [1]  # the cursor is ahead


def _news_since(g: Game) -> None:
    g.create()
    before = _last_news(g)
    g.commit()
    gids, last, gap = _run(g.r, scripts.NEWS_SINCE, [g.news], before, 256)
    assert gids == [g.gid.encode()] and gap == 0
    assert last == _last_news(g)
    assert _run(g.r, scripts.NEWS_SINCE, [g.news], "0-0", 1)[2] == 1  # a full page: maybe more


def _heads(g: Game) -> None:
    g.create()
    g.commit()
    assert _run(g.r, scripts.HEADS, [g.record, g.record + "x"]) == [
        b"2", g.cid2.encode(), None, None]  # fmt: skip


def _claim(g: Game) -> None:
    g.create()
    g.commit(ai=b"p1")
    assert _run(g.r, scripts.CLAIM, [g.record], b"2|p0", b"2|p2") == 0
    assert _run(g.r, scripts.CLAIM, [g.record], b"2|p1", b"2|p2") == 1
    assert g.r.hget(g.record, "ai") == b"2|p2"


def _claim_clock(g: Game) -> None:
    g.create(clock="5000")
    ks = [g.record, g.clock, g.ai]
    assert _run(g.r, scripts.CLAIM_CLOCK, ks, g.gid, 2, g.cid1, b"p", "7.5") == 0  # not at 2
    assert _run(g.r, scripts.CLAIM_CLOCK, ks, g.gid, 1, g.cid1, b"p", "7.5") == 1
    assert g.r.hget(g.record, "ai") == b"1|p" and g.r.zscore(g.ai, g.gid) == 7.5
    assert g.r.zscore(g.clock, g.gid) is None
    assert _run(g.r, scripts.CLAIM_CLOCK, ks, g.gid, 1, g.cid1, b"p", "7.5") == 0  # once


def _presence(g: Game) -> None:
    here = keys.presence_key(g.gid)
    assert _run(g.r, scripts.PRESENCE, [here], 1_000, 16_000, 15_000, "r1", "0,1", "") == [
        b"0:r1", b"1:r1"]  # fmt: skip
    assert _run(g.r, scripts.PRESENCE, [here], 2_000, 17_000, 15_000, "r2", "1", "") == [
        b"0:r1", b"1:r1", b"1:r2"]  # fmt: skip
    assert _run(g.r, scripts.PRESENCE, [here], 3_000, 0, 0, "r1", "", "1") == [b"0:r1", b"1:r2"]
    assert 0 < g.r.pttl(here) <= 15_000
    # r1 died: its seat lapses once its time is past; r2 renewed its own
    assert _run(g.r, scripts.PRESENCE, [here], 16_500, 31_500, 15_000, "r2", "1", "") == [b"1:r2"]


def _claim_loss(g: Game) -> None:
    lost_at = keys.claim_loss_key(g.gid, "v2")
    assert _run(g.r, scripts.CLAIM_LOSS, [lost_at, g.record], 60_000, "0") == 1
    assert _run(g.r, scripts.CLAIM_LOSS, [lost_at, g.record], 60_000, "0") == 0  # counted once
    assert 0 < g.r.pttl(lost_at) <= 60_000
    whole = keys.claim_loss_key(g.gid, "game")
    g.create()  # the game is there: its whole loss is not claimed
    assert _run(g.r, scripts.CLAIM_LOSS, [whole, g.record], 60_000, "1") == 0
    g.r.delete(g.record)
    assert _run(g.r, scripts.CLAIM_LOSS, [whole, g.record], 60_000, "1") == 1
    assert _run(g.r, scripts.CLAIM_LOSS, [whole, g.record], 60_000, "1") == 0


def _bucket_mark(g: Game) -> None:
    mark = keys.mark_key(g.bucket)
    g.r.delete(mark)
    assert _run(g.r, scripts.BUCKET_MARK, [mark, g.news + "x"], "m1") == [b"m1", b"0-0"]
    g.create()
    assert _run(g.r, scripts.BUCKET_MARK, [mark, g.news], "m2") == [b"m1", _last_news(g)]
    g.r.delete(mark)  # (emptied): the next reader to look sets its own
    assert _run(g.r, scripts.BUCKET_MARK, [mark, g.news], "m3")[0] == b"m3"


CASES: dict[str, Callable[[Game], None]] = {
    "create": _create,
    "commit": _commit,
    "load_if_changed": _load_if_changed,
    "idempotent": _idempotent,
    "update_at": _update_at,
    "touch": _touch,
    "replace": _replace,
    "delete": _delete,
    "news": _news,
    "news_since": _news_since,
    "heads": _heads,
    "claim": _claim,
    "claim_clock": _claim_clock,
    "claim_loss": _claim_loss,
    "presence": _presence,
    "bucket_mark": _bucket_mark,
}


def test_every_script_has_a_case() -> None:
    assert sorted(CASES) == scripts.names()


@pytest.mark.parametrize("name", scripts.names())
def test_script_loads_and_runs(r: redis.Redis, name: str) -> None:
    script = scripts.load(name)
    assert r.script_load(script.source) == script.sha
    assert getattr(scripts, name.upper()) == script
    CASES[name](Game(r))
