"""``PracticeFromHere``: a new game from one of a seat's decisions, its player against bots.

The game is replayed from its first state and its log to the version asked for (the seat is
to move there). Of that state only the seat's rules view goes on (``rules.view``: its own
hand, the public board, every hidden zone as a multiset, the cards known to be in a hand),
and ``rules.determinize`` deals the hidden cards again from it with the new game's secret
seed: the order of the seat's own deck, the rest of the other seats' hands and their decks,
the center deck and the Treasure Bag. So the new game tells its player nothing the seat did
not know, even while the original game goes on. The practising seat keeps its number; every
other seat is a bot (docs/rules-notes.md, "Practice from here").

Who may ask is who may review (:func:`review.who_asks`). A practice game is a game like any
other (it counts towards ENGINE_MAX_LIVE_GAMES, expires when idle); the service limits the
calls per peer (ENGINE_PRACTICE_PER_MINUTE), for a practice game's seat token may ask again.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.server import errors, seats, validate
from engine_service.server.auth import Access
from engine_service.server.bots import BotConfig, for_difficulty
from engine_service.server.errors import Code, invalid, refused
from engine_service.server.games import Games
from engine_service.server.meta import AI, GameMeta, Origin, Seat
from engine_service.server.review import who_asks
from engine_service.store import UnreadableData

DEFAULT_LEVEL = "normal"  # who plays a seat that was human, unless the request names a bot


def state_at(meta: GameMeta, entries: list[tuple[int, int]], version: int) -> rules.State:
    """The game's state at ``version``, replayed from its first state and its log; resigning
    and handing a seat over change no card (``seats.is_table_action``)."""
    s = meta.first_state()
    for _, action in entries[: version - 1]:
        if not seats.is_table_action(action):
            rules.apply(s, action)
    return s


def practice_seats(meta: GameMeta, seat: int, opponents: BotConfig | None) -> tuple[Seat, ...]:
    """The practice game's seats: ``seat`` human (its name kept), the others bots: the
    ``opponents`` settings if given, else an AI seat's own bot, else the default level."""
    out = []
    for q, old in enumerate(meta.seats):
        if q == seat:
            out.append(Seat("human", old.name, None))
        elif opponents is not None:
            out.append(Seat(AI, old.name if old.kind == AI else f"Bot {q + 1}", opponents))
        elif old.kind == AI and old.bot is not None:
            out.append(old)
        else:
            out.append(Seat(AI, f"Bot {q + 1}", for_difficulty(DEFAULT_LEVEL)))
    return tuple(out)


class Practices:
    def __init__(self, games: Games, access: Access) -> None:
        self.games = games
        self.access = access

    async def start(self, req: epb.PracticeFromHereRequest, context: Any) -> epb.PracticeFromHereResponse:
        validate.game_id(req.game_id)
        validate.token(req.token)
        if req.version < 0:
            raise invalid("version", "must be 0 (the game's current version) or a version >= 1")
        opponents = validate.bot(req.opponents, "opponents") if req.HasField("opponents") else None
        rec, meta = await self.games._load(req.game_id)
        wanted = req.seat if req.HasField("seat") else None
        _, seat = who_asks(req.game_id, req.token, wanted, meta, rec.over, context,
                           self.access, "practice")  # fmt: skip
        version = req.version or rec.version
        if version > rec.version:
            raise invalid("version", f"the game is at version {rec.version}: ask 1..{rec.version}")
        try:
            entries = await self.games.store.action_log(req.game_id)
        except UnreadableData as e:
            raise errors.unreadable_game(req.game_id, f"its log is damaged ({e})") from e
        if len(entries) < version - 1:
            raise errors.unreadable_game(req.game_id, "its log is shorter than its version")
        if seat in self.games._table(rec).resigned and _resigned_by(entries, seat, version):
            raise _not_a_decision(seat, version, "the seat had resigned by then", -1)
        try:  # (in a thread: a long game's replay would hold the event loop for a while)
            s = await asyncio.to_thread(state_at, meta, entries, version)
        except (rules.RulesError, ValueError, KeyError, IndexError) as e:
            raise errors.unreadable_game(req.game_id, f"its log does not replay ({e})") from e
        if s.over or (rec.over and version == rec.version):  # (a resignation ends it too)
            raise _not_a_decision(seat, version, "the game was over", -1)
        if s.to_move() != seat:
            raise _not_a_decision(seat, version, f"seat {s.to_move()} was to move", s.to_move())
        seed = secrets.randbits(63)
        start = rules.determinize(rules.view(s, seat), seed)
        origin = Origin(req.game_id, version, seat, s.turn)
        return await self.games.practice(
            start, seed, practice_seats(meta, seat, opponents), origin, meta.sets
        )


def _resigned_by(entries: list[tuple[int, int]], seat: int, version: int) -> bool:
    return any(q == seat and a == seats.RESIGN for q, a in entries[: version - 1])


def _not_a_decision(seat: int, version: int, why: str, to_move: int) -> errors.ServiceError:
    return refused(
        Code.FAILED_PRECONDITION,
        "NOT_A_DECISION",
        f"seat {seat} had no decision at version {version}: {why}; practice starts at a "
        "version the seat was to move at (e.g. a DecisionReview's version)",
        to_move=to_move,
    )
