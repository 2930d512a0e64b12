"""The in-process store: games in a dict behind a lock (the embedded default, one process).

Same semantics as the Redis store: compare-and-set commits, a bounded update stream per game,
idempotency results kept with the game, TTL once a game is over.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from dataclasses import dataclass, field

from engine_service.store.base import (
    Commit,
    CommitResult,
    CommitStatus,
    GameRecord,
    GameSummaryRecord,
    NewGame,
    PendingAI,
    Store,
)


@dataclass(slots=True)
class _Game:
    version: int
    state: bytes
    meta: bytes
    over: bool
    to_move: int
    updated_ms: int
    updates: collections.deque[tuple[int, bytes]]
    log: list[bytes] = field(default_factory=list)
    idem: dict[str, bytes] = field(default_factory=dict)
    expires_at: float | None = None
    ai: tuple[int, bytes, float] | None = None  # (version, payload, first enqueued)
    changed: asyncio.Event | None = None


class MemoryStore(Store):
    kind = "memory"

    def __init__(self, stream_maxlen: int = 10000) -> None:
        self._games: dict[str, _Game] = {}
        self._lock = threading.Lock()
        self._maxlen = stream_maxlen

    def _get(self, game_id: str) -> _Game | None:
        g = self._games.get(game_id)
        if g is not None and g.expires_at is not None and g.expires_at <= time.time():
            del self._games[game_id]
            self._wake(g)
            return None
        return g

    @staticmethod
    def _wake(g: _Game) -> None:
        if g.changed is not None:
            g.changed.set()
            g.changed = None

    async def create(self, game: NewGame) -> None:
        with self._lock:
            if game.game_id in self._games:
                raise ValueError(f"game {game.game_id} exists")
            g = _Game(
                1,
                game.state,
                game.meta,
                False,
                game.to_move,
                game.created_ms,
                collections.deque(maxlen=self._maxlen),
            )
            g.updates.append((1, game.update))
            if game.ai_pending is not None:
                g.ai = (1, game.ai_pending, game.enqueued_at)
            self._games[game.game_id] = g

    async def load(self, game_id: str) -> GameRecord | None:
        with self._lock:
            g = self._get(game_id)
            return None if g is None else GameRecord(game_id, g.version, g.state, g.meta, g.over)

    async def commit(self, c: Commit) -> CommitResult:
        with self._lock:
            g = self._get(c.game_id)
            if g is None:
                return CommitResult(CommitStatus.MISSING, 0)
            if c.idem_key and c.idem_key in g.idem:
                return CommitResult(CommitStatus.DUPLICATE, g.version, g.idem[c.idem_key])
            if g.version != c.expected_version:
                return CommitResult(CommitStatus.CONFLICT, g.version)
            g.version += 1
            g.state, g.over, g.to_move, g.updated_ms = c.state, c.over, c.to_move, c.updated_ms
            g.updates.append((g.version, c.update))
            g.log.append(c.log_entry)
            if c.idem_key:
                g.idem[c.idem_key] = c.idem_value
            g.ai = None if c.ai_pending is None else (g.version, c.ai_pending, c.enqueued_at)
            if c.over:
                g.expires_at = time.time() + c.ttl_seconds
            self._wake(g)
            return CommitResult(CommitStatus.OK, g.version)

    async def idempotent_result(self, game_id: str, key: str) -> bytes | None:
        with self._lock:
            g = self._get(game_id)
            return None if g is None else g.idem.get(key)

    async def updates(
        self, game_id: str, after_version: int, block_ms: int
    ) -> list[tuple[int, bytes]]:
        deadline = time.monotonic() + block_ms / 1000
        while True:
            with self._lock:
                g = self._get(game_id)
                if g is None:
                    return []
                out = [(v, u) for v, u in g.updates if v > after_version]
                if out or block_ms <= 0:
                    return out
                if g.changed is None:
                    g.changed = asyncio.Event()
                changed = g.changed
            left = deadline - time.monotonic()
            if left <= 0:
                return []
            try:
                await asyncio.wait_for(changed.wait(), left)
            except TimeoutError:
                return []

    async def first_update_version(self, game_id: str) -> int | None:
        with self._lock:
            g = self._get(game_id)
            return g.updates[0][0] if g is not None and g.updates else None

    async def action_log(self, game_id: str) -> list[bytes]:
        with self._lock:
            g = self._get(game_id)
            return [] if g is None else list(g.log)

    async def list_games(
        self, before_id: str, limit: int, active_only: bool
    ) -> list[GameSummaryRecord]:
        with self._lock:
            out = []
            for gid in sorted(self._games, reverse=True):
                if before_id and gid >= before_id:
                    continue
                g = self._get(gid)
                if g is None or (active_only and g.over):
                    continue
                out.append(
                    GameSummaryRecord(gid, g.version, g.meta, g.over, g.to_move, g.updated_ms)
                )
                if len(out) >= limit:
                    break
            return out

    async def delete(self, game_id: str) -> bool:
        with self._lock:
            g = self._get(game_id)
            if g is None:
                return False
            del self._games[game_id]
            self._wake(g)
            return True

    def _pending(self) -> list[PendingAI]:
        out = []
        for gid in list(self._games):
            g = self._get(gid)
            if g is not None and g.ai is not None:
                out.append(PendingAI(gid, g.ai[0], g.ai[1], g.ai[2]))
        return out

    async def stalled_ai(self, waited_since: float, limit: int) -> list[PendingAI]:
        with self._lock:
            found = sorted(
                (p for p in self._pending() if p.first_enqueued < waited_since),
                key=lambda p: p.first_enqueued,
            )
            return found[:limit]

    async def claim_redispatch(self, game_id: str, old_payload: bytes, new_payload: bytes) -> bool:
        with self._lock:
            g = self._get(game_id)
            if g is None or g.ai is None or g.ai[1] != old_payload:
                return False
            g.ai = (g.ai[0], new_payload, g.ai[2])
            return True

    async def oldest_ai_wait_start(self) -> float | None:
        with self._lock:
            starts = [p.first_enqueued for p in self._pending()]
            return min(starts) if starts else None

    async def active_games(self) -> int:
        with self._lock:
            return sum(
                1 for gid in list(self._games) if (g := self._get(gid)) is not None and not g.over
            )

    async def ping(self) -> None:
        return None
