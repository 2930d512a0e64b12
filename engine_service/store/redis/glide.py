"""valkey-glide (``client="glide"``): a Rust core (connections, a Cluster's topology, MOVED
and ASK, reconnection) under a thin Python layer; a call cut by a dropped connection or a
timeout is sent again by the store (its commands are safe to send again). glide sends every
request to a node on one shared connection, so a blocking read (a watcher's XREAD BLOCK) would
hold up every request behind it: each blocking read takes a client of its own, kept for the
next one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from glide import (
    Batch,
    BatchOptions,
    ClusterBatch,
    ClusterBatchOptions,
    GlideClient,
    GlideClientConfiguration,
    GlideClusterClient,
    GlideClusterClientConfiguration,
    GlideError,
    NodeAddress,
    ServerCredentials,
    SlotKeyRoute,
    SlotType,
)
from glide import ConnectionError as GlideConnectionError
from glide import Script as GlideScript
from glide import TimeoutError as GlideTimeoutError

from engine_service.store.base import StoreError
from engine_service.store.redis import scripts
from engine_service.store.redis.connection import Arg, Connection

T = TypeVar("T")
# Errors of a moment (a primary failing over, a slot moving): the call is sent again
_PASSING = ("CLUSTERDOWN", "TRYAGAIN", "LOADING", "MASTERDOWN", "READONLY")


def _argv(args: Sequence[Arg]) -> list[str | bytes]:
    return [a if isinstance(a, str | bytes) else str(a) for a in args]


class Glide(Connection):
    def __init__(
        self, url: str, cluster: bool, timeout: float, retry_seconds: float, wait_replicas: int,
        wait_timeout_ms: int,
    ) -> None:  # fmt: skip
        super().__init__(wait_replicas, wait_timeout_ms)
        u = urlsplit(url)
        if u.scheme not in ("redis", "rediss"):
            raise ValueError(f"the glide client takes redis:// or rediss:// URLs, not {url!r}")
        credentials = None
        if u.password:
            credentials = ServerCredentials(unquote(u.password), unquote(u.username or "") or None)
        self._config: dict[str, Any] = {
            "addresses": [NodeAddress(u.hostname or "localhost", u.port or 6379)],
            "use_tls": u.scheme == "rediss",
            "credentials": credentials,
            "request_timeout": max(1, int((timeout or 10.0) * 1000)),
        }
        if not cluster:
            self._config["database_id"] = int(u.path.strip("/") or 0)
        self._cluster = cluster
        self._retry_seconds = retry_seconds
        self._client: Any = None
        self._lock = asyncio.Lock()
        self._scripts: dict[str, GlideScript] = {}
        self._blocking: list[Any] = []  # clients for blocking reads, free

    async def _create(self) -> Any:
        try:
            if self._cluster:
                return await GlideClusterClient.create(GlideClusterClientConfiguration(**self._config))
            return await GlideClient.create(GlideClientConfiguration(**self._config))
        except GlideError as e:
            raise StoreError(f"redis: {e}") from e

    async def _connect(self) -> Any:
        async with self._lock:
            if self._client is None:
                self._client = await self._create()
        return self._client

    async def _retrying(self, call: Callable[[], Awaitable[T]], retry: bool = True) -> T:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self._retry_seconds if retry else 0.0)
        delay = 0.05
        while True:
            try:
                return await call()
            except (GlideConnectionError, GlideTimeoutError) as e:
                failure: GlideError = e
            except GlideError as e:
                if not str(e).startswith(_PASSING):
                    raise StoreError(f"redis: {e}") from e
                failure = e
            if loop.time() + delay > deadline:
                raise StoreError(f"redis: {failure}") from failure
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    async def command(self, key: str, *args: Arg, retry: bool = True) -> Any:
        argv = _argv(args)
        if "BLOCK" in argv:
            c = self._blocking.pop() if self._blocking else await self._create()
            try:
                return await self._command(c, key, argv, retry)
            finally:
                self._blocking.append(c)
        return await self._command(self._client or await self._connect(), key, argv, retry)

    async def _command(self, c: Any, key: str, argv: list[str | bytes], retry: bool) -> Any:
        if self._cluster:
            route = SlotKeyRoute(SlotType.PRIMARY, key)
            reply = await self._retrying(lambda: c.custom_command(argv, route), retry)
        else:
            reply = await self._retrying(lambda: c.custom_command(argv), retry)
        if argv[0] == "XREAD" and reply:
            # glide answers {stream: {id: [[field, value], ...]}}: the entries as Redis sends them
            return {name: [[i, [x for pair in fields for x in pair]] for i, fields in es.items()]
                    for name, es in reply.items()}  # fmt: skip
        return reply

    async def script(
        self, script: scripts.Script, keys: Sequence[str], args: Sequence[Arg], *, wait: bool = False
    ) -> list[Any]:
        c = self._client or await self._connect()
        ks, argv = list(keys), _argv(args)
        if not wait:
            g = self._scripts.get(script.name)
            if g is None:
                g = self._scripts[script.name] = GlideScript(script.source)  # type: ignore[no-untyped-call]
            return [await self._retrying(lambda: c.invoke_script(g, keys=ks, args=argv))]
        head: list[str | bytes] = ["EVALSHA", script.sha, str(len(ks))]
        replies = await self._retrying(lambda: self._with_wait(c, ks[0], [*head, *ks, *argv]))
        if isinstance(replies[0], GlideError) and "noscript" in str(replies[0]).lower():
            head = ["EVAL", script.source, str(len(ks))]
            replies = await self._retrying(lambda: self._with_wait(c, ks[0], [*head, *ks, *argv]))
        for reply in replies:
            if isinstance(reply, GlideError):
                raise StoreError(f"redis: {reply}") from reply
        return replies

    async def _with_wait(self, c: Any, key: str, command: list[str | bytes]) -> list[Any]:
        """``command`` then WAIT, one pipeline on the key's node's connection."""
        wait = ["WAIT", str(self.wait_replicas), str(self.wait_timeout_ms)]
        if self._cluster:
            batch: Any = ClusterBatch(is_atomic=False)
            options: Any = ClusterBatchOptions(route=SlotKeyRoute(SlotType.PRIMARY, key))
        else:
            batch, options = Batch(is_atomic=False), BatchOptions()
        batch.custom_command(command)
        batch.custom_command(wait)
        return list(await c.exec(batch, raise_on_error=False, options=options))

    async def ping(self) -> None:
        c = self._client or await self._connect()
        await self._retrying(lambda: c.custom_command(["PING"]), retry=False)

    async def close(self) -> None:
        clients, self._blocking = self._blocking, []
        if self._client is not None:
            clients.append(self._client)
            self._client = None
        for c in clients:
            await c.close()
