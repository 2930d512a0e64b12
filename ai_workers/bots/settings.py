"""Per-seat bot settings: which bot, its search budget, its seed.

These arrive as the ``bot`` dict of a move payload (``{name, iterations, time_ms, seed,
exploration}``) and are validated once, when the game is created, with errors that say which
field is wrong and what would be right.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

MAX_ITERATIONS = 1_000_000
MAX_TIME_MS = 60_000  # the Celery time limits are derived from this cap
DEFAULT_TIME_MS = 1_000  # used by search bots when neither budget is given
DEFAULT_EXPLORATION = 0.3
FIELDS = ("name", "iterations", "time_ms", "seed", "exploration")


class BotSettingsError(ValueError):
    """Invalid bot settings; the message names the field and the accepted values."""


@dataclass(frozen=True, slots=True)
class BotSettings:
    """How one AI seat plays.

    ``iterations`` and ``time_ms`` bound a search; whichever is reached first stops it.
    ``time_ms`` 0 leaves the budget to ``budget_ms``: one second, or the most any search may
    take (``MAX_TIME_MS``) when ``iterations`` is given. ``seed`` makes
    a bot's choices reproducible; ``exploration`` is the UCT constant of search bots.
    """

    name: str = "ismcts"
    iterations: int = 0
    time_ms: int = 0
    seed: int = 0
    exploration: float = DEFAULT_EXPLORATION

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise BotSettingsError("bot name must be a non-empty string")
        for key, top in (("iterations", MAX_ITERATIONS), ("time_ms", MAX_TIME_MS)):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int):
                raise BotSettingsError(f"bot {key} must be an integer, got {v!r}")
            if not 0 <= v <= top:
                raise BotSettingsError(
                    f"bot {key} must be between 0 and {top}, got {v}"
                )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise BotSettingsError(f"bot seed must be an integer, got {self.seed!r}")
        if not 0 <= self.seed < 2**64:
            raise BotSettingsError(f"bot seed must be in [0, 2**64), got {self.seed}")
        e = self.exploration
        if isinstance(e, bool) or not isinstance(e, int | float) or not math.isfinite(e) or e < 0:
            raise BotSettingsError(f"bot exploration must be a finite number >= 0, got {e!r}")

    @property
    def budget_ms(self) -> int:
        """The wall-clock cap of a search: ``time_ms``, else the default, never above the max."""
        if self.time_ms:
            return self.time_ms
        return MAX_TIME_MS if self.iterations else DEFAULT_TIME_MS

    def to_payload(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_payload(raw: Mapping[str, Any]) -> BotSettings:
        """Build settings from a payload dict; unknown keys are an error, missing ones default."""
        if not isinstance(raw, Mapping):
            raise BotSettingsError(f"bot settings must be a mapping, got {type(raw).__name__}")
        unknown = sorted(set(raw) - set(FIELDS))
        if unknown:
            raise BotSettingsError(f"unknown bot setting(s) {unknown}; known: {list(FIELDS)}")
        kwargs = dict(raw)
        if (
            "exploration" in kwargs
            and isinstance(kwargs["exploration"], int)
            and not isinstance(kwargs["exploration"], bool)
        ):
            kwargs["exploration"] = float(kwargs["exploration"])
        return BotSettings(**kwargs)

