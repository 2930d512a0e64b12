"""Rules state -> protobuf messages. Hidden information stays hidden: a seat sees its own hand
only, a spectator sees no hand; deck orders, the center deck and the Treasure Bag are counts."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.cards import language as L
from engine_service.rules import actions as A
from engine_service.rules.describe import COLORS
from engine_service.rules.state import (
    CENTER_SPACES,
    COIN_DOWN,
    DEEP,
    KRAKEN_ABSENT,
    KRAKEN_IN_DEEP,
    PILE_HEAVY,
    PILE_MYSTIC,
    State,
)
from engine_service.rules.tables import default_tables
from engine_service.server.meta import AI, GameMeta

SPECTATOR = rules.SPECTATOR


def coin(code: int) -> pb.Coin:
    c = code & (COIN_DOWN - 1)
    return pb.Coin(
        code=c,
        color=COLORS[c // 6],
        resource=L.RESOURCE_NAMES[c % 6],
        face_down=bool(code & COIN_DOWN),
    )


def legal_actions(s: State, seat: int) -> list[pb.LegalAction]:
    if s.over or seat < 0 or s.to_move() != seat:
        return []
    names = A.KIND_NAMES
    return [
        pb.LegalAction(id=a, kind=names[a >> 16], description=rules.describe_action(s, a))
        for a in rules.legal_actions(s)
    ]


def _seat_state(s: State, q: int, viewer: int) -> pb.SeatState:
    return pb.SeatState(
        seat=q,
        hand=s.hands[q] if q == viewer else (),
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


def board(s: State, viewer: int) -> pb.Board:
    b = pb.Board(
        turn=s.turn,
        active_seat=s.active,
        first_seat=s.first,
        runes=s.runes,
        power=s.power,
        seats=[_seat_state(s, q, viewer) for q in range(s.n)],
        center=[
            pb.CenterSpace(space=sp, card=s.center[sp], treasures_under=s.under[sp])
            for sp in range(CENTER_SPACES)
        ],
        kraken=pb.Kraken(
            in_game=s.kraken != KRAKEN_ABSENT,
            in_deep=s.kraken == KRAKEN_IN_DEEP,
            owner_seat=s.kraken if s.kraken >= 0 else -1,
            treasures_under=s.under[DEEP],
            coins=[coin(c) for c in s.kraken_coins],
        ),
        ghost_pirate_space=s.ghost,
        board_coin_space=(s.board_coin & (COIN_DOWN - 1)) // 6 if s.board_coin >= 0 else -1,
        honor_pool=s.pool,
        final_round=s.ending,
        the_void=s.void,
        mystic_pile=s.piles[PILE_MYSTIC],
        heavy_infantry_pile=s.piles[PILE_HEAVY],
        center_deck_count=len(s.center_deck),
        treasure_bag_count=len(s.bag),
    )
    if s.board_coin >= 0:
        b.board_coin.CopyFrom(coin(s.board_coin))
    d = s.decision
    if d is not None and not s.over:
        b.decision.CopyFrom(
            pb.Decision(kind=A.DECISION_NAMES.get(d[0], str(d[0])), seat=d[1], source_card=d[2])
        )
    return b


def seat_info(meta: GameMeta) -> list[pb.SeatInfo]:
    return [
        pb.SeatInfo(
            seat=i,
            kind=pb.SeatInfo.AI if s.kind == AI else pb.SeatInfo.HUMAN,
            name=s.name,
            bot_name=s.bot.name if s.bot is not None else "",
        )
        for i, s in enumerate(meta.seats)
    ]


def scores(s: State) -> list[pb.Score]:
    out = []
    for q in range(s.n):
        b = rules.score_breakdown(s, q)
        out.append(
            pb.Score(
                seat=q,
                cards=b["cards"],
                tokens=b["tokens"],
                treasure=b["treasure"],
                coins=b["coins"],
                card_text=b["card_text"],
                total=b["total"],
            )
        )
    return out


def game_view(game_id: str, version: int, s: State, meta: GameMeta, seat: int) -> pb.GameView:
    v = pb.GameView(
        game_id=game_id,
        version=version,
        seat=seat,
        to_move=s.to_move(),
        over=s.over,
        legal_actions=legal_actions(s, seat),
        board=board(s, seat),
        seat_info=seat_info(meta),
        sets=meta.sets,
        players=s.n,
        winner=rules.winner(s) if s.over else -1,
        catalog_fingerprint=s.T.catalog.fingerprint,
        rules_view=rules.view(s, seat).serialize(),
    )
    if s.over:
        v.scores.extend(scores(s))
    return v


def light_view(game_id: str, version: int, s: State, seat: int) -> pb.GameView:
    """The view without board, seat info or rules view: what a client needs to act next."""
    v = pb.GameView(
        game_id=game_id,
        version=version,
        seat=seat,
        to_move=s.to_move(),
        over=s.over,
        legal_actions=legal_actions(s, seat),
        players=s.n,
        winner=rules.winner(s) if s.over else -1,
    )
    if s.over:
        v.scores.extend(scores(s))
    return v


def events(s: State, evs: Sequence[tuple[Any, ...]]) -> list[pb.GameEvent]:
    return [
        pb.GameEvent(
            kind=str(e[0]),
            text=rules.describe_event(s, e),
            data=json.dumps(e, separators=(",", ":")),
        )
        for e in evs
    ]


def update(
    game_id: str,
    version: int,
    seat: int,
    action: int,
    description: str,
    s: State,
    evs: Sequence[tuple[Any, ...]],
) -> pb.GameUpdate:
    return pb.GameUpdate(
        game_id=game_id,
        version=version,
        seat=seat,
        action=action,
        action_kind=A.KIND_NAMES.get(action >> 16, "") if version > 1 else "",
        description=description,
        events=events(s, evs),
        to_move=s.to_move(),
        over=s.over,
        time_unix_ms=int(time.time() * 1000),
    )


@lru_cache(maxsize=1)
def card_catalog() -> epb.ListCardsResponse:
    cat = default_tables().catalog
    return epb.ListCardsResponse(
        catalog_fingerprint=cat.fingerprint,
        cards=[
            pb.Card(
                id=c.id,
                key=c.key,
                name=c.name,
                type=L.TYPE_NAMES[c.type],
                faction=L.FACTION_NAMES[c.faction],
                cost=c.cost,
                honor=c.honor,
                text=c.text,
                set=c.set,
                copies=c.copies,
            )
            for c in cat.cards
        ],
    )
