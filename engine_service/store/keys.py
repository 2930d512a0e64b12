"""Where a game's data lives in Redis, so that every atomic step touches one Cluster slot.

Games are spread over ``BUCKETS`` buckets by a hash of their id. Every key of a game and the
indexes of its bucket carry the bucket's hash tag, so the one Lua script of a commit (game
record, window, log, idempotency keys, and the bucket's indexes) runs within one slot, as a
Redis Cluster requires; a single Redis is simply a cluster of one. Walkers (ListGames, the
sweeper, the gauges) visit the buckets. The count is fixed for the life of a store: it bounds
how many Cluster primaries games can spread over (64 is far more than a deployment needs; see
docs/scaling.md), and changing it would move every game.

Keys of game ``G`` in bucket ``B`` (two digits)::

    asc:{B}:g:G     hash: state, version, cid, meta (zlib, see ``pack_meta``), over, to_move,
                    updated, ai
    asc:{B}:w:G     list: the window of recent updates, oldest first (``pack_window_entry``)
    asc:{B}:l:G     string: the replay log, 4 bytes per version after the first (a finished
                    game's is zlib-compressed: ``pack_log``)
    asc:{B}:i:G     hash: idempotency key -> "<version>|<fingerprint>" (keys in the window),
                    "\xff<version>" -> that version's key (which key leaves with it), and
                    "\xff" -> "" (the hash's expiry is set: see the commit script)
    asc:{B}:r:G:K   string: a reply left for the replica waiting for K (an analysis), short TTL
    asc:{B}:v:G     hash: the game's reviews, "<seat>:<version>" -> a rated decision, as long
                    as the game (``engine_service/store/reviews``)
    asc:{B}:p:G     sorted set: the game's present seats, "<seat>:<replica>" by when each
                    lapses unless its replica renews it (``presence_key``)
    asc:{B}:x:G:L   string: the claim of loss L of the game by the replica that counted it
                    (``claim_loss_key``), about a day

and the bucket's indexes and news::

    asc:{B}:games   sorted set, all scores 0: game ids (lexicographic = creation order)
    asc:{B}:active  sorted set: ids of unfinished games by last update (unix ms: of the move
                    that last renewed the game's lease, plus its margin; see the commit script)
    asc:{B}:ai      sorted set: ids of games waiting for an AI move, by when the wait began
    asc:{B}:clock   sorted set: ids of games whose seat to move has a clock, by when its time
                    runs out (unix ms)
    asc:{B}:news    stream (trimmed to a few hundred entries): field g = the id of a game that
                    has a new version; what watchers of the bucket's games block on
    asc:{B}:mark    string: a random id set once (``mark_key``); a watch reader that finds
                    another (or none) knows the store was emptied since it last looked

A window is a list, not a stream per game: a stream costs at least one 4 KB node per key
(Redis preallocates ``stream-node-max-bytes``), more than everything else a game keeps, while a
list of a few updates costs little more than their bytes. The bucket's news stream is what a
blocking read waits on.
"""

from __future__ import annotations

import functools
import struct
import zlib

from engine_service.store.base import UnreadableData

BUCKETS = 64


@functools.lru_cache(maxsize=1 << 16)  # called for every key of a game, and by watch readers
def bucket_of(game_id: str) -> int:
    return zlib.crc32(game_id.encode()) % BUCKETS


_TAGS = tuple(f"asc:{{{b:02d}}}" for b in range(BUCKETS))


def tag(bucket: int) -> str:
    return _TAGS[bucket]


@functools.lru_cache(maxsize=1 << 14)  # (every submit names them)
def game_keys(game_id: str) -> tuple[str, str, str, str]:
    """record, window, log, idempotency keys."""
    t = tag(bucket_of(game_id))
    return f"{t}:g:{game_id}", f"{t}:w:{game_id}", f"{t}:l:{game_id}", f"{t}:i:{game_id}"


def presence_key(game_id: str) -> str:
    """Who is here in the game (the engine's presence.py), in the game's bucket."""
    return f"{tag(bucket_of(game_id))}:p:{game_id}"


def reviews_key(game_id: str) -> str:
    """The game's stored reviews (engine_service/store/reviews), in the game's bucket."""
    return f"{tag(bucket_of(game_id))}:v:{game_id}"


_NEWS_KEYS = tuple(f"{t}:news" for t in _TAGS)
_INDEX_KEYS = tuple((f"{t}:games", f"{t}:active", f"{t}:ai") for t in _TAGS)


def news_key(bucket: int) -> str:
    return _NEWS_KEYS[bucket]


_CLOCK_KEYS = tuple(f"{t}:clock" for t in _TAGS)


def clock_key(bucket: int) -> str:
    """The bucket's clock index: games by when their running clock runs out."""
    return _CLOCK_KEYS[bucket]


def mark_key(bucket: int) -> str:
    return f"{tag(bucket)}:mark"


_OVER, _RAW_IDS, _ATTEMPT = 1, 2, 4


def pack_window_entry(
    version: int, over: bool, commit_id: str, parent_id: str, update: bytes, attempt: str = ""
) -> bytes:
    """The version (4 bytes, big-endian: what the scripts read), flags, the commit id and its
    parent's (8 bytes each when they are 16 hex digits, as commit ids are; else each as a
    length byte and its text), the writing Commit's attempt id (8 bytes, when it has one of 16
    hex digits), then the update."""
    flags = _OVER if over else 0
    try:
        ids = bytes.fromhex(commit_id) + bytes.fromhex(parent_id)
        raw = len(ids) == 16
    except ValueError:
        raw = False
    if raw:
        flags |= _RAW_IDS
    else:
        c, p = commit_id.encode(), parent_id.encode()
        ids = bytes((len(c),)) + c + bytes((len(p),)) + p
    if len(attempt) == 16:
        try:
            ids += bytes.fromhex(attempt)
            flags |= _ATTEMPT
        except ValueError:
            pass
    return struct.pack(">IB", version, flags) + ids + update


