"""The Redis store: every write of a game is one Lua script (atomic compare-and-set).

Keys of game ``G`` (the ``{G}`` hash tag keeps them in one slot):

    asc:g:{G}        hash: state, version, meta, over, to_move, updated
    asc:g:{G}:u      stream of GameUpdate bytes, entry id "<version>-0", bounded (MAXLEN ~)
    asc:g:{G}:log    list of "seat,action", one per version after the first (the replay log)
    asc:g:{G}:idem   hash: idempotency key -> result

and the shared indexes ``asc:games`` (all game ids, lexicographic = creation order),
``asc:active`` (ids of games not over), ``asc:ai`` (pending AI moves by when their turn began)
with ``asc:ai:p`` (their payloads). The commit script checks the version (and the idempotency
key), then writes the state, appends the update and the log entry, records the idempotency
result, sets or clears the pending AI move and, when the game is over, sets the TTL, all in one
step: a game is never half written. A single Redis (or a primary) is assumed, not a Cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import NoScriptError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

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

GAMES = "asc:games"
ACTIVE = "asc:active"
AI = "asc:ai"
AI_PAYLOADS = "asc:ai:p"

_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'version', 1, 'meta', ARGV[3], 'over', 0,
           'to_move', ARGV[5], 'updated', ARGV[6])
redis.call('XADD', KEYS[2], '1-0', 'u', ARGV[4])
redis.call('ZADD', KEYS[3], 0, ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
if ARGV[7] ~= '' then
  redis.call('ZADD', KEYS[5], ARGV[8], ARGV[1])
  redis.call('HSET', KEYS[6], ARGV[1], '1|' .. ARGV[7])
end
return 1
"""

_COMMIT = """
local v = redis.call('HGET', KEYS[1], 'version')
if not v then return {'missing', 0} end
if ARGV[6] ~= '' then
  local prior = redis.call('HGET', KEYS[4], ARGV[6])
  if prior then return {'duplicate', v, prior} end
end
if tonumber(v) ~= tonumber(ARGV[2]) then return {'conflict', v} end
local nv = tonumber(v) + 1
redis.call('HSET', KEYS[1], 'state', ARGV[3], 'version', nv, 'over', ARGV[8],
           'to_move', ARGV[9], 'updated', ARGV[10])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[12], nv .. '-0', 'u', ARGV[4])
redis.call('RPUSH', KEYS[3], ARGV[5])
if ARGV[6] ~= '' then redis.call('HSET', KEYS[4], ARGV[6], ARGV[7]) end
if ARGV[13] ~= '' then
  redis.call('ZADD', KEYS[6], ARGV[14], ARGV[1])
  redis.call('HSET', KEYS[7], ARGV[1], nv .. '|' .. ARGV[13])
else
  redis.call('ZREM', KEYS[6], ARGV[1])
  redis.call('HDEL', KEYS[7], ARGV[1])
end
if ARGV[8] == '1' then
  redis.call('SREM', KEYS[5], ARGV[1])
  for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ARGV[11]) end
end
return {'ok', nv}
"""

_DELETE = """
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('SREM', KEYS[6], ARGV[1])
redis.call('ZREM', KEYS[7], ARGV[1])
redis.call('HDEL', KEYS[8], ARGV[1])
return existed
"""

