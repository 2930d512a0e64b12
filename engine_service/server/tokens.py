"""Seat tokens: random secrets; only their SHA-256 is kept with the game (AI seats excepted,
whose tokens the server hands to the worker that plays them). Never log or show a token."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence


def new_token() -> str:
    return secrets.token_urlsafe(24)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def seat_of(token: str, seat_digests: Sequence[str]) -> int | None:
    """The seat whose token this is, or None."""
    d = digest(token)
    found = None
    for seat, known in enumerate(seat_digests):
        if hmac.compare_digest(d, known):
            found = seat
    return found


def matches(token: str, known_digest: str) -> bool:
    return hmac.compare_digest(digest(token), known_digest)
