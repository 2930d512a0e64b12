"""Where a game's data lives in Redis, so that every atomic step touches one Cluster slot.

Games are spread over ``BUCKETS`` buckets by a hash of their id. Every key of a game and the
indexes of its bucket carry the bucket's hash tag, so the one Lua script of a commit (game
record, window, log, idempotency keys, and the bucket's indexes) runs within one slot, as a
Redis Cluster requires; a single Redis is simply a cluster of one. Walkers (ListGames, the
sweeper, the gauges) visit the buckets. The count is fixed for the life of a store: it bounds
how many Cluster primaries games can spread over (64 is far more than a deployment needs; see
docs/scaling.md), and changing it would move every game.

Keys of game ``G`` in bucket ``B`` (two digits)::

    asc:{B}:g:G     hash: state, version, cid, meta, over, to_move, updated, ai
    asc:{B}:u:G     stream: the last updates (window), entry id "<version>-0",
                    fields u (GameUpdate bytes), c (commit id), p (parent's commit id),
                    k (idempotency key, when the request had one)
    asc:{B}:l:G     string: the replay log, 4 bytes per version after the first
    asc:{B}:i:G     hash: idempotency key -> "<version>|<fingerprint>" (keys in the window)

and the bucket's indexes::

    asc:{B}:games   sorted set, all scores 0: game ids (lexicographic = creation order)
    asc:{B}:active  sorted set: ids of unfinished games by last update (unix ms)
    asc:{B}:ai      sorted set: ids of games waiting for an AI move, by when the wait began
"""

from __future__ import annotations

import zlib

BUCKETS = 64


def bucket_of(game_id: str) -> int:
    return zlib.crc32(game_id.encode()) % BUCKETS


def tag(bucket: int) -> str:
    return f"asc:{{{bucket:02d}}}"


def game_keys(game_id: str) -> tuple[str, str, str, str]:
    """record, window, log, idempotency keys."""
    t = tag(bucket_of(game_id))
    return f"{t}:g:{game_id}", f"{t}:u:{game_id}", f"{t}:l:{game_id}", f"{t}:i:{game_id}"


def index_keys(bucket: int) -> tuple[str, str, str]:
    """games, active, ai."""
    t = tag(bucket)
    return f"{t}:games", f"{t}:active", f"{t}:ai"


def pack_log_entry(seat: int, action: int) -> bytes:
    """4 bytes: the seat, then the action's 24 bits (kind < 256, arg < 65536)."""
    if not (0 <= seat < 256 and 0 <= action < 1 << 24):
        raise ValueError(f"log entry out of range: seat {seat}, action {action}")
    return bytes((seat,)) + action.to_bytes(3, "big")


def unpack_log(raw: bytes) -> list[tuple[int, int]]:
    if len(raw) % 4:
        raise ValueError(f"replay log of {len(raw)} bytes is not whole 4-byte entries")
    return [(raw[i], int.from_bytes(raw[i + 1 : i + 4], "big")) for i in range(0, len(raw), 4)]
