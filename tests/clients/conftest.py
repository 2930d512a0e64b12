"""Fixtures: a real engine (``ascension-engine serve``, embedded store) for the SDK tests."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

from clients.embedded import EmbeddedEngine
from clients.sdk import Client, CreatedGame, human

# The embedded engine plays AI seats with ENGINE_LOCAL_AI_TARGET (default
# ai_workers.runner:play_move); tests with bot seats need it.
HAS_AI_RUNNER = importlib.util.find_spec("ai_workers.runner") is not None or bool(
    os.environ.get("ENGINE_LOCAL_AI_TARGET")
)
requires_ai = pytest.mark.skipif(
    not HAS_AI_RUNNER, reason="ai_workers.runner (the embedded AI seats' move function) is missing"
)


@pytest.fixture(scope="session")
def engine() -> Iterator[EmbeddedEngine]:
    with EmbeddedEngine(ai_processes=2) as e:
        yield e


@pytest.fixture()
def client(engine: EmbeddedEngine) -> Iterator[Client]:
    with Client(engine.address, timeout=10.0) as c:
        yield c


def human_game(client: Client, seed: int = 11, players: int = 2) -> CreatedGame:
    """A game of people only (no AI worker involved)."""
    return client.create_game([human(f"P{i + 1}") for i in range(players)], sets="ss", seed=seed)


def to_main_phase(client: Client, game: CreatedGame) -> tuple[str, int]:
    """Place the first seat's ship; returns (token, seat) of the seat now in its main phase."""
    view = client.get_view(game.game_id)
    seat = view.to_move
    token = game.token(seat)
    mine = client.get_view(game.game_id, token)
    place = next(a for a in mine.legal_actions if a.kind == "place_ship")
    client.submit(game.game_id, token, place.id)
    return token, seat
