"""GameView messages built from real rules states, for rendering tests without a server.

(The terminal client never imports the rules core; only these test fixtures do.)
"""

from __future__ import annotations

from clients.sdk.types import CardInfo, Catalog
from engine_service.api.ascension.v1 import game_pb2
from engine_service.cards import language as L
from engine_service.rules.state import State
from engine_service.rules.tables import default_tables
from engine_service.server import convert
from engine_service.server.bots import BotConfig
from engine_service.server.meta import AI, HUMAN, GameMeta, Seat


def catalog() -> Catalog:
    cat = default_tables().catalog
    cards = [
        CardInfo(
            c.id,
            c.key,
            c.name,
            L.TYPE_NAMES[c.type],
            L.FACTION_NAMES[c.faction],
            c.cost,
            c.honor,
            c.text,
            c.set,
        )
        for c in cat.cards
    ]
    return Catalog.of(cards, cat.fingerprint)


def view_of(
    s: State, seat: int, *, names: list[str] | None = None, bots: list[str] | None = None
) -> game_pb2.GameView:
    """What the server sends to ``seat`` (-1: a spectator), built by the server's own code."""
    seats = tuple(
        Seat(
            kind=AI if bots and bots[q] else HUMAN,
            name=names[q] if names else f"Seat {q + 1}",
            bot=BotConfig(bots[q], 0, 100, 0, 0.0) if bots and bots[q] else None,
        )
        for q in range(s.n)
    )
    meta = GameMeta(s.config.sets, s.n, s.config.seed, seats, ("",) * s.n, "", 0)
    return convert.game_view("g-test", 1, s, meta, seat)


def events_of(s: State, events: list[tuple[object, ...]]) -> list[game_pb2.GameEvent]:
    upd = game_pb2.GameUpdate()
    convert._add_events(upd.events, s, events)
    return list(upd.events)