_CLAIM = """
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""


_MAX_CONNECTIONS = 256  # of redis-py's pool, and again of the hot path's
_LOAD_FIELDS = ("state", "version", "meta", "over")


def game_key(game_id: str) -> str:
    return f"asc:g:{{{game_id}}}"


def _keys(game_id: str) -> tuple[str, str, str, str]:
    k = game_key(game_id)
    return k, k + ":u", k + ":log", k + ":idem"


def _split_pending(raw: bytes) -> tuple[int, bytes]:
    version, _, payload = raw.partition(b"|")
    return int(version), payload


def _pack(*args: bytes | str | int) -> bytes:
    """One command in the Redis protocol, in one buffer (as redis-py encodes arguments: str as
    UTF-8, int as its decimal digits)."""
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        parts += (b"$%d\r\n" % len(b), b, b"\r\n")  # the value itself is copied once, by join
    return b"".join(parts)


class _HotPath:
    """The two commands of every submit (HMGET of the game, the commit script) on connections of
    their own, with redis-py's connections, parser and retry policy but not its pool and
    command layers: those (a lock and observability hooks per checkout, per-argument packing,
    response callbacks, a task per write to bound it by the socket timeout) cost as much CPU as
    the round trip itself. One deadline bounds the whole round trip instead. At most ``limit``
    connections; past that, calls take redis-py's ordinary path."""

    def __init__(self, pool: Any, limit: int, timeout: float | None) -> None:
        self._pool = pool
        self._limit = limit
        self._timeout = timeout
        self._free: list[Any] = []
        self._made = 0

    async def _round_trip(self, conn: Any, packed: bytes) -> Any:
        try:
            async with asyncio.timeout(self._timeout):
                await conn.send_packed_command(packed)
                return await conn.read_response()
        except TimeoutError:  # asyncio's: the reply may still come, the connection is spoiled
            await conn.disconnect(nowait=True)
            raise RedisTimeoutError(f"no reply from Redis within {self._timeout}s") from None

    async def call(self, packed: bytes, fallback: Callable[[], Awaitable[Any]]) -> Any:
        if self._free:
            conn = self._free.pop()
        elif self._made < self._limit:
            # connects on first use (socket_connect_timeout still bounds that)
            kwargs = {**self._pool.connection_kwargs, "socket_timeout": None}
            conn = self._pool.connection_class(**kwargs)
            self._made += 1
        else:
            return await fallback()
        try:
            return await conn.retry.call_with_retry(
                lambda: self._round_trip(conn, packed), lambda _error: conn.disconnect()
            )
        except ResponseError:
            raise  # the error reply was read whole: the connection is clean
        except BaseException:
            # e.g. cancelled between sending and reading: a reply may be on its way
            await conn.disconnect(nowait=True)
            raise
        finally:
            self._free.append(conn)

    async def close(self) -> None:
        free, self._free = self._free, []
        for conn in free:
            await conn.disconnect()


