"""Bot settings: defaults, ranges and the messages of invalid ones."""

from __future__ import annotations

import pytest

from ai_workers.bots.registry import validate_bot_settings
from ai_workers.bots.settings import (
    DEFAULT_TIME_MS,
    MAX_TIME_MS,
    BotSettings,
    BotSettingsError,
)
from ai_workers.runner import _settings


def test_defaults_and_budget() -> None:
    s = BotSettings()
    assert s.name == "ismcts" and s.budget_ms == DEFAULT_TIME_MS
    assert BotSettings(iterations=100).budget_ms == MAX_TIME_MS  # iterations alone: capped
    assert BotSettings(time_ms=250, iterations=100).budget_ms == 250


def test_payload_round_trip() -> None:
    s = BotSettings(name="heuristic", iterations=5, time_ms=10, seed=3, exploration=0.4)
    assert BotSettings.from_payload(s.to_payload()) == s
    assert BotSettings.from_payload({"name": "random", "exploration": 1}).exploration == 1.0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"name": ""}, "bot name must be a non-empty string"),
        ({"iterations": -1}, "bot iterations must be between 0 and 1000000"),
        ({"time_ms": 60_001}, "bot time_ms must be between 0 and 60000"),
        ({"time_ms": 1.5}, "bot time_ms must be an integer"),
        ({"seed": -3}, "bot seed must be in [0, 2**64)"),
        ({"exploration": float("nan")}, "bot exploration must be a finite number >= 0"),
        ({"exploration": -0.5}, "bot exploration must be a finite number >= 0"),
        ({"budget": 3}, "unknown bot setting(s) ['budget']"),
    ],
)
def test_invalid_settings_say_what_is_wrong(raw: dict[str, object], message: str) -> None:
    with pytest.raises(BotSettingsError) as e:
        BotSettings.from_payload(raw)
    assert message in str(e.value)


def test_unknown_bot_lists_the_installed_ones() -> None:
    with pytest.raises(BotSettingsError) as e:
        validate_bot_settings({"name": "alphazero"})
    assert "unknown bot 'alphazero'" in str(e.value)
    for name in ("heuristic", "ismcts", "random"):
        assert name in str(e.value)
    assert validate_bot_settings({"name": "ismcts", "time_ms": 100}).time_ms == 100


def test_runner_reads_zero_exploration_as_the_default_and_survives_bad_settings() -> None:
    assert (
        _settings({"name": "ismcts", "exploration": 0.0}, "g", 0).exploration
        == BotSettings().exploration
    )
    fallback = _settings({"name": "ismcts", "time_ms": -5, "seed": 9}, "g", 0)
    assert fallback.name == "heuristic" and fallback.seed == 9
