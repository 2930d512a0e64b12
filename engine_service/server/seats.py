"""Seats that resign or change hands: table events, not rules.

A seat resigning, or handed to a bot or to a new player, is a version of the game like a move:
an entry of the replay log, an update, a commit on the version it read. Its log entry is a
table action, an action id whose kind no rule uses (``RESIGN``, ``HAND_OVER``), so the history,
the replay and review step over it without asking the rules. Who plays each seat after such
events is kept in the table record behind the state (fallbacks.py, ``Table``): the game's
metadata, written at creation, never changes.

Readings (docs/rules-notes.md, "Resigning and seats that change hands"): a resigned seat is out:
it cannot win, and the engine plays its default whenever it is to move (its Honor stays on the
table); the game ends when fewer than two seats are left in play, or no human seat is (the
remaining bots would only be playing each other), and then the seat in play with the most
Honor wins (the rules' tiebreak).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from engine_service import rules
from engine_service.server.bots import BotConfig
from engine_service.server.fallbacks import SeatChange, Table
from engine_service.server.meta import AI, HUMAN, GameMeta, Seat

TABLE_KIND = 0xF0  # (action kinds from here on are the table's; the rules' are below 32)
RESIGN = TABLE_KIND << 16  # arg 0
HAND_OVER = (TABLE_KIND + 1) << 16  # arg 0: to a new player, 1: to a bot
KIND_NAMES = {RESIGN >> 16: "resign", HAND_OVER >> 16: "hand_over"}


def is_table_action(action: int) -> bool:
    return action >> 16 >= TABLE_KIND


def kind_name(action: int) -> str:
    return KIND_NAMES.get(action >> 16, "table")


def describe(seat: int, action: int) -> str:
    """The update's description of a table action (seats 1-based, as the rules' texts)."""
    if action == RESIGN:
        return f"Seat {seat + 1} resigns"
    if action == HAND_OVER | 1:
        return f"Seat {seat + 1} is handed to a bot"
    return f"Seat {seat + 1} is handed to a new player"


def effective(meta: GameMeta, table: Table) -> GameMeta:
    """The game's metadata with its seats as the table has them now (handed over)."""
    if not table.seats:
        return meta
    seats, digests = list(meta.seats), list(meta.token_digests)
    for q, c in table.seats:
        bot = None if c.bot is None else BotConfig(**c.bot)
        seats[q] = Seat(c.kind, c.name, bot)
        digests[q] = c.token_digest
    # (a fresh ``derived``: what answers made of the old seats does not hold for these)
    return replace(meta, seats=tuple(seats), token_digests=tuple(digests), derived={})


def in_play(meta: GameMeta, resigned: Sequence[int]) -> list[int]:
    return [q for q in range(meta.players) if q not in resigned]


def ended(meta: GameMeta, resigned: Sequence[int]) -> bool:
    """Whether resignations ended the game (``meta``: the seats as they are now)."""
    if not resigned:
        return False
    left = in_play(meta, resigned)
    return len(left) < 2 or all(meta.seats[q].kind == AI for q in left)


def winner(s: rules.State, meta: GameMeta, resigned: Sequence[int]) -> int:
    """The seat in play with the most Honor (ties: the rules' order)."""
    totals = rules.scores(s)
    left = in_play(meta, resigned) or list(range(meta.players))
    return max(left, key=lambda q: (totals[q], (q - s.first) % s.n))


def after(meta: GameMeta, seat: int, action: int) -> GameMeta:
    """``meta`` (as it is now) once the table action ``action`` of ``seat`` is played, for a
    replay that has no table record (the change's name and token are not needed there)."""
    if action >> 16 != HAND_OVER >> 16:
        return meta
    kind = AI if action & 1 else HUMAN
    seats = list(meta.seats)
    seats[seat] = Seat(kind, seats[seat].name, None)
    return replace(meta, seats=tuple(seats), derived={})


def handed(table: Table, seat: int, change: SeatChange) -> Table:
    """``table`` with ``seat`` played from now on as ``change`` says."""
    others = tuple((q, c) for q, c in table.seats if q != seat)
    return replace(table, seats=(*others, (seat, change)))
