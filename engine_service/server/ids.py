"""Game ids: time-ordered (so sorting ids sorts games by creation), unguessable, URL-safe."""

from __future__ import annotations

import re
import secrets
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case
GAME_ID = re.compile(r"^[0-9a-hjkmnp-tv-z]{22}$")


def _b32(n: int, width: int) -> str:
    out = []
    for _ in range(width):
        n, r = divmod(n, 32)
        out.append(_ALPHABET[r])
    return "".join(reversed(out))


def new_game_id(now_ms: int | None = None) -> str:
    """10 characters of milliseconds since the epoch, then 12 random ones (60 bits)."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    return _b32(ms, 10) + _b32(secrets.randbits(60), 12)


def valid_game_id(game_id: str) -> bool:
    return bool(GAME_ID.match(game_id))
