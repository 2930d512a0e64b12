"""What every part of the Redis store shares: its connection (``connection.py``, the client
library chosen by ``client``), redis-py's client for the walkers over the buckets, the settings
as the scripts take them, and the confirmation by replicas (WAIT) that follows a write when
``wait_replicas`` asks for it."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisClusterException, RedisError

from engine_service import redis_urls
from engine_service.store import keys
from engine_service.store.base import Store, StoreError, StoreSettings
from engine_service.store.redis import primary, scripts
from engine_service.store.redis.connection import Arg, Connection
from engine_service.store.redis.link import RETRYABLE, HandWritten

T = TypeVar("T")

MAX_CONNECTIONS = 256  # of redis-py's pool (per node), and again of the hot path's
NEWS_LENGTH = 256  # entries a bucket's news stream keeps (about: it is trimmed by nodes)
# An unfinished game's keys live its idle time after its last move, and up to 1/LEASE_MARGIN
# of it longer: their expiry is renewed once per that margin, not at every move (commit.lua).
LEASE_MARGIN = 256
CLIENTS = ("hand", "redis-py")  # the Connection implementations (``client``)


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
        client: str = "hand",
    ) -> None:
        if mode not in ("standalone", "cluster"):
            raise ValueError(f"Redis mode must be standalone or cluster, not {mode!r}")
        if mode == "cluster" and redis_urls.is_sentinel(url):
            raise ValueError("a Redis Cluster is not reached through Sentinel")
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
        self._sentinel: Any = None  # the Sentinels' client (redis+sentinel://)
        if mode == "cluster":
            from redis.asyncio.cluster import RedisCluster

            self.r = RedisCluster.from_url(url, max_connections=MAX_CONNECTIONS, **common)
        else:  # (a primary that may fail over: primary.py)
            self.r, self._sentinel = primary.client(
                url, health_check_interval=30, max_connections=MAX_CONNECTIONS, **common
            )
        self._conn: Connection
        if client == "hand":
            self._conn = HandWritten(self.r, mode == "cluster", MAX_CONNECTIONS, timeout or None,
                                     retry_seconds, wait_replicas, wait_timeout_ms)  # fmt: skip
            self._hot = self._conn.hot
        elif client == "redis-py":
            from engine_service.store.redis.redispy import RedisPy

            self._conn = RedisPy(url, mode == "cluster", common, retry_seconds, wait_replicas,
                                 wait_timeout_ms)  # fmt: skip
        else:
            raise ValueError(f"Redis client must be one of {', '.join(CLIENTS)}, not {client!r}")
        st = self.settings
        idle_ms = st.idle_ttl * 1000
        # The commit script's last arguments (commit.lua), the same for every commit
        self._commit_tail = (st.window, idle_ms, idle_ms + idle_ms // LEASE_MARGIN,
                             st.finished_ttl, st.finished_window_ttl, NEWS_LENGTH)  # fmt: skip
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
        keys_: Sequence[str],
        args: Sequence[Arg],
        *,
        wait: bool = False,
    ) -> list[Any]:
        """See Connection.script."""
        return await self._conn.script(script, keys_, args, wait=wait)

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
        replies = await self._script(self._touch, (key,), (), wait=True)
        self._check_replicas(replies[1], what)

    async def ping(self) -> None:
        await self._conn.ping()

    async def close(self) -> None:
        await self._conn.close()
        await self.r.aclose()
        if self._sentinel is not None:
            await self._sentinel.aclose()
