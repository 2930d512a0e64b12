"""Loading bots by name: the ``ascension.bots`` entry points, with the built-ins as fallback."""

from __future__ import annotations

from typing import Any

import pytest

from ai_workers.bots import registry
from ai_workers.bots.heuristic import HeuristicBot
from ai_workers.bots.ismcts import ISMCTSBot
from ai_workers.bots.random_bot import RandomBot
from ai_workers.examples.greedy_honor import GreedyHonorBot
from engine_service import bot_plugins


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_cache", {})


def test_builtins_and_the_example_plugin_load_by_name() -> None:
    assert isinstance(registry.load_bot("random"), RandomBot)
    assert isinstance(registry.load_bot("heuristic"), HeuristicBot)
    assert isinstance(registry.load_bot("ismcts"), ISMCTSBot)
    # registered only through the entry point group (pyproject.toml), not a built-in
    assert "greedy-honor" not in registry.BUILTINS
    assert isinstance(registry.load_bot("greedy-honor"), GreedyHonorBot)
    assert registry.load_bot("ismcts") is registry.load_bot("ismcts")  # one per process


def test_unknown_bot_says_when_and_where_bots_are_read() -> None:
    with pytest.raises(registry.UnknownBotError) as e:
        registry.load_bot("nope")
    message = str(e.value)
    assert message.startswith("unknown bot 'nope'; installed bots: expert, greedy-honor, ")
    assert "read when the engine and the workers start" in message and "restart" in message
    # where it looked: the group, and the distribution that provides it here (this project)
    assert "'ascension.bots' (provided by ascension-engine " in message


@pytest.fixture
def rescan() -> Any:
    """The entry points are read once per process: read them again around a test."""
    bot_plugins.scan.cache_clear()
    yield
    bot_plugins.scan.cache_clear()


def test_builtins_without_package_metadata(monkeypatch: pytest.MonkeyPatch, rescan: Any) -> None:
    def broken(**_: Any) -> Any:
        raise RuntimeError("no metadata")

    monkeypatch.setattr(bot_plugins, "entry_points", broken)
    assert registry.available_bots() == ["expert", "heuristic", "ismcts", "random"]
    assert isinstance(registry.load_bot("heuristic"), HeuristicBot)


def test_a_broken_override_of_a_builtin_falls_back_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        registry, "_registered", lambda: {**registry.BUILTINS, "heuristic": "no.such.module:Bot"}
    )
    assert isinstance(registry.load_bot("heuristic"), HeuristicBot)


def test_a_class_without_choose_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_registered", lambda: {"bad": "collections:OrderedDict"})
    with pytest.raises(TypeError, match="has no choose"):
        registry.load_bot("bad")
