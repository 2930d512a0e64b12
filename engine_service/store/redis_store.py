"""The Redis store: every write of a game is one Lua script (atomic compare-and-set).

Standalone Redis or Redis Cluster (``mode``); the key layout in ``keys.py`` puts everything one
script touches in one slot. The commit script checks the version and commit id it builds on
(and the idempotency key), then writes the state, appends the update to the game's window
(dropping the idempotency key of the version that leaves it), appends the replay log entry,
sets or clears the pending AI move, updates the bucket's indexes and sets the game's expiry
(idle while it goes on, finished once it is over), all in one step: a game is never half
written. A commit sent again (its connection dropped before the reply) recognises itself by
its commit id, so a retry never applies a move twice.

Durability is Redis's own (``appendfsync``; see docs/reliability.md); with ``wait_replicas``
each commit is also confirmed by that many replicas (``WAIT``) before it is acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import (
    ConnectionError as RedisConnectionError,
)
from redis.exceptions import (
    NoScriptError,
    RedisError,
    ResponseError,
)
from redis.exceptions import (
    TimeoutError as RedisTimeoutError,
)

from engine_service.store import keys
from engine_service.store.base import (
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
)

log = logging.getLogger("ascension.engine.store")
T = TypeVar("T")

_CREATE = """
local cid = redis.call('HGET', KEYS[1], 'cid')
if cid then return cid == ARGV[2] and 1 or 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[3], 'version', 1, 'cid', ARGV[2], 'meta', ARGV[4],
           'over', 0, 'to_move', ARGV[6], 'updated', ARGV[7])
redis.call('XADD', KEYS[2], '1-0', 'u', ARGV[5], 'c', ARGV[2], 'p', '')
redis.call('ZADD', KEYS[3], 0, ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[7], ARGV[1])
if ARGV[8] ~= '' then
  redis.call('ZADD', KEYS[5], ARGV[9], ARGV[1])
  redis.call('HSET', KEYS[1], 'ai', '1|' .. ARGV[8])
end
redis.call('EXPIRE', KEYS[1], ARGV[10])
redis.call('EXPIRE', KEYS[2], ARGV[10])
return 1
"""

# KEYS: record, window, log, idem, active, ai
# ARGV: 1 id, 2 expected version, 3 expected cid, 4 new cid, 5 state, 6 update, 7 log entry,
#       8 idem key, 9 fingerprint, 10 over, 11 to_move, 12 updated ms, 13 ai payload,
#       14 enqueued at, 15 window, 16 idle ttl, 17 finished ttl
_COMMIT = """
local cur = redis.call('HMGET', KEYS[1], 'version', 'cid')
if not cur[1] then return {'missing', 0, ''} end
if cur[2] == ARGV[4] then return {'ok', cur[1], cur[2]} end
if ARGV[8] ~= '' then
  local prior = redis.call('HGET', KEYS[4], ARGV[8])
  if prior then return {'duplicate', cur[1], cur[2], prior} end
