"""Typed values of the SDK: seat configurations, a created game, the card catalog.

Game data itself (views, legal actions, updates) is returned as the generated protobuf
messages, which are typed (``GameView``, ``LegalAction``, ``GameUpdate`` are re-exported here).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from engine_service.api.ascension.v1 import engine_pb2, game_pb2

GameView = game_pb2.GameView
GameUpdate = game_pb2.GameUpdate
GameEvent = game_pb2.GameEvent
LegalAction = game_pb2.LegalAction
Score = game_pb2.Score
SeatInfo = game_pb2.SeatInfo
Board = game_pb2.Board
ActionList = engine_pb2.ListLegalActionsResponse
SubmitResult = engine_pb2.SubmitActionResponse
GameSummary = engine_pb2.GameSummary
Replay = engine_pb2.Replay
Analysis = engine_pb2.AnalyzePositionResponse
AnalysisCandidate = engine_pb2.AnalysisCandidate

ClockState = game_pb2.ClockState
ResignResult = engine_pb2.ResignResponse
HandOverResult = engine_pb2.HandOverSeatResponse

SETS = ("ss", "cotgi", "both")
TIMEOUT_POLICIES = {"forced_move": game_pb2.TIMEOUT_POLICY_FORCED_MOVE,
                    "bot": game_pb2.TIMEOUT_POLICY_BOT,
                    "forfeit": game_pb2.TIMEOUT_POLICY_FORFEIT}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Clock:
    """Clocks for a game's human seats (``ClockSettings``; docs/clients.md, "Clocks and
    presence"): an allowance per turn, then a bank that gains an increment after each turn;
    when a seat's time runs out, the engine plays its default (``"forced_move"``), a bot of
    ``bot_difficulty`` plays the rest of its turn (``"bot"``), or the seat forfeits
    (``"forfeit"``: it resigns)."""

    turn_seconds: int = 0
    bank_seconds: int = 0
    increment_seconds: int = 0
    on_timeout: str = "forced_move"
    bot_difficulty: str = ""

    def to_proto(self) -> game_pb2.ClockSettings:
        if self.on_timeout not in TIMEOUT_POLICIES:
            raise ValueError(
                f"on_timeout must be one of {', '.join(TIMEOUT_POLICIES)}, got {self.on_timeout!r}"
            )
        return game_pb2.ClockSettings(
            turn_seconds=self.turn_seconds,
            bank_seconds=self.bank_seconds,
            increment_seconds=self.increment_seconds,
            on_timeout=TIMEOUT_POLICIES[self.on_timeout],
            bot_difficulty=self.bot_difficulty,
        )


_INVITATION = re.compile(r"#/join/([0-9a-z]{22})/([A-Za-z0-9_][A-Za-z0-9_-]{31,127})$")


def invitation_link(page_url: str, game_id: str, token: str) -> str:
    """The browser page's link that gives its holder ``token``'s seat (``page_url``: where
    ``ascension web`` serves the page). The token is in the fragment only, which browsers
    never send to a server."""
    return f"{page_url.split('#', 1)[0]}#/join/{game_id}/{token}"


def parse_invitation(link: str) -> tuple[str, str]:
    """(game id, seat token) of an invitation link; ValueError naming what is wrong."""
    m = _INVITATION.search(link.strip())
    if not m:
        raise ValueError(
            "not an invitation link: expected ...#/join/<game id>/<seat token>, as the lobby's "
            "'Play with friends' gives"
        )
    return m.group(1), m.group(2)


def time_left(clock: game_pb2.ClockState, seat: int, now: float | None = None) -> float:
    """Seconds ``seat`` has left (its allowance for this turn and its bank): counting down for
    the seat whose clock runs, standing still for the others. ``now``: unix time (default:
    this machine's clock)."""
    if clock.seat == seat and clock.deadline_unix_ms:
        now_ms = (time.time() if now is None else now) * 1000
        return max(0.0, (clock.deadline_unix_ms - now_ms) / 1000)
    if seat >= len(clock.bank_ms):
        return 0.0
    return (clock.turn_ms[seat] + clock.bank_ms[seat]) / 1000


@dataclass(frozen=True, slots=True)
class BotSpec:
    """Settings of the bot playing an AI seat (``BotSettings`` in the API)."""

    name: str = "ismcts"
    iterations: int = 0  # 0 = no iteration limit
    time_ms: int = 0  # thinking time per move; 0: 1 s, or 60 s with iterations (docs/bots.md)
    seed: int = 0
    exploration: float = 0.0  # 0 = the bot's default
    difficulty: str = ""  # a named level (DIFFICULTIES): the engine picks the bot and budget

    def to_proto(self) -> engine_pb2.BotSettings:
        if self.difficulty:
            return engine_pb2.BotSettings(
                difficulty=self.difficulty, seed=self.seed, exploration=self.exploration
            )
        return engine_pb2.BotSettings(
            name=self.name,
            iterations=self.iterations,
            time_ms=self.time_ms,
            seed=self.seed,
            exploration=self.exploration,
        )


@dataclass(frozen=True, slots=True)
class SeatSpec:
    """One seat of a new game: a person (``bot`` is None) or a bot."""

    name: str = ""
    bot: BotSpec | None = None

    @property
    def is_ai(self) -> bool:
        return self.bot is not None

    def to_proto(self) -> engine_pb2.SeatConfig:
        if self.bot is None:
            return engine_pb2.SeatConfig(kind=game_pb2.SeatInfo.HUMAN, name=self.name)
        return engine_pb2.SeatConfig(
            kind=game_pb2.SeatInfo.AI, name=self.name, bot=self.bot.to_proto()
        )


def human(name: str = "") -> SeatSpec:
    """A seat played by a person (or by any program holding its token)."""
    return SeatSpec(name=name)


# The engine's named levels, weakest first (docs/bots.md, "Difficulty levels": their Elo).
DIFFICULTIES = ("easy", "normal", "hard", "expert")


def bot(
    name: str = "ismcts",
    *,
    time_ms: int = 0,
    iterations: int = 0,
    seed: int = 0,
    exploration: float = 0.0,
    display_name: str = "",
    difficulty: str = "",
) -> SeatSpec:
    """A seat played by the server's AI workers with the named bot, or, with ``difficulty``
    (one of DIFFICULTIES), with the bot and budget of that level (then ``name``,
    ``iterations`` and ``time_ms`` are not used)."""
    if difficulty and difficulty not in DIFFICULTIES:
        raise ValueError(f"unknown difficulty {difficulty!r}; one of: {', '.join(DIFFICULTIES)}")
    return SeatSpec(
        name=display_name,
        bot=BotSpec(
            name, iterations=iterations, time_ms=time_ms, seed=seed, exploration=exploration,
            difficulty=difficulty,
        ),
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class CreatedGame:
    """What CreateGame returns: the game's id, one secret token per seat ("" for an AI seat:
    its worker plays it, and nobody else can), the admin token."""

    game_id: str
    seat_tokens: tuple[str, ...]
    admin_token: str
    view: game_pb2.GameView  # the spectator view at version 1

    def token(self, seat: int) -> str:
        """The seat's token ("" for an AI seat: with it, a call reads the spectator view)."""
        return self.seat_tokens[seat]


@dataclass(frozen=True, slots=True)
class PracticeGame:
    """What PracticeFromHere returns: a new game from a seat's decision in another game, that
    seat's player (``token``) against bots, the cards it could not see dealt again."""

    game_id: str
    seat: int  # the practising seat (its number in both games)
    token: str  # its token in the new game
    admin_token: str
    view: game_pb2.GameView  # the new game as the seat sees it (version 1)
    from_game: str  # the game it was taken from
    from_version: int  # the version of that game it starts at
    from_turn: int

    @staticmethod
    def from_proto(r: engine_pb2.PracticeFromHereResponse) -> PracticeGame:
        o = r.view.practice
        return PracticeGame(r.game_id, r.seat, r.seat_token, r.admin_token, r.view,
                            o.game_id, o.version, o.turn)  # fmt: skip


def practice_request(
    game_id: str, token: str, version: int, seat: int | None, opponents: SeatSpec | BotSpec | None
) -> engine_pb2.PracticeFromHereRequest:
    req = engine_pb2.PracticeFromHereRequest(game_id=game_id, token=token, version=version)
    if seat is not None:
        req.seat = seat
    spec = opponents.bot if isinstance(opponents, SeatSpec) else opponents
    if spec is not None:
        req.opponents.CopyFrom(spec.to_proto())
    return req


@dataclass(frozen=True, slots=True)
class CardInfo:
    """One card of the catalog."""

    id: int
    key: str
    name: str
    type: str  # "hero", "construct", "monster", "treasure"
    faction: str  # "none", "enlightened", "lifebound", "mechana", "void"
    cost: int
    honor: int
    text: str
    set: str

    @staticmethod
    def from_proto(card: game_pb2.Card) -> CardInfo:
        return CardInfo(
            card.id, card.key, card.name, card.type, card.faction, card.cost, card.honor,
            card.text, card.set,
        )  # fmt: skip


UNKNOWN_CARD = CardInfo(-1, "unknown", "?", "unknown", "none", 0, 0, "", "")


@dataclass(frozen=True, slots=True)
class Catalog:
    """The card catalog (ListCards): card ids in views refer to it."""

    fingerprint: str
    cards: dict[int, CardInfo] = field(default_factory=dict)

    @staticmethod
    def from_proto(resp: engine_pb2.ListCardsResponse) -> Catalog:
        return Catalog(resp.catalog_fingerprint, {c.id: CardInfo.from_proto(c) for c in resp.cards})

    @staticmethod
    def of(cards: Iterable[CardInfo], fingerprint: str = "") -> Catalog:
        return Catalog(fingerprint, {c.id: c for c in cards})

    def __getitem__(self, card_id: int) -> CardInfo:
        return self.cards.get(card_id, UNKNOWN_CARD)

    def name(self, card_id: int) -> str:
        card = self.cards.get(card_id)
        return card.name if card is not None else f"card #{card_id}"

    def find(self, name: str) -> CardInfo | None:
        """The card with this name or key (case-insensitive), if any."""
        low = name.strip().lower()
        for card in self.cards.values():
            if card.name.lower() == low or card.key.lower() == low:
                return card
        return None
