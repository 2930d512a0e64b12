"""What the engine keeps with a game's state, written by the same compare-and-set as each
move: the AI seats' fallback moves, the clocks, the seats that resigned and the seats handed
over (the table record).

A worker that plays a fallback move instead of its bot's (the bot raised, overran, ...) says
so with the move it submits (``SubmitActionRequest.fallback_reason``), and the engine's own
fallback for a move nobody answered does too. Each AI seat's count, latest reason and the
version it made are stored in the bytes the store keeps as the game's state, behind the rules'
state, so that they are written by the same compare-and-set as the move: every replica reads
the same counts, and a move applied twice (it never is) could not count twice. The clocks of
a game that has them (server/clocks.py, ``ClockRun``), its resignations and its seats handed
over (server/seats.py) are kept the same way, for the same reason.

Layout: ``rules state bytes + record + len(record) (2 bytes, big-endian) + MARK``, the record
being JSON ``[[seat, count, version, reason], ...]`` when it holds fallback moves only, else
``{"f": that list, "c": the clocks, "r": seats resigned, "s": seats handed over}``. A game
with none of these has no record: its bytes are the rules' alone. (A reader that takes the
bytes for the rules' state still reads the state: the rules' format ignores what follows it.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

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


@dataclass(frozen=True, slots=True)
class SeatChange:
    """Who plays a seat handed over: a human with a new token, or a bot."""

    kind: str  # "human" or "ai" (meta.HUMAN, meta.AI)
    token_digest: str  # a human's new token's digest ("" for a bot)
    bot: dict[str, Any] | None  # a bot's settings (BotConfig.as_payload)
    name: str


@dataclass(frozen=True, slots=True)
class Table:
    fallbacks: Fallbacks = field(default_factory=dict)
    clock: ClockRun | None = None
    resigned: tuple[int, ...] = ()  # seats that resigned, in order
    seats: tuple[tuple[int, SeatChange], ...] = ()  # seats handed over, latest per seat

    def changed(self, seat: int) -> SeatChange | None:
        return next((c for q, c in self.seats if q == seat), None)


def split(stored: bytes) -> tuple[bytes, Fallbacks]:
    """(the rules' state bytes, the seats' fallbacks) of what the store holds."""
    state, table = split_table(stored)
    return state, table.fallbacks


def split_table(stored: bytes) -> tuple[bytes, Table]:
    """(the rules' state bytes, the table record) of what the store holds."""
    if not stored.endswith(MARK):
        return stored, Table()
    end = len(stored) - len(MARK) - 2
    size = int.from_bytes(stored[end : end + 2], "big")
    if end - size < 0:
        raise DamagedRecord("the fallback record is longer than the state")
    try:
        record = json.loads(stored[end - size : end])
        if not isinstance(record, dict):
            record = {"f": record}
        found = {
            int(seat): SeatFallbacks(int(count), int(version), str(reason))
            for seat, count, version, reason in record["f"]
        }
        clock = record.get("c")
        seats = tuple(
            (int(q), SeatChange(str(kind), str(digest), bot, str(name)))
            for q, kind, digest, bot, name in record.get("s", ())
        )
        table = Table(
            found,
            None if clock is None else ClockRun.from_payload(clock),
            tuple(int(q) for q in record.get("r", ())),
            seats,
        )
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
        raise DamagedRecord(f"the fallback record does not decode ({e})") from e
    return stored[: end - size], table


def join(state: bytes, fallbacks: Fallbacks) -> bytes:
    """What the store keeps of a state with ``fallbacks`` and nothing else in its record."""
    return join_table(state, Table(fallbacks))


def join_table(state: bytes, table: Table) -> bytes:
    """What the store keeps: the rules' state bytes, and the record if there is one."""
    rows = [[seat, f.count, f.version, f.reason] for seat, f in sorted(table.fallbacks.items())]
    content: Any = rows
    if table.clock is not None or table.resigned or table.seats:
        content = {"f": rows}
        if table.clock is not None:
            content["c"] = table.clock.as_payload()
        if table.resigned:
            content["r"] = list(table.resigned)
        if table.seats:
            content["s"] = [[q, c.kind, c.token_digest, c.bot, c.name] for q, c in table.seats]
    elif not rows:
        return state
    record = json.dumps(content, separators=(",", ":")).encode()
    if len(record) >= 1 << 16:
        raise DamagedRecord(f"the record behind the state would be {len(record)} bytes")
    return state + record + len(record).to_bytes(2, "big") + MARK


def add(fallbacks: Fallbacks, seat: int, version: int, reason: str) -> Fallbacks:
    """``fallbacks`` with one more of ``seat``'s, made at ``version``, for ``reason``."""
    old = fallbacks.get(seat)
    count = (old.count if old is not None else 0) + 1
    return {**fallbacks, seat: SeatFallbacks(count, version, reason[:MAX_REASON])}