end
if cur[1] ~= ARGV[2] or cur[2] ~= ARGV[3] then return {'conflict', cur[1], cur[2]} end
local nv = tonumber(cur[1]) + 1
local w = tonumber(ARGV[15])
-- The window's entry first: a script's writes are not undone by a later error, so the write
-- that could be refused (an entry id below the stream's top) comes before any other.
local entry = {'XADD', KEYS[2], 'MAXLEN', w, nv .. '-0', 'u', ARGV[6], 'c', ARGV[4], 'p', ARGV[3]}
if ARGV[8] ~= '' then table.insert(entry, 'k'); table.insert(entry, ARGV[8]) end
if ARGV[10] == '1' then table.insert(entry, 'o'); table.insert(entry, '1') end
local leaving = nv - w
local gone = nil
if leaving >= 1 then gone = redis.call('XRANGE', KEYS[2], leaving .. '-0', leaving .. '-0')[1] end
redis.call(unpack(entry))
if gone then
  local f = gone[2]
  for j = 1, #f, 2 do
    if f[j] == 'k' then redis.call('HDEL', KEYS[4], f[j + 1]) end
  end
end
if ARGV[8] ~= '' then redis.call('HSET', KEYS[4], ARGV[8], nv .. '|' .. ARGV[9]) end
redis.call('HSET', KEYS[1], 'state', ARGV[5], 'version', nv, 'cid', ARGV[4], 'over', ARGV[10],
           'to_move', ARGV[11], 'updated', ARGV[12])
redis.call('APPEND', KEYS[3], ARGV[7])
if ARGV[13] ~= '' then
  redis.call('ZADD', KEYS[6], ARGV[14], ARGV[1])
  redis.call('HSET', KEYS[1], 'ai', nv .. '|' .. ARGV[13])
else
  redis.call('ZREM', KEYS[6], ARGV[1])
  redis.call('HDEL', KEYS[1], 'ai')
end
local ttl = ARGV[16]
if ARGV[10] == '1' then
  ttl = ARGV[17]
  redis.call('ZREM', KEYS[5], ARGV[1])
  redis.call('XTRIM', KEYS[2], 'MAXLEN', 1)
  redis.call('DEL', KEYS[4])
  if ARGV[8] ~= '' then redis.call('HSET', KEYS[4], ARGV[8], nv .. '|' .. ARGV[9]) end
else
  redis.call('ZADD', KEYS[5], ARGV[12], ARGV[1])
end
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ttl) end
return {'ok', nv, ARGV[4]}
"""

# The record's version, commit id and over flag; its state (and meta) only when the commit id
# is not the one the caller holds. ARGV: known cid, "1" to include meta.
_LOAD_IF_CHANGED = """
local r = redis.call('HMGET', KEYS[1], 'version', 'cid', 'over')
if not r[1] then return false end
if r[2] == ARGV[1] then return r end
local s = redis.call('HMGET', KEYS[1], 'state', 'meta')
if ARGV[2] == '1' then return {r[1], r[2], r[3], s[1], s[2]} end
return {r[1], r[2], r[3], s[1]}
"""

_DELETE = """
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('ZREM', KEYS[7], ARGV[1])
return existed
"""

# KEYS: record; ARGV: old "<version>|<payload>", new one
_CLAIM = """
local cur = redis.call('HGET', KEYS[1], 'ai')
if cur ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'ai', ARGV[2])
return 1
"""

_MAX_CONNECTIONS = 256  # of redis-py's pool (per node), and again of the hot path's
_LOAD_FIELDS = ("version", "cid", "over", "state", "meta")
_RETRYABLE = (RedisConnectionError, RedisTimeoutError)
_CLUSTER_REDIRECTS = ("MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN")


def _split_pending(raw: bytes) -> tuple[int, bytes]:
    version, _, payload = raw.partition(b"|")
    return int(version), payload


def _pack(*args: bytes | str | int) -> bytes:
    """One command in the Redis protocol, in one buffer (as redis-py encodes arguments: str as
    UTF-8, int as its decimal digits)."""
    parts = [b"*%d\r\n" % len(args)]
    add = parts.append
    for a in args:
        if type(a) is not bytes:
            a = str(a).encode()
        add(b"$%d\r\n%b\r\n" % (len(a), a))  # one piece per argument: fewer, larger copies
    return b"".join(parts)


def _page(p: Any, bucket: int, top: str, n: int) -> None:
    """Queue the bucket's next ``n`` game ids below ``top``, newest first."""
    p.zrevrangebylex(keys.index_keys(bucket)[0], top, "-", 0, n)


def _text(b: bytes | str | None) -> str:
    return "" if b is None else b.decode() if isinstance(b, bytes) else b


def _stored_update(entry_id: bytes, fields: Mapping[bytes, bytes]) -> StoredUpdate:
    return StoredUpdate(
        int(entry_id.split(b"-")[0]),
        _text(fields.get(b"c")),
        _text(fields.get(b"p")),
        fields[b"u"],
        b"o" in fields,
    )


