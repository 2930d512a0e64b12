"""The worker's Celery transport for a broker behind Redis Sentinel: kombu's, with one repair.

When the broker's primary fails over, Celery's consumer drops its connection (``collect``,
which detaches the transport from the connection) and then closes it; kombu's Sentinel
channel, asked then to put the unacknowledged task back in the queue, looks up the detached
connection's settings and raises AttributeError, which Celery takes for an unrecoverable
error: the worker stops consuming while its process lives on (seen in
tests/failover/test_sentinel.py about once in four failovers). Here that lookup fails as a
lost connection does, which Celery handles: it reconnects through the Sentinels. The task stays
in the broker's unacknowledged set, put back after the visibility timeout (expired by then:
the engine's sweeper has sent the move again)."""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError

NAME = f"{__name__}:SentinelTransport"  # (Celery's broker_transport)


class SentinelChannel(kombu_redis.SentinelChannel):
    def _connparams(self, asynchronous: bool = False) -> Any:
        if self.connection is None or self.connection.client is None:
            raise RedisConnectionError("the broker connection is closed (a failover)")
        return super()._connparams(asynchronous)  # type: ignore[no-untyped-call]


class SentinelTransport(kombu_redis.SentinelTransport):
    Channel = SentinelChannel
