"""The Redis store: every write of a game is one Lua script (atomic compare-and-set).

Standalone Redis (one address, or the primary Redis Sentinel names) or Redis Cluster
(``mode``); the key layout in ``keys.py`` puts everything one script touches in one slot. The commit script checks the version and commit id it builds on
(and the idempotency key), then writes the state, appends the update to the game's window
(dropping the idempotency key of the version that leaves it), appends the replay log entry,
sets or clears the pending AI move, updates the bucket's indexes and sets the game's expiry
(while it goes on, a lease of its idle time and a little more, renewed once less than the
idle time is left; finished once it is over), all in one step: a game is never half
written. A commit sent again (its connection dropped before the reply) recognises itself by
its commit id, so a retry never applies a move twice.

Durability is Redis's own (``appendfsync``; see docs/reliability.md); with ``wait_replicas``
each commit is also confirmed by that many replicas (``WAIT``) before it is acknowledged.

The store is made of parts, one module each, in ``engine_service/store/redis/`` (its
``__init__`` lists them); the scripts are ``engine_service/store/redis/lua/*.lua``.
"""

from __future__ import annotations

from engine_service.store.redis.games import RedisGames
from engine_service.store.redis.index import RedisIndex
from engine_service.store.redis.watch import RedisWatch


class RedisStore(RedisGames, RedisWatch, RedisIndex):
    """Games in Redis (standalone, or a Cluster with ``mode="cluster"``)."""


__all__ = ["RedisStore"]