def unpack_window_entry(raw: bytes) -> tuple[int, bool, str, str, bytes]:
    """(version, over, commit id, parent's commit id, update)."""
    version, over, cid, parent, _, update = unpack_window_entry_attempt(raw)
    return version, over, cid, parent, update


def unpack_window_entry_attempt(raw: bytes) -> tuple[int, bool, str, str, str, bytes]:
    """(version, over, commit id, parent's commit id, attempt id or "", update);
    UnreadableData if ``raw`` is too short for what its flags announce, or not text where
    ids are."""
    try:
        version, flags = struct.unpack_from(">IB", raw)
        if flags & _RAW_IDS:
            cid, parent, rest = raw[5:13].hex(), raw[13:21].hex(), 21
        else:
            n = raw[5]
            cid, m = raw[6 : 6 + n].decode(), raw[6 + n]
            parent, rest = raw[7 + n : 7 + n + m].decode(), 7 + n + m
        attempt = ""
        if flags & _ATTEMPT:
            attempt, rest = raw[rest : rest + 8].hex(), rest + 8
    except (struct.error, IndexError, UnicodeDecodeError) as e:
        raise UnreadableData(f"window entry of {len(raw)} bytes does not unpack: {e}") from e
    if len(raw) < rest or flags & ~(_OVER | _RAW_IDS | _ATTEMPT):
        raise UnreadableData(f"window entry of {len(raw)} bytes with flags {flags} is damaged")
    return version, bool(flags & _OVER), cid, parent, attempt, raw[rest:]


def reply_key(game_id: str, key: str) -> str:
    return f"{tag(bucket_of(game_id))}:r:{game_id}:{key}"


def claim_loss_key(game_id: str, loss: str) -> str:
    return f"{tag(bucket_of(game_id))}:x:{game_id}:{loss}"


def index_keys(bucket: int) -> tuple[str, str, str]:
    """games, active, ai."""
    return _INDEX_KEYS[bucket]


def pack_log_entry(seat: int, action: int) -> bytes:
    """4 bytes: the seat, then the action's 24 bits (kind < 256, arg < 65536)."""
    if not (0 <= seat < 256 and 0 <= action < 1 << 24):
        raise ValueError(f"log entry out of range: seat {seat}, action {action}")
    return bytes((seat,)) + action.to_bytes(3, "big")


def unpack_log(stored: bytes) -> list[tuple[int, int]]:
    raw = unpack_log_bytes(stored)
    if len(raw) % 4:
        raise UnreadableData(f"replay log of {len(raw)} bytes is not whole 4-byte entries")
    return [(raw[i], int.from_bytes(raw[i + 1 : i + 4], "big")) for i in range(0, len(raw), 4)]


def pack_meta(meta: bytes) -> bytes:
    """A game's metadata as Redis keeps it: zlib-compressed when that is shorter (its JSON holds
    hex digests; compressed, a 6-player game's is half as long, read by a replica once)."""
    packed = zlib.compress(meta, 9)
    return packed if len(packed) < len(meta) else meta


def unpack_meta(raw: bytes) -> bytes:
    """The metadata's JSON (it begins with "{"; zlib's output with "x")."""
    return zlib.decompress(raw) if raw[:1] == b"x" else raw


# A log is kept compressed (a quarter of its size), whole once the game is over, and up to
# its last LOG_CHUNK versions while it goes on: the commit script appends plain 4-byte
# entries after whatever is there, and every LOG_CHUNK versions the store compresses what
# has gathered. The first byte tells the forms apart (a plain log begins with a seat, < 8):
#   0xFF zlib(entries)                                     finished
#   0xFE <4 bytes: n> <n bytes: zlib(entries)> <entries>   going on
LOG_CHUNK = 128
_PACKED_LOG, _PACKED_HEAD = 0xFF, 0xFE


def pack_log(raw: bytes, over: bool) -> bytes:
    """The log's entries (plain) in the form it is kept in: whole when ``over``, else all
    but the entries after the last whole ``LOG_CHUNK``."""
    if over:
        return bytes((_PACKED_LOG,)) + zlib.compress(raw, 9)
    cut = len(raw) // (4 * LOG_CHUNK) * 4 * LOG_CHUNK
    head = zlib.compress(raw[:cut], 9)
    return bytes((_PACKED_HEAD,)) + struct.pack(">I", len(head)) + head + raw[cut:]


def unpack_log_bytes(stored: bytes) -> bytes:
    """The log's entries, plain, whatever form it is kept in; UnreadableData if damaged."""
    try:
        if stored[:1] == bytes((_PACKED_LOG,)):
            return zlib.decompress(stored[1:])
        if stored[:1] == bytes((_PACKED_HEAD,)):
            (n,) = struct.unpack_from(">I", stored, 1)
            return zlib.decompress(stored[5 : 5 + n]) + stored[5 + n :]
    except (zlib.error, struct.error) as e:
        raise UnreadableData(f"replay log of {len(stored)} bytes does not unpack: {e}") from e
    return stored
