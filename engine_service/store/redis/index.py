"""Walkers over the buckets: listing games, the AI index (stalled moves, their redispatch,
the oldest wait), the active count, tidying expired games out of the indexes; and what
replicas leave each other: replies, and claims of the losses they count."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from redis.exceptions import RedisClusterException, RedisError

from engine_service.store import keys
from engine_service.store.base import WHOLE_GAME, GameSummaryRecord, PendingAI, StoreError
from engine_service.store.redis import records, scripts
from engine_service.store.redis.core import RedisCore

log = logging.getLogger("ascension.engine.store")


def _page(p: Any, bucket: int, top: str, n: int) -> None:
    """Queue the bucket's next ``n`` game ids below ``top``, newest first."""
    p.zrevrangebylex(keys.index_keys(bucket)[0], top, "-", 0, n)


class RedisIndex(RedisCore):
    _claim = scripts.CLAIM
    _claim_loss = scripts.CLAIM_LOSS
    _claim_clock = scripts.CLAIM_CLOCK
    _presence = scripts.PRESENCE

    async def _each_bucket(self, command: Callable[[Any, int], None]) -> list[Any]:
        """One command per bucket, pipelined (a Cluster pipeline sends each node its own)."""
        async with self.r.pipeline(transaction=False) as p:
            for b in range(keys.BUCKETS):
                command(p, b)
            return list(await p.execute())

    async def list_games(
        self, before_id: str, limit: int, active_only: bool
    ) -> list[GameSummaryRecord]:
        out: list[GameSummaryRecord] = []
        top = f"({before_id}" if before_id else "+"
        fetch = max(limit, 16)
        try:
            for _ in range(64):  # bounded: a page of active games among many finished ones
                per_bucket = await self._each_bucket(functools.partial(_page, top=top, n=fetch))
                ids = sorted({i.decode() for ids in per_bucket for i in ids}, reverse=True)[:fetch]
                if not ids:
                    break
                async with self.r.pipeline(transaction=False) as p:
                    for gid in ids:
                        p.hmget(
                            keys.game_keys(gid)[0], "version", "meta", "over", "to_move", "updated"
                        )
                    rows = await p.execute()
                gone: list[str] = []
                for gid, (version, meta, over, to_move, updated) in zip(ids, rows, strict=True):
                    if version is None:
                        gone.append(gid)  # expired: drop it from the index
                        continue
                    if active_only and over == b"1":
                        continue
                    out.append(records.summary(gid, version, meta, over, to_move, updated))
                    if len(out) >= limit:
                        break
                for gid in gone:
                    await self.r.zrem(keys.index_keys(keys.bucket_of(gid))[0], gid)
                if len(out) >= limit or len(ids) < fetch:
                    break
                top = f"({ids[-1]}"
        except (RedisError, RedisClusterException) as e:
            raise StoreError(f"redis: {e}") from e
        return out[:limit]

    async def stalled_ai(self, waited_since: float, limit: int) -> list[PendingAI]:
        try:
            per_bucket = await self._each_bucket(
                lambda p, b: p.zrangebyscore(
                    keys.index_keys(b)[2],
                    "-inf",
                    f"({waited_since!r}",
                    start=0,
                    num=limit,
                    withscores=True,
                )
            )
            rows = sorted(
                ((gid.decode(), since) for r in per_bucket for gid, since in r), key=lambda r: r[1]
            )[:limit]
            if not rows:
                return []
            async with self.r.pipeline(transaction=False) as p:
                for gid, _ in rows:
                    p.hget(keys.game_keys(gid)[0], "ai")
                payloads = await p.execute()
        except (RedisError, RedisClusterException) as e:
            raise StoreError(f"redis: {e}") from e
        out = []
        for (gid, since), raw in zip(rows, payloads, strict=True):
            if raw is None:
                continue
            try:
                version, payload = records.split_pending(raw)
            except ValueError:  # damaged: one game's, not every stalled move's sweep
                log.warning("game %s: its pending AI move is damaged (%r): not swept", gid, raw[:40])
                continue
            out.append(PendingAI(gid, version, payload, float(since)))
        return out

    async def claim_redispatch(self, game_id: str, old_payload: bytes, new_payload: bytes) -> bool:
        key = keys.game_keys(game_id)[0]
        rec = await self._conn.command(key, "HGET", key, "ai")
        if rec is None:
            return False
        version, _ = records.split_pending(rec)
        prefix = f"{version}|".encode()
        (ok,) = await self._script(
            self._claim, (key,), (prefix + old_payload, prefix + new_payload)
        )
        return bool(ok)

    async def oldest_ai_wait_start(self) -> float | None:
        firsts = await self._guard(
            self._each_bucket(lambda p, b: p.zrange(keys.index_keys(b)[2], 0, 0, withscores=True))
        )
        starts = [float(f[0][1]) for f in firsts if f]
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
        args = (now_ms, now_ms + ttl_ms, ttl_ms, holder, ",".join(map(str, held)),
                ",".join(map(str, let_go)))  # fmt: skip
        (members,) = await self._script(self._presence, (keys.presence_key(game_id),), args)
        return {int(m.split(b":", 1)[0]) for m in members}

    async def due_clocks(self, now_ms: int, limit: int) -> list[str]:
        per_bucket = await self._guard(
            self._each_bucket(
                lambda p, b: p.zrangebyscore(
                    keys.clock_key(b), "-inf", now_ms, start=0, num=limit, withscores=True
                )
            )
        )
        rows = sorted(((gid.decode(), due) for r in per_bucket for gid, due in r), key=lambda r: r[1])
        return [gid for gid, _ in rows[:limit]]

    async def claim_clock_bot(
        self, game_id: str, version: int, commit_id: str, payload: bytes, enqueued_at: float
    ) -> bool:
        b = keys.bucket_of(game_id)
        ks = (keys.game_keys(game_id)[0], keys.clock_key(b), keys.index_keys(b)[2])
        args = (game_id, str(version), commit_id, payload, repr(enqueued_at))
        (ok,) = await self._script(self._claim_clock, ks, args)
        return bool(ok)

    async def active_games(self) -> int:
        counts = await self._guard(self._each_bucket(lambda p, b: p.zcard(keys.index_keys(b)[1])))
        return sum(int(n) for n in counts)

    async def put_reply(self, game_id: str, key: str, data: bytes, ttl_seconds: float) -> None:
        ttl_ms = max(1, int(ttl_seconds * 1000))
        await self._guard(self.r.set(keys.reply_key(game_id, key), data, px=ttl_ms))

    async def take_reply(self, game_id: str, key: str) -> bytes | None:
        data = await self._guard(self.r.getdel(keys.reply_key(game_id, key)))
        return None if data is None else bytes(data)

    async def peek_reply(self, game_id: str, key: str) -> bytes | None:
        data = await self._guard(self.r.get(keys.reply_key(game_id, key)))
        return None if data is None else bytes(data)

    async def claim_loss(self, game_id: str, loss: str, ttl_seconds: float) -> bool:
        claim, record = keys.claim_loss_key(game_id, loss), keys.game_keys(game_id)[0]
        ttl_ms = max(1, int(ttl_seconds * 1000))
        whole = "1" if loss == WHOLE_GAME else "0"
        (claimed,) = await self._script(self._claim_loss, (claim, record), (ttl_ms, whole))
        return bool(claimed)

    async def tidy(self, limit: int) -> int:
        """Unfinished games expire when idle; their index entries are dropped here (active and
        AI entries by score, the games index by walking it from a cursor)."""
        now = time.time()
        idle_before = now - self.settings.idle_ttl
        dropped = 0
        try:
            counts = await self._each_bucket(
                lambda p, b: p.zremrangebyscore(
                    keys.index_keys(b)[1], "-inf", f"({int(idle_before * 1000)}"
                )
            )
            dropped += sum(int(n) for n in counts)
            counts = await self._each_bucket(
                lambda p, b: p.zremrangebyscore(keys.index_keys(b)[2], "-inf", f"({idle_before!r}")
            )
            dropped += sum(int(n) for n in counts)
            # (a clock that ran out longer ago than a game stays idle: its game has expired)
            counts = await self._each_bucket(
                lambda p, b: p.zremrangebyscore(
                    keys.clock_key(b), "-inf", f"({int(idle_before * 1000)}"
                )
            )
            dropped += sum(int(n) for n in counts)
            per = max(1, limit // keys.BUCKETS)
            batches = await self._each_bucket(
                lambda p, b: p.zrangebylex(
                    keys.index_keys(b)[0],
                    f"({self._tidy_cursor[b]}" if self._tidy_cursor[b] else "-",
                    "+",
                    0,
                    per,
                )
            )
            async with self.r.pipeline(transaction=False) as p:
                for ids in batches:
                    for gid in ids:
                        p.exists(keys.game_keys(gid.decode())[0])
                exists = iter(await p.execute())
            for b, ids in enumerate(batches):
                gone = [gid for gid in ids if not next(exists)]
                self._tidy_cursor[b] = ids[-1].decode() if len(ids) == per else ""
                if gone:
                    dropped += int(await self.r.zrem(keys.index_keys(b)[0], *gone))
        except (RedisError, RedisClusterException) as e:
            raise StoreError(f"redis: {e}") from e
        return dropped

