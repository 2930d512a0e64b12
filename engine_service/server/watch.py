"""WatchGame for any number of watchers: one reader per store group, fanned out to streams.

A replica reads each watched game's updates once, whatever the number of its watchers: one
reader task per store group (a Redis Cluster slot's worth of games; see ``Store.groups``)
reads the news of all that group's watched games in one blocking call, checks that each new
update follows the last one (its parent commit id), and puts it in the queue of every watcher
of the game. Watchers never own a store connection. A watcher joining late catches up from the
game's window first or, when the window no longer reaches back that far, from the game's
history rebuilt from its replay log (``history.py``); a stream that falls behind its feed (a
slow caller) catches up the same way. Every version is sent, in order, once.

History checks: a watcher may name the commit id of the last update it has; the store must
still hold it. Each update a reader reads must follow the last (its parent commit id), and the
readers check, after any store error and every ``verify_seconds``, that each watched game
still holds the version they last read: a store that went back in time (a snapshot restored,
a failover to a lagging replica) ends that game's watchers with DATA_LOSS naming the versions
lost (``losses.py``; the replica's memory of what it saw counts it, once). A watched game the
store lost whole ends its watchers with GAME_LOST (not deleted, not expired).

Damaged updates: an update whose stored bytes do not parse as its version's (its window entry
read whole) is read as a gap, as a damaged window entry is: streams get that version, and
those before it, rebuilt from the log, instead of bytes their clients cannot read, again on
every reconnect.

Limits (RESOURCE_EXHAUSTED, naming the limit): streams per replica and per peer (address).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError

from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server.errors import Code, ServiceError
from engine_service.server.history import History
from engine_service.server.limits import LogLimiter, RateLimit
from engine_service.server.losses import Losses
from engine_service.server.metrics import Metrics
from engine_service.store import Store, StoredUpdate, StoreError

log = logging.getLogger("ascension.engine.watch")
damaged_log = LogLimiter(log)


def _readable(game_id: str, ups: list[StoredUpdate]) -> list[StoredUpdate]:
    """``ups`` (in version order) after the last one whose bytes do not parse as the GameUpdate
    of its version (damaged in the store): what follows a gap, as for a damaged window entry.
    Parsing one costs about a microsecond, once per replica for each update it reads."""
    for i in range(len(ups) - 1, -1, -1):
        try:
            if pb.GameUpdate.FromString(ups[i].update).version != ups[i].version:
                raise DecodeError("another version's")
        except DecodeError:
            damaged_log.warning(
                "game %s: its update %d does not parse as itself: rebuilt from the log",
                game_id,
                ups[i].version,
            )
            return ups[i + 1 :]
    return ups


@dataclass(frozen=True, slots=True)
class WatchLimits:
    per_replica: int = 20_000
    per_peer: int = 1_000
    queue: int = 64  # updates a stream may fall behind its feed before it catches up alone
    rebuilds_per_minute: int = 60  # per peer: a rebuilt history costs a replay (0: no limit)


class _End:
    """Put in a watcher's queue: the stream ends (with ``error``, or cleanly when None)."""

    __slots__ = ("error",)

    def __init__(self, error: ServiceError | None) -> None:
        self.error = error


# Put in a watcher's queue instead of what it could not take: it catches up from the store.
_BEHIND = _End(None)


@dataclass(eq=False, slots=True)
class _Watcher:
    queue: asyncio.Queue[StoredUpdate | _End]
    last: int  # the last version handed to this watcher (or that it had)


@dataclass(eq=False, slots=True)
class _Feed:
    game_id: str
    cursor: int  # the last version read for this game
    cursor_id: str  # its commit id ("" if not known)
    watchers: set[_Watcher] = field(default_factory=set)
    recent: collections.deque[StoredUpdate] = field(default_factory=collections.deque)