class _HotPath:
    """The commands of every submit (loading the game, the commit script) on connections of
    their own, with redis-py's connections and parser but not its pool and command layers:
    those (a lock and observability hooks per checkout, per-argument packing, response
    callbacks, a task per write to bound it by the socket timeout) cost as much CPU as the
    round trip itself. One deadline bounds each round trip; a dropped connection or a timeout
    is retried on a fresh connection until ``retry_seconds`` have passed (the callers only send
    commands that are safe to send again: reads, and the commit script, which recognises
    itself). Standalone: at most ``limit`` connections, then redis-py's pool is used. Cluster:
    the connections of the node that serves the key, refreshed on redirects and failovers."""

    def __init__(
        self, client: Any, cluster: bool, limit: int, timeout: float | None, retry_seconds: float
    ) -> None:
        self._client = client
        self._cluster = cluster
        self._limit = limit
        self._timeout = timeout
        self._retry_seconds = retry_seconds
        self._free: list[Any] = []
        self._made = 0
        self._initialized = not cluster

    async def _round_trip(self, conn: Any, packed: bytes, replies: int) -> list[Any]:
        try:
            async with asyncio.timeout(self._timeout):
                await conn.send_packed_command(packed)
                out: list[Any] = []
                error: ResponseError | None = None
                for _ in range(replies):  # read every reply, so the connection stays clean
                    try:
                        out.append(await conn.read_response())
                    except ResponseError as e:
                        error = error or e
                        out.append(e)
                if error is not None:
                    raise error
                return out
        except TimeoutError:  # asyncio's: the reply may still come, the connection is spoiled
            await conn.disconnect(nowait=True)
            raise RedisTimeoutError(f"no reply from Redis within {self._timeout}s") from None

    def _checkout(self, key: str) -> tuple[Any, Any]:
        """(node or None, connection); None connection: use redis-py's ordinary path."""
        if self._cluster:
            node = self._client.get_node_from_key(key)
            return node, node.acquire_connection()
        if self._free:
            return None, self._free.pop()
        if self._made < self._limit:
            pool = self._client.connection_pool
            kwargs = {**pool.connection_kwargs, "socket_timeout": None}
            self._made += 1
            return None, pool.connection_class(**kwargs)  # connects on first use
        return None, None

    def _checkin(self, node: Any, conn: Any) -> None:
        if node is not None:
            node.release(conn)
        else:
            self._free.append(conn)

    async def call(
        self, key: str, packed: bytes, replies: int = 1, retry: bool = True
    ) -> list[Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self._retry_seconds if retry else 0.0)
        delay = 0.05
        if not self._initialized:  # a Cluster client learns the slots on first use
            await self._client.initialize()
            self._initialized = True
        while True:
            node, conn = self._checkout(key)
            if conn is None:
                return await self._pooled(packed, replies)
            try:
                return await self._round_trip(conn, packed, replies)
            except ResponseError as e:  # the error reply was read whole: the connection is clean
                if not (self._cluster and str(e).startswith(_CLUSTER_REDIRECTS)):
                    raise
                failure: Exception = e  # not run there: ask the cluster where the slot is now
            except _RETRYABLE as e:
                await conn.disconnect(nowait=True)
                failure = e
            except BaseException:
                # e.g. cancelled between sending and reading: a reply may be on its way
                await conn.disconnect(nowait=True)
                raise
            finally:
                self._checkin(node, conn)
            if loop.time() + delay > deadline:
                raise failure
            log.debug("Redis call retried after %s: %s", type(failure).__name__, failure)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)
            if self._cluster:
                with contextlib.suppress(RedisError):
                    await self._client.nodes_manager.initialize()

    async def _pooled(self, packed: bytes, replies: int) -> list[Any]:
        pool = self._client.connection_pool
        conn = await pool.get_connection()
        try:
            return await self._round_trip(conn, packed, replies)
        except BaseException:
            await conn.disconnect(nowait=True)
            raise
        finally:
            await pool.release(conn)

    async def close(self) -> None:
        free, self._free = self._free, []
        for conn in free:
            await conn.disconnect()


