"""Which bots an AI seat may name, and the limits of their settings.

The names come from the ``ascension.bots`` entry-point group (the bot code is never imported
here), read once, when the engine starts (it logs what it found); when nothing is registered
in this environment, the built-in names are accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine_service import bot_plugins

BUILTIN_BOTS = ("expert", "heuristic", "ismcts", "random")
MAX_ITERATIONS = 1_000_000
MAX_TIME_MS = 60_000
SEARCH_BOTS = ("ismcts",)  # these need a budget: iterations or time


@dataclass(frozen=True, slots=True)
class BotConfig:
    name: str
    iterations: int
    time_ms: int
    seed: int
    exploration: float

    def as_payload(self) -> dict[str, object]:
        return {
            "name": self.name,
            "iterations": self.iterations,
            "time_ms": self.time_ms,
            "seed": self.seed,
            "exploration": self.exploration,
        }


@dataclass(frozen=True, slots=True)
class Difficulty:
    """A named level: a bot and its budget. The search levels count iterations, not time, so
    that a level plays as strongly on a busy machine as on an idle one (``time_ms`` only caps
    a slow machine's wait); their ratings are in docs/bots.md, "Difficulty levels"."""

    bot: str
    iterations: int = 0
    time_ms: int = 0


# Measured with benchmarks/ladder.py: each level at least 100 Elo above the one below.
DIFFICULTIES = {
    "easy": Difficulty("greedy-honor"),
    "normal": Difficulty("heuristic"),
    "hard": Difficulty("ismcts", iterations=100, time_ms=5_000),
    "expert": Difficulty("ismcts", iterations=1_000, time_ms=5_000),
}


def for_difficulty(level: str, seed: int = 0, exploration: float = 0.0) -> BotConfig:
    """The bot settings of a named level; KeyError for an unknown one."""
    d = DIFFICULTIES[level.strip().lower()]
    return BotConfig(d.bot, d.iterations, d.time_ms, seed, exploration)


def difficulty_of(bot: BotConfig) -> str:
    """The level whose bot and budget ``bot`` plays with ("" when none): what a seat created
    with ``difficulty`` shows (the level's settings are stored, not its name)."""
    for level, d in DIFFICULTIES.items():
        if (bot.name, bot.iterations, bot.time_ms) == (d.bot, d.iterations, d.time_ms):
            return level
    return ""


def registered_bots() -> tuple[str, ...]:
    """The names AI seats may use: every registered bot, or the built-ins when nothing is
    registered in this environment."""
    return tuple(sorted(bot_plugins.scan()[0])) or BUILTIN_BOTS


def describe_bots() -> str:
    """What the engine logs at start."""
    return bot_plugins.describe(registered_bots())


def unknown_bot_message(name: str) -> str:
    return bot_plugins.unknown_message(name, registered_bots())


def check_bot(bot: BotConfig) -> list[tuple[str, str]]:
    """Problems as (field, message), fields relative to the BotSettings message."""
    problems = []
    names = registered_bots()
    if bot.name not in names:
        problems.append(("name", unknown_bot_message(bot.name)))
    if not 0 <= bot.iterations <= MAX_ITERATIONS:
        problems.append(("iterations", f"must be 0..{MAX_ITERATIONS}, got {bot.iterations}"))
    if not 0 <= bot.time_ms <= MAX_TIME_MS:
        problems.append(("time_ms", f"must be 0..{MAX_TIME_MS}, got {bot.time_ms}"))
    if bot.name in SEARCH_BOTS and bot.iterations <= 0 and bot.time_ms <= 0:
        problems.append(("iterations", f"{bot.name} needs a budget: iterations or time_ms above 0"))
    if not (bot.exploration >= 0 and bot.exploration < float("inf")):
        problems.append(("exploration", f"must be a finite number >= 0, got {bot.exploration}"))
    return problems
