"""The AI seats' fallback moves, kept with the game's state in the same write.

A worker that plays a fallback move instead of its bot's (the bot raised, overran, ...) says
so with the move it submits (``SubmitActionRequest.fallback_reason``), and the engine's own
fallback for a move nobody answered does too. Each AI seat's count, latest reason and the
version it made are stored in the bytes the store keeps as the game's state, behind the rules'
state, so that they are written by the same compare-and-set as the move: every replica reads
the same counts, and a move applied twice (it never is) could not count twice.

Layout: ``rules state bytes + record + len(record) (2 bytes, big-endian) + MARK``, the record
being JSON ``[[seat, count, version, reason], ...]``. A game with no fallback move has no
record: its bytes are the rules' alone. (A reader that takes the bytes for the rules' state
still reads the state: the rules' format ignores what follows it.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass

MARK = b"\x00ascension-fallbacks-1"
MAX_REASON = 200


class DamagedRecord(ValueError):
    """The record behind a state is not one the engine wrote."""


@dataclass(frozen=True, slots=True)
class SeatFallbacks:
    count: int
    version: int  # the version the latest one made
    reason: str  # the latest one's


Fallbacks = dict[int, SeatFallbacks]  # by seat: only seats that played one


def split(stored: bytes) -> tuple[bytes, Fallbacks]:
    """(the rules' state bytes, the seats' fallbacks) of what the store holds."""
    if not stored.endswith(MARK):
        return stored, {}
    end = len(stored) - len(MARK) - 2
    size = int.from_bytes(stored[end : end + 2], "big")
    if end - size < 0:
        raise DamagedRecord("the fallback record is longer than the state")
    try:
        rows = json.loads(stored[end - size : end])
        found = {
            int(seat): SeatFallbacks(int(count), int(version), str(reason))
            for seat, count, version, reason in rows
        }
    except (ValueError, TypeError) as e:
        raise DamagedRecord(f"the fallback record does not decode ({e})") from e
    return stored[: end - size], found


def join(state: bytes, fallbacks: Fallbacks) -> bytes:
    """What the store keeps: the rules' state bytes, and the record if there is one."""
    if not fallbacks:
        return state
    rows = [[seat, f.count, f.version, f.reason] for seat, f in sorted(fallbacks.items())]
    record = json.dumps(rows, separators=(",", ":")).encode()
    return state + record + len(record).to_bytes(2, "big") + MARK


def add(fallbacks: Fallbacks, seat: int, version: int, reason: str) -> Fallbacks:
    """``fallbacks`` with one more of ``seat``'s, made at ``version``, for ``reason``."""
    old = fallbacks.get(seat)
    count = (old.count if old is not None else 0) + 1
    return {**fallbacks, seat: SeatFallbacks(count, version, reason[:MAX_REASON])}