class _Cursors(Mapping[str, int]):
    """A group's feeds as the store sees them (game id -> cursor), live: a reader's blocking
    read sees the games joined and the cursors moved while it waits."""

    __slots__ = ("feeds",)

    def __init__(self, feeds: dict[str, _Feed]) -> None:
        self.feeds = feeds

    def __getitem__(self, game_id: str) -> int:
        return self.feeds[game_id].cursor

    def __iter__(self) -> Iterator[str]:
        return iter(self.feeds)

    def __len__(self) -> int:
        return len(self.feeds)

    def __contains__(self, game_id: object) -> bool:
        return game_id in self.feeds


class WatchHub:
    def __init__(
        self,
        store: Store,
        metrics: Metrics,
        limits: WatchLimits | None = None,
        block_ms: int = 10_000,
        verify_seconds: float = 30.0,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.limits = limits or WatchLimits()
        self.block_ms = block_ms
        self.verify_seconds = verify_seconds
        self._feeds: list[dict[str, _Feed]] = [{} for _ in range(store.groups)]
        self._readers: dict[int, asyncio.Task[None]] = {}
        # Joining reads the store (the game, then what the watcher missed): at most this many at
        # once, so that a crowd of new watchers does not open a crowd of connections either.
        self._joining = asyncio.Semaphore(8)
        self._streams = 0
        self._per_peer: collections.Counter[str] = collections.Counter()
        self._stopping = False
        self.history = History(store)
        self.losses = Losses(store, metrics)
        n = self.limits.rebuilds_per_minute
        self._rebuilds = (
            RateLimit(
                "ENGINE_WATCH_REBUILDS_PER_MINUTE",
                f"{n} WatchGame histories older than the store's window per minute per peer",
                n / 60.0,
                float(n),
            )
            if n > 0
            else None
        )

    # ---- streams -----------------------------------------------------------------------

    def _admit(self, peer: str) -> None:
        if self._stopping:
            raise ServiceError(
                Code.UNAVAILABLE,
                "the server is shutting down: watch again later",
                reason="SHUTTING_DOWN",
            )
        if self._streams >= self.limits.per_replica:
            self.metrics.watch_refused.labels("per_replica").inc()
            raise ServiceError(
                Code.RESOURCE_EXHAUSTED,
                f"this server has {self._streams} watch streams open, its limit "
                f"(ENGINE_WATCH_MAX_STREAMS={self.limits.per_replica}); try another replica or "
                "later",
                reason="STREAM_LIMIT",
                metadata={"limit": "ENGINE_WATCH_MAX_STREAMS"},
            )
        if self._per_peer[peer] >= self.limits.per_peer:
            self.metrics.watch_refused.labels("per_peer").inc()
            raise ServiceError(
                Code.RESOURCE_EXHAUSTED,
                f"{self._per_peer[peer]} watch streams are open from your address, the limit "
                f"per peer (ENGINE_WATCH_MAX_STREAMS_PER_PEER={self.limits.per_peer})",
                reason="STREAM_LIMIT",
                metadata={"limit": "ENGINE_WATCH_MAX_STREAMS_PER_PEER"},
            )
        self._streams += 1
        self._per_peer[peer] += 1
        self.metrics.watch_streams.set(self._streams)

    def _leave(self, peer: str) -> None:
        self._streams -= 1
        self._per_peer[peer] -= 1
        if self._per_peer[peer] <= 0:
            del self._per_peer[peer]
        self.metrics.watch_streams.set(self._streams)

    async def watch(
        self,
        game_id: str,
        after_version: int,
        after_commit_id: str,
        peer: str,
        active: Callable[[], bool],
    ) -> AsyncIterator[StoredUpdate]:
        """Updates of ``game_id`` above ``after_version``, until the game ends, the caller goes
        away (``active`` turns false) or the server stops. ``peer``: who the caller counts as
        for the limits per caller (callers.py)."""
        self._admit(peer)
        try:
            async for u in self._watch(game_id, after_version, after_commit_id, peer, active):
                yield u
        finally:
            self._leave(peer)

    async def _watch(
        self, game_id: str, last: int, last_id: str, peer: str, active: Callable[[], bool]
    ) -> AsyncIterator[StoredUpdate]:
        async with self._joining:
            rec = await self.store.load(game_id)
        if rec is None:
            raise await self.losses.missing(game_id)
        if last > rec.version or (last == rec.version and last_id and last_id != rec.commit_id):
            raise await self._lost(game_id, last, last_id, rec.version, rec.commit_id)
        if rec.over and last >= rec.version:
            return
        head = rec.version  # a version the store holds (or held: it may be trimmed since)
        rebuilds = 0
        sent = False  # last_id came from this stream (else from the caller, unchecked)
        # Catch up (from the store's window, or a history rebuilt from the game's log when the
        # window no longer reaches back that far), then follow the game's feed; a stream that
        # falls behind the feed catches up again the same way.
        while True:
            async with self._joining:
                backlog = (await self.store.read_updates({game_id: last}, 0)).get(game_id, [])
            whole = len(backlog)
            backlog = _readable(game_id, backlog)
            if len(backlog) < whole:
                head = max(head, last + 1)  # (a damaged update at the top: the store holds it)
            if (backlog and backlog[0].version > last + 1) or (not backlog and last < head):
                rebuilds += 1
                if self._rebuilds is not None:
                    try:  # (a replay of the game's log: CPU of this replica)
                        self._rebuilds.take(peer)
                    except ServiceError:
                        self.metrics.watch_refused.labels("rebuilds").inc()
                        raise
                async with self._joining:
                    rebuilt = await self.history.since(game_id, last) if rebuilds <= 3 else None
                if not rebuilt:
                    raise self._trimmed(game_id, last, backlog)
                self.metrics.watch_rebuilt.inc(len(rebuilt))
                backlog = rebuilt
            # The history goes on from the caller's last update, or the store holds another.
            if backlog and last_id and backlog[0].parent_id and backlog[0].parent_id != last_id:
                first = backlog[0]
                if sent:  # (else only the caller's claim: what this replica saw is what counts)
                    await self.losses.observe(game_id, first.version - 1, first.parent_id, None)
                top = backlog[-1]
                raise await self._lost(game_id, last, last_id, top.version, top.commit_id)
            for u in backlog:
                yield u
                last, last_id, sent = u.version, u.commit_id, True
                if u.over:
                    return
            joined = self._join(game_id, last, last_id)
            if joined is None:
                continue
            watcher, new_feed = joined
            rebuilds = 0
            try:
                if new_feed:
                    await self._follow_up(game_id)
                while True:
                    # A caller that goes away cancels this task (gRPC does): no polling needed.
                    item = await watcher.queue.get()
                    if item is _BEHIND:  # the feed went on beyond what this stream has sent
                        head = max(head, last + 1)
                        break
                    if isinstance(item, _End):
                        if item.error is not None:
                            raise item.error
                        return
                    yield item
                    last, last_id, sent = item.version, item.commit_id, True
                    if item.over or not active():
                        return
            finally:
                self._part(game_id, watcher)

    def _trimmed(self, game_id: str, last: int, backlog: list[StoredUpdate]) -> ServiceError:
        if backlog:
            return ServiceError(
                Code.OUT_OF_RANGE,
                f"updates before version {backlog[0].version} are no longer kept; GetGame "
                f"has the current state: watch from after_version={backlog[-1].version}",
                reason="HISTORY_TRIMMED",
                metadata={"first_version": str(backlog[0].version)},
            )
        return ServiceError(
            Code.OUT_OF_RANGE,
            f"game {game_id} is over and its updates are no longer kept; GetGame has "
            "its final state",
            reason="HISTORY_TRIMMED",
            metadata={"first_version": str(last + 1)},
        )

    async def _lost(
        self, game_id: str, seen: int, seen_id: str, holds: int, holds_id: str
    ) -> ServiceError:
        """DATA_LOSS for watchers who have version ``seen`` (commit ``seen_id``), naming the
        versions lost. Counting and logging a rollback is for the replica's memory of what it
        saw, which notices it once (a caller's claim, which anyone can make, is not counted)."""
        return await self.losses.data_loss(game_id, seen, seen_id, holds, holds_id, watching=True)

    # ---- feeds -------------------------------------------------------------------------

    def _join(self, game_id: str, last: int, last_id: str) -> tuple[_Watcher, bool] | None:
        """A watcher of the game's feed that has everything up to ``last``, and whether the
        feed is new; None when the feed is further ahead than its recent updates reach (read
        the store again first)."""
        group = self.store.group_of(game_id)
        feeds = self._feeds[group]
        feed = feeds.get(game_id)
        watcher = _Watcher(asyncio.Queue(self.limits.queue), last)
        new_feed = feed is None
        if feed is None:
            feed = feeds[game_id] = _Feed(game_id, last, last_id)
            feed.recent = collections.deque(maxlen=self.limits.queue)
        elif feed.cursor > last:
            missed = [u for u in feed.recent if u.version > last]
            if not missed or missed[0].version != last + 1:
                return None
            for u in missed:
                watcher.queue.put_nowait(u)
            watcher.last = missed[-1].version
        feed.watchers.add(watcher)
        reader = self._readers.get(group)
        if reader is None or reader.done():
            self._readers[group] = asyncio.create_task(self._read(group), name=f"watch-{group}")
        return watcher, new_feed

    async def _follow_up(self, game_id: str) -> None:
        """Reads a new feed's game once more, now that its reader knows it: what was committed
        between the joiner's read and its join, which the reader (waiting for news, for up to
        ``block_ms``) may have passed over before the game was its own."""
        group = self.store.group_of(game_id)
        feed = self._feeds[group].get(game_id)
        if feed is None:
            return
        async with self._joining:
            ups = (await self.store.read_updates({game_id: feed.cursor}, 0)).get(game_id)
        feed = self._feeds[group].get(game_id)  # (it may have moved on, or ended, meanwhile)
        if ups and feed is not None:
            fresh = [u for u in ups if u.version > feed.cursor]
            if fresh:
                await self._deliver(group, feed, fresh)

    def _part(self, game_id: str, watcher: _Watcher) -> None:
        feeds = self._feeds[self.store.group_of(game_id)]
        feed = feeds.get(game_id)
        if feed is not None:
            feed.watchers.discard(watcher)
            if not feed.watchers:
                del feeds[game_id]

    def _end_feed(self, group: int, feed: _Feed, error: ServiceError | None) -> None:
        for w in feed.watchers:
            self._put(w, _End(error), force=True)
        self._feeds[group].pop(feed.game_id, None)

    def _put(self, w: _Watcher, item: StoredUpdate | _End, force: bool = False) -> None:
        if force:
            while w.queue.full():
                w.queue.get_nowait()
        try:
            w.queue.put_nowait(item)
        except asyncio.QueueFull:
            # Too slow a reader: its stream catches up from the store (see _watch) after what
            # it has sent, and takes nothing more from this feed.
            while w.queue.full():
                w.queue.get_nowait()
            w.queue.put_nowait(_BEHIND)
            w.last = 1 << 62

    async def _deliver(self, group: int, feed: _Feed, ups: list[StoredUpdate]) -> None:
        # A gap first (this reader fell behind the window, or read a damaged update): the next
        # update's parent is then not the cursor's commit either, but the history is only
        # trimmed, not lost; each stream catches up from the store by itself.
        ups = _readable(feed.game_id, ups)
        if not ups or ups[0].version > feed.cursor + 1:
            for w in feed.watchers:
                self._put(w, _BEHIND, force=True)
            self._feeds[group].pop(feed.game_id, None)
            return
        gid = feed.game_id
        if feed.cursor_id and ups[0].parent_id and ups[0].parent_id != feed.cursor_id:
            # Another history goes on from the version before these: the store lost ours.
            cursor, cursor_id, top = feed.cursor, feed.cursor_id, ups[-1]
            await self.losses.observe(gid, ups[0].version - 1, ups[0].parent_id, None)
            error = await self._lost(gid, cursor, cursor_id, top.version, top.commit_id)
            if self._feeds[group].get(gid) is feed:
                self._end_feed(group, feed, error)
            return
        found = None  # (delivered without waiting: deliveries to a feed never interleave)
        for u in ups:
            found = self.losses.note(gid, u.version, u.commit_id, u.over) or found
            feed.recent.append(u)
            for w in feed.watchers:
                if u.version > w.last:
                    w.last = u.version
                    self._put(w, u)
        feed.cursor, feed.cursor_id = ups[-1].version, ups[-1].commit_id
        if found is not None:  # a history this replica saw elsewhere (its reads) was lost
            await self.losses.report(gid, found)

    async def _verify(self, group: int) -> None:
        """End the watchers of games that are gone or that the store rolled back."""
        feeds = self._feeds[group]
        if not feeds:
            return
        # What each feed had read before asking: a feed may read on meanwhile (a joiner's
        # follow-up), and what it reads then is no later than the store's head.
        before = {
            gid: (f, f.cursor, f.cursor_id, self.losses.mark(gid)) for gid, f in feeds.items()
        }
        heads = await self.store.heads(list(before))
        for gid, (feed, cursor, cursor_id, mark) in before.items():
            if feeds.get(gid) is not feed:
                continue  # ended meanwhile
            head = heads.get(gid)
            if head is None:
                error = await self.losses.missing(gid)  # (not found: deleted, or expired)
                if feeds.get(gid) is feed:
                    self._end_feed(group, feed, error if error.reason == "GAME_LOST" else None)
                continue
            version, commit_id = head
            await self.losses.observe(gid, version, commit_id, None, mark)
            if version < cursor or (version == cursor and cursor_id and commit_id != cursor_id):
                error = await self._lost(gid, cursor, cursor_id, version, commit_id)
                if feeds.get(gid) is feed:
                    self._end_feed(group, feed, error)

    async def _read(self, group: int) -> None:
        feeds = self._feeds[group]
        cursors = _Cursors(feeds)
        next_verify = time.monotonic() + self.verify_seconds
        failing = False
        position: dict[str, Any] = {}  # the store's note of what this reader has read
        while feeds and not self._stopping:
            try:
                if failing or time.monotonic() >= next_verify:
                    await self._verify(group)
                    next_verify = time.monotonic() + self.verify_seconds
                    failing = False
                    continue
                news = await self.store.read_updates(cursors, self.block_ms, position)
            except StoreError as e:
                if not failing:
                    log.warning("watch reader %d: %s (retrying)", group, e)
                failing = True
                await asyncio.sleep(0.5)
                continue
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("watch reader %d failed; retrying", group)
                failing = True
                await asyncio.sleep(0.5)
                continue
            for gid, ups in news.items():
                feed = feeds.get(gid)
                if feed is not None:
                    fresh = [u for u in ups if u.version > feed.cursor]
                    if fresh:
                        await self._deliver(group, feed, fresh)

    async def stop(self) -> None:
        """End every stream (UNAVAILABLE, with the version to resume after)."""
        self._stopping = True
        for feeds in self._feeds:
            for feed in list(feeds.values()):
                for w in feed.watchers:
                    self._put(
                        w,
                        _End(
                            ServiceError(
                                Code.UNAVAILABLE,
                                "the server is shutting down: watch again with "
                                f"after_version={w.last}",
                                reason="SHUTTING_DOWN",
                                metadata={"after_version": str(w.last)},
                            )
                        ),
                        force=True,
                    )
                feeds.pop(feed.game_id, None)
        readers = list(self._readers.values())
        for t in readers:
            t.cancel()
        for t in readers:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
