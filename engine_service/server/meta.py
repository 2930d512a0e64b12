"""What a game was created with (never changes): sets, seats, seed, token digests.

No token is kept in clear: AI seats are played with per-move credentials (server/tokens.py).
A practice game (PracticeFromHere) also keeps its first state and where it was taken from:
it does not start from its seed.
"""

from __future__ import annotations

import base64
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from engine_service import rules
from engine_service.server.bots import BotConfig
from engine_service.server.clocks import ClockSettings

HUMAN, AI = "human", "ai"


class UnreadableMeta(ValueError):
    """A record's metadata this engine cannot decode (written by another version, or damaged)."""


@dataclass(frozen=True, slots=True)
class Seat:
    kind: str  # HUMAN or AI
    name: str
    bot: BotConfig | None


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a practice game started: ``seat``'s decision at ``version`` of ``game_id``."""

    game_id: str
    version: int
    seat: int
    turn: int


@dataclass(frozen=True, slots=True)
class GameMeta:
    sets: str
    players: int
    seed: int
    seats: tuple[Seat, ...]
    token_digests: tuple[str, ...]
    admin_digest: str
    created_ms: int
    clock: ClockSettings | None = None  # the human seats' clocks, if the game has them
    start: bytes = b""  # a practice game's first state (rules.serialize); b"": from the seed
    origin: Origin | None = None  # a practice game's origin
    # What answers derive from it, made once (convert: the seat info's wire bytes)
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def is_ai(self, seat: int) -> bool:
        return 0 <= seat < len(self.seats) and self.seats[seat].kind == AI

    def humans(self) -> tuple[bool, ...]:
        """Which seats are human (the ones with a clock, in a game with clocks)."""
        return tuple(s.kind != AI for s in self.seats)

    def encode(self) -> bytes:
        seats = [
            {"kind": s.kind, "name": s.name, "bot": None if s.bot is None else s.bot.as_payload()}
            for s in self.seats
        ]
        d: dict[str, Any] = {
            "sets": self.sets,
            "players": self.players,
            "seed": self.seed,
            "seats": seats,
            "tokens": list(self.token_digests),
            "admin": self.admin_digest,
            "created_ms": self.created_ms,
        }
        if self.clock is not None:
            d["clock"] = self.clock.as_payload()
        if self.start:
            d["start"] = base64.b64encode(self.start).decode()
        if self.origin is not None:
            o = self.origin
            d["origin"] = [o.game_id, o.version, o.seat, o.turn]
        return json.dumps(d, separators=(",", ":")).encode()

    @staticmethod
    def decode(raw: bytes) -> GameMeta:
        """The metadata ``raw`` holds; UnreadableMeta if it is not metadata this engine knows."""
        try:
            return GameMeta._decode(raw)
        except (ValueError, KeyError, TypeError, AttributeError) as e:  # (ValueError: bad JSON)
            raise UnreadableMeta(f"{type(e).__name__}: {e}") from e

    @staticmethod
    def _decode(raw: bytes) -> GameMeta:
        d = json.loads(raw)
        seats = tuple(
            Seat(s["kind"], s["name"], None if s["bot"] is None else BotConfig(**s["bot"]))
            for s in d["seats"]
        )
        return GameMeta(
            d["sets"],
            d["players"],
            d["seed"],
            seats,
            tuple(d["tokens"]),
            d["admin"],
            d["created_ms"],  # older records also hold "ai_tokens" (raw AI tokens): ignored
            None if d.get("clock") is None else ClockSettings.from_payload(d["clock"]),
            base64.b64decode(d["start"], validate=True) if d.get("start") else b"",
            None if d.get("origin") is None else Origin(*d["origin"]),
        )

    def first_state(self) -> rules.State:
        """The game's state at version 1: its seed's deal, or a practice game's first state."""
        if self.start:
            return rules.deserialize(self.start)
        return rules.new_game(rules.GameConfig(sets=self.sets, players=self.players, seed=self.seed))


class MetaCache:
    """Decoded metadata by game id (metadata never changes and ids are never reused)."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._items: OrderedDict[str, GameMeta] = OrderedDict()

    def get(self, game_id: str, raw: bytes) -> GameMeta:
        m = self._items.get(game_id)
        if m is None:
            m = GameMeta.decode(raw)
            self._items[game_id] = m
            if len(self._items) > self._size:
                self._items.popitem(last=False)
        return m

    def peek(self, game_id: str) -> GameMeta | None:
        """The metadata if it is decoded already."""
        return self._items.get(game_id)

    def forget(self, game_id: str) -> None:
        self._items.pop(game_id, None)
