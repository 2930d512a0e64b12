"""Game ids: time-ordered (so sorting ids sorts games by creation), unguessable, URL-safe."""

from __future__ import annotations

import re
import secrets
import threading
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case
GAME_ID = re.compile(r"^[0-9a-hjkmnp-tv-z]{22}$")


def _b32(n: int, width: int) -> str:
    out = []
    for _ in range(width):
        n, r = divmod(n, 32)
        out.append(_ALPHABET[r])
    return "".join(reversed(out))


_last = (0, 0)
_lock = threading.Lock()


def new_game_id(now_ms: int | None = None) -> str:
    """10 characters of milliseconds since the epoch, then 12 random ones (60 bits). Within one
    process ids are strictly increasing (monotonic within a millisecond, as ULIDs are)."""
    global _last
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    with _lock:
        last_ms, last_rand = _last
        if ms <= last_ms and last_rand + 1 < 2**60:
            ms, rand = last_ms, last_rand + 1
        else:
            rand = secrets.randbits(59)  # leaves room to count up within the millisecond
        _last = (ms, rand)
    return _b32(ms, 10) + _b32(rand, 12)


def valid_game_id(game_id: str) -> bool:
    return bool(GAME_ID.match(game_id))
