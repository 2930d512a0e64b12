"""The game's updates as a readable log: one summary line per seat and turn, and every event.

An update's events carry the rules' event tuple as JSON (``["play", 0, 17]``); the summary
groups a turn's plays, acquisitions and defeats into one line, e.g.
``Turn 3 · Seat 2 (random): played Apprentice ×3, Militia · acquired Mystic · +1 Honor``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from clients.sdk.types import Catalog, GameUpdate, GameView
from clients.terminal.style import card_list, seat_name, seat_style, space_label, styled

# Events that the board already shows, or that say nothing a player wants to read.
_QUIET = frozenset(
    {"gain", "draw", "turn_end", "turn_start", "enter_center", "coin_placed", "ghost_moved",
     "game_over", "reshuffle", "skip"}
)  # fmt: skip


@dataclass(slots=True)
class TurnEntry:
    turn: int
    seat: int
    played: list[int] = field(default_factory=list)
    acquired: list[int] = field(default_factory=list)
    defeated: list[int] = field(default_factory=list)
    banished: list[int] = field(default_factory=list)
    used: list[int] = field(default_factory=list)
    honor: int = 0
    ship: int | None = None
    other: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.played or self.acquired or self.defeated or self.banished or self.used
                    or self.honor or self.ship is not None or self.other)  # fmt: skip


def _data(raw: str) -> list[Any]:
    try:
        value = json.loads(raw) if raw else []
    except ValueError:
        return []
    return value if isinstance(value, list) else []


class EventLog:
    """Every update seen (each version once), summarized per seat and turn."""

    def __init__(self) -> None:
        self.versions: set[int] = set()
        self.entries: list[TurnEntry] = []
        self.texts: list[tuple[int, str]] = []  # (version, event text), every event
        self.turn = 0
        self.last_version = 0

    def add(self, update: GameUpdate) -> bool:
        """Record an update; False if this version was already recorded."""
        if update.version in self.versions:
            return False
        self.versions.add(update.version)
        if update.version == 1:
            self.turn = max(self.turn, 1)
        self.last_version = max(self.last_version, update.version)
        for ev in update.events:
            self.texts.append((update.version, ev.text))
            self._event(ev.kind, _data(ev.data), ev.text, update.seat)
        return True

    def _entry(self, seat: int) -> TurnEntry:
        last = self.entries[-1] if self.entries else None
        if last is not None and last.turn == self.turn and last.seat == seat:
            return last
        entry = TurnEntry(self.turn, seat)
        self.entries.append(entry)
        return entry

    def _event(self, kind: str, data: list[Any], text: str, actor: int) -> None:
        if kind == "turn_start" and len(data) >= 3 and isinstance(data[2], int):
            self.turn = data[2]
            return
        if kind in _QUIET or text == " ".join(str(x) for x in data):
            return  # (an event the rules have no sentence for stays in the full log only)
        seat = data[1] if len(data) > 1 and isinstance(data[1], int) else actor
        if kind == "pool_empty":
            self._entry(-1).other.append(text)
            return
        entry = self._entry(seat)
        card = data[2] if len(data) > 2 and isinstance(data[2], int) else None
        if kind == "play" and card is not None:
            entry.played.append(card)
        elif kind == "acquire" and card is not None:
            entry.acquired.append(card)
        elif kind == "defeat" and card is not None:
            entry.defeated.append(card)
        elif kind == "banish" and card is not None:
            entry.banished.append(card)
        elif kind == "use" and card is not None:
            entry.used.append(card)
        elif kind == "honor" and card is not None:
            entry.honor += card
        elif kind == "ship" and card is not None:
            entry.ship = card
        else:
            entry.other.append(text)

    def lines(self, view: GameView, catalog: Catalog, me: int, *, since: int = 0) -> list[Text]:
        """Summary lines, oldest first (``since``: only entries from that index on)."""
        out: list[Text] = []
        for entry in self.entries[since:]:
            if entry.empty():
                continue
            out.append(render_entry(entry, view, catalog, me))
        return out

    def mark(self) -> int:
        """An index to pass as ``since`` later to get only what happens from now on."""
        return len(self.entries)


SEAT = re.compile(r"\b[Ss]eat (\d)\b(?:'s)?")


def named(text: str, view: GameView, me: int) -> str:
    """An event's sentence with seats named as the table names them ("You", "Ann (ismcts)")
    instead of the rules' "Seat 2"."""

    def name(m: re.Match[str]) -> str:
        seat = int(m.group(1)) - 1
        who = seat_name(view, seat, me)
        if m.group(0).endswith("'s"):
            return "your" if who == "You" and m.start() else "Your" if who == "You" else who + "'s"
        return who if who != "You" or m.start() == 0 else "you"

    return SEAT.sub(name, text)


def render_entry(entry: TurnEntry, view: GameView, catalog: Catalog, me: int) -> Text:
    t = styled(f"R{(max(entry.turn, 1) - 1) // max(view.players, 1) + 1} ", "dim")
    if entry.seat >= 0:
        t.append(seat_name(view, entry.seat, me), style=seat_style(entry.seat))
        t.append(": ")
    parts: list[Text] = []
    for verb, ids in (
        ("played", entry.played),
        ("used", entry.used),
        ("acquired", entry.acquired),
        ("defeated", entry.defeated),
        ("banished", entry.banished),
    ):
        if ids:
            p = Text(f"{verb} ")
            p.append_text(card_list(catalog, ids))
            parts.append(p)
    if entry.honor:
        parts.append(Text(f"+{entry.honor} Honor", style="bold yellow"))
    if entry.ship is not None:
        parts.append(Text(f"ship to {space_label(entry.ship)}", style="blue"))
    # the rest as the rules say it, without the actor the line starts with ("took Gold ×2")
    actor = f"Seat {entry.seat + 1} "
    others = Counter(o.removeprefix(actor) if entry.seat >= 0 else o for o in entry.other)
    for text, n in others.items():
        parts.append(Text(named(text, view, me) + (f" ×{n}" if n > 1 else "")))
    t.append_text(Text(" · ").join(parts))
    return t
