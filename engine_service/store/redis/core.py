"""What every part of the Redis store shares: the client and the hot path's connections, the
settings as the scripts take them, and running a script (EVALSHA, else EVAL) with the
confirmation by replicas (WAIT) that follows a write when ``wait_replicas`` asks for it."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import NoScriptError, RedisClusterException, RedisError

from engine_service.store import keys
from engine_service.store.base import Store, StoreError, StoreSettings
from engine_service.store.redis import scripts
from engine_service.store.redis.link import RETRYABLE, HotPath
from engine_service.store.redis.resp import bulks, pack

T = TypeVar("T")

MAX_CONNECTIONS = 256  # of redis-py's pool (per node), and again of the hot path's
NEWS_LENGTH = 256  # entries a bucket's news stream keeps (about: it is trimmed by nodes)
# An unfinished game's keys live its idle time after its last move, and up to 1/LEASE_MARGIN
# of it longer: their expiry is renewed once per that margin, not at every move (commit.lua).
LEASE_MARGIN = 256


class RedisCore(Store):
    kind = "redis"
    _touch = scripts.TOUCH

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
            "retry_on_error": list(RETRYABLE),
        }
        # redis-py's annotations answer ``bytes | str`` everywhere; this client returns bytes.
        self.r: Any
        if mode == "cluster":
            from redis.asyncio.cluster import RedisCluster

            self.r = RedisCluster.from_url(url, max_connections=MAX_CONNECTIONS, **common)
        else:
            self.r = aioredis.Redis.from_url(
                url, health_check_interval=30, max_connections=MAX_CONNECTIONS, **common
            )
        self._hot = HotPath(
            self.r, mode == "cluster", MAX_CONNECTIONS, timeout or None, retry_seconds
        )
        st = self.settings
        idle_ms = st.idle_ttl * 1000
        # The commit script's last arguments (commit.lua), the same for every commit
        self._commit_settings = bulks((st.window, idle_ms, idle_ms + idle_ms // LEASE_MARGIN,
                                       st.finished_ttl, st.finished_window_ttl, NEWS_LENGTH))  # fmt: skip
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
        script: scripts.Script,
        keys_: list[str] | tuple[str, ...],
        args: Any,
        extra: bytes = b"",
        replies: int = 1,
    ) -> list[Any]:
        """EVALSHA on the hot path (plus ``extra`` commands after it on the same connection);
        EVAL (which also caches it) on a Redis that does not know the script: restarted,
        flushed, or a replica promoted by a failover."""
        body = bulks((*keys_, *args))
        return await self._packed_script(
            script, keys_[0], len(keys_), len(keys_) + len(args), body, extra, replies
        )

    async def _packed_script(
        self, script: scripts.Script, key: str, nkeys: int, items: int, body: bytes,
        extra: bytes, replies: int, head: bytes = b"",
    ) -> list[Any]:  # fmt: skip
        """``_script`` with the keys and arguments (``items`` of them, ``nkeys`` keys, the
        first ``key``) packed already (``body``); ``head``: the EVALSHA command's start, if
        the caller has it packed too."""
        head = head or b"*%d\r\n" % (items + 3) + bulks(("EVALSHA", script.sha, nkeys))
        try:
            return await self._guard(self._hot.call(key, head + body + extra, replies))
        except StoreError as e:
            if not isinstance(e.__cause__, NoScriptError):  # (NOSCRIPT: nothing was run)
                raise
        head = b"*%d\r\n" % (items + 3) + bulks(("EVAL", script.source, nkeys))
        return await self._guard(self._hot.call(key, head + body + extra, replies))

    def _wait(self) -> bytes:
        return pack("WAIT", self._wait_replicas, self._wait_timeout_ms)

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

    async def ping(self) -> None:
        """One attempt, no retries: a health check wants the answer of now."""
        if self.mode == "cluster":
            await self._guard(self.r.ping())
        else:
            await self._guard(self._hot.call("", pack("PING"), retry=False))

    async def close(self) -> None:
        await self._hot.close()
        await self.r.aclose()
