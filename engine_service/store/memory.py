"""The in-process store: games in a dict behind a lock (the embedded default, one process).

Same semantics as the Redis store: compare-and-set commits on version and commit id, a window
of recent updates and idempotency keys per game (kept a few minutes once a game is over, with
its last key only), idle and finished expiry.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine_service.store.base import (
    WHOLE_GAME,
    Commit,
    CommitResult,
    CommitStatus,
    GameRecord,
    GameSummaryRecord,
    IdempotentRecord,
    NewGame,
    PendingAI,
    Store,
    StoredUpdate,
    StoreSettings,
)


@dataclass(slots=True)
class _Game:
    version: int
    commit_id: str
    state: bytes
    meta: bytes
    over: bool
    to_move: int
    updated_ms: int
    updates: collections.deque[tuple[StoredUpdate, str]]  # (update, idempotency key)
    expires_at: float
    window_expires_at: float = float("inf")
    log: list[tuple[int, int]] = field(default_factory=list)
    idem: dict[str, IdempotentRecord] = field(default_factory=dict)
    ai: tuple[int, bytes, float] | None = None  # (version, payload, first enqueued)
    attempt: str = ""  # the last commit's Commit.attempt
    clock: int = 0  # when the running clock runs out (unix ms), 0: none


class MemoryStore(Store):
    kind = "memory"

    def __init__(self, settings: StoreSettings | None = None) -> None:
        self.settings = settings or StoreSettings()
        self._games: dict[str, _Game] = {}
        self._lock = threading.Lock()
        self._changed = asyncio.Event()  # set (and replaced) on every change
        self._replies: dict[tuple[str, str], tuple[bytes, float]] = {}  # -> (data, expires at)
        self._claims: dict[tuple[str, str], float] = {}  # (game, loss) -> expires at
        self._here: dict[str, dict[tuple[int, str], int]] = {}  # game -> (seat, holder) -> ms

    def _get(self, game_id: str) -> _Game | None:
        g = self._games.get(game_id)
        if g is not None:
            now = time.time()
            if g.expires_at <= now:
                del self._games[game_id]
                self._wake()
                return None
            if g.window_expires_at <= now and g.updates:
                g.updates.clear()
        return g

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def create(self, game: NewGame) -> None:
        with self._lock:
            g = self._games.get(game.game_id)
            if g is not None:
                if g.version == 1 and g.commit_id == game.commit_id:
                    return
                raise ValueError(f"game {game.game_id} exists")
            g = _Game(
                1,
                game.commit_id,
                game.state,
                game.meta,
                False,
                game.to_move,
                game.created_ms,
                collections.deque(maxlen=self.settings.window),
                time.time() + self.settings.idle_ttl,
            )
            g.updates.append((StoredUpdate(1, game.commit_id, "", game.update), ""))
            if game.ai_pending is not None:
                g.ai = (1, game.ai_pending, game.enqueued_at)
            g.clock = game.clock_deadline_ms
            self._games[game.game_id] = g
            self._wake()

    async def load(self, game_id: str, *, fresh: bool = True) -> GameRecord | None:
        with self._lock:
            g = self._get(game_id)
            if g is None:
                return None
            return GameRecord(game_id, g.version, g.commit_id, g.state, g.meta, g.over)

    async def commit(self, c: Commit) -> CommitResult:
        with self._lock:
            g = self._get(c.game_id)
            if g is None:
                return CommitResult(CommitStatus.MISSING, 0)
            if g.commit_id == c.commit_id and g.attempt == c.attempt:
                return CommitResult(CommitStatus.OK, g.version, g.commit_id)
            if c.idem_key and c.idem_key in g.idem:
                return CommitResult(
                    CommitStatus.DUPLICATE, g.version, g.commit_id, g.idem[c.idem_key]
                )
            if g.version != c.expected_version or g.commit_id != c.expected_commit_id:
                return CommitResult(CommitStatus.CONFLICT, g.version, g.commit_id)
            g.version += 1
            g.commit_id, g.attempt = c.commit_id, c.attempt
            g.state, g.over, g.to_move, g.updated_ms = c.state, c.over, c.to_move, c.updated_ms
            if len(g.updates) == g.updates.maxlen:
                g.idem.pop(g.updates[0][1], None)  # its key leaves the window with it
            g.updates.append(
                (
                    StoredUpdate(g.version, c.commit_id, c.expected_commit_id, c.update, c.over),
                    c.idem_key,
                )
            )
            g.log.append((c.seat, c.action))
            record = IdempotentRecord(g.version, c.fingerprint)
            if c.idem_key:
                g.idem[c.idem_key] = record
            g.ai = None if c.ai_pending is None else (g.version, c.ai_pending, c.enqueued_at)
            g.clock = 0 if c.over else c.clock_deadline_ms
            if c.over:
                now = time.time()
                g.expires_at = now + self.settings.finished_ttl
                g.window_expires_at = now + min(
                    self.settings.finished_window_ttl, self.settings.finished_ttl
                )
                g.idem = {c.idem_key: record} if c.idem_key else {}
            else:
                g.expires_at = time.time() + self.settings.idle_ttl
            self._wake()
            return CommitResult(CommitStatus.OK, g.version, g.commit_id)

    async def idempotent(self, game_id: str, key: str) -> IdempotentRecord | None:
        with self._lock:
            g = self._get(game_id)
            return None if g is None else g.idem.get(key)

    async def update_at(self, game_id: str, version: int) -> StoredUpdate | None:
        with self._lock:
            g = self._get(game_id)
            if g is None:
                return None
            return next((u for u, _ in g.updates if u.version == version), None)

    def _news(self, cursors: Mapping[str, int]) -> dict[str, list[StoredUpdate]]:
        out: dict[str, list[StoredUpdate]] = {}
        for gid, after in cursors.items():
            g = self._get(gid)
            if g is not None:
                news = [u for u, _ in g.updates if u.version > after]
                if news:
                    out[gid] = news
        return out

    async def read_updates(
        self,
        cursors: Mapping[str, int],
        block_ms: int,
        position: dict[str, Any] | None = None,
    ) -> dict[str, list[StoredUpdate]]:
        deadline = time.monotonic() + block_ms / 1000
        while True:
            with self._lock:
                out = self._news(cursors)
                changed = self._changed
            if out or block_ms <= 0:
                return out
            left = deadline - time.monotonic()
            if left <= 0:
                return {}
            try:
                await asyncio.wait_for(changed.wait(), left)
            except TimeoutError:
                return {}

    async def heads(self, game_ids: list[str]) -> dict[str, tuple[int, str]]:
        with self._lock:
            return {
                gid: (g.version, g.commit_id)
                for gid in game_ids
                if (g := self._get(gid)) is not None
            }

    async def first_update_version(self, game_id: str) -> int | None:
        with self._lock:
            g = self._get(game_id)
            return g.updates[0][0].version if g is not None and g.updates else None

    async def action_log(self, game_id: str) -> list[tuple[int, int]]:
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
            self._wake()
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

    async def presence(
        self,
        game_id: str,
        holder: str,
        held: Sequence[int],
        let_go: Sequence[int],
        now_ms: int,
        ttl_ms: int,
    ) -> set[int]:
        with self._lock:
            here = {k: t for k, t in self._here.get(game_id, {}).items() if t > now_ms}
            for seat in let_go:
                here.pop((seat, holder), None)
            for seat in held:
                here[(seat, holder)] = now_ms + ttl_ms
            if here:
                self._here[game_id] = here
            else:
                self._here.pop(game_id, None)
            return {seat for seat, _ in here}

    async def due_clocks(self, now_ms: int, limit: int) -> list[str]:
        with self._lock:
            due = [
                (g.clock, gid)
                for gid in list(self._games)
                if (g := self._get(gid)) is not None and 0 < g.clock <= now_ms
            ]
            return [gid for _, gid in sorted(due)[:limit]]

    async def claim_clock_bot(
        self, game_id: str, version: int, commit_id: str, payload: bytes, enqueued_at: float
    ) -> bool:
        with self._lock:
            g = self._get(game_id)
            if g is None or g.version != version or g.commit_id != commit_id or not g.clock:
                return False
            g.clock = 0
            g.ai = (version, payload, enqueued_at)
            return True

    async def active_games(self) -> int:
        with self._lock:
            return sum(
                1 for gid in list(self._games) if (g := self._get(gid)) is not None and not g.over
            )

    async def put_reply(self, game_id: str, key: str, data: bytes, ttl_seconds: float) -> None:
        with self._lock:
            now = time.time()
            for k in [k for k, (_, until) in self._replies.items() if until <= now]:
                del self._replies[k]
            self._replies[(game_id, key)] = (data, now + ttl_seconds)

    async def take_reply(self, game_id: str, key: str) -> bytes | None:
        with self._lock:
            hit = self._replies.pop((game_id, key), None)
        return hit[0] if hit is not None and hit[1] > time.time() else None

    async def peek_reply(self, game_id: str, key: str) -> bytes | None:
        with self._lock:
            hit = self._replies.get((game_id, key))
        return hit[0] if hit is not None and hit[1] > time.time() else None

    async def claim_loss(self, game_id: str, loss: str, ttl_seconds: float) -> bool:
        with self._lock:
            if loss == WHOLE_GAME and self._get(game_id) is not None:
                return False
            now = time.time()
            for k in [k for k, until in self._claims.items() if until <= now]:
                del self._claims[k]
            if (game_id, loss) in self._claims:
                return False
            self._claims[(game_id, loss)] = now + ttl_seconds
            return True

    async def tidy(self, limit: int) -> int:
        with self._lock:
            before = len(self._games)
            for gid in list(self._games)[:limit]:
                self._get(gid)
            return before - len(self._games)

    async def ping(self) -> None:
        return None
