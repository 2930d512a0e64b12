"""Which bots an AI seat may name, and the limits of their settings.

The names come from the ``ascension.bots`` entry-point group (the bot code is never imported
here); when nothing is registered in this environment, the built-in names are accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points

BUILTIN_BOTS = ("random", "heuristic", "ismcts")
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


@lru_cache(maxsize=1)
def registered_bots() -> tuple[str, ...]:
    names = sorted({ep.name for ep in entry_points(group="ascension.bots")})
    return tuple(names) if names else BUILTIN_BOTS


def check_bot(bot: BotConfig) -> list[tuple[str, str]]:
    """Problems as (field, message), fields relative to the BotSettings message."""
    problems = []
    names = registered_bots()
    if bot.name not in names:
        problems.append(("name", f"unknown bot {bot.name!r}; registered bots: {', '.join(names)}"))
    if not 0 <= bot.iterations <= MAX_ITERATIONS:
        problems.append(("iterations", f"must be 0..{MAX_ITERATIONS}, got {bot.iterations}"))
    if not 0 <= bot.time_ms <= MAX_TIME_MS:
        problems.append(("time_ms", f"must be 0..{MAX_TIME_MS}, got {bot.time_ms}"))
    if bot.name in SEARCH_BOTS and bot.iterations <= 0 and bot.time_ms <= 0:
        problems.append(("iterations", f"{bot.name} needs a budget: iterations or time_ms above 0"))
    if not (bot.exploration >= 0 and bot.exploration < float("inf")):
        problems.append(("exploration", f"must be a finite number >= 0, got {bot.exploration}"))
    return problems
