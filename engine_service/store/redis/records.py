"""What the store's replies hold, decoded: a game's record fields, window entries, idempotency
records, pending AI moves and listing rows. Bytes that are not what the engine wrote (damaged)
raise UnreadableData, or are left out where one game's damage must not take a whole reply
down (a listing, a watcher's updates)."""

from __future__ import annotations

import logging
import zlib

from engine_service.store import keys
from engine_service.store.base import (
    GameSummaryRecord,
    IdempotentRecord,
    StoredUpdate,
    UnreadableData,
)

log = logging.getLogger("ascension.engine.store")

MAX_VERSION = (1 << 31) - 1  # far beyond any game; a larger one is damage


def text(b: bytes | str | None) -> str:
    return "" if b is None else b.decode() if isinstance(b, bytes) else b


def split_pending(raw: bytes) -> tuple[int, bytes]:
    """A pending AI move ("<version>|<payload>")."""
    version, _, payload = raw.partition(b"|")
    return int(version), payload


def stored_update(entry: bytes) -> StoredUpdate:
    version, over, cid, parent, update = keys.unpack_window_entry(entry)
    return StoredUpdate(version, cid, parent, update, over)


def version(game_id: str, raw: bytes | int) -> int:
    """A record's version; UnreadableData if damaged."""
    try:
        v = int(raw)
    except ValueError as e:
        raise UnreadableData(f"its record's version does not decode ({e})", game_id) from e
    if not 0 <= v <= MAX_VERSION:
        raise UnreadableData(f"its record's version {v} is out of range", game_id)
    return v


def cid(game_id: str, raw: bytes | None) -> str:
    """A record's commit id; UnreadableData if damaged (not text)."""
    try:
        return text(raw)
    except UnicodeDecodeError as e:
        raise UnreadableData(f"its record's commit id does not decode ({e})", game_id) from e


def meta(game_id: str, raw: bytes) -> bytes:
    """A record's metadata, unpacked; UnreadableData if damaged."""
    try:
        return keys.unpack_meta(raw)
    except zlib.error as e:
        raise UnreadableData(f"its metadata does not unpack ({e})", game_id) from e


def idempotent_record(game_id: str, raw: bytes) -> IdempotentRecord:
    """What an idempotency key wrote ("<version>|<fingerprint>"); UnreadableData if damaged."""
    version, _, fingerprint = raw.partition(b"|")
    try:
        return IdempotentRecord(int(version), fingerprint)
    except ValueError as e:
        raise UnreadableData(f"an idempotency record does not decode ({e})", game_id) from e


def summary(
    gid: str, version: bytes, meta: bytes | None, over: bytes, to_move: bytes, updated: bytes
) -> GameSummaryRecord:
    """A listing's row; a field damaged in the store is listed as 0 (metadata as none): one
    such record must not take the listing down."""
    damaged: list[str] = []

    def num(name: str, raw: bytes, low: int, high: int) -> int:
        try:
            n = int(raw)
        except (TypeError, ValueError):
            n = low - 1
        if low <= n <= high:
            return n
        damaged.append(name)
        return 0

    try:
        unpacked = keys.unpack_meta(meta or b"")
    except zlib.error:
        unpacked = b""
        damaged.append("meta")
    row = GameSummaryRecord(gid, num("version", version, 0, MAX_VERSION), unpacked, over == b"1",
                            num("to_move", to_move, -1, 63), num("updated", updated, 0, 1 << 62))  # fmt: skip
    if damaged:
        log.warning("game %s: its record's %s do not decode: listed as 0", gid, ", ".join(damaged))
    return row


def readable(entries: list[bytes], game_id: str) -> list[StoredUpdate]:
    """The updates of ``entries`` (consecutive, oldest first) after the last one that does
    not unpack (damaged bytes): its watchers see a gap there and get what is missing rebuilt
    from the game's log, which with the state is the game (the window only keeps updates)."""
    out: list[StoredUpdate] = []
    for e in entries:
        try:
            out.append(stored_update(e))
        except UnreadableData as err:
            log.warning("game %s: an update in its window is damaged (%s): left out", game_id, err)
            out.clear()
    return out
