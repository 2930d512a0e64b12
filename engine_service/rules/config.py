"""Game configuration: which sets, how many seats, which seed."""

from __future__ import annotations

from dataclasses import dataclass

from engine_service.rules.errors import ConfigError

SET_CHOICES = {"ss": ("ss",), "cotgi": ("cotgi",), "both": ("ss", "cotgi")}
HONOR_PER_PLAYER = 30


@dataclass(frozen=True, slots=True)
class GameConfig:
    """``sets`` is "ss" (Skulls & Sails), "cotgi" (Curse of the Golden Isles) or "both"."""

    sets: str = "ss"
    players: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        if self.sets not in SET_CHOICES:
            raise ConfigError(f"sets must be one of {sorted(SET_CHOICES)}, got {self.sets!r}")
        top = 6 if self.has_cotgi else 4
        if not 2 <= self.players <= top:
            raise ConfigError(
                f"{self.sets!r} is played by 2 to {top} players, got {self.players}"
                + ("" if self.has_cotgi else " (5-6 players need Curse of the Golden Isles)")
            )
        if not 0 <= self.seed < 2**63:
            raise ConfigError(f"seed must be in [0, 2**63), got {self.seed}")

    @property
    def set_keys(self) -> tuple[str, ...]:
        return SET_CHOICES[self.sets]

    @property
    def has_ss(self) -> bool:
        return "ss" in self.set_keys

    @property
    def has_cotgi(self) -> bool:
        return "cotgi" in self.set_keys

    @property
    def honor_pool(self) -> int:
        return HONOR_PER_PLAYER * self.players
