"""A game's own keys: creating it, loading it, the commit (its one script packed by hand: it
runs on every submit), idempotency keys, its window of updates and replay log, deleting it."""

from __future__ import annotations

import logging

from engine_service.store import keys
from engine_service.store.base import (
    Commit,
    CommitResult,
    CommitStatus,
    GameRecord,
    IdempotentRecord,
    NewGame,
    StoredUpdate,
    StoreError,
    UnreadableData,
)
from engine_service.store.redis import records, scripts
from engine_service.store.redis.core import NEWS_LENGTH, RedisCore

log = logging.getLogger("ascension.engine.store")

_LOAD_FIELDS = ("version", "cid", "over", "state", "meta")
class RedisGames(RedisCore):
    _create = scripts.CREATE
    _commit = scripts.COMMIT  # (run by the connection: Connection.commit)
    _load_if_changed = scripts.LOAD_IF_CHANGED
    _idempotent = scripts.IDEMPOTENT
    _update_at = scripts.UPDATE_AT
    _replace = scripts.REPLACE
    _delete = scripts.DELETE

    async def create(self, game: NewGame) -> None:
        g, u, _, _ = keys.game_keys(game.game_id)
        b = keys.bucket_of(game.game_id)
        games, active, ai = keys.index_keys(b)
        args = (
            game.game_id,
            game.commit_id,
            game.state,
            keys.pack_meta(game.meta),
            keys.pack_window_entry(1, False, game.commit_id, "", game.update),
            game.to_move,
            game.created_ms,
            game.ai_pending or b"",
            repr(game.enqueued_at),
            self.settings.idle_ttl,
            NEWS_LENGTH,
            str(game.clock_deadline_ms) if game.clock_deadline_ms > 0 else "",
        )
        news = keys.news_key(b)
        wait = self._wait_replicas > 0  # (a game acknowledged survives a failover, as a move)
        clock = keys.clock_key(b)
        replies = await self._script(
            self._create, (g, u, games, active, ai, news, clock), args, wait=wait
        )
        if not replies[0]:
            raise ValueError(f"game {game.game_id} exists")
        if wait:
            self._check_replicas(replies[1], "the new game")

    async def load(self, game_id: str, *, fresh: bool = True) -> GameRecord | None:
        key = keys.game_keys(game_id)[0]
        row = await self._conn.command(key, "HMGET", key, *_LOAD_FIELDS)
        version, cid, over, state, meta = row
        if version is None:
            return None
        v, m = records.version(game_id, version), records.meta(game_id, meta or b"")
        return GameRecord(game_id, v, records.cid(game_id, cid), state, m, over == b"1")

    async def load_if_changed(
        self, game_id: str, known_commit_id: str, want_meta: bool
    ) -> tuple[int, str, bool, bytes | None, bytes | None] | None:
        """(version, commit id, over, state, meta): state None when the commit id is the known
        one, meta None unless asked for. None: no such game."""
        key = keys.game_keys(game_id)[0]
        args = (known_commit_id, "1" if want_meta else "0")
        (row,) = await self._script(self._load_if_changed, (key,), args)
        if row is None:
            return None
        state = row[3] if len(row) > 3 else None
        meta = records.meta(game_id, row[4]) if len(row) > 4 else None
        version, cid = records.version(game_id, row[0]), records.cid(game_id, row[1])
        return version, cid, row[2] == b"1", state, meta

    async def commit(self, c: Commit) -> CommitResult:
        wait = self._wait_replicas > 0
        replies = await self._conn.commit(c, self._commit_tail, wait=wait)
        res = replies[0]
        status = CommitStatus(res[0].decode())
        version = records.version(c.game_id, res[1])
        prior = None
        what = f"the commit of version {c.expected_version + 1}"
        if status is CommitStatus.DUPLICATE:
            prior = records.idempotent_record(c.game_id, res[3])
            if wait:  # the answer will be what the key wrote: it must be on the replicas too
                self._check_replicas(replies[1], f"the version {prior.version} a retry is told of")
        elif (
            status is CommitStatus.CONFLICT
            and version > c.expected_version + 1
            # Was it ours, and then built upon? (the reply to our commit was lost)
            and await self._attempt_at(c.game_id, c.expected_version + 1) == c.attempt
        ):
            status = CommitStatus.OK
            await self._confirm(c.game_id, what)
            wait = False
        if status is CommitStatus.OK and wait:
            self._check_replicas(replies[1], what)
        if status is CommitStatus.OK and (c.over or (c.expected_version + 1) % keys.LOG_CHUNK == 0):
            await self._pack_log(c.game_id, c.over)
        return CommitResult(status, version, records.cid(c.game_id, res[2]), prior)

    async def _pack_log(self, game_id: str, over: bool) -> None:
        """The replay log compressed (keys.pack_log): whole at the game's end, and every
        LOG_CHUNK versions while it goes on (the log is most of a long game's memory). The
        script replaces only what was read (a commit in between appends: then it is left as
        it is). Best effort: a log not compressed reads the same."""
        log_key = keys.game_keys(game_id)[2]
        try:
            stored = await self._conn.command(log_key, "GET", log_key)
            if stored:
                packed = keys.pack_log(keys.unpack_log_bytes(stored), over)
                await self._script(self._replace, (log_key,), (len(stored), packed))
        except (StoreError, UnreadableData) as e:  # (the commit itself is done)
            log.warning("the replay log of game %s is kept uncompressed: %s", game_id, e)

    async def idempotent(self, game_id: str, key: str) -> IdempotentRecord | None:
        idem = keys.game_keys(game_id)[3]
        confirm = "1" if self._wait_replicas > 0 else "0"
        replies = await self._script(
            self._idempotent, (idem,), (key, confirm), wait=confirm == "1"
        )
        raw = replies[0]
        if raw is None:
            return None
        if confirm == "1":
            self._check_replicas(replies[1], "the version a retry is told of")
        return records.idempotent_record(game_id, raw)

    async def _window_entry(
        self, game_id: str, version: int
    ) -> tuple[int, bool, str, str, str, bytes] | None:
        """The window entry of ``version`` unpacked (keys.unpack_window_entry_attempt), if the
        window holds it, readable."""
        window = keys.game_keys(game_id)[1]
        (raw,) = await self._script(self._update_at, (window,), (version,))
        if raw is None:
            return None
        try:
            entry = keys.unpack_window_entry_attempt(raw)
        except UnreadableData as e:
            log.warning("game %s: its update %d is damaged in its window (%s)", game_id, version, e)
            return None
        return entry if entry[0] == version else None

    async def _attempt_at(self, game_id: str, version: int) -> str:
        """The attempt id of the Commit that wrote ``version``, if the window holds it."""
        entry = await self._window_entry(game_id, version)
        return "" if entry is None else entry[4]

    async def update_at(self, game_id: str, version: int) -> StoredUpdate | None:
        entry = await self._window_entry(game_id, version)
        if entry is None:
            return None
        v, over, cid, parent, _, update = entry
        return StoredUpdate(v, cid, parent, update, over)

    async def first_update_version(self, game_id: str) -> int | None:
        window = keys.game_keys(game_id)[1]
        first = await self._conn.command(window, "LINDEX", window, 0)
        ups = [] if first is None else records.readable([first], game_id)
        return ups[0].version if ups else None

    async def action_log(self, game_id: str) -> list[tuple[int, int]]:
        log_key = keys.game_keys(game_id)[2]
        raw = await self._conn.command(log_key, "GET", log_key)
        try:
            return keys.unpack_log(raw or b"")
        except UnreadableData as e:
            raise UnreadableData(f"its replay log is damaged ({e})", game_id) from e

    async def delete(self, game_id: str) -> bool:
        b = keys.bucket_of(game_id)
        (existed,) = await self._script(
            self._delete,
            (
                *keys.game_keys(game_id),
                *keys.index_keys(b),
                keys.reviews_key(game_id),
                keys.clock_key(b),
            ),
            (game_id,),
        )
        return bool(existed)

