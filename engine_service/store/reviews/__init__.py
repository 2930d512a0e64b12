"""Where game reviews are kept: one rated decision per (seat, version), as long as the game.

A review (``ReviewGame``) rates a seat's past decisions with a search each; what it rated is
kept so that asking again costs nothing (and a review cut short goes on where it stopped).
Each entry is one serialized ``DecisionReview`` under the field ``"<seat>:<version>"``; a
later review with a larger search budget replaces it (the caller decides: see
``engine_service/server/review.py``). Entries live exactly as long as their game: a game that
has expired or been deleted has none.

- Redis: one hash per game, ``asc:{B}:v:G``, in the game's bucket (the same Cluster slot as
  its record); every read and write is one Lua script (``get.lua``, ``put.lua``, package
  data) that also sets the hash's expiry to the record's.
- In process: a dict per game, dropped once the memory store no longer holds the game.

:func:`review_store` finds the implementation behind a server's store (through its wrappers).
"""

from __future__ import annotations

import abc
import threading
from importlib import resources
from typing import Any

from engine_service.store import keys
from engine_service.store.base import Store, StoreError
from engine_service.store.keys import reviews_key

PRUNE_EVERY = 64  # writes between looks for games the memory store no longer holds


def field(seat: int, version: int) -> str:
    return f"{seat}:{version}"


class ReviewStore(abc.ABC):
    @abc.abstractmethod
    async def get(self, game_id: str, fields: list[str]) -> dict[str, bytes]:
        """The stored entries among ``fields`` (those there are)."""

    @abc.abstractmethod
    async def put(self, game_id: str, name: str, data: bytes) -> bool:
        """Keep ``data`` under ``name``; False (nothing kept) when the game has gone."""


class MemoryReviews(ReviewStore):
    """For the in-process store: entries of a game are dropped when the store loses it."""

    def __init__(self, games: Store) -> None:
        self.games = games
        self._entries: dict[str, dict[str, bytes]] = {}
        self._lock = threading.Lock()
        self._writes = 0

    async def get(self, game_id: str, fields: list[str]) -> dict[str, bytes]:
        if await self.games.load(game_id) is None:
            with self._lock:
                self._entries.pop(game_id, None)
            return {}
        with self._lock:
            kept = self._entries.get(game_id, {})
            return {f: kept[f] for f in fields if f in kept}

    async def put(self, game_id: str, name: str, data: bytes) -> bool:
        if await self.games.load(game_id) is None:
            return False
        with self._lock:
            self._entries.setdefault(game_id, {})[name] = data
            self._writes += 1
            prune = self._writes % PRUNE_EVERY == 0
            ids = list(self._entries) if prune else []
        for gid in ids:
            if await self.games.load(gid) is None:
                with self._lock:
                    self._entries.pop(gid, None)
        return True


def _script(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.lua").read_text("utf-8")


GET_LUA = _script("get")
PUT_LUA = _script("put")


class RedisReviews(ReviewStore):
    """``client``: the Redis store's redis-py client (standalone or Cluster)."""

    def __init__(self, client: Any) -> None:
        self.r = client
        self._get = client.register_script(GET_LUA)
        self._put = client.register_script(PUT_LUA)

    async def _call(self, script: Any, keys_: list[str], args: list[Any]) -> Any:
        from redis.exceptions import RedisClusterException, RedisError

        try:
            return await script(keys=keys_, args=args)
        except (RedisError, RedisClusterException) as e:
            raise StoreError(f"redis: {e}") from e

    async def get(self, game_id: str, fields: list[str]) -> dict[str, bytes]:
        if not fields:
            return {}
        record = keys.game_keys(game_id)[0]
        values = await self._call(self._get, [record, reviews_key(game_id)], list(fields))
        return {f: v for f, v in zip(fields, values or [], strict=False) if v}

    async def put(self, game_id: str, name: str, data: bytes) -> bool:
        record = keys.game_keys(game_id)[0]
        done = await self._call(self._put, [record, reviews_key(game_id)], [name, data])
        return bool(done)


def review_store(store: Store) -> ReviewStore:
    """The review store that goes with ``store`` (a server's store, wrappers and all)."""
    inner: Any = store
    while hasattr(inner, "inner"):
        inner = inner.inner
    if inner.kind == "redis" and hasattr(inner, "r"):
        return RedisReviews(inner.r)
    return MemoryReviews(inner)
