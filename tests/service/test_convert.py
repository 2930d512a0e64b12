"""The protobuf messages built in place by ``convert`` (for speed) are the ones the plain,
constructor-built code below gives, for every seat, over whole games of each set."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from engine_service import rules
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
from engine_service.server import convert
from engine_service.server.bots import BotConfig
from engine_service.server.meta import AI, HUMAN, GameMeta, Seat

# ---- the reference: each message built whole and passed to its parent ----------------------


def _coin(code: int) -> pb.Coin:
    c = code & (COIN_DOWN - 1)
    return pb.Coin(
        code=c, color=COLORS[c // 6], resource=L.RESOURCE_NAMES[c % 6], face_down=bool(code & COIN_DOWN)
    )


def _legal(s: State, seat: int) -> list[pb.LegalAction]:
    if s.over or seat < 0 or s.to_move() != seat:
        return []
    return [
        pb.LegalAction(id=a, kind=A.KIND_NAMES[a >> 16], description=rules.describe_action(s, a))
        for a in rules.legal_actions(s)
    ]


def _board(s: State, viewer: int) -> pb.Board:
    seats = [
        pb.SeatState(
            seat=q, hand=s.hands[q] if q == viewer else (), hand_count=len(s.hands[q]),
            deck_count=len(s.decks[q]), discard_count=len(s.discards[q]), discard=s.discards[q],
            constructs=s.constructs[q], ongoing=s.ongoing[q], treasures=s.treasures[q],
            coins=[_coin(c) for c in s.coins[q]], crew=s.crew[q], honor_tokens=s.tokens[q],
            ship_space=s.ship[q], played=s.played[q], hand_known=s.known[q],
        )
        for q in range(s.n)
    ]  # fmt: skip
    b = pb.Board(
        turn=s.turn, active_seat=s.active, first_seat=s.first, runes=s.runes, power=s.power,
        seats=seats,
        center=[pb.CenterSpace(space=sp, card=s.center[sp], treasures_under=s.under[sp])
                for sp in range(CENTER_SPACES)],
        kraken=pb.Kraken(in_game=s.kraken != KRAKEN_ABSENT, in_deep=s.kraken == KRAKEN_IN_DEEP,
                         owner_seat=s.kraken if s.kraken >= 0 else -1, treasures_under=s.under[DEEP],
                         coins=[_coin(c) for c in s.kraken_coins]),
        ghost_pirate_space=s.ghost,
        board_coin_space=(s.board_coin & (COIN_DOWN - 1)) // 6 if s.board_coin >= 0 else -1,
        honor_pool=s.pool, final_round=s.ending, the_void=s.void, mystic_pile=s.piles[PILE_MYSTIC],
        heavy_infantry_pile=s.piles[PILE_HEAVY], center_deck_count=len(s.center_deck),
        treasure_bag_count=len(s.bag),
    )  # fmt: skip
    if s.board_coin >= 0:
        b.board_coin.CopyFrom(_coin(s.board_coin))
    d = s.decision
    if d is not None and not s.over:
        b.decision.CopyFrom(pb.Decision(kind=A.DECISION_NAMES.get(d[0], str(d[0])), seat=d[1], source_card=d[2]))
    return b


def _game_view(game_id: str, version: int, s: State, meta: GameMeta, seat: int) -> pb.GameView:
    v = pb.GameView(
        game_id=game_id, version=version, seat=seat, to_move=s.to_move(), over=s.over,
        legal_actions=_legal(s, seat), board=_board(s, seat), seat_info=convert.seat_info(meta),
        sets=meta.sets, players=s.n, winner=rules.winner(s) if s.over else -1,
        catalog_fingerprint=s.T.catalog.fingerprint, rules_view=rules.view(s, seat).serialize(),
    )  # fmt: skip
    if s.over:
        v.scores.extend(convert.scores(s))
    return v


def _light_view(game_id: str, version: int, s: State, seat: int) -> pb.GameView:
    v = pb.GameView(game_id=game_id, version=version, seat=seat, to_move=s.to_move(), over=s.over,
                    legal_actions=_legal(s, seat), players=s.n, winner=rules.winner(s) if s.over else -1)  # fmt: skip
    if s.over:
        v.scores.extend(convert.scores(s))
    return v


def _update(game_id: str, version: int, seat: int, action: int, description: str, s: State,
            evs: list[tuple[Any, ...]], now_ms: int) -> pb.GameUpdate:  # fmt: skip
    events = [
        pb.GameEvent(kind=str(e[0]), text=rules.describe_event(s, e), data=json.dumps(e, separators=(",", ":")))
        for e in evs
    ]
    return pb.GameUpdate(
        game_id=game_id, version=version, seat=seat, action=action,
        action_kind=A.KIND_NAMES.get(action >> 16, "") if version > 1 else "", description=description,
        events=events, to_move=s.to_move(), over=s.over, time_unix_ms=now_ms,
    )  # fmt: skip


# ---- the comparison --------------------------------------------------------------------------


def _meta(players: int) -> GameMeta:
    seats = tuple(
        Seat(AI, f"bot {i}", BotConfig("heuristic", 0, 50, i, 0.3)) if i % 2 else Seat(HUMAN, f"p{i}", None)
        for i in range(players)
    )
    return GameMeta("both", players, 1, seats, tuple("d" * 64 for _ in seats), "a" * 64, 0)


def _quick(s: State, rng: random.Random) -> int:
    """Buying and defeating first, then playing cards: games end in a few hundred actions."""
    acts = rules.legal_actions(s)
    for kinds in (("acquire", "defeat", "acquire_crew", "defeat_crew"), ("play",)):
        best = [a for a in acts if A.KIND_NAMES[a >> 16] in kinds]
        if best:
            return rng.choice(best)
    return rng.choice(acts)


@pytest.mark.parametrize("sets,players,seed", [("ss", 2, 1), ("cotgi", 3, 2), ("both", 4, 3), ("both", 2, 4)])
def test_in_place_messages_equal_the_plain_ones(sets: str, players: int, seed: int) -> None:
    s = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=seed))
    meta = _meta(players)
    rng = random.Random(seed)
    version, known = 1, False
    while True:
        known = known or any(s.known)
        for seat in (rules.SPECTATOR, *range(s.n)):
            full = convert.game_view("g", version, s, meta, seat)
            assert full == _game_view("g", version, s, meta, seat)
            light = pb.GameView()
            convert.fill_light_view(light, "g", version, s, seat)
            assert light == _light_view("g", version, s, seat) and not light.HasField("board")
        if s.over:
            break
        # at random for a while (decisions, coins, the Kraken), then towards the end
        action = rng.choice(rules.legal_actions(s)) if version < 200 else _quick(s, rng)
        description = rules.describe_action(s, action)
        evs = rules.apply_unchecked(s, action)
        # (what convert's cache of events by value assumes: True, 1 and 1.0 are one key)
        assert all(type(x) is int or type(x) is str for e in evs for x in e), evs
        version += 1
        u = convert.update("g", version, 0, action, description, s, evs)
        assert u == _update("g", version, 0, action, description, s, evs, u.time_unix_ms)
    assert s.over  # the end too: scores and winner
    assert known, "no hand was ever known: the field went untested"


def test_event_data_is_the_json_of_the_event() -> None:
    for e in [("play", 0, 17), ("x", -5, 10**30, "é\u2028\"\\\n"), ("y", True, None, 1.5), ("z", [1, (2, "q")]), ("k",)]:
        assert convert._event_json(e) == json.dumps(e, separators=(",", ":"))


def test_every_coin_parsed_from_its_kept_bytes_is_the_plain_one() -> None:
    """The coins of seats and the board's coin are parsed from bytes made per coin (face up
    or down), when first asked for."""
    for c in range(len(COLORS) * 6):
        for code in (c, c | COIN_DOWN):
            seat = pb.SeatState()
            seat.MergeFromString(convert._SEAT_COINS[code])
            assert list(seat.coins) == [_coin(code)]
            board = pb.Board()
            board.MergeFromString(convert._BOARD_COIN[code])
            assert board.HasField("board_coin") and board.board_coin == _coin(code)