class RedisStore(Store):
    kind = "redis"

    def __init__(
        self,
        url: str,
        settings: StoreSettings | None = None,
        timeout: float = 5.0,
        *,
        mode: str = "standalone",
        retry_seconds: float = 5.0,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
    ) -> None:
        if mode not in ("standalone", "cluster"):
            raise ValueError(f"Redis mode must be standalone or cluster, not {mode!r}")
        self.url = url
        self.mode = mode
        self.settings = settings or StoreSettings()
        self.groups = keys.BUCKETS
        self._timeout = timeout
        self._wait_replicas = wait_replicas
        self._wait_timeout_ms = wait_timeout_ms
        retries = max(1, int(retry_seconds / 0.25))
        common: dict[str, Any] = {
            "socket_timeout": timeout,
            "socket_connect_timeout": timeout,
            "retry": Retry(ExponentialBackoff(cap=0.5, base=0.05), retries),
            "retry_on_error": list(_RETRYABLE),
        }
        # redis-py's annotations answer ``bytes | str`` everywhere; this client returns bytes.
        self.r: Any
        if mode == "cluster":
            from redis.asyncio.cluster import RedisCluster

            self.r = RedisCluster.from_url(url, max_connections=_MAX_CONNECTIONS, **common)
        else:
            self.r = aioredis.Redis.from_url(
                url, health_check_interval=30, max_connections=_MAX_CONNECTIONS, **common
            )
        self._hot = _HotPath(
            self.r, mode == "cluster", _MAX_CONNECTIONS, timeout or None, retry_seconds
        )
        self._create = self.r.register_script(_CREATE)
        self._commit = self.r.register_script(_COMMIT)
        self._load_if_changed = self.r.register_script(_LOAD_IF_CHANGED)
        self._delete = self.r.register_script(_DELETE)
        self._claim = self.r.register_script(_CLAIM)
        self._tidy_cursor = [""] * keys.BUCKETS

    def group_of(self, game_id: str) -> int:
        return keys.bucket_of(game_id)

    async def _guard(self, call: Awaitable[T]) -> T:
        try:
            return await call
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e

    async def _script(
        self,
        script: Any,
        keys_: list[str] | tuple[str, ...],
        args: Any,
        extra: bytes = b"",
        replies: int = 1,
    ) -> list[Any]:
        """EVALSHA on the hot path (plus ``extra`` commands after it on the same connection),
        loading the script first if this Redis lost it (restarted, failed over, flushed)."""
        packed = _pack("EVALSHA", script.sha, len(keys_), *keys_, *args) + extra
        try:
            return await self._hot.call(keys_[0], packed, replies)
        except NoScriptError:  # nothing was run
            await self.r.script_load(script.script)  # (a Cluster loads it on every primary)
            return await self._hot.call(keys_[0], packed, replies)

    # ---- games ---------------------------------------------------------------------------

    async def create(self, game: NewGame) -> None:
        g, u, _, _ = keys.game_keys(game.game_id)
        b = keys.bucket_of(game.game_id)
        games, active, ai = keys.index_keys(b)
        args = (
            game.game_id,
            game.commit_id,
            game.state,
            game.meta,
            game.update,
            game.to_move,
            game.created_ms,
            game.ai_pending or b"",
            repr(game.enqueued_at),
            self.settings.idle_ttl,
        )
        created = (await self._guard(self._script(self._create, (g, u, games, active, ai), args)))[
            0
        ]
        if not created:
            raise ValueError(f"game {game.game_id} exists")

    async def load(self, game_id: str, *, fresh: bool = True) -> GameRecord | None:
        key = keys.game_keys(game_id)[0]
        (row,) = await self._guard(self._hot.call(key, _pack("HMGET", key, *_LOAD_FIELDS)))
        version, cid, over, state, meta = row
        if version is None:
            return None
        return GameRecord(game_id, int(version), _text(cid), state, meta, over == b"1")

    async def load_if_changed(
        self, game_id: str, known_commit_id: str, want_meta: bool
    ) -> tuple[int, str, bool, bytes | None, bytes | None] | None:
        """(version, commit id, over, state, meta): state None when the commit id is the known
        one, meta None unless asked for. None: no such game."""
        key = keys.game_keys(game_id)[0]
        args = (known_commit_id, "1" if want_meta else "0")
        (row,) = await self._guard(self._script(self._load_if_changed, (key,), args))
        if row is None:
            return None
        state = row[3] if len(row) > 3 else None
        meta = row[4] if len(row) > 4 else None
        return int(row[0]), _text(row[1]), row[2] == b"1", state, meta

    async def commit(self, c: Commit) -> CommitResult:
        ks = keys.game_keys(c.game_id)
        _, active, ai = keys.index_keys(keys.bucket_of(c.game_id))
        args = (
            c.game_id,
            c.expected_version,
            c.expected_commit_id,
            c.commit_id,
            c.state,
            c.update,
            keys.pack_log_entry(c.seat, c.action),
            c.idem_key,
            c.fingerprint,
            1 if c.over else 0,
            c.to_move,
            c.updated_ms,
            c.ai_pending or b"",
            repr(c.enqueued_at),
            self.settings.window,
            self.settings.idle_ttl,
            self.settings.finished_ttl,
        )
        wait = b""
        if self._wait_replicas > 0:
            wait = _pack("WAIT", self._wait_replicas, self._wait_timeout_ms)
        replies = await self._guard(
            self._script(self._commit, (*ks, active, ai), args, wait, 2 if wait else 1)
        )
        res = replies[0]
        status = CommitStatus(res[0].decode())
        prior = None
        if status is CommitStatus.DUPLICATE:
            version, _, fingerprint = res[3].partition(b"|")
            prior = IdempotentRecord(int(version), fingerprint)
        elif status is CommitStatus.CONFLICT and int(res[1]) > c.expected_version + 1:
            # Was it ours, and then built upon? (the reply to our commit was lost)
            mine = await self.update_at(c.game_id, c.expected_version + 1)
            if mine is not None and mine.commit_id == c.commit_id:
                status = CommitStatus.OK
        if status is CommitStatus.OK and wait:
            acked = int(replies[1])
            if acked < self._wait_replicas:
                raise StoreError(
                    f"the commit of version {c.expected_version + 1} reached {acked} of "
                    f"{self._wait_replicas} Redis replicas within {self._wait_timeout_ms} ms"
                )
        return CommitResult(status, int(res[1]), _text(res[2]), prior)

    async def idempotent(self, game_id: str, key: str) -> IdempotentRecord | None:
        raw = await self._guard(self.r.hget(keys.game_keys(game_id)[3], key))
        if raw is None:
            return None
        version, _, fingerprint = raw.partition(b"|")
        return IdempotentRecord(int(version), fingerprint)

    async def update_at(self, game_id: str, version: int) -> StoredUpdate | None:
        stream = keys.game_keys(game_id)[1]
        rows = await self._guard(self.r.xrange(stream, f"{version}-0", f"{version}-0"))
        return _stored_update(*rows[0]) if rows else None

    async def read_updates(
        self, cursors: Mapping[str, int], block_ms: int
    ) -> dict[str, list[StoredUpdate]]:
        if not cursors:
            return {}
        streams = {keys.game_keys(g)[1]: f"{v}-0" for g, v in cursors.items()}
        by_stream = {keys.game_keys(g)[1]: g for g in cursors}
        res = await self._guard(
            self.r.xread(
                streams, count=self.settings.window, block=block_ms if block_ms > 0 else None
            )
        )
        out: dict[str, list[StoredUpdate]] = {}
        for name, entries in res or []:
            gid = by_stream[_text(name)]
            out[gid] = [_stored_update(eid, fields) for eid, fields in entries]
        return out

    async def heads(self, game_ids: list[str]) -> dict[str, tuple[int, str]]:
        if not game_ids:
            return {}
        try:
            async with self.r.pipeline(transaction=False) as p:
                for gid in game_ids:
                    p.hmget(keys.game_keys(gid)[0], "version", "cid")
                rows = await p.execute()
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        return {
            gid: (int(version), _text(cid))
            for gid, (version, cid) in zip(game_ids, rows, strict=True)
            if version is not None
        }

    async def first_update_version(self, game_id: str) -> int | None:
        first = await self._guard(self.r.xrange(keys.game_keys(game_id)[1], count=1))
        return int(first[0][0].split(b"-")[0]) if first else None

    async def action_log(self, game_id: str) -> list[tuple[int, int]]:
        raw = await self._guard(self.r.get(keys.game_keys(game_id)[2]))
        return keys.unpack_log(raw or b"")

    async def delete(self, game_id: str) -> bool:
        b = keys.bucket_of(game_id)
        existed = await self._guard(
            self._delete(keys=[*keys.game_keys(game_id), *keys.index_keys(b)], args=[game_id])
        )
        return bool(existed)

    # ---- walkers over the buckets ----------------------------------------------------------

    async def _each_bucket(self, command: Callable[[Any, int], None]) -> list[Any]:
        """One command per bucket, pipelined (a Cluster pipeline sends each node its own)."""
        async with self.r.pipeline(transaction=False) as p:
            for b in range(keys.BUCKETS):
                command(p, b)
            return list(await p.execute())

    async def list_games(
        self, before_id: str, limit: int, active_only: bool
    ) -> list[GameSummaryRecord]:
        out: list[GameSummaryRecord] = []
        top = f"({before_id}" if before_id else "+"
        fetch = max(limit, 16)
        try:
            for _ in range(64):  # bounded: a page of active games among many finished ones
                per_bucket = await self._each_bucket(functools.partial(_page, top=top, n=fetch))
                ids = sorted({i.decode() for ids in per_bucket for i in ids}, reverse=True)[:fetch]
                if not ids:
                    break
                async with self.r.pipeline(transaction=False) as p:
                    for gid in ids:
                        p.hmget(
                            keys.game_keys(gid)[0], "version", "meta", "over", "to_move", "updated"
                        )
                    rows = await p.execute()
                gone: list[str] = []
                for gid, (version, meta, over, to_move, updated) in zip(ids, rows, strict=True):
                    if version is None:
                        gone.append(gid)  # expired: drop it from the index
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
                for gid in gone:
                    await self.r.zrem(keys.index_keys(keys.bucket_of(gid))[0], gid)
                if len(out) >= limit or len(ids) < fetch:
                    break
                top = f"({ids[-1]}"
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        return out[:limit]

    async def stalled_ai(self, waited_since: float, limit: int) -> list[PendingAI]:
        try:
            per_bucket = await self._each_bucket(
                lambda p, b: p.zrangebyscore(
                    keys.index_keys(b)[2],
                    "-inf",
                    f"({waited_since!r}",
                    start=0,
                    num=limit,
                    withscores=True,
                )
            )
            rows = sorted(
                ((gid.decode(), since) for r in per_bucket for gid, since in r), key=lambda r: r[1]
            )[:limit]
            if not rows:
                return []
            async with self.r.pipeline(transaction=False) as p:
                for gid, _ in rows:
                    p.hget(keys.game_keys(gid)[0], "ai")
                payloads = await p.execute()
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        out = []
        for (gid, since), raw in zip(rows, payloads, strict=True):
            if raw is not None:
                version, payload = _split_pending(raw)
                out.append(PendingAI(gid, version, payload, float(since)))
        return out

    async def claim_redispatch(self, game_id: str, old_payload: bytes, new_payload: bytes) -> bool:
        key = keys.game_keys(game_id)[0]
        try:
            rec = await self.r.hget(key, "ai")
            if rec is None:
                return False
            version, _ = _split_pending(rec)
            prefix = f"{version}|".encode()
            ok = await self._claim(keys=[key], args=[prefix + old_payload, prefix + new_payload])
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        return bool(ok)

    async def oldest_ai_wait_start(self) -> float | None:
        firsts = await self._guard(
            self._each_bucket(lambda p, b: p.zrange(keys.index_keys(b)[2], 0, 0, withscores=True))
        )
        starts = [float(f[0][1]) for f in firsts if f]
        return min(starts) if starts else None

    async def active_games(self) -> int:
        counts = await self._guard(self._each_bucket(lambda p, b: p.zcard(keys.index_keys(b)[1])))
        return sum(int(n) for n in counts)

    async def tidy(self, limit: int) -> int:
        """Unfinished games expire when idle; their index entries are dropped here (active and
        AI entries by score, the games index by walking it from a cursor)."""
        now = time.time()
        idle_before = now - self.settings.idle_ttl
        dropped = 0
        try:
            counts = await self._each_bucket(
                lambda p, b: p.zremrangebyscore(
                    keys.index_keys(b)[1], "-inf", f"({int(idle_before * 1000)}"
                )
            )
            dropped += sum(int(n) for n in counts)
            counts = await self._each_bucket(
                lambda p, b: p.zremrangebyscore(keys.index_keys(b)[2], "-inf", f"({idle_before!r}")
            )
            dropped += sum(int(n) for n in counts)
            per = max(1, limit // keys.BUCKETS)
            batches = await self._each_bucket(
                lambda p, b: p.zrangebylex(
                    keys.index_keys(b)[0],
                    f"({self._tidy_cursor[b]}" if self._tidy_cursor[b] else "-",
                    "+",
                    0,
                    per,
                )
            )
            async with self.r.pipeline(transaction=False) as p:
                for ids in batches:
                    for gid in ids:
                        p.exists(keys.game_keys(gid.decode())[0])
                exists = iter(await p.execute())
            for b, ids in enumerate(batches):
                gone = [gid for gid in ids if not next(exists)]
                self._tidy_cursor[b] = ids[-1].decode() if len(ids) == per else ""
                if gone:
                    dropped += int(await self.r.zrem(keys.index_keys(b)[0], *gone))
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e
        return dropped

    async def ping(self) -> None:
        """One attempt, no retries: a health check wants the answer of now."""
        if self.mode == "cluster":
            await self._guard(self.r.ping())
        else:
            await self._guard(self._hot.call("", _pack("PING"), retry=False))

    async def close(self) -> None:
        await self._hot.close()
        await self.r.aclose()
