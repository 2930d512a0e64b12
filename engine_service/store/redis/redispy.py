"""redis-py's own client (``client="redis-py"``): its connection pool and command layer,
hiredis parsing the replies, and on a Cluster its RedisCluster (the slot map, MOVED and ASK).
A call cut by a dropped connection or a timeout is sent again by the store until its retry time
has passed (redis-py's own retries count attempts, each up to the timeout long)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import (
    ClusterDownError,
    NoScriptError,
    RedisClusterException,
    RedisError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from engine_service.store.base import StoreError
from engine_service.store.redis import primary, scripts
from engine_service.store.redis.connection import Arg, Connection

T = TypeVar("T")
_MAX_CONNECTIONS = 256  # per node
# Errors of a moment (a dropped connection, a primary failing over, a slot moving): the
# store's calls are safe to send again (reads, and scripts that recognise themselves)
_PASSING = (RedisConnectionError, RedisTimeoutError, TryAgainError, ClusterDownError,
            SlotNotCoveredError)  # fmt: skip


def _raw(response: Any, **options: Any) -> Any:
    return response


class RedisPy(Connection):
    def __init__(
        self, url: str, cluster: bool, common: dict[str, Any], retry_seconds: float,
        wait_replicas: int, wait_timeout_ms: int,
    ) -> None:  # fmt: skip
        super().__init__(wait_replicas, wait_timeout_ms)
        self._cluster = cluster
        self._retry_seconds = retry_seconds
        once = {**common, "retry": Retry(NoBackoff(), 0)}  # (the store retries whole calls)
        self._r: Any
        self._sentinel: Any = None
        if cluster:
            self._r = RedisCluster.from_url(url, max_connections=_MAX_CONNECTIONS, **once)
        else:
            self._r, self._sentinel = primary.client(url, max_connections=_MAX_CONNECTIONS,
                                                     health_check_interval=30, **once)  # fmt: skip
        self._r.set_response_callback("XREAD", _raw)  # (the store reads the reply as Redis sends it)

    async def _retrying(self, call: Callable[[], Awaitable[T]], retry: bool = True) -> T:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self._retry_seconds if retry else 0.0)
        delay = 0.05
        while True:
            try:
                return await call()
            except _PASSING as e:
                failure: Exception = e
            except (RedisError, RedisClusterException) as e:
                raise StoreError(f"redis: {e}") from e
            if loop.time() + delay > deadline:
                raise StoreError(f"redis: {failure}") from failure
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    async def command(self, key: str, *args: Arg, retry: bool = True) -> Any:
        return await self._retrying(lambda: self._r.execute_command(*args), retry)

    async def script(
        self, script: scripts.Script, keys: Sequence[str], args: Sequence[Arg], *, wait: bool = False
    ) -> list[Any]:
        if not wait:
            return [await self._retrying(lambda: self._run(script, keys, args))]
        replies = await self._retrying(
            lambda: self._with_wait(keys[0], "EVALSHA", script.sha, len(keys), *keys, *args)
        )
        if isinstance(replies[0], NoScriptError):
            replies = await self._retrying(
                lambda: self._with_wait(keys[0], "EVAL", script.source, len(keys), *keys, *args)
            )
        for reply in replies:
            if isinstance(reply, Exception):
                raise StoreError(f"redis: {reply}") from reply
        return replies

    async def _run(self, script: scripts.Script, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        try:
            return await self._r.evalsha(script.sha, len(keys), *keys, *args)
        except NoScriptError:  # (nothing was run)
            return await self._r.eval(script.source, len(keys), *keys, *args)

    async def _with_wait(self, key: str, *command: Arg) -> list[Any]:
        """``command`` then WAIT, pipelined on one connection (a Cluster's: the key's node)."""
        async with self._r.pipeline(transaction=False) as p:
            p.execute_command(*command)
            target = {"target_nodes": self._r.get_node_from_key(key)} if self._cluster else {}
            p.execute_command("WAIT", self.wait_replicas, self.wait_timeout_ms, **target)
            replies = list(await p.execute(raise_on_error=False))
        for reply in replies:
            if isinstance(reply, _PASSING):  # (the pair is sent again)
                raise reply
        return replies

    async def ping(self) -> None:
        await self._retrying(lambda: self._r.ping(), retry=False)

    async def close(self) -> None:
        await self._r.aclose()
        if self._sentinel is not None:
            await self._sentinel.aclose()
