"""A replica's cache of recently used games, in front of any store.

Each record is kept with the commit id it was written or read with. A fresh load asks the
store for the game's current version and commit id, and for the state only when that commit
id is not the cached one (one round trip; a small reply on a hit). A load that allows a stale
answer (``fresh=False``) is answered from the cache: its caller's commit is a compare-and-set
on that commit id, so it can never build on a state the store does not hold, and the caller
judges again after a fresh load whatever it refuses. A read never replaces a newer record: a
commit of this replica may finish while a read sent before it is on its way back.

The cache also notices when the store went back in time (a snapshot restored, a failover to a
replica that had not received the last writes, an append-only file that lost its last second):
every answer of the store is an observation of what this replica saw of the game (``seen``,
see seen.py), which tells a lower version than was seen before the request was sent, or
another commit id at a version seen. Each such loss is settled against the store's replay log
(which versions exactly), claimed in the store (``claim``: of the replicas that notice one
loss, the first counts it), reported to ``on_rollback`` (logged by the server, and counted when
this replica's claim won), and the game's record forgotten.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from engine_service.store.base import (
    Commit,
    CommitResult,
    CommitStatus,
    GameRecord,
    NewGame,
    Store,
    StoreError,
    UnreadableData,
    chain_ids,
)
from engine_service.store.seen import CLAIM_SECONDS, Lost, Mark, SeenGames
from engine_service.store.wrapper import StoreWrapper

# (game id, the history the store lost, whether this replica counts it: its claim won)
RollbackObserver = Callable[[str, Lost, bool], None]


class CachingStore(StoreWrapper):
    def __init__(self, inner: Store, on_rollback: RollbackObserver, size: int = 4096) -> None:
        super().__init__(inner)
        self._on_rollback = on_rollback
        self._size = size
        self._records: OrderedDict[str, GameRecord] = OrderedDict()
        self._meta: OrderedDict[str, bytes] = OrderedDict()  # never changes: kept longer
        self.seen = SeenGames(size)

    # ---- the cache ---------------------------------------------------------------------

    def _keep(self, rec: GameRecord) -> None:
        now = self._records.get(rec.game_id)
        if now is not None and now.version > rec.version:
            self._records.move_to_end(rec.game_id)  # (a newer one came back first)
        else:
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

    # ---- what the store lost -------------------------------------------------------------

    async def observe(
        self,
        game_id: str,
        version: int,
        commit_id: str,
        over: bool | None,
        mark: Mark | None = None,
        *,
        moved_at: float = 0.0,
    ) -> Lost | None:
        """The store holds ``version`` with ``commit_id`` (read by a request sent at ``mark``,
        or elsewhere: the watch hub's feeds). A loss it shows is settled and reported."""
        lost = self.seen.observe(game_id, version, commit_id, over, mark, moved_at=moved_at)
        if lost is not None:
            await self.report(game_id, lost)
        return lost

    async def report(self, game_id: str, lost: Lost) -> None:
        """A loss ``seen`` found: the record is forgotten, the loss settled, claimed and
        reported."""
        self.forget(game_id)
        await self.settle(game_id, lost)
        # Replicas that saw the same history lost settle it at the same first version (the
        # replay log names where the histories part), so they claim the same loss.
        self._on_rollback(game_id, lost, await self.claim(game_id, f"v{lost.first}"))

    async def claim(self, game_id: str, loss: str) -> bool:
        """Whether this replica counts ``loss`` of the game (``Store.claim_loss``): True when
        its claim is the first, and when the store cannot be asked (a loss counted twice is
        better than one never counted)."""
        try:
            return await self.inner.claim_loss(game_id, loss, CLAIM_SECONDS)
        except StoreError:
            return True

    async def settle(self, game_id: str, lost: Lost) -> None:
        """Which versions were lost: compared with the store's chain of commit ids, read from
        its replay log (only its head is used when the log cannot be read or does not lead
        to it: then the versions are a lower bound)."""
        ids: list[str] | None = None
        try:
            log = await self.inner.action_log(game_id)
        except (StoreError, UnreadableData):
            log = None
        if log is not None and len(log) >= lost.store_version - 1:
            chain = chain_ids(game_id, log[: lost.store_version - 1])
            if chain[-1] == lost.store_id:
                ids = chain
        lost.settle(ids)

    # ---- Store -------------------------------------------------------------------------

    async def create(self, game: NewGame) -> None:
        sent = time.time()
        await self.inner.create(game)
        self.seen.observe(game.game_id, 1, game.commit_id, False, moved_at=sent)
        self._keep(GameRecord(game.game_id, 1, game.commit_id, game.state, game.meta, False))

    async def load(self, game_id: str, *, fresh: bool = True) -> GameRecord | None:
        cached = self._records.get(game_id)
        if cached is not None and not fresh:
            self._records.move_to_end(game_id)
            return cached
        meta = self._meta.get(game_id)
        known = cached.commit_id if cached is not None else ""
        mark = self.seen.mark(game_id)
        row = await self.inner.load_if_changed(game_id, known, meta is None)
        if row is None:
            self.forget(game_id)
            return None
        version, commit_id, over, state, fetched_meta = row
        if state is None:
            assert cached is not None
            rec = cached
        else:
            meta = fetched_meta if meta is None else meta
            assert meta is not None
            rec = GameRecord(game_id, version, commit_id, state, meta, over)
        overtaken = not self.seen.current(game_id, mark)  # (by a loss found meanwhile)
        await self.observe(game_id, rec.version, rec.commit_id, rec.over, mark)
        if not overtaken:
            self._keep(rec)
        return rec

    async def commit(self, c: Commit) -> CommitResult:
        mark = self.seen.mark(c.game_id)
        sent = time.time()
        res = await self.inner.commit(c)
        if res.status is CommitStatus.OK:
            await self.observe(c.game_id, res.version, c.commit_id, c.over, mark, moved_at=sent)
            meta = self._meta.get(c.game_id)
            if meta is not None:
                self._keep(GameRecord(c.game_id, res.version, c.commit_id, c.state, meta, c.over))
        elif res.status is CommitStatus.MISSING:
            self.forget(c.game_id)
        else:
            await self.observe(c.game_id, res.version, res.commit_id, None, mark)
            self.forget(c.game_id)  # it moved on: the next load reads it
        return res

    async def delete(self, game_id: str) -> bool:
        self.forget(game_id)
        self.seen.forget(game_id)
        return await self.inner.delete(game_id)
