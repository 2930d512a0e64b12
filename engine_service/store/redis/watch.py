"""Watching: the updates of many games read in few round trips. Each bucket has a news stream
(a line per commit, naming the game); a reader reads the windows of the games named since it
last read, and waits on the streams (XREAD BLOCK) when there is nothing new.

A store that loses what a reader read sends no news of it: emptied (FLUSHALL, a restart
without its data), or an older copy restored while the engine stayed connected. So a reader
(the watch hub's, which passes ``position``) also looks, every ``MARK_SECONDS``, at its
bucket's mark (a random id kept in the bucket, set again by the first reader to find it gone)
and at the last id of its news: another mark, or news that went back, is a StoreError, on
which the watch hub checks at once that every game it watches is still there (GAME_LOST,
DATA_LOSS). One small script per watched bucket and second, whatever the number of games."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from engine_service.store import keys
from engine_service.store.base import StoredUpdate, StoreError, UnreadableData, new_commit_id
from engine_service.store.redis import records, scripts
from engine_service.store.redis.core import NEWS_LENGTH, RedisCore

log = logging.getLogger("ascension.engine.store")

HEADS_PER_CALL = 500  # records read by one script call (each call holds Redis briefly)
MARK_SECONDS = 1.0  # how often a watch reader looks at its bucket's mark and news
_BUCKET_OF_NEWS = {keys.news_key(b): b for b in range(keys.BUCKETS)}


def _by_bucket(cursors: Mapping[str, int], pos: dict[str, Any]) -> dict[int, Mapping[str, int]]:
    """The games of ``cursors`` by bucket; all of one bucket: ``cursors`` itself (the watch
    hub's live cursors: a game it adds while a read waits is read as soon as the news names
    it). A reader of one bucket has its position there (the games it had): only games new
    since are hashed, not each of its games (150 per bucket with 10,000 watched) each time
    one of them moves."""
    if len(pos) == 1:
        ((news, (_, had)),) = pos.items()
        b = _BUCKET_OF_NEWS.get(news)
        if b is not None and all(keys.bucket_of(g) == b for g in frozenset(cursors) - had):
            return {b: cursors}
    split: dict[int, dict[str, int]] = {}
    for gid, v in cursors.items():
        split.setdefault(keys.bucket_of(gid), {})[gid] = v
    if len(split) == 1:
        return {b: cursors for b in split}
    return dict(split)


def _stream_id(raw: str) -> tuple[int, int]:
    ms, _, seq = raw.partition("-")
    return int(ms), int(seq or 0)


class RedisWatch(RedisCore):
    _news_script = scripts.NEWS
    _news_since = scripts.NEWS_SINCE
    _heads = scripts.HEADS
    _bucket_mark = scripts.BUCKET_MARK
    # bucket -> (its mark as this replica last found it, when: the event loop's clock)
    _marks: dict[int, tuple[str, float]] | None = None

    async def _check_marks(self, buckets: Mapping[int, object], pos: dict[str, Any]) -> None:
        """StoreError when a bucket's mark is not the one this replica found there before, or
        its news ends before what the reader read (at most every MARK_SECONDS per bucket): the
        store lost what was read. The reader's position there is dropped (it reads the games'
        windows again next time)."""
        if self._marks is None:
            self._marks = {}
        marks = self._marks
        now = asyncio.get_running_loop().time()
        for b in buckets:
            known, checked = marks.get(b, ("", -MARK_SECONDS))
            if now - checked < MARK_SECONDS:
                continue
            news = keys.news_key(b)
            (row,) = await self._script(self._bucket_mark, (keys.mark_key(b), news),
                                        (new_commit_id(),))  # fmt: skip
            mark, last = records.text(row[0]), records.text(row[1])
            marks[b] = (mark, now)
            read = pos.get(news)
            went_back = read is not None and _stream_id(last) < _stream_id(read[0])
            if (known and mark != known) or went_back:
                pos.pop(news, None)
                what = "was emptied" if known and mark != known else "went back"
                raise StoreError(
                    f"the store {what} since this replica last read bucket {b} (its mark or its "
                    "news changed: FLUSHALL, a restart without its data, an older copy "
                    "restored): checking the watched games"
                )

    async def read_updates(
        self,
        cursors: Mapping[str, int],
        block_ms: int,
        position: dict[str, Any] | None = None,
    ) -> dict[str, list[StoredUpdate]]:
        """One script reads the windows of the games that have news (and the bucket's news
        stream's last id, in the same atomic step); if none has, a blocking XREAD waits after
        that id for a commit of the bucket, and a commit of one of these games is read the same
        way. Games of several buckets (not what the watch hub asks) are waited for with one
        XREAD of their buckets' news on a single Redis, by polling on a Cluster.

        ``position`` (a reader's own dict, passed again on each call): where this reader has
        read each bucket's news up to, and which games it had then. The next call reads the
        windows of the games named in the news since then (and of games new to the reader)
        only, instead of every game's: a reader of a few busy games among thousands of idle
        ones does not read every idle window each time one game moves. With the same games
        as before, the news since is read by the XREAD itself (no script first). Games of one
        bucket are looked up in ``cursors`` itself when news comes: a game the caller adds
        while the call waits is read from its cursor then (not at the next call)."""
        if not cursors:
            return {}
        pos = position if position is not None else {}
        by_bucket = _by_bucket(cursors, pos)
        watching = position is not None  # (a watch reader: it looks at its buckets' marks)
        if watching:
            await self._check_marks(by_bucket, pos)
        out: dict[str, list[StoredUpdate]] = {}
        last_ids: dict[str, str] = {}  # news stream -> its last id read
        bucket_of_news = {keys.news_key(b): b for b in by_bucket}
        polling = len(by_bucket) > 1 and self.mode == "cluster"  # (one XREAD, one slot)
        unread = False  # news since a position left to the XREAD below
        for b, part in by_bucket.items():
            last_ids[keys.news_key(b)], skipped = await self._catch_up(
                b, part, out, pos, leave_to_xread=not polling
            )
            unread |= skipped
        loop = asyncio.get_running_loop()
        deadline = loop.time() + block_ms / 1000
        while not out:
            left = int((deadline - loop.time()) * 1000)
            if left <= 0 and not unread:
                break
            if polling:
                await asyncio.sleep(min(left, 50) / 1000)
                for b, part in by_bucket.items():
                    last_ids[keys.news_key(b)], _ = await self._catch_up(b, part, out, pos)
                continue
            if watching:
                await self._check_marks(by_bucket, pos)
            # Not tried again here: the watch hub, told of the error, first checks that the
            # store still holds what it read (a failover may have lost the last commits), then
            # reads on.
            block = min(left, self._max_block_ms, int(MARK_SECONDS * 1000) if watching else left)
            wait = ("BLOCK", block) if left > 0 else ()  # (else: a look)
            unread = False
            res = await self._conn.command(next(iter(last_ids)), "XREAD", "COUNT", NEWS_LENGTH,
                                           *wait, "STREAMS", *last_ids, *last_ids.values(),
                                           retry=False)  # fmt: skip
            if not res:
                continue
            # RESP3 answers a map (stream -> entries), RESP2 a list of pairs
            for name, entries in res.items() if isinstance(res, dict) else res:
                news = records.text(name)
                b = bucket_of_news[news]
                part = by_bucket[b]
                named = {g: part[g] for _, f in entries if (g := f[1].decode()) in part}
                if len(entries) >= NEWS_LENGTH:  # more than one read: some may be trimmed
                    named = dict(part)
                if named:
                    await self._news(b, named, out)
                last_ids[news] = records.text(entries[-1][0])
                pos[news] = (last_ids[news], pos[news][1])  # (set by _catch_up for this call)
        if out and self._wait_replicas > 0:
            # Watchers get only what the replicas hold (as submits are only acknowledged
            # then): one confirmation covers the game's slot.
            await self._confirm(next(iter(out)), "the updates read for watchers")
        return out

    async def _catch_up(
        self,
        bucket: int,
        cursors: Mapping[str, int],
        out: dict[str, list[StoredUpdate]],
        pos: dict[str, Any],
        *,
        leave_to_xread: bool = False,
    ) -> tuple[str, bool]:
        """The news of ``bucket``'s games since the reader's position (every game's window if
        it has none, or the news since may have been trimmed); returns the id read up to, and
        whether reading the news since was left to the caller's XREAD (``leave_to_xread``,
        when the reader's games are the same: a round trip saved each time a reader wakes,
        and readers of idle games wake every block_ms)."""
        news = keys.news_key(bucket)
        known = pos.get(news)
        games = frozenset(cursors)  # (before any wait: the caller may add games meanwhile)
        if known is None:
            last = await self._news(bucket, cursors, out)
        else:
            since, had = known
            new = {g: cursors[g] for g in games - had}
            if not new and leave_to_xread:
                # The XREAD reads the news since, at once if there is any; a stretch trimmed
                # meanwhile comes back as a full COUNT (the stream keeps at least that many),
                # read as a gap.
                if len(had) != len(games):  # fewer games
                    pos[news] = (since, games)
                return since, True
            (row,) = await self._script(self._news_since, (news,), (since, NEWS_LENGTH))
            gids, last, gap = row
            last = records.text(last)
            if gap:
                named = dict(cursors)
            else:
                named = {g: cursors[g] for x in gids if (g := records.text(x)) in cursors}
                named.update(new)
            if named:
                await self._news(bucket, named, out)
        pos[news] = (last, games)
        return last, False

    async def _news(
        self, bucket: int, cursors: Mapping[str, int], out: dict[str, list[StoredUpdate]]
    ) -> str:
        """Adds to ``out`` the updates above each cursor (games of ``bucket``); returns the
        bucket's news stream's last id."""
        gids = list(cursors)
        at = [cursors[g] for g in gids]  # (``cursors`` may change while the script runs)
        windows = [keys.game_keys(g)[1] for g in gids]
        (row,) = await self._script(self._news_script, (keys.news_key(bucket), *windows), at)
        last, found, behind = row
        if behind:
            await self._went_back([(gids[int(k) - 1], at[int(k) - 1]) for k in behind])
        for j in range(0, len(found), 2):
            i = int(found[j]) - 1
            ups = records.readable(found[j + 1], gids[i])
            out[gids[i]] = [u for u in ups if u.version > at[i]]
        return records.text(last)

    async def _went_back(self, games: list[tuple[str, int]]) -> None:
        """Games whose window ends below the cursor read before: StoreError if a record did go
        back too (the watch hub then checks what the store holds, and reads on); else the
        window's last entry is damaged, and is no news (the next commit's entry is: watchers
        see the gap, and get what is missing rebuilt from the log)."""
        heads = await self.heads([g for g, _ in games])
        for g, v in games:
            head = heads.get(g)
            if head is None or head[0] < v:
                raise StoreError(
                    f"game {g} is at an earlier version than {v}, read before: the store "
                    "went back (a failover to a replica that lacked the last commits?)"
                )
        for g, _ in games:
            log.warning("game %s: the last entry of its window is damaged: left out", g)

    async def heads(self, game_ids: list[str]) -> dict[str, tuple[int, str]]:
        """One script call per bucket (and per HEADS_PER_CALL games): the watch hub checks
        all its games every 30 s, and a pipeline of one HMGET per game held the event
        loop for milliseconds at a time, packing and parsing each command in Python."""
        by_bucket: dict[int, list[str]] = {}
        for gid in game_ids:
            by_bucket.setdefault(keys.bucket_of(gid), []).append(gid)
        out: dict[str, tuple[int, str]] = {}
        for gids in by_bucket.values():
            for i in range(0, len(gids), HEADS_PER_CALL):
                part = gids[i : i + HEADS_PER_CALL]
                (row,) = await self._script(self._heads, [keys.game_keys(g)[0] for g in part], ())
                for gid, version, cid in zip(part, row[::2], row[1::2], strict=True):
                    if version is None:
                        continue
                    try:
                        out[gid] = (records.version(gid, version), records.cid(gid, cid))
                    except UnreadableData as e:  # its own calls say so (UNREADABLE_GAME)
                        log.warning("game %s: %s", gid, e)
        return out

