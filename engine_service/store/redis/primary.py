"""Reaching the primary of a standalone Redis that may fail over: redis-py's client for a URL,
with connections that follow the primary.

- ``redis://``, ``rediss://``: one address, behind which the primary may change (a managed
  service's primary endpoint, a DNS name, a proxy). A server that answers ``READONLY`` (or
  unblocks a blocked read because it turned into a replica) is no longer the primary: the
  connection is dropped, every other connection of the client is dropped before its next
  command (none goes on reading from the replica), and the call fails with ``PrimaryMoved``,
  a ConnectionError, which the store retries on a fresh connection, i.e. at the address's
  primary of now. Nothing was applied: a replica refuses every write, a script's first.
- ``redis+sentinel://``, ``rediss+sentinel://`` (engine_service/redis_urls.py): redis-py's
  Sentinel support: each new connection asks the Sentinels for the primary's address; the
  same connections as above on top.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.connection import Connection, SSLConnection, parse_url
from redis.asyncio.sentinel import MasterNotFoundError, Sentinel, SentinelManagedConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ReadOnlyError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.sentinel import DEMOTED_MASTER_UNBLOCKED_ERROR

from engine_service import redis_urls

UNRESOLVED = "primary-not-yet-named-by-sentinel.invalid"  # (.invalid never resolves: RFC 2606)


class PrimaryMoved(RedisConnectionError):
    """The server is a replica now: reconnect (to the primary) and send the call again."""


class Failovers:
    """What the connections of one client know: how many times one of them found its server
    demoted. A connection made before the last time is dropped before its next command."""

    def __init__(self) -> None:
        self.seen = 0


class PrimaryConnection(Connection):
    _resolves = False  # connect() finds the address (the Sentinels' subclass)

    def __init__(self, *, failovers: Failovers | None = None, **kwargs: Any) -> None:
        self._failovers = failovers or Failovers()
        self._epoch = self._failovers.seen
        super().__init__(**kwargs)

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if self._epoch != self._failovers.seen:
            await self.disconnect()  # (made before a failover: maybe to the old primary)
            self._epoch = self._failovers.seen
        if self._resolves and not self.is_connected:
            # redis-py's Sentinel connection asks for the primary's address in connect() only;
            # a connection first used by sending (the store's hot path) would go elsewhere.
            await self.connect()  # type: ignore[no-untyped-call]
        await super().send_packed_command(command, check_health)

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().read_response(*args, **kwargs)
        except ReadOnlyError as e:
            failure: ResponseError = e
        except ResponseError as e:
            if not str(e).startswith(DEMOTED_MASTER_UNBLOCKED_ERROR):
                raise
            failure = e
        self._failovers.seen += 1
        self._epoch = self._failovers.seen
        await self.disconnect()
        raise PrimaryMoved(f"{self.host}:{self.port} is a replica now ({failure})") from failure


class PrimarySSLConnection(PrimaryConnection, SSLConnection):
    pass


class SentinelPrimaryConnection(SentinelManagedConnection, PrimaryConnection):
    _resolves = True


class SentinelPrimarySSLConnection(SentinelPrimaryConnection, SSLConnection):
    pass


class Sentinels(Sentinel):
    """redis-py's Sentinel client, with an error that says in one line what each Sentinel
    answered when none names a primary (redis-py's repeats each client's settings)."""

    async def discover_master(self, service_name: str) -> tuple[str, int]:
        problems = []
        for i, sentinel in enumerate(self.sentinels):
            kwargs = sentinel.connection_pool.connection_kwargs
            where = f"{kwargs.get('host')}:{kwargs.get('port')}"
            try:
                masters: Any = await sentinel.sentinel_masters()
            except (RedisConnectionError, RedisTimeoutError, ResponseError) as e:
                problems.append(f"{where}: {type(e).__name__}: {e}")
                continue
            state = masters.get(service_name)
            if state and self.check_master_state(state, service_name):
                self.sentinels[0], self.sentinels[i] = sentinel, self.sentinels[0]  # (asked first)
                return state["ip"], int(state["port"])
            problems.append(f"{where}: " + ("its primary is down" if state else "monitors no such service"))
        raise MasterNotFoundError(
            f"no Sentinel names the primary of {service_name!r} ({'; '.join(problems)})"
        )


def client(url: str, **kwargs: Any) -> tuple[Any, Sentinel | None]:
    """(redis-py's asyncio client of the primary ``url`` names, the Sentinel client it asks,
    if any: the caller closes both). ``kwargs``: the pool's and the connections' settings."""
    failovers = Failovers()
    if not redis_urls.is_sentinel(url):
        scheme = redis_urls.scheme_of(url)
        classes = {"redis": PrimaryConnection, "rediss": PrimarySSLConnection}
        if scheme in classes:
            kwargs = {**kwargs, "connection_class": classes[scheme], "failovers": failovers}
        return aioredis.Redis.from_url(url, **kwargs), None
    s = redis_urls.parse_sentinel(url)
    server = parse_url(s.server_url())  # credentials, database, TLS options
    server.pop("host", None)
    server.pop("port", None)
    server.pop("connection_class", None)
    asking = {**redis_urls.SENTINEL_TIMEOUTS, **s.sentinel_credentials()}
    if s.tls:
        asking.update(ssl=True, **{k: v for k, v in server.items() if k.startswith("ssl_")})
    sentinel = Sentinels(s.sentinels, sentinel_kwargs=asking)
    cls = SentinelPrimarySSLConnection if s.tls else SentinelPrimaryConnection
    # (An address no connection can reach until the Sentinels give the primary's: never a
    # default one, a local Redis that is not ours.)
    primary = sentinel.master_for(s.service, redis_class=aioredis.Redis, connection_class=cls,
                                  failovers=failovers, host=UNRESOLVED, **server, **kwargs)  # fmt: skip
    return primary, sentinel
