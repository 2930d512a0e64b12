"""The hand-written connection (``client="hand"``): redis-py's connections and reply parser
under a layer of the store's own: connections per node, routing by key with the Cluster's
redirections (MOVED, ASK) and pauses (TRYAGAIN, CLUSTERDOWN, a failover), one deadline per
round trip, retries of whole calls on a fresh connection, and commands packed by hand."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
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
from engine_service.store.base import Commit, StoreError
from engine_service.store.redis import commit_args, scripts
from engine_service.store.redis.connection import Arg, Connection
from engine_service.store.redis.resp import bulks, pack

log = logging.getLogger("ascension.engine.store")

RETRYABLE = (RedisConnectionError, RedisTimeoutError)
_MAX_REDIRECTS = 16  # MOVED/ASK replies followed at once by one call (then with pauses)


class HotPath:
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
            except RETRYABLE as e:
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



class HandWritten(Connection):
    """The store's Connection on the HotPath."""

    def __init__(
        self, client: Any, cluster: bool, limit: int, timeout: float | None, retry_seconds: float,
        wait_replicas: int, wait_timeout_ms: int,
    ) -> None:  # fmt: skip
        super().__init__(wait_replicas, wait_timeout_ms)
        self.hot = HotPath(client, cluster, limit, timeout, retry_seconds)
        self._client = client
        self._cluster = cluster
        self._wait = pack("WAIT", wait_replicas, wait_timeout_ms)
        self._tails: dict[tuple[int, ...], bytes] = {}

    async def _call(
        self, key: str, packed: bytes, replies: int = 1, *, retry: bool = True
    ) -> list[Any]:
        try:
            return await self.hot.call(key, packed, replies, retry=retry)
        except (RedisError, RedisClusterException) as e:
            raise StoreError(f"redis: {e}") from e

    async def command(self, key: str, *args: Arg, retry: bool = True) -> Any:
        (reply,) = await self._call(key, pack(*args), retry=retry)
        return reply

    async def script(
        self, script: scripts.Script, keys: Sequence[str], args: Sequence[Arg], *, wait: bool = False
    ) -> list[Any]:
        body = bulks((*keys, *args))
        return await self._packed_script(
            script, keys[0], len(keys), len(keys) + len(args), body, wait
        )

    async def commit(self, c: Commit, tail: tuple[int, ...], *, wait: bool) -> list[Any]:
        packed_tail = self._tails.get(tail)
        if packed_tail is None:
            packed_tail = self._tails[tail] = bulks(tail)
        return await self._packed_script(
            scripts.COMMIT, keys.game_keys(c.game_id)[0], commit_args.COMMIT_KEYS,
            commit_args.COMMIT_ITEMS,
            commit_args.packed(c) + packed_tail + commit_args.packed_clock(c), wait,
            commit_args.COMMIT_HEAD,
        )  # fmt: skip

    async def _packed_script(
        self, script: scripts.Script, key: str, nkeys: int, items: int, body: bytes, wait: bool,
        head: bytes = b"",
    ) -> list[Any]:  # fmt: skip
        """``script`` with the keys and arguments (``items`` of them, ``nkeys`` keys, the
        first ``key``) packed already (``body``); ``head``: the EVALSHA command's start, if
        the caller has it packed too."""
        extra, replies = (self._wait, 2) if wait else (b"", 1)
        head = head or b"*%d\r\n" % (items + 3) + bulks(("EVALSHA", script.sha, nkeys))
        try:
            return await self._call(key, head + body + extra, replies)
        except StoreError as e:
            if not isinstance(e.__cause__, NoScriptError):  # (NOSCRIPT: nothing was run)
                raise
        head = b"*%d\r\n" % (items + 3) + bulks(("EVAL", script.source, nkeys))
        return await self._call(key, head + body + extra, replies)

    async def ping(self) -> None:
        if self._cluster:
            try:
                await self._client.ping()
            except (RedisError, RedisClusterException) as e:
                raise StoreError(f"redis: {e}") from e
        else:
            await self._call("", pack("PING"), retry=False)

    async def close(self) -> None:
        await self.hot.close()
