"""Who is here: the seats whose player has a WatchGame stream open, on any replica.

Each replica keeps, per game it serves streams of, which seats its streams hold, and one
poller per such game renews them in the store (a member per seat and replica that lapses
``ttl`` after its last renewal: a replica that dies takes its seats away within that) and
reads back who is present by any replica. Its streams are told when that changes. A seat
comes as soon as its stream opens and goes as soon as its last one closes on this replica;
another replica's streams see it at their next poll (``refresh`` seconds).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from engine_service.store import Store, StoreError, new_commit_id

log = logging.getLogger("ascension.engine.presence")
Seats = tuple[int, ...]


@dataclass(slots=True)
class _Game:
    held: collections.Counter[int] = field(default_factory=collections.Counter)
    let_go: set[int] = field(default_factory=set)
    listeners: set[asyncio.Queue[Seats]] = field(default_factory=set)
    present: Seats | None = None  # as last read (None: not yet)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class Presence:
    def __init__(self, store: Store, refresh: float = 5.0) -> None:
        self.store = store
        self.refresh = refresh
        self.ttl_ms = int(refresh * 3 * 1000)
        self.holder = new_commit_id()  # this replica, in the store's members
        self._games: dict[str, _Game] = {}

    @contextlib.asynccontextmanager
    async def attend(self, game_id: str, seat: int) -> AsyncIterator[asyncio.Queue[Seats]]:
        """While inside: ``seat`` (-1: a spectator, who only listens) is present in the game;
        the queue receives who is present, now and at each change."""
        g = self._games.get(game_id)
        if g is None:
            g = self._games[game_id] = _Game()
            g.task = asyncio.get_running_loop().create_task(self._poll(game_id, g))
        queue: asyncio.Queue[Seats] = asyncio.Queue(maxsize=1)
        g.listeners.add(queue)
        if seat >= 0:
            g.held[seat] += 1
            g.let_go.discard(seat)
            g.wake.set()
        elif g.present is not None:
            queue.put_nowait(g.present)
        try:
            yield queue
        finally:
            g.listeners.discard(queue)
            if seat >= 0:
                g.held[seat] -= 1
                if g.held[seat] <= 0:
                    del g.held[seat]
                    g.let_go.add(seat)
                g.wake.set()
            if not g.listeners and not g.held:
                g.wake.set()  # (the poller lets its seats go and ends)

    async def present(self, game_id: str) -> Seats:
        """Who is present: as this replica last read it, or read now."""
        g = self._games.get(game_id)
        if g is not None and g.present is not None:
            return g.present
        try:
            now = int(time.time() * 1000)
            return tuple(sorted(await self.store.presence(game_id, self.holder, (), (), now, 0)))
        except StoreError:
            return ()

    async def _poll(self, game_id: str, g: _Game) -> None:
        try:
            while True:
                let_go, g.let_go = sorted(g.let_go), set()
                g.wake.clear()
                try:
                    found = await self.store.presence(
                        game_id, self.holder, sorted(g.held), let_go,
                        int(time.time() * 1000), self.ttl_ms,
                    )  # fmt: skip
                except StoreError as e:
                    log.warning("presence of game %s not renewed: %s", game_id, e)
                    g.let_go.update(let_go)
                else:
                    present = tuple(sorted(found))
                    if present != g.present:
                        g.present = present
                        for q in g.listeners:
                            with contextlib.suppress(asyncio.QueueEmpty):
                                q.get_nowait()  # (only the latest matters)
                            q.put_nowait(present)
                if not g.listeners and not g.held and not g.let_go:
                    return  # (checked after the await: no one joined meanwhile)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(g.wake.wait(), self.refresh)
        finally:
            if self._games.get(game_id) is g:
                del self._games[game_id]