class RedisStore(Store):
    kind = "redis"

    def __init__(self, url: str, stream_maxlen: int = 10000, timeout: float = 5.0) -> None:
        self.url = url
        self._maxlen = stream_maxlen
        self._timeout = timeout
        # redis-py's annotations answer ``bytes | str`` everywhere; this client returns bytes.
        self.r: Any = aioredis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            health_check_interval=30,
            max_connections=_MAX_CONNECTIONS,
        )
        self._hot = _HotPath(self.r.connection_pool, _MAX_CONNECTIONS, timeout or None)
        self._create = self.r.register_script(_CREATE)
        self._commit = self.r.register_script(_COMMIT)
        self._delete = self.r.register_script(_DELETE)
        self._claim = self.r.register_script(_CLAIM)

    async def create(self, game: NewGame) -> None:
        g, u, _, _ = _keys(game.game_id)
        args: list[Any] = [
            game.game_id,
            game.state,
            game.meta,
            game.update,
            game.to_move,
            game.created_ms,
            game.ai_pending or b"",
            repr(game.enqueued_at),
        ]
        try:
            created = await self._create(keys=[g, u, GAMES, ACTIVE, AI, AI_PAYLOADS], args=args)
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        if not created:
            raise ValueError(f"game {game.game_id} exists")

    async def load(self, game_id: str) -> GameRecord | None:
        key = game_key(game_id)
        try:
            state, version, meta, over = await self._hot.call(
                _pack("HMGET", key, *_LOAD_FIELDS), lambda: self.r.hmget(key, *_LOAD_FIELDS)
            )
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        if version is None:
            return None
        return GameRecord(game_id, int(version), state, meta, over == b"1")

    async def commit(self, c: Commit) -> CommitResult:
        keys = (*_keys(c.game_id), ACTIVE, AI, AI_PAYLOADS)
        args = (
            c.game_id,
            c.expected_version,
            c.state,
            c.update,
            c.log_entry,
            c.idem_key,
            c.idem_value,
            1 if c.over else 0,
            c.to_move,
            c.updated_ms,
            c.ttl_seconds,
            self._maxlen,
            c.ai_pending or b"",
            repr(c.enqueued_at),
        )
        script = self._commit
        try:
            try:
                res = await self._hot.call(
                    _pack("EVALSHA", script.sha, len(keys), *keys, *args),
                    lambda: script(keys=keys, args=args),
                )
            except NoScriptError:  # Redis restarted or flushed its scripts: nothing was run
                res = await script(keys=keys, args=args)
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        status = CommitStatus(res[0].decode())
        return CommitResult(status, int(res[1]), res[2] if len(res) > 2 else None)

    async def idempotent_result(self, game_id: str, key: str) -> bytes | None:
        try:
            value: bytes | None = await self.r.hget(_keys(game_id)[3], key)
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        return value

    async def updates(
        self, game_id: str, after_version: int, block_ms: int
    ) -> list[tuple[int, bytes]]:
        stream = _keys(game_id)[1]
        try:
            res = await self.r.xread(
                {stream: f"{after_version}-0"}, count=500, block=block_ms if block_ms > 0 else None
            )
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        out = []
        for _name, entries in res or []:
            for entry_id, fields in entries:
                out.append((int(entry_id.split(b"-")[0]), fields[b"u"]))
        return out

    async def first_update_version(self, game_id: str) -> int | None:
        try:
            first = await self.r.xrange(_keys(game_id)[1], count=1)
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        return int(first[0][0].split(b"-")[0]) if first else None

    async def action_log(self, game_id: str) -> list[bytes]:
        try:
            entries: list[bytes] = await self.r.lrange(_keys(game_id)[2], 0, -1)
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        return entries

    async def list_games(
        self, before_id: str, limit: int, active_only: bool
    ) -> list[GameSummaryRecord]:
        out: list[GameSummaryRecord] = []
        top = f"({before_id}" if before_id else "+"
        try:
            while len(out) < limit:
                ids = await self.r.zrevrangebylex(GAMES, top, "-", start=0, num=max(limit * 2, 16))
                if not ids:
                    break
                async with self.r.pipeline(transaction=False) as p:
                    for gid in ids:
                        p.hmget(
                            game_key(gid.decode()), "version", "meta", "over", "to_move", "updated"
                        )
                    rows = await p.execute()
                gone = []
                for gid_b, (version, meta, over, to_move, updated) in zip(ids, rows, strict=True):
                    gid = gid_b.decode()
                    if version is None:
                        gone.append(gid)  # expired after it ended: drop it from the index
                        continue
                    if active_only and over == b"1":
                        continue
                    out.append(
                        GameSummaryRecord(
                            gid, int(version), meta, over == b"1", int(to_move), int(updated)
                        )
                    )
                    if len(out) >= limit:
                        break
                if gone:
                    await self.r.zrem(GAMES, *gone)
                top = f"({ids[-1].decode()}"
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        return out

    async def delete(self, game_id: str) -> bool:
        try:
            existed = await self._delete(
                keys=[*_keys(game_id), GAMES, ACTIVE, AI, AI_PAYLOADS], args=[game_id]
            )
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        return bool(existed)

    async def stalled_ai(self, waited_since: float, limit: int) -> list[PendingAI]:
        try:
            rows = await self.r.zrangebyscore(
                AI, "-inf", f"({waited_since!r}", start=0, num=limit, withscores=True
            )
            if not rows:
                return []
            payloads = await self.r.hmget(AI_PAYLOADS, [gid for gid, _ in rows])
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        out = []
        for (gid, since), raw in zip(rows, payloads, strict=True):
            if raw is not None:
                version, payload = _split_pending(raw)
                out.append(PendingAI(gid.decode(), version, payload, float(since)))
        return out

    async def claim_redispatch(self, game_id: str, old_payload: bytes, new_payload: bytes) -> bool:
        try:
            rec = await self.r.hget(AI_PAYLOADS, game_id)
            if rec is None:
                return False
            version, _ = _split_pending(rec)
            prefix = f"{version}|".encode()
            ok = await self._claim(
                keys=[AI_PAYLOADS], args=[game_id, prefix + old_payload, prefix + new_payload]
            )
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        return bool(ok)

    async def oldest_ai_wait_start(self) -> float | None:
        try:
            first = await self.r.zrange(AI, 0, 0, withscores=True)
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        return float(first[0][1]) if first else None

    async def active_games(self) -> int:
        try:
            n: int = await self.r.scard(ACTIVE)
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        return n

    async def ping(self) -> None:
        try:
            await self.r.ping()
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e

    async def close(self) -> None:
        await self._hot.close()
        await self.r.aclose()
