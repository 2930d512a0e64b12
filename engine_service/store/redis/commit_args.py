"""commit.lua's keys and arguments for a Commit (KEYS 1-8 and ARGV 1-22, see the script):
as values, and packed by hand in the Redis protocol for the hand-written connection (the same
bytes as ``resp.pack`` makes of the values, in a fraction of its time)."""

from __future__ import annotations

import functools

from engine_service.store import keys
from engine_service.store.base import Commit
from engine_service.store.redis import scripts
from engine_service.store.redis.resp import bulks, head

COMMIT_KEYS, COMMIT_ITEMS = 8, 30  # (keys and arguments of commit.lua)
COMMIT_HEAD = b"*%d\r\n" % (COMMIT_ITEMS + 3) + bulks(("EVALSHA", scripts.COMMIT.sha, COMMIT_KEYS))


def _keys(game_id: str) -> tuple[str, ...]:
    ks = keys.game_keys(game_id)
    b = keys.bucket_of(game_id)
    _, active, ai = keys.index_keys(b)
    return (*ks, active, ai, keys.news_key(b), keys.clock_key(b))


def items(c: Commit, tail: tuple[int, ...]) -> tuple[tuple[str, ...], tuple[bytes | str | int, ...]]:
    """(KEYS, ARGV) of commit.lua for ``c``; ``tail``: ARGV 16-21 (the store's settings)."""
    ai = c.ai_pending or b""
    entry = keys.pack_window_entry(
        c.expected_version + 1, c.over, c.commit_id, c.expected_commit_id, c.update, c.attempt
    )
    args = (c.game_id, str(c.expected_version), c.expected_commit_id, c.commit_id, c.attempt,
            1 if c.over else 0, str(c.to_move), str(c.updated_ms),
            repr(c.enqueued_at) if ai else "",  # (read only with a payload)
            c.state, entry, keys.pack_log_entry(c.seat, c.action), c.idem_key, c.fingerprint, ai,
            *tail, clock(c))  # fmt: skip
    return _keys(c.game_id), args


def clock(c: Commit) -> str:
    """ARGV 22: the next clock's deadline, "" for none."""
    return str(c.clock_deadline_ms) if c.clock_deadline_ms > 0 else ""


def packed_clock(c: Commit) -> bytes:
    """ARGV 22, packed (it follows the store's settings)."""
    if c.clock_deadline_ms <= 0:
        return b"$0\r\n\r\n"
    d = str(c.clock_deadline_ms)
    return b"$%d\r\n%s\r\n" % (len(d), d.encode())


@functools.lru_cache(maxsize=1 << 14)
def _packed_keys(game_id: str) -> bytes:
    """The commit script's keys and first argument, packed: the same for each commit of a
    game."""
    return bulks((*_keys(game_id), game_id))


def packed(c: Commit) -> bytes:
    """KEYS and ARGV 1-15 of ``items``, packed by hand (ARGV 16-21 are the caller's, then
    ``packed_clock``)."""
    ai = c.ai_pending or b""
    enqueued = repr(c.enqueued_at) if ai else ""  # (read only with a payload)
    ev, cid, parent, attempt = str(c.expected_version), c.commit_id, c.expected_commit_id, c.attempt
    to_move, updated = str(c.to_move), str(c.updated_ms)
    # Packed by hand, on every submit: bulks() cost as much as the rest of the commit.
    text = (
        f"${len(ev)}\r\n{ev}\r\n${len(parent)}\r\n{parent}\r\n${len(cid)}\r\n{cid}\r\n"
        f"${len(attempt)}\r\n{attempt}\r\n$1\r\n{1 if c.over else 0}\r\n${len(to_move)}\r\n"
        f"{to_move}\r\n${len(updated)}\r\n{updated}\r\n${len(enqueued)}\r\n{enqueued}\r\n"
    )  # fmt: skip
    if text.isascii():
        packed_text = text.encode()
    else:  # (some length above is not its UTF-8's)
        packed_text = bulks((ev, parent, cid, attempt, 1 if c.over else 0, to_move, updated,
                              enqueued))  # fmt: skip
    entry = keys.pack_window_entry(c.expected_version + 1, c.over, cid, parent, c.update, attempt)
    log_entry, idem, fp = keys.pack_log_entry(c.seat, c.action), c.idem_key.encode(), c.fingerprint
    crlf = b"\r\n"
    return b"".join((
        _packed_keys(c.game_id), packed_text,
        head(len(c.state)), c.state, crlf, head(len(entry)), entry, crlf,
        head(len(log_entry)), log_entry, crlf, head(len(idem)), idem, crlf,
        head(len(fp)), fp, crlf, head(len(ai)), ai, crlf,
    ))  # fmt: skip
