"""The Redis store: every write of a game is one Lua script (atomic compare-and-set).

Standalone Redis or Redis Cluster (``mode``); the key layout in ``keys.py`` puts everything one
script touches in one slot. The commit script checks the version and commit id it builds on
(and the idempotency key), then writes the state, appends the update to the game's window
(dropping the idempotency key of the version that leaves it), appends the replay log entry,
sets or clears the pending AI move, updates the bucket's indexes and sets the game's expiry
(while it goes on, a lease of its idle time and a little more, renewed once less than the
idle time is left; finished once it is over), all in one step: a game is never half written. A commit sent again (its connection dropped before the reply) recognises itself by
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
import zlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MaxConnectionsError,
    MovedError,
    NoScriptError,
    RedisClusterException,
    RedisError,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import (
    ConnectionError as RedisConnectionError,
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
    UnreadableData,
)

log = logging.getLogger("ascension.engine.store")
T = TypeVar("T")

# KEYS: record, window, games, active, ai, news
# ARGV: 1 id, 2 cid, 3 state, 4 meta, 5 window entry, 6 to_move, 7 created ms, 8 ai payload,
#       9 enqueued at, 10 idle ttl, 11 news length
_CREATE = """
local cid = redis.call('HGET', KEYS[1], 'cid')
if cid then return cid == ARGV[2] and 1 or 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[3], 'version', 1, 'cid', ARGV[2], 'meta', ARGV[4],
           'over', 0, 'to_move', ARGV[6], 'updated', ARGV[7])
redis.call('RPUSH', KEYS[2], ARGV[5])
redis.call('ZADD', KEYS[3], 0, ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[7], ARGV[1])
if ARGV[8] ~= '' then
  redis.call('ZADD', KEYS[5], ARGV[9], ARGV[1])
  redis.call('HSET', KEYS[1], 'ai', '1|' .. ARGV[8])
