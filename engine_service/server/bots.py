"""Which bots an AI seat may name, and the limits of their settings.

The names come from the ``ascension.bots`` entry-point group (the bot code is never imported
here), read once, when the engine starts (it logs what it found); when nothing is registered
in this environment, the built-in names are accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points

GROUP = "ascension.bots"
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


@lru_cache(maxsize=1)
def _scan() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(bot names, the distributions that provide them as "name version"), read once."""
    names, providers = set(), set()
    for ep in entry_points(group=GROUP):
        names.add(ep.name)
        dist = getattr(ep, "dist", None)
        if dist is not None:
            providers.add(f"{dist.name} {dist.version}")
    return (tuple(sorted(names)) or BUILTIN_BOTS), tuple(sorted(providers))


def registered_bots() -> tuple[str, ...]:
    return _scan()[0]


def where_bots_come_from() -> str:
    providers = _scan()[1]
    of = f"provided by {', '.join(providers)}" if providers else "which no package provides here"
    return f"the entry-point group {GROUP!r} ({of})"


def describe_bots() -> str:
    """What the engine logs at start."""
    return (
        f"bots: {', '.join(registered_bots())}, from {where_bots_come_from()}; read at start: "
        "restart to see bots installed or changed later"
    )


def unknown_bot_message(name: str) -> str:
    return (
        f"unknown bot {name!r}; registered bots: {', '.join(registered_bots())}. Bots are read "
        f"when the engine and the workers start, from {where_bots_come_from()}: install the "
        "bot's package where both run, then restart them"
    )


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
