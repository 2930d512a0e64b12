"""A replica's cache of recently used games, in front of any store.

Each record is kept with the commit id it was written or read with. A fresh load asks the
store for the game's current version and commit id, and for the state only when that commit
id is not the cached one (one round trip; a small reply on a hit). A load that allows a stale
answer (``fresh=False``) is answered from the cache: its caller's commit is a compare-and-set
on that commit id, so it can never build on a state the store does not hold, and the caller
judges again after a fresh load whatever it refuses.

The cache also notices when the store went back in time (a snapshot restored, a failover to a
replica that had not received the last writes, an append-only file that lost its last second):
the store holds a lower version than this replica saw, or the same version with another commit
id. Each such game is reported to ``on_rollback`` (counted and logged by the server) and
forgotten.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from engine_service.store.base import Commit, CommitResult, CommitStatus, GameRecord, NewGame, Store
from engine_service.store.wrapper import StoreWrapper

RollbackObserver = Callable[[str, str], None]  # (game id, what was seen)


class CachingStore(StoreWrapper):
    def __init__(self, inner: Store, on_rollback: RollbackObserver, size: int = 4096) -> None:
        super().__init__(inner)
        self._on_rollback = on_rollback
        self._size = size
        self._records: OrderedDict[str, GameRecord] = OrderedDict()
        self._meta: OrderedDict[str, bytes] = OrderedDict()  # never changes: kept longer

    # ---- the cache ---------------------------------------------------------------------

    def _keep(self, rec: GameRecord) -> None:
        self._records[rec.game_id] = rec
        self._records.move_to_end(rec.game_id)
        if len(self._records) > self._size:
            self._records.popitem(last=False)
        if rec.game_id not in self._meta:
            self._meta[rec.game_id] = rec.meta
            if len(self._meta) > 4 * self._size:
                self._meta.popitem(last=False)

    def forget(self, game_id: str) -> None:
        self._records.pop(game_id, None)

    def check_history(self, game_id: str, version: int, commit_id: str) -> bool:
        """False (and reported) when the store's (version, commit id) cannot follow what this
        replica last saw of the game: the store lost versions."""
        seen = self._records.get(game_id)
        if seen is None:
            return True
        if version < seen.version or (version == seen.version and commit_id != seen.commit_id):
            self.forget(game_id)
            self._on_rollback(
                game_id,
                f"this replica saw version {seen.version} (commit {seen.commit_id}); "
                f"the store holds version {version} (commit {commit_id})",
            )
            return False
        return True

    # ---- Store -------------------------------------------------------------------------

    async def create(self, game: NewGame) -> None:
        await self.inner.create(game)
        self._keep(GameRecord(game.game_id, 1, game.commit_id, game.state, game.meta, False))

    async def load(self, game_id: str, *, fresh: bool = True) -> GameRecord | None:
        cached = self._records.get(game_id)
        if cached is not None and not fresh:
            self._records.move_to_end(game_id)
            return cached
        meta = self._meta.get(game_id)
        known = cached.commit_id if cached is not None else ""
        row = await self.inner.load_if_changed(game_id, known, meta is None)
        if row is None:
            rec = None
        else:
            version, commit_id, over, state, fetched_meta = row
            if state is None:
                assert cached is not None
                rec = cached
            else:
                meta = fetched_meta if meta is None else meta
                assert meta is not None
                rec = GameRecord(game_id, version, commit_id, state, meta, over)
        if rec is None:
            self.forget(game_id)
            return None
        self.check_history(game_id, rec.version, rec.commit_id)
        self._keep(rec)
        return rec

    async def commit(self, c: Commit) -> CommitResult:
        res = await self.inner.commit(c)
        if res.status is CommitStatus.OK:
            meta = self._meta.get(c.game_id)
            if meta is not None:
                self._keep(GameRecord(c.game_id, res.version, c.commit_id, c.state, meta, c.over))
        elif res.status is CommitStatus.MISSING:
            self.forget(c.game_id)
        else:
            if self.check_history(c.game_id, res.version, res.commit_id):
                self.forget(c.game_id)  # it moved on: the next load reads it
        return res

    async def delete(self, game_id: str) -> bool:
        self.forget(game_id)
        return await self.inner.delete(game_id)
