"""Checks of incoming requests; each failure names the field at fault (INVALID_ARGUMENT)."""

from __future__ import annotations

import math

from engine_service import names
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.rules.config import SET_CHOICES
from engine_service.server.bots import DIFFICULTIES, BotConfig, check_bot, for_difficulty
from engine_service.server.clocks import BOT, DEFAULT_BOT, POLICIES, ClockSettings
from engine_service.server.errors import invalid
from engine_service.server.fallbacks import MAX_REASON
from engine_service.server.ids import valid_game_id
from engine_service.server.meta import AI, HUMAN, Seat

MAX_TOKEN = 256
MAX_IDEMPOTENCY_KEY = 128
MAX_PAGE_SIZE = 500
DEFAULT_PAGE_SIZE = 50
MAX_SEATS = 6


def game_id(value: str, field: str = "game_id") -> str:
    if not value:
        raise invalid(field, "is required")
    if not valid_game_id(value):
        raise invalid(
            field, f"{value[:40]!r} is not a game id (22 characters, as CreateGame returned)"
        )
    return value


def token(value: str, field: str = "token") -> str:
    if len(value) > MAX_TOKEN:
        raise invalid(field, f"longer than {MAX_TOKEN} characters")
    return value


def sets(value: str) -> str:
    value = value or "ss"
    if value not in SET_CHOICES:
        raise invalid(
            "sets", f"must be one of {', '.join(sorted(SET_CHOICES))}, got {value[:40]!r}"
        )
    return value


def seats(req: epb.CreateGameRequest) -> tuple[Seat, ...]:
    if len(req.seats) < 2 or len(req.seats) > MAX_SEATS:
        raise invalid("seats", f"2 to {MAX_SEATS} seats are needed, got {len(req.seats)}")
    return tuple(seat(s, f"seats[{i}]", f"Seat {i + 1}") for i, s in enumerate(req.seats))


def seat(s: epb.SeatConfig, where: str, default_name: str) -> Seat:
    """Who plays a seat (``where``: the field, for errors; ``default_name``: without one)."""
    if s.kind not in (pb.SeatInfo.KIND_UNSPECIFIED, pb.SeatInfo.HUMAN, pb.SeatInfo.AI):
        raise invalid(f"{where}.kind", f"unknown seat kind {s.kind}")
    bad_name = names.problem(s.name) if s.name else None
    if bad_name:
        raise invalid(f"{where}.name", bad_name)
    name = s.name or default_name
    if s.kind != pb.SeatInfo.AI:
        if s.HasField("bot"):
            raise invalid(f"{where}.bot", "only AI seats have bot settings")
        return Seat(HUMAN, name, None)
    if not s.HasField("bot"):
        raise invalid(f"{where}.bot", "an AI seat needs bot settings")
    return Seat(AI, name, bot(s.bot, f"{where}.bot"))


def bot(b: epb.BotSettings, where: str) -> BotConfig:
    """A bot's settings (``where``: the field, for errors)."""
    if b.difficulty:
        if b.name or b.iterations or b.time_ms:
            raise invalid(
                f"{where}.difficulty",
                "a difficulty sets the bot and its budget: leave name, iterations and "
                "time_ms unset",
            )
        if b.difficulty.strip().lower() not in DIFFICULTIES:
            raise invalid(
                f"{where}.difficulty",
                f"unknown difficulty {b.difficulty[:40]!r}; one of: {', '.join(DIFFICULTIES)}",
            )
        config = for_difficulty(b.difficulty, b.seed, b.exploration)
    else:
        config = BotConfig(b.name, b.iterations, b.time_ms, b.seed, b.exploration)
    problems = check_bot(config)
    if problems:
        field, problem = problems[0]
        raise invalid(f"{where}.{field}", problem)
    if math.isnan(config.exploration):
        raise invalid(f"{where}.exploration", "must be a number")
    return config