end
redis.call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[11], '*', 'g', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[10])
redis.call('EXPIRE', KEYS[2], ARGV[10])
return 1
"""

# KEYS: record, window, log, idem, active, ai, news
# ARGV: 1 id, 2 expected version, 3 expected cid, 4 new cid, 5 attempt (this write's own
#       random id), 6 over, 7 to_move, 8 updated ms, 9 enqueued at, 10 state, 11 window entry
#       (the update, see keys.pack_window_entry), 12 log entry, 13 idem key, 14 fingerprint,
#       15 ai payload, 16 window, 17 idle ttl (ms), 18 lease (ms), 19 finished ttl,
#       20 finished window ttl, 21 news length (in this order: the store packs the game's, the
#       text, the bytes and its settings apart, see commit)
_COMMIT = """
local cur = redis.call('HMGET', KEYS[1], 'version', 'cid', 'at')
if not cur[1] then return {'missing', 0, ''} end
-- A commit sent again, or a key used again, is answered without applying anything; the same
-- value is written back so that a WAIT after this script covers the first write (WAIT counts
-- the replicas that have everything up to this connection's last write). The commit id alone
-- does not tell: another request playing the same action makes the same id.
if cur[2] == ARGV[4] and cur[3] == ARGV[5] then
  redis.call('HSET', KEYS[1], 'cid', cur[2])
  return {'ok', cur[1], cur[2]}
end
local nv = tonumber(cur[1]) + 1
local w = tonumber(ARGV[16])
-- Each key is also named by its version, under a field no key can be (a key is UTF-8, the
-- byte 255 never is): the key of the version that leaves the window is read with the key's
-- own record (walking the hash for it was a quarter of this script's time).
local gone = '\\255' .. (nv - w)
local idem = redis.call('HMGET', KEYS[4], ARGV[13], gone)
if ARGV[13] ~= '' and idem[1] then
  redis.call('HSET', KEYS[4], ARGV[13], idem[1])
  return {'duplicate', cur[1], cur[2], idem[1]}
end
if cur[1] ~= ARGV[2] or cur[2] ~= ARGV[3] then return {'conflict', cur[1], cur[2]} end
redis.call('RPUSH', KEYS[2], ARGV[11])
redis.call('LTRIM', KEYS[2], -w, -1)
if ARGV[15] ~= '' then
  redis.call('HSET', KEYS[1], 'state', ARGV[10], 'version', nv, 'cid', ARGV[4], 'over', ARGV[6],
             'to_move', ARGV[7], 'updated', ARGV[8], 'at', ARGV[5], 'ai', nv .. '|' .. ARGV[15])
  redis.call('ZADD', KEYS[6], ARGV[9], ARGV[1])
else
  redis.call('HSET', KEYS[1], 'state', ARGV[10], 'version', nv, 'cid', ARGV[4], 'over', ARGV[6],
             'to_move', ARGV[7], 'updated', ARGV[8], 'at', ARGV[5])
  -- (the pending move and its index entry are written together: no field, no entry)
  if redis.call('HDEL', KEYS[1], 'ai') == 1 then redis.call('ZREM', KEYS[6], ARGV[1]) end
end
-- The log is rewritten whole rather than appended to: APPEND reserves as much room again as
-- the string holds (Redis grows strings greedily): measured, 0.55 KB more per live game at 4
-- players, 0.85 KB at 6 (+9%, +12%), for 6% of this script's instructions.
local log = redis.call('GET', KEYS[3])
redis.call('SET', KEYS[3], (log or '') .. ARGV[12], 'KEEPTTL')
local created = not log
redis.call('XADD', KEYS[7], 'MAXLEN', '~', ARGV[21], '*', 'g', ARGV[1])
local record = nv .. '|' .. ARGV[14]
if ARGV[6] == '1' then
  -- Over: the record, log and last key are kept for replay; the window a little while, for
  -- watchers that fell behind near the end.
  redis.call('ZREM', KEYS[5], ARGV[1])
  redis.call('DEL', KEYS[4])
  if ARGV[13] ~= '' then redis.call('HSET', KEYS[4], ARGV[13], record) end
  for _, i in ipairs({1, 3, 4}) do redis.call('EXPIRE', KEYS[i], ARGV[19]) end
  redis.call('EXPIRE', KEYS[2], math.min(tonumber(ARGV[20]), tonumber(ARGV[19])))
  return {'ok', nv, ARGV[4]}
end
-- The field named by the byte alone marks a hash whose expiry is set: it is never removed,
-- so the hash never empties, and a new one (HSET adds three fields) is seen.
if ARGV[13] ~= '' then
  created = redis.call('HSET', KEYS[4], ARGV[13], record, '\\255' .. nv, ARGV[13], '\\255', '') == 3
            or created
end
if idem[2] then redis.call('HDEL', KEYS[4], idem[2], gone) end
-- The game's keys live a lease past its last move, renewed when less than the idle time is
-- left: once per lease rather than at every move (four EXPIRE and a ZADD were a sixth of
-- this script). Its active index entry is dated the lease's end, less the idle time, so
-- that the index drops it no sooner than the keys expire.
if created or redis.call('PTTL', KEYS[1]) < tonumber(ARGV[17]) then
  for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[18]) end
  redis.call('ZADD', KEYS[5], tonumber(ARGV[8]) + tonumber(ARGV[18]) - tonumber(ARGV[17]),
             ARGV[1])
end
return {'ok', nv, ARGV[4]}
"""

# KEYS: news, then the windows of games of its bucket; ARGV: each window's cursor.
# Returns the news stream's last id (what a blocking read waits after); for each game with
# versions above its cursor, its position (1-based) and those entries, oldest first; and the
# positions of games whose latest version is below their cursor (the store went back).
_NEWS = """
local out, behind = {}, {}
for i = 2, #KEYS do
  local top = redis.call('LINDEX', KEYS[i], -1)
  if top and #top >= 4 then  -- (a damaged top: nothing read, the watchers rebuild from the log)
    local n = struct.unpack('>I4', top) - tonumber(ARGV[i - 1])
    if n > 0 then
      out[#out + 1] = i - 1
      out[#out + 1] = redis.call('LRANGE', KEYS[i], -n, -1)
    elseif n < 0 then
      behind[#behind + 1] = i - 1
    end
  end
end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
return {last and last[1] or '0-0', out, behind}
"""

# KEYS: news; ARGV: an id read before, the most entries to return. The game ids of the
# entries after that id, the last entry's id, and whether entries after that id may have been
# trimmed already (the stream's first entry is later than the id and not the one right after).
_NEWS_SINCE = """
local function id(s)
  local ms, seq = string.match(s, '(%d+)-(%d+)')
  return tonumber(ms), tonumber(seq)
end
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
if not first then return {{}, ARGV[1], 0} end
local fm, fs = id(first[1])
local am, as = id(ARGV[1])
local gap = 0
if fm > am or (fm == am and fs > as + 1) then gap = 1 end
local es = redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])
local gids = {}
for i = 1, #es do gids[i] = es[i][2][2] end
if #es >= tonumber(ARGV[2]) then gap = 1 end
return {gids, #es > 0 and es[#es][1] or ARGV[1], gap}
"""

# KEYS: game records. Each one's version and commit id (nil and nil: no such game).
_HEADS = """
local out = {}
for i = 1, #KEYS do
  local r = redis.call('HMGET', KEYS[i], 'version', 'cid')
  out[2 * i - 1] = r[1]
  out[2 * i] = r[2]
end
return out
"""
_HEADS_PER_CALL = 500  # records read by one script call (each call holds Redis briefly)

# KEYS: window; ARGV: version. The entry of that version, if the window holds it.
_UPDATE_AT = """
local top = redis.call('LINDEX', KEYS[1], -1)
if not top or #top < 4 then return false end
local i = tonumber(ARGV[1]) - struct.unpack('>I4', top) - 1
if i >= 0 then return false end
return redis.call('LINDEX', KEYS[1], i)
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

# KEYS: idempotency keys; ARGV: key, "1" to write it back (as _COMMIT does, for WAIT)
_IDEMPOTENT = """
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and ARGV[2] == '1' then redis.call('HSET', KEYS[1], ARGV[1], v) end
return v
"""

# KEYS: record. Writes the commit id back unchanged: a WAIT after it covers every earlier
# write of the game (the replication stream is in order).
_TOUCH = """
local c = redis.call('HGET', KEYS[1], 'cid')
if c then redis.call('HSET', KEYS[1], 'cid', c) end
return 1
"""

# KEYS: a string; ARGV: its length, its new value. Replaced (TTL kept) if the length is that.
_REPLACE = """
if redis.call('STRLEN', KEYS[1]) ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
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
_NEWS_LENGTH = 256  # entries a bucket's news stream keeps (about: it is trimmed by nodes)
_MAX_REDIRECTS = 16  # MOVED/ASK replies followed at once by one call (then with pauses)


def _split_pending(raw: bytes) -> tuple[int, bytes]:
    version, _, payload = raw.partition(b"|")
    return int(version), payload


_BUCKET_OF_NEWS = {keys.news_key(b): b for b in range(keys.BUCKETS)}


def _by_bucket(cursors: Mapping[str, int], pos: dict[str, Any]) -> dict[int, Mapping[str, int]]:
    """The games of ``cursors`` by bucket; all of one bucket: ``cursors`` itself (the watch
    hub's live cursors: a game it adds while a read waits is read as soon as the news names
    it). A reader of one bucket has its position there (the games it had): only games new
    since are hashed, not each of its games (150 per bucket with 10,000 watched) each time
    one of them moves."""
    if len(pos) == 1:
        ((news, (_, had)),) = pos.items()
        b = _BUCKET_OF_NEWS.get(news)
        if b is not None and all(keys.bucket_of(g) == b for g in frozenset(cursors) - had):
            return {b: cursors}
    split: dict[int, dict[str, int]] = {}
    for gid, v in cursors.items():
        split.setdefault(keys.bucket_of(gid), {})[gid] = v
    if len(split) == 1:
        return {b: cursors for b in split}
    return dict(split)


def _bulks(args: tuple[bytes | str | int, ...]) -> bytes:
    """Arguments in the Redis protocol, as redis-py encodes them (str as UTF-8, int as its
    decimal digits), without the command's header."""
    parts: list[bytes] = []
    add = parts.append
    for a in args:
        if type(a) is not bytes:
            a = str(a).encode()
        add(b"$%d\r\n%b\r\n" % (len(a), a))  # one piece per argument: fewer, larger copies
    return b"".join(parts)


def _pack(*args: bytes | str | int) -> bytes:
    """One command in the Redis protocol, in one buffer."""
    return b"*%d\r\n" % len(args) + _bulks(args)


_BULK_HEADS = tuple(b"$%d\r\n" % n for n in range(1024))  # (formatting one: ~1,100 instructions)


def _head(n: int) -> bytes:
    """A bulk string's header, for ``n`` bytes."""
    return _BULK_HEADS[n] if n < 1024 else b"$%d\r\n" % n


@functools.lru_cache(maxsize=1 << 14)
def _commit_keys(game_id: str) -> bytes:
    """The commit script's keys (see _COMMIT) and first argument, packed: the same for each
    commit of a game."""
    ks = keys.game_keys(game_id)
    b = keys.bucket_of(game_id)
    _, active, ai = keys.index_keys(b)
    return _bulks((*ks, active, ai, keys.news_key(b), game_id))


_COMMIT_KEYS, _COMMIT_ITEMS = 7, 28  # (keys and arguments)
# An unfinished game's keys live its idle time after its last move, and up to 1/_LEASE_MARGIN
# of it longer: their expiry is renewed once per that margin, not at every move (_COMMIT).
_LEASE_MARGIN = 256


def _page(p: Any, bucket: int, top: str, n: int) -> None:
    """Queue the bucket's next ``n`` game ids below ``top``, newest first."""
    p.zrevrangebylex(keys.index_keys(bucket)[0], top, "-", 0, n)


def _text(b: bytes | str | None) -> str:
    return "" if b is None else b.decode() if isinstance(b, bytes) else b


def _stored_update(entry: bytes) -> StoredUpdate:
    version, over, cid, parent, update = keys.unpack_window_entry(entry)
    return StoredUpdate(version, cid, parent, update, over)


_MAX_VERSION = (1 << 31) - 1  # far beyond any game; a larger one is damage


def _version(game_id: str, raw: bytes | int) -> int:
    """A record's version; UnreadableData if damaged."""
    try:
        v = int(raw)
    except ValueError as e:
        raise UnreadableData(f"its record's version does not decode ({e})", game_id) from e
    if not 0 <= v <= _MAX_VERSION:
        raise UnreadableData(f"its record's version {v} is out of range", game_id)
    return v


def _cid(game_id: str, raw: bytes | None) -> str:
    """A record's commit id; UnreadableData if damaged (not text)."""
    try:
        return _text(raw)
    except UnicodeDecodeError as e:
        raise UnreadableData(f"its record's commit id does not decode ({e})", game_id) from e


def _meta(game_id: str, raw: bytes) -> bytes:
    """A record's metadata, unpacked; UnreadableData if damaged."""
    try:
        return keys.unpack_meta(raw)
    except zlib.error as e:
        raise UnreadableData(f"its metadata does not unpack ({e})", game_id) from e


def _idempotent_record(game_id: str, raw: bytes) -> IdempotentRecord:
    """What an idempotency key wrote ("<version>|<fingerprint>"); UnreadableData if damaged."""
    version, _, fingerprint = raw.partition(b"|")
    try:
        return IdempotentRecord(int(version), fingerprint)
    except ValueError as e:
        raise UnreadableData(f"an idempotency record does not decode ({e})", game_id) from e


def _summary(
    gid: str, version: bytes, meta: bytes | None, over: bytes, to_move: bytes, updated: bytes
) -> GameSummaryRecord:
    """A listing's row; a field damaged in the store is listed as 0 (metadata as none): one
    such record must not take the listing down."""
    damaged: list[str] = []

    def num(name: str, raw: bytes, low: int, high: int) -> int:
        try:
            n = int(raw)
        except (TypeError, ValueError):
            n = low - 1
        if low <= n <= high:
            return n
        damaged.append(name)
        return 0

    try:
        unpacked = keys.unpack_meta(meta or b"")
    except zlib.error:
        unpacked = b""
        damaged.append("meta")
    row = GameSummaryRecord(gid, num("version", version, 0, _MAX_VERSION), unpacked, over == b"1",
                            num("to_move", to_move, -1, 63), num("updated", updated, 0, 1 << 62))  # fmt: skip
    if damaged:
        log.warning("game %s: its record's %s do not decode: listed as 0", gid, ", ".join(damaged))
    return row


def _readable(entries: list[bytes], game_id: str) -> list[StoredUpdate]:
    """The updates of ``entries`` (consecutive, oldest first) after the last one that does
    not unpack (damaged bytes): its watchers see a gap there and get what is missing rebuilt
    from the game's log, which with the state is the game (the window only keeps updates)."""
    out: list[StoredUpdate] = []
    for e in entries:
        try:
            out.append(_stored_update(e))
        except UnreadableData as err:
            log.warning("game %s: an update in its window is damaged (%s): left out", game_id, err)
            out.clear()
    return out


class _HotPath:
    """The commands of every submit (loading the game, the commit script) on connections of
    their own, with redis-py's connections and parser but not its pool and command layers:
    those (a lock and observability hooks per checkout, per-argument packing, response
    callbacks, a task per write to bound it by the socket timeout) cost as much CPU as the
    round trip itself. One deadline bounds each round trip; a dropped connection or a timeout
    is retried on a fresh connection until ``retry_seconds`` have passed (the callers only send
    commands that are safe to send again: reads, and scripts that recognise themselves).
    Standalone: at most ``limit`` connections, then redis-py's pool is used. Cluster: the
    connections of the node that serves the key (redis-py's node objects). A MOVED reply
    updates the slot map and the command goes to the new owner at once; an ASK reply (a slot
    being migrated) sends it once to the node named, after ASKING; TRYAGAIN, CLUSTERDOWN, a
    slot no known node serves, and a node that does not answer (a primary failing over) are
    retried after a pause, with the slot map read again."""

    def __init__(
        self, client: Any, cluster: bool, limit: int, timeout: float | None, retry_seconds: float
    ) -> None:
        self._client = client
        self._cluster = cluster
        self._limit = limit
        self._timeout = timeout
        self._retry_seconds = retry_seconds
        # Connections of our own, per node name ("" standalone): redis-py's cluster client
        # closes every connection of its nodes when it reads the slot map again, including
        # connections in use, which must not happen to one between a send and its reply.
        self._free: dict[str, list[Any]] = {}
        self._made: dict[str, int] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._initialized = not cluster
        # Round trips in flight, oldest first (connection -> deadline, its task), and those
        # cancelled for their deadline; see _expire.
        self._inflight: dict[Any, tuple[float, asyncio.Task[Any]]] = {}
        self._expired: set[Any] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    @staticmethod
    async def _exchange(conn: Any, packed: bytes, replies: int) -> list[Any]:
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

    async def _round_trip(self, conn: Any, packed: bytes, replies: int) -> list[Any]:
        if self._timeout is None:
            return await self._exchange(conn, packed, replies)
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        deadline = loop.time() + self._timeout
        self._inflight[conn] = (deadline, task)
        if self._timer is None or self._timer_loop is not loop:
            self._timer, self._timer_loop = loop.call_at(deadline, self._expire), loop
        try:
            return await self._exchange(conn, packed, replies)
        except asyncio.CancelledError:
            # Cancelled by _expire (and by nobody else as well): the reply may still come,
            # the connection is spoiled.
            if conn not in self._expired or task.uncancel() > 0:
                raise
            await conn.disconnect(nowait=True)
            raise RedisTimeoutError(f"no reply from Redis within {self._timeout}s") from None
        finally:
            del self._inflight[conn]
            self._expired.discard(conn)

    def _expire(self) -> None:
        """Cancel the round trips past their deadline; wait for the next one's. All round
        trips have the same timeout, so the oldest in flight is the next to expire: one timer
        bounds them all (asyncio.timeout around each cost a third of a round trip's CPU)."""
        loop, self._timer = self._timer_loop, None
        assert loop is not None
        now = loop.time()
        for conn, (deadline, task) in self._inflight.items():
            if deadline > now:
                self._timer = loop.call_at(deadline, self._expire)
                return
            if conn not in self._expired:
                self._expired.add(conn)
                task.cancel()

    def _checkout(self, key: str, node: Any = None) -> tuple[str, Any]:
        """(node name, connection); None: use redis-py's pool (standalone, past the limit)."""
        if self._cluster:
            node = node or self._client.get_node_from_key(key)
            name, kwargs = node.name, node.connection_kwargs
            connection_class = node.connection_class
        else:
            name = ""
            pool = self._client.connection_pool
            kwargs, connection_class = pool.connection_kwargs, pool.connection_class
        free = self._free.get(name)
        if free:
            return name, free.pop()
        made = self._made.get(name, 0)
        if made >= self._limit:
            if self._cluster:
                raise MaxConnectionsError(f"{made} connections to {name} are in use")
            return name, None
        self._made[name] = made + 1
        # One deadline per round trip is ours; no retries below us (we retry whole calls).
        kwargs = {**kwargs, "socket_timeout": None, "retry": Retry(NoBackoff(), 0)}
        return name, connection_class(**kwargs)  # connects on first use

    def _checkin(self, name: str, conn: Any) -> None:
        if self._cluster and self._client.nodes_manager.nodes_cache.get(name) is None:
            # not a node of the cluster any more: let the connection go
            self._made[name] -= 1
            task = asyncio.get_running_loop().create_task(conn.disconnect(nowait=True))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
            return
        self._free.setdefault(name, []).append(conn)

    def _node_named(self, host: str, port: int) -> Any:
        """The node an ASK reply names (known to the slot map, or new)."""
        from redis.asyncio.cluster import ClusterNode

        manager = self._client.nodes_manager
        node = manager.get_node(host=host, port=port)
        if node is None:
            node = ClusterNode(host, port, "primary", **manager.connection_kwargs)
            manager.set_nodes(manager.nodes_cache, {node.name: node})
        return node

    async def call(
        self, key: str, packed: bytes, replies: int = 1, *, retry: bool = True
    ) -> list[Any]:
        """The replies of ``packed`` (``replies`` commands) sent where ``key`` lives. Without
        ``retry`` only redirections are followed: an error is the caller's to handle."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self._retry_seconds if retry else 0.0)
        delay = 0.05
        redirects = 0
        if not self._initialized:  # a Cluster client learns the slots on first use
            await self._client.initialize()
            self._initialized = True
        ask: Any = None  # the node an ASK reply named, for the next attempt only
        while True:
            name, conn = "", None
            try:
                if ask is not None:
                    name, conn = self._checkout(key, ask)
                    ask = None
                    out = await self._round_trip(
                        conn, b"*1\r\n$6\r\nASKING\r\n" + packed, replies + 1
                    )
                    return out[1:]
                name, conn = self._checkout(key)
                if conn is None:
                    return await self._pooled(packed, replies)
                return await self._round_trip(conn, packed, replies)
            except MovedError as e:  # the slot has another owner now: learn it, go there
                await self._client.nodes_manager.move_slot(e)
                failure: Exception = e
                redirects += 1
                if redirects <= _MAX_REDIRECTS:
                    continue
            except AskError as e:  # the slot is being migrated: this command goes there once
                ask = self._node_named(e.host, e.port)
                failure = e
                redirects += 1
                if redirects <= _MAX_REDIRECTS:
                    continue
            except (TryAgainError, ClusterDownError) as e:  # the error reply was read whole
                failure = e
            except (SlotNotCoveredError, MaxConnectionsError) as e:  # nothing was sent
                failure = e
            except ResponseError:  # read whole: the connection is clean
                raise
            except _RETRYABLE as e:
                if conn is not None:
                    await conn.disconnect(nowait=True)
                failure = e
            except BaseException:
                # e.g. cancelled between sending and reading: a reply may be on its way
                if conn is not None:
                    await conn.disconnect(nowait=True)
                raise
            finally:
                if conn is not None:
                    self._checkin(name, conn)
            if loop.time() + delay > deadline:
                if isinstance(failure, RedisClusterException):
                    raise RedisConnectionError(str(failure)) from failure
                raise failure
            log.debug("Redis call retried after %s: %s", type(failure).__name__, failure)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)
            if self._cluster:
                with contextlib.suppress(RedisError, RedisClusterException):
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
        free, self._free = self._free, {}
        for conns in free.values():
            for conn in conns:
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
        self._idempotent = self.r.register_script(_IDEMPOTENT)
        self._news_script = self.r.register_script(_NEWS)
        self._news_since = self.r.register_script(_NEWS_SINCE)
        self._heads = self.r.register_script(_HEADS)
        self._update_at = self.r.register_script(_UPDATE_AT)
        self._touch = self.r.register_script(_TOUCH)
        self._replace = self.r.register_script(_REPLACE)
        st = self.settings
        idle_ms = st.idle_ttl * 1000
        self._commit_settings = _bulks((st.window, idle_ms, idle_ms + idle_ms // _LEASE_MARGIN,
                                        st.finished_ttl, st.finished_window_ttl, _NEWS_LENGTH))  # fmt: skip
        self._commit_head = b"*%d\r\n" % (_COMMIT_ITEMS + 3) + _bulks(
            ("EVALSHA", self._commit.sha, _COMMIT_KEYS)
        )
        self._retry_seconds = retry_seconds
        self._max_block_ms = max(1, int((timeout or 10.0) * 500))  # within a round trip's time
        self._tidy_cursor = [""] * keys.BUCKETS

    def group_of(self, game_id: str) -> int:
        return keys.bucket_of(game_id)

    async def _guard(self, call: Awaitable[T]) -> T:
        try:
            return await call
        except (RedisError, RedisClusterException) as e:
            raise StoreError(f"redis: {e}") from e

    async def _script(
        self,
        script: Any,
        keys_: list[str] | tuple[str, ...],
        args: Any,
        extra: bytes = b"",
        replies: int = 1,
    ) -> list[Any]:
        """EVALSHA on the hot path (plus ``extra`` commands after it on the same connection);
        EVAL (which also caches it) on a Redis that does not know the script: restarted,
        flushed, or a replica promoted by a failover."""
        body = _bulks((*keys_, *args))
        return await self._packed_script(
            script, keys_[0], len(keys_), len(keys_) + len(args), body, extra, replies
        )

    async def _packed_script(
        self, script: Any, key: str, nkeys: int, items: int, body: bytes, extra: bytes,
        replies: int, head: bytes = b"",
    ) -> list[Any]:  # fmt: skip
        """``_script`` with the keys and arguments (``items`` of them, ``nkeys`` keys, the
        first ``key``) packed already (``body``); ``head``: the EVALSHA command's start, if
        the caller has it packed too."""
        head = head or b"*%d\r\n" % (items + 3) + _bulks(("EVALSHA", script.sha, nkeys))
        try:
            return await self._guard(self._hot.call(key, head + body + extra, replies))
        except StoreError as e:
            if not isinstance(e.__cause__, NoScriptError):  # (NOSCRIPT: nothing was run)
                raise
        head = b"*%d\r\n" % (items + 3) + _bulks(("EVAL", script.script, nkeys))
        return await self._guard(self._hot.call(key, head + body + extra, replies))

    def _wait(self) -> bytes:
        return _pack("WAIT", self._wait_replicas, self._wait_timeout_ms)

    def _check_replicas(self, acked: Any, what: str) -> None:
        if int(acked) < self._wait_replicas:
            raise StoreError(
                f"{what} reached {int(acked)} of {self._wait_replicas} Redis replicas within "
                f"{self._wait_timeout_ms} ms"
            )

    async def _confirm(self, game_id: str, what: str) -> None:
        """With ``wait_replicas``: return once that many replicas hold every write of the game
        so far (StoreError if they do not within the timeout). Before answering with what
        another call wrote (a retried request, a watched update), as a commit does."""
        if self._wait_replicas <= 0:
            return
        key = keys.game_keys(game_id)[0]
        replies = await self._script(self._touch, (key,), (), self._wait(), 2)
        self._check_replicas(replies[1], what)

    # ---- games ---------------------------------------------------------------------------

    async def create(self, game: NewGame) -> None:
        g, u, _, _ = keys.game_keys(game.game_id)
        b = keys.bucket_of(game.game_id)
        games, active, ai = keys.index_keys(b)
        args = (
            game.game_id,
            game.commit_id,
            game.state,
            keys.pack_meta(game.meta),
            keys.pack_window_entry(1, False, game.commit_id, "", game.update),
            game.to_move,
            game.created_ms,
            game.ai_pending or b"",
            repr(game.enqueued_at),
            self.settings.idle_ttl,
            _NEWS_LENGTH,
        )
        news = keys.news_key(b)
        (created,) = await self._script(self._create, (g, u, games, active, ai, news), args)
        if not created:
            raise ValueError(f"game {game.game_id} exists")

    async def load(self, game_id: str, *, fresh: bool = True) -> GameRecord | None:
        key = keys.game_keys(game_id)[0]
        (row,) = await self._guard(self._hot.call(key, _pack("HMGET", key, *_LOAD_FIELDS)))
        version, cid, over, state, meta = row
        if version is None:
            return None
        v, m = _version(game_id, version), _meta(game_id, meta or b"")
        return GameRecord(game_id, v, _cid(game_id, cid), state, m, over == b"1")

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
        meta = _meta(game_id, row[4]) if len(row) > 4 else None
        return _version(game_id, row[0]), _cid(game_id, row[1]), row[2] == b"1", state, meta

    async def commit(self, c: Commit) -> CommitResult:
        ai = c.ai_pending or b""
        enqueued = repr(c.enqueued_at) if ai else ""  # (read only with a payload)
        ev, cid, parent, attempt = str(c.expected_version), c.commit_id, c.expected_commit_id, c.attempt
        to_move, updated = str(c.to_move), str(c.updated_ms)
        # Packed by hand, on every submit: _bulks cost as much as the rest of the commit.
        text = (
            f"${len(ev)}\r\n{ev}\r\n${len(parent)}\r\n{parent}\r\n${len(cid)}\r\n{cid}\r\n"
            f"${len(attempt)}\r\n{attempt}\r\n$1\r\n{1 if c.over else 0}\r\n${len(to_move)}\r\n"
            f"{to_move}\r\n${len(updated)}\r\n{updated}\r\n${len(enqueued)}\r\n{enqueued}\r\n"
        )  # fmt: skip
        if text.isascii():
            packed_text = text.encode()
        else:  # (some length above is not its UTF-8's)
            packed_text = _bulks((ev, parent, cid, attempt, 1 if c.over else 0, to_move, updated,
                                  enqueued))  # fmt: skip
        entry = keys.pack_window_entry(
            c.expected_version + 1, c.over, cid, parent, c.update, attempt
        )
        log_entry, idem, fp = keys.pack_log_entry(c.seat, c.action), c.idem_key.encode(), c.fingerprint
        crlf = b"\r\n"
        body = b"".join((
            _commit_keys(c.game_id), packed_text,
            _head(len(c.state)), c.state, crlf, _head(len(entry)), entry, crlf,
            _head(len(log_entry)), log_entry, crlf, _head(len(idem)), idem, crlf,
            _head(len(fp)), fp, crlf, _head(len(ai)), ai, crlf, self._commit_settings,
        ))  # fmt: skip
        wait = self._wait() if self._wait_replicas > 0 else b""
        replies = await self._packed_script(
            self._commit, keys.game_keys(c.game_id)[0], _COMMIT_KEYS, _COMMIT_ITEMS, body, wait,
            2 if wait else 1, self._commit_head,
        )  # fmt: skip
        res = replies[0]
        status = CommitStatus(res[0].decode())
        version = _version(c.game_id, res[1])
        prior = None
        what = f"the commit of version {c.expected_version + 1}"
        if status is CommitStatus.DUPLICATE:
            prior = _idempotent_record(c.game_id, res[3])
            if wait:  # the answer will be what the key wrote: it must be on the replicas too
                self._check_replicas(replies[1], f"the version {prior.version} a retry is told of")
        elif (
            status is CommitStatus.CONFLICT
            and version > c.expected_version + 1
            # Was it ours, and then built upon? (the reply to our commit was lost)
            and await self._attempt_at(c.game_id, c.expected_version + 1) == c.attempt
        ):
            status = CommitStatus.OK
            await self._confirm(c.game_id, what)
            wait = b""
        if status is CommitStatus.OK and wait:
            self._check_replicas(replies[1], what)
        if status is CommitStatus.OK and (c.over or (c.expected_version + 1) % keys.LOG_CHUNK == 0):
            await self._pack_log(c.game_id, c.over)
        return CommitResult(status, version, _cid(c.game_id, res[2]), prior)

    async def _pack_log(self, game_id: str, over: bool) -> None:
        """The replay log compressed (keys.pack_log): whole at the game's end, and every
        LOG_CHUNK versions while it goes on (the log is most of a long game's memory). The
        script replaces only what was read (a commit in between appends: then it is left as
        it is). Best effort: a log not compressed reads the same."""
        log_key = keys.game_keys(game_id)[2]
        try:
            (stored,) = await self._guard(self._hot.call(log_key, _pack("GET", log_key)))
            if stored:
                packed = keys.pack_log(keys.unpack_log_bytes(stored), over)
                await self._script(self._replace, (log_key,), (len(stored), packed))
        except (StoreError, UnreadableData) as e:  # (the commit itself is done)
            log.warning("the replay log of game %s is kept uncompressed: %s", game_id, e)

    async def idempotent(self, game_id: str, key: str) -> IdempotentRecord | None:
        idem = keys.game_keys(game_id)[3]
        confirm = "1" if self._wait_replicas > 0 else "0"
        replies = await self._script(
            self._idempotent, (idem,), (key, confirm), self._wait() if confirm == "1" else b"",
            2 if confirm == "1" else 1,
        )  # fmt: skip
        raw = replies[0]
        if raw is None:
            return None
        if confirm == "1":
            self._check_replicas(replies[1], "the version a retry is told of")
        return _idempotent_record(game_id, raw)

    async def _window_entry(
        self, game_id: str, version: int
    ) -> tuple[int, bool, str, str, str, bytes] | None:
        """The window entry of ``version`` unpacked (keys.unpack_window_entry_attempt), if the
        window holds it, readable."""
        window = keys.game_keys(game_id)[1]
        (raw,) = await self._script(self._update_at, (window,), (version,))
        if raw is None:
            return None
        try:
            entry = keys.unpack_window_entry_attempt(raw)
        except UnreadableData as e:
            log.warning("game %s: its update %d is damaged in its window (%s)", game_id, version, e)
            return None
        return entry if entry[0] == version else None

    async def _attempt_at(self, game_id: str, version: int) -> str:
        """The attempt id of the Commit that wrote ``version``, if the window holds it."""
        entry = await self._window_entry(game_id, version)
        return "" if entry is None else entry[4]

    async def update_at(self, game_id: str, version: int) -> StoredUpdate | None:
        entry = await self._window_entry(game_id, version)
        if entry is None:
            return None
        v, over, cid, parent, _, update = entry
        return StoredUpdate(v, cid, parent, update, over)

    async def read_updates(
        self,
        cursors: Mapping[str, int],
        block_ms: int,
        position: dict[str, Any] | None = None,
    ) -> dict[str, list[StoredUpdate]]:
        """One script reads the windows of the games that have news (and the bucket's news
        stream's last id, in the same atomic step); if none has, a blocking XREAD waits after
        that id for a commit of the bucket, and a commit of one of these games is read the same
        way. Games of several buckets (not what the watch hub asks) are waited for with one
        XREAD of their buckets' news on a single Redis, by polling on a Cluster.

        ``position`` (a reader's own dict, passed again on each call): where this reader has
        read each bucket's news up to, and which games it had then. The next call reads the
        windows of the games named in the news since then (and of games new to the reader)
        only, instead of every game's: a reader of a few busy games among thousands of idle
        ones does not read every idle window each time one game moves. With the same games
        as before, the news since is read by the XREAD itself (no script first). Games of one
        bucket are looked up in ``cursors`` itself when news comes: a game the caller adds
        while the call waits is read from its cursor then (not at the next call)."""
        if not cursors:
            return {}
        pos = position if position is not None else {}
        by_bucket = _by_bucket(cursors, pos)
        out: dict[str, list[StoredUpdate]] = {}
        last_ids: dict[str, str] = {}  # news stream -> its last id read
        bucket_of_news = {keys.news_key(b): b for b in by_bucket}
        polling = len(by_bucket) > 1 and self.mode == "cluster"  # (one XREAD, one slot)
        unread = False  # news since a position left to the XREAD below
        for b, part in by_bucket.items():
            last_ids[keys.news_key(b)], skipped = await self._catch_up(
                b, part, out, pos, leave_to_xread=not polling
            )
            unread |= skipped
        loop = asyncio.get_running_loop()
        deadline = loop.time() + block_ms / 1000
        while not out:
            left = int((deadline - loop.time()) * 1000)
            if left <= 0 and not unread:
                break
            if polling:
                await asyncio.sleep(min(left, 50) / 1000)
                for b, part in by_bucket.items():
                    last_ids[keys.news_key(b)], _ = await self._catch_up(b, part, out, pos)
                continue
            # Not tried again here: the watch hub, told of the error, first checks that the
            # store still holds what it read (a failover may have lost the last commits), then
            # reads on.
            wait = ("BLOCK", min(left, self._max_block_ms)) if left > 0 else ()  # (else: a look)
            block = _pack("XREAD", "COUNT", _NEWS_LENGTH, *wait, "STREAMS", *last_ids,
                          *last_ids.values())  # fmt: skip
            unread = False
            (res,) = await self._guard(self._hot.call(next(iter(last_ids)), block, retry=False))
            if not res:
                continue
            # RESP3 answers a map (stream -> entries), RESP2 a list of pairs
            for name, entries in res.items() if isinstance(res, dict) else res:
                news = _text(name)
                b = bucket_of_news[news]
                part = by_bucket[b]
                named = {g: part[g] for _, f in entries if (g := f[1].decode()) in part}
                if len(entries) >= _NEWS_LENGTH:  # more than one read: some may be trimmed
                    named = dict(part)
                if named:
                    await self._news(b, named, out)
                last_ids[news] = _text(entries[-1][0])
                pos[news] = (last_ids[news], pos[news][1])  # (set by _catch_up for this call)
        if out and self._wait_replicas > 0:
            # Watchers get only what the replicas hold (as submits are only acknowledged
            # then): one confirmation covers the game's slot.
            await self._confirm(next(iter(out)), "the updates read for watchers")
        return out

    async def _catch_up(
        self,
        bucket: int,
        cursors: Mapping[str, int],
        out: dict[str, list[StoredUpdate]],
        pos: dict[str, Any],
        *,
        leave_to_xread: bool = False,
    ) -> tuple[str, bool]:
        """The news of ``bucket``'s games since the reader's position (every game's window if
        it has none, or the news since may have been trimmed); returns the id read up to, and
        whether reading the news since was left to the caller's XREAD (``leave_to_xread``,
        when the reader's games are the same: a round trip saved each time a reader wakes,
        and readers of idle games wake every block_ms)."""
        news = keys.news_key(bucket)
        known = pos.get(news)
        games = frozenset(cursors)  # (before any wait: the caller may add games meanwhile)
        if known is None:
            last = await self._news(bucket, cursors, out)
        else:
            since, had = known
            new = {g: cursors[g] for g in games - had}
            if not new and leave_to_xread:
                # The XREAD reads the news since, at once if there is any; a stretch trimmed
                # meanwhile comes back as a full COUNT (the stream keeps at least that many),
                # read as a gap.
                if len(had) != len(games):  # fewer games
                    pos[news] = (since, games)
                return since, True
            (row,) = await self._script(self._news_since, (news,), (since, _NEWS_LENGTH))
            gids, last, gap = row
            last = _text(last)
            if gap:
                named = dict(cursors)
            else:
                named = {g: cursors[g] for x in gids if (g := _text(x)) in cursors}
                named.update(new)
            if named:
                await self._news(bucket, named, out)
        pos[news] = (last, games)
        return last, False

    async def _news(
        self, bucket: int, cursors: Mapping[str, int], out: dict[str, list[StoredUpdate]]
    ) -> str:
        """Adds to ``out`` the updates above each cursor (games of ``bucket``); returns the
        bucket's news stream's last id."""
        gids = list(cursors)
        at = [cursors[g] for g in gids]  # (``cursors`` may change while the script runs)
        windows = [keys.game_keys(g)[1] for g in gids]
        (row,) = await self._script(self._news_script, (keys.news_key(bucket), *windows), at)
        last, found, behind = row
        if behind:
            await self._went_back([(gids[int(k) - 1], at[int(k) - 1]) for k in behind])
        for j in range(0, len(found), 2):
            i = int(found[j]) - 1
            ups = _readable(found[j + 1], gids[i])
            out[gids[i]] = [u for u in ups if u.version > at[i]]
        return _text(last)

    async def _went_back(self, games: list[tuple[str, int]]) -> None:
        """Games whose window ends below the cursor read before: StoreError if a record did go
        back too (the watch hub then checks what the store holds, and reads on); else the
        window's last entry is damaged, and is no news (the next commit's entry is: watchers
        see the gap, and get what is missing rebuilt from the log)."""
        heads = await self.heads([g for g, _ in games])
        for g, v in games:
            head = heads.get(g)
            if head is None or head[0] < v:
                raise StoreError(
                    f"game {g} is at an earlier version than {v}, read before: the store "
                    "went back (a failover to a replica that lacked the last commits?)"
                )
        for g, _ in games:
            log.warning("game %s: the last entry of its window is damaged: left out", g)

    async def heads(self, game_ids: list[str]) -> dict[str, tuple[int, str]]:
        """One script call per bucket (and per _HEADS_PER_CALL games): the watch hub checks
        all its games every 30 s, and a pipeline of one HMGET per game held the event
        loop for milliseconds at a time, packing and parsing each command in Python."""
        by_bucket: dict[int, list[str]] = {}
        for gid in game_ids:
            by_bucket.setdefault(keys.bucket_of(gid), []).append(gid)
        out: dict[str, tuple[int, str]] = {}
        for gids in by_bucket.values():
            for i in range(0, len(gids), _HEADS_PER_CALL):
                part = gids[i : i + _HEADS_PER_CALL]
                (row,) = await self._script(self._heads, [keys.game_keys(g)[0] for g in part], ())
                for gid, version, cid in zip(part, row[::2], row[1::2], strict=True):
                    if version is None:
                        continue
                    try:
                        out[gid] = (_version(gid, version), _cid(gid, cid))
                    except UnreadableData as e:  # its own calls say so (UNREADABLE_GAME)
                        log.warning("game %s: %s", gid, e)
        return out

    async def first_update_version(self, game_id: str) -> int | None:
        window = keys.game_keys(game_id)[1]
        (first,) = await self._guard(self._hot.call(window, _pack("LINDEX", window, 0)))
        ups = [] if first is None else _readable([first], game_id)
        return ups[0].version if ups else None

    async def action_log(self, game_id: str) -> list[tuple[int, int]]:
        log_key = keys.game_keys(game_id)[2]
        (raw,) = await self._guard(self._hot.call(log_key, _pack("GET", log_key)))
        try:
            return keys.unpack_log(raw or b"")
        except UnreadableData as e:
            raise UnreadableData(f"its replay log is damaged ({e})", game_id) from e

    async def delete(self, game_id: str) -> bool:
        b = keys.bucket_of(game_id)
        (existed,) = await self._script(
            self._delete, (*keys.game_keys(game_id), *keys.index_keys(b)), (game_id,)
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
                    out.append(_summary(gid, version, meta, over, to_move, updated))
                    if len(out) >= limit:
                        break
                for gid in gone:
                    await self.r.zrem(keys.index_keys(keys.bucket_of(gid))[0], gid)
                if len(out) >= limit or len(ids) < fetch:
                    break
                top = f"({ids[-1]}"
        except (RedisError, RedisClusterException) as e:
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
        except (RedisError, RedisClusterException) as e:
            raise StoreError(f"redis: {e}") from e
        out = []
        for (gid, since), raw in zip(rows, payloads, strict=True):
            if raw is None:
                continue
            try:
                version, payload = _split_pending(raw)
            except ValueError:  # damaged: one game's, not every stalled move's sweep
                log.warning("game %s: its pending AI move is damaged (%r): not swept", gid, raw[:40])
                continue
            out.append(PendingAI(gid, version, payload, float(since)))
        return out

    async def claim_redispatch(self, game_id: str, old_payload: bytes, new_payload: bytes) -> bool:
        key = keys.game_keys(game_id)[0]
        try:
            (rec,) = await self._hot.call(key, _pack("HGET", key, "ai"))
        except (RedisError, RedisClusterException) as e:
            raise StoreError(f"redis: {e}") from e
        if rec is None:
            return False
        version, _ = _split_pending(rec)
        prefix = f"{version}|".encode()
        (ok,) = await self._script(
            self._claim, (key,), (prefix + old_payload, prefix + new_payload)
        )
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

    async def put_reply(self, game_id: str, key: str, data: bytes, ttl_seconds: float) -> None:
        ttl_ms = max(1, int(ttl_seconds * 1000))
        await self._guard(self.r.set(keys.reply_key(game_id, key), data, px=ttl_ms))

    async def take_reply(self, game_id: str, key: str) -> bytes | None:
        data = await self._guard(self.r.getdel(keys.reply_key(game_id, key)))
        return None if data is None else bytes(data)

    async def peek_reply(self, game_id: str, key: str) -> bytes | None:
        data = await self._guard(self.r.get(keys.reply_key(game_id, key)))
        return None if data is None else bytes(data)

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
        except (RedisError, RedisClusterException) as e:
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
