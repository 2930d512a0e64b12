"""coredis (``client="coredis"``): an asyncio client with its own pool (requests pipelined on
shared connections), RedisCluster, retry policies and WAIT after a command
(``ensure_replication``). Its pool lives in a task group entered with ``async with client``:
a task of this connection's own holds it open from the first call until ``close``."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import coredis
from coredis.exceptions import (
    ClusterDownError,
    NoScriptError,
    RedisError,
    ReplicationError,
    TryAgainError,
)
from coredis.exceptions import (
    ConnectionError as CoredisConnectionError,
)
from coredis.response._callbacks import NoopCallback
from coredis.retry import ExponentialBackoffRetryPolicy, NoRetryPolicy
from coredis.typing import Key

from engine_service.store.base import StoreError
from engine_service.store.redis import scripts
from engine_service.store.redis.connection import Arg, Connection


class Coredis(Connection):
    def __init__(
        self, url: str, cluster: bool, timeout: float, retry_seconds: float, wait_replicas: int,
        wait_timeout_ms: int,
    ) -> None:  # fmt: skip
        super().__init__(wait_replicas, wait_timeout_ms)
        passing = (CoredisConnectionError, TimeoutError, ClusterDownError, TryAgainError)
        retrying = ExponentialBackoffRetryPolicy(passing, None, deadline=retry_seconds,
                                                 base_delay=0.05, max_delay=0.5)  # fmt: skip
        cls: Any = coredis.RedisCluster if cluster else coredis.Redis
        kw: dict[str, Any] = {"stream_timeout": timeout or None, "connect_timeout": timeout or None}
        self._r: Any = cls.from_url(url, retry_policy=retrying, **kw)
        self._once: Any = cls.from_url(url, retry_policy=NoRetryPolicy(), **kw)
        self._holder: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._failed: BaseException | None = None

    async def _hold(self) -> None:
        try:
            async with self._r, self._once:
                self._ready.set()
                await self._closing.wait()
        except BaseException as e:
            self._failed = e
            self._ready.set()
            raise

    async def _started(self) -> None:
        if self._holder is None:
            self._holder = asyncio.get_running_loop().create_task(self._hold())
        await self._ready.wait()
        if self._failed is not None:
            raise StoreError(f"redis: {self._failed}") from self._failed

    async def command(self, key: str, *args: Arg, retry: bool = True) -> Any:
        if not self._ready.is_set() or self._failed:
            await self._started()
        c = self._r if retry else self._once
        name = args[0].encode() if isinstance(args[0], str) else bytes(args[0])
        rest: list[Any] = list(args[1:])
        # coredis routes by the arguments marked as keys: ``key``, or XREAD's streams
        streams = rest.index("STREAMS") + 1 if name == b"XREAD" else len(rest)
        n = (len(rest) - streams) // 2
        for i, a in enumerate(rest):
            if a == key or streams <= i < streams + n:
                rest[i] = Key(a)
        try:
            return await c.execute_command(c.create_request(name, *rest, callback=NoopCallback()))
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e

    async def script(
        self, script: scripts.Script, keys: Sequence[str], args: Sequence[Arg], *, wait: bool = False
    ) -> list[Any]:
        if not self._ready.is_set() or self._failed:
            await self._started()
        try:
            if not wait:
                return [await self._run(script, keys, args)]
            with self._r.ensure_replication(self.wait_replicas, self.wait_timeout_ms):
                reply = await self._run(script, keys, args)
            return [reply, self.wait_replicas]
        except ReplicationError as e:  # (it does not say how many replicas WAIT counted)
            raise StoreError(f"redis: {e}") from e
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e

    async def _run(self, script: scripts.Script, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        try:
            return await self._r.evalsha(script.sha, list(keys), list(args))
        except NoScriptError:
            return await self._r.eval(script.source, list(keys), list(args))

    async def ping(self) -> None:
        if not self._ready.is_set() or self._failed:
            await self._started()
        try:
            await self._once.ping()
        except RedisError as e:
            raise StoreError(f"redis: {e}") from e

    async def close(self) -> None:
        self._closing.set()
        if self._holder is not None:
            await asyncio.gather(self._holder, return_exceptions=True)
