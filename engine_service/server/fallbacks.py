"""The AI seats' fallback moves and the clocks, kept with the game's state in the same write.

A worker that plays a fallback move instead of its bot's (the bot raised, overran, ...) says
so with the move it submits (``SubmitActionRequest.fallback_reason``), and the engine's own
fallback for a move nobody answered does too. Each AI seat's count, latest reason and the
version it made are stored in the bytes the store keeps as the game's state, behind the rules'
state, so that they are written by the same compare-and-set as the move: every replica reads
the same counts, and a move applied twice (it never is) could not count twice.

The clocks of a game that has them (server/clocks.py, ``ClockRun``) are kept the same way,
for the same reason: the deadline a move sets is written by that move's compare-and-set.

Layout: ``rules state bytes + record + len(record) (2 bytes, big-endian) + MARK``, the record
being JSON ``[[seat, count, version, reason], ...]``, or ``{"f": that list, "c": the clocks}``
in a game with clocks. A game with neither has no record: its bytes are the rules' alone. (A
reader that takes the bytes for the rules' state still reads the state: the rules' format
ignores what follows it.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from engine_service.server.clocks import ClockRun

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
    state, found, _ = split_all(stored)
    return state, found


def split_all(stored: bytes) -> tuple[bytes, Fallbacks, ClockRun | None]:
    """(the rules' state bytes, the seats' fallbacks, the clocks) of what the store holds."""
    if not stored.endswith(MARK):
        return stored, {}, None
    end = len(stored) - len(MARK) - 2
    size = int.from_bytes(stored[end : end + 2], "big")
    if end - size < 0:
        raise DamagedRecord("the fallback record is longer than the state")
    try:
        record = json.loads(stored[end - size : end])
        rows, clock = (record["f"], record["c"]) if isinstance(record, dict) else (record, None)
        found = {
            int(seat): SeatFallbacks(int(count), int(version), str(reason))
            for seat, count, version, reason in rows
        }
        run = None if clock is None else ClockRun.from_payload(clock)
    except (ValueError, TypeError, KeyError, IndexError) as e:
        raise DamagedRecord(f"the fallback record does not decode ({e})") from e
    return stored[: end - size], found, run


def join(state: bytes, fallbacks: Fallbacks, clock: ClockRun | None = None) -> bytes:
    """What the store keeps: the rules' state bytes, and the record if there is one."""
    if not fallbacks and clock is None:
        return state
    rows = [[seat, f.count, f.version, f.reason] for seat, f in sorted(fallbacks.items())]
    content = rows if clock is None else {"f": rows, "c": clock.as_payload()}
    record = json.dumps(content, separators=(",", ":")).encode()
    if len(record) >= 1 << 16:
        raise DamagedRecord(f"the record behind the state would be {len(record)} bytes")
    return state + record + len(record).to_bytes(2, "big") + MARK


def add(fallbacks: Fallbacks, seat: int, version: int, reason: str) -> Fallbacks:
    """``fallbacks`` with one more of ``seat``'s, made at ``version``, for ``reason``."""
    old = fallbacks.get(seat)
    count = (old.count if old is not None else 0) + 1
    return {**fallbacks, seat: SeatFallbacks(count, version, reason[:MAX_REASON])}