def seed(req: epb.CreateGameRequest) -> int | None:
    if not req.HasField("seed"):
        return None
    if req.seed >= 2**63:
        raise invalid("seed", f"must be below 2**63, got {req.seed}")
    return req.seed


MAX_TURN_SECONDS = 86_400
MAX_BANK_SECONDS = 10 * 86_400


def clock(req: epb.CreateGameRequest, seats: tuple[Seat, ...]) -> ClockSettings | None:
    """The clocks asked for (None: the game has none)."""
    if not req.HasField("clock"):
        return None
    c = req.clock
    for name, value, most in (
        ("turn_seconds", c.turn_seconds, MAX_TURN_SECONDS),
        ("bank_seconds", c.bank_seconds, MAX_BANK_SECONDS),
        ("increment_seconds", c.increment_seconds, MAX_TURN_SECONDS),
    ):
        if not 0 <= value <= most:
            raise invalid(f"clock.{name}", f"must be 0..{most} seconds, got {value}")
    if c.turn_seconds == 0 and c.bank_seconds == 0 and c.increment_seconds == 0:
        raise invalid(
            "clock", "set turn_seconds, bank_seconds or increment_seconds (or leave clock unset)"
        )
    if c.on_timeout not in POLICIES:
        raise invalid("clock.on_timeout", f"unknown policy {c.on_timeout}")
    policy = POLICIES[c.on_timeout]
    level = c.bot_difficulty.strip().lower()
    if policy != BOT and level:
        raise invalid("clock.bot_difficulty", "is for on_timeout TIMEOUT_POLICY_BOT only")
    if level and level not in DIFFICULTIES:
        raise invalid(
            "clock.bot_difficulty",
            f"unknown difficulty {c.bot_difficulty[:40]!r}; one of {', '.join(DIFFICULTIES)}",
        )
    if all(s.kind == AI for s in seats):
        raise invalid("clock", "clocks are for human seats, and this game has none")
    return ClockSettings(
        turn_ms=c.turn_seconds * 1000,
        bank_ms=c.bank_seconds * 1000,
        increment_ms=c.increment_seconds * 1000,
        policy=policy,
        bot_difficulty=(level or DEFAULT_BOT) if policy == BOT else "",
    )


def submit(req: epb.SubmitActionRequest) -> None:
    game_id(req.game_id)
    token(req.token)
    if req.expected_version < 1:
        raise invalid(
            "expected_version",
            f"must be the version you saw (at least 1), got {req.expected_version}",
        )
    if req.view_detail not in (epb.VIEW_DETAIL_FULL, epb.VIEW_DETAIL_LEGAL_ACTIONS):
        raise invalid("view_detail", f"unknown value {req.view_detail}")
    if len(req.idempotency_key) > MAX_IDEMPOTENCY_KEY:
        raise invalid("idempotency_key", f"at most {MAX_IDEMPOTENCY_KEY} characters")
    if len(req.seat_tokens) > MAX_SEATS:
        raise invalid(
            "seat_tokens", f"at most {MAX_SEATS} (one per seat), got {len(req.seat_tokens)}"
        )
    for i, t in enumerate(req.seat_tokens):
        token(t, f"seat_tokens[{i}]")
    if len(req.fallback_reason) > MAX_REASON or not req.fallback_reason.isprintable():
        raise invalid(
            "fallback_reason", f"at most {MAX_REASON} printable characters, on one line"
        )


def page_size(value: int) -> int:
    if value == 0:
        return DEFAULT_PAGE_SIZE
    if not 1 <= value <= MAX_PAGE_SIZE:
        raise invalid(
            "page_size", f"must be 1..{MAX_PAGE_SIZE} (0 = {DEFAULT_PAGE_SIZE}), got {value}"
        )
    return value


def page_token(value: str) -> str:
    if value and not valid_game_id(value):
        raise invalid("page_token", "not a page token from a previous ListGames answer")
    return value


def after_version(value: int) -> int:
    if value < 0:
        raise invalid("after_version", f"must be 0 or more, got {value}")
    return value
