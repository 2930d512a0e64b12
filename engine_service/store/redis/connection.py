"""How the store reaches Redis: one small interface, one implementation per client library
(``RedisStore(client=...)``). The store's parts call only this for the game's own keys and
for watching; each implementation routes a command by its key (a Cluster's slots, MOVED and
ASK, failovers), retries what is safe to send again, and raises StoreError for the rest."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from engine_service.store.base import Commit
from engine_service.store.redis import commit_args, scripts

Arg = bytes | str | int


class Connection(abc.ABC):
    def __init__(self, wait_replicas: int, wait_timeout_ms: int) -> None:
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms

    @abc.abstractmethod
    async def command(self, key: str, *args: Arg, retry: bool = True) -> Any:
        """The reply of one command sent where ``key`` lives. A dropped connection or a
        timeout is retried until the store's retry time has passed, unless ``retry`` is
        False (then only redirections are followed)."""

    @abc.abstractmethod
    async def script(
        self, script: scripts.Script, keys: Sequence[str], args: Sequence[Arg], *, wait: bool = False
    ) -> list[Any]:
        """[the script's reply]: EVALSHA, else EVAL (Redis restarted, flushed, or a replica
        promoted); with ``wait``, [its reply, the replicas that WAIT counted], WAIT sent on
        the same connection (it counts the replicas holding that connection's writes)."""

    async def commit(self, c: Commit, tail: tuple[int, ...], *, wait: bool) -> list[Any]:
        """commit.lua for ``c`` (``tail``: its last arguments, the store's settings), as
        ``script`` answers."""
        keys_, args = commit_args.items(c, tail)
        return await self.script(scripts.COMMIT, keys_, args, wait=wait)

    @abc.abstractmethod
    async def ping(self) -> None:
        """One attempt, no retries: a health check wants the answer of now."""

    @abc.abstractmethod
    async def close(self) -> None: ...
