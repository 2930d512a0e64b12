"""GameView messages built from real rules states, for rendering tests without a server.

(The terminal client never imports the rules core; only these test fixtures do.)
"""

from __future__ import annotations

import json

from clients.sdk.types import CardInfo, Catalog
from engine_service import rules
from engine_service.api.ascension.v1 import game_pb2
from engine_service.cards import language as L
from engine_service.rules.actions import DECISION_NAMES
from engine_service.rules.state import COIN_DOWN, DEEP, KRAKEN_ABSENT, KRAKEN_IN_DEEP, State
from engine_service.rules.tables import default_tables

COLORS = ("red", "orange", "yellow", "green", "blue", "purple")


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


def coin(code: int) -> game_pb2.Coin:
    c = code & (COIN_DOWN - 1)
    return game_pb2.Coin(
        code=c,
        color=COLORS[c // 6],
        resource=L.RESOURCE_NAMES[c % 6],
        face_down=bool(code & COIN_DOWN),
    )


def view_of(
    s: State, seat: int, *, names: list[str] | None = None, bots: list[str] | None = None
) -> game_pb2.GameView:
    """Roughly what the server sends to ``seat`` (-1: a spectator)."""
    n = s.n
    seats = []
    for q in range(n):
        seats.append(
            game_pb2.SeatState(
                seat=q,
                hand=s.hands[q] if q == seat else [],
                hand_count=len(s.hands[q]),
                deck_count=len(s.decks[q]),
                discard_count=len(s.discards[q]),
                discard=s.discards[q],
                constructs=s.constructs[q],
                ongoing=s.ongoing[q],
                treasures=s.treasures[q],
                coins=[coin(c) for c in s.coins[q]],
                crew=s.crew[q],
                honor_tokens=s.tokens[q],
                ship_space=s.ship[q],
                played=s.played[q],
            )
        )
    board = game_pb2.Board(
        turn=s.turn, active_seat=s.active, first_seat=s.first, runes=s.runes, power=s.power,
        seats=seats,
        center=[game_pb2.CenterSpace(space=i, card=s.center[i], treasures_under=s.under[i]) for i in range(6)],
        kraken=game_pb2.Kraken(
            in_game=s.kraken != KRAKEN_ABSENT, in_deep=s.kraken == KRAKEN_IN_DEEP,
            owner_seat=s.kraken if s.kraken >= 0 else -1, treasures_under=s.under[DEEP],
            coins=[coin(c) for c in s.kraken_coins],
        ),
        ghost_pirate_space=s.ghost, board_coin_space=s.board_coin // 6 if s.board_coin >= 0 else -1,
        honor_pool=s.pool, final_round=s.ending, the_void=s.void, mystic_pile=s.piles[0],
        heavy_infantry_pile=s.piles[1], center_deck_count=len(s.center_deck),
        treasure_bag_count=len(s.bag),
    )  # fmt: skip
    if s.board_coin >= 0:
        board.board_coin.CopyFrom(coin(s.board_coin))
    if s.decision is not None:
        d = s.decision
        board.decision.CopyFrom(
            game_pb2.Decision(kind=DECISION_NAMES[d[0]], seat=d[1], source_card=d[2])
        )
    legal = []
    if seat >= 0 and s.to_move() == seat:
        for a in rules.legal_actions(s):
            legal.append(
                game_pb2.LegalAction(
                    id=a, kind=rules.KIND_NAMES[a >> 16], description=rules.describe_action(s, a)
                )
            )
    info = [
        game_pb2.SeatInfo(
            seat=q,
            kind=game_pb2.SeatInfo.AI if bots and bots[q] else game_pb2.SeatInfo.HUMAN,
            name=(names[q] if names else f"Seat {q + 1}"),
            bot_name=bots[q] if bots else "",
        )
        for q in range(n)
    ]
    v = game_pb2.GameView(
        game_id="g-test", version=1, seat=seat, to_move=s.to_move(), over=s.over,
        legal_actions=legal, board=board, seat_info=info, sets=s.config.sets, players=n,
        winner=rules.winner(s) if s.over else -1, catalog_fingerprint=default_tables().catalog.fingerprint,
    )  # fmt: skip
    if s.over:
        for q in range(n):
            b = rules.score_breakdown(s, q)
            v.scores.append(game_pb2.Score(seat=q, **b))
    return v


def events_of(s: State, events: list[tuple[object, ...]]) -> list[game_pb2.GameEvent]:
    return [
        game_pb2.GameEvent(
            kind=str(e[0]), text=rules.describe_event(s, e), data=json.dumps(list(e))
        )
        for e in events
    ]
