"""The external path: a program outside our code plays a seat through the public API with the
seat's token (the SDK example), against an AI seat that the engine's embedded process pool
plays with ``ai_workers.runner:play_move`` (no broker: the quickstart's setup)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ai_workers.examples.external_bot import play_seat
from clients.sdk import Client, bot, human
from tests.service import support


@pytest.fixture(scope="module")
def embedded_engine() -> Iterator[support.Engine]:
    e = support.start_engine(ENGINE_AI_DISPATCH="auto", ENGINE_LOCAL_AI_PROCESSES="1")
    yield e
    e.stop()


def test_external_program_plays_a_seat_against_ismcts(embedded_engine: support.Engine) -> None:
    with Client(embedded_engine.address) as client:
        game = client.create_game(
            [human("outside"), bot("ismcts", time_ms=10, seed=4)], sets="ss", seed=12
        )
        final = play_seat(client, game.game_id, game.token(0))
        assert final.over and final.winner in (0, 1)
        replay = client.get_replay(game.game_id)
    seats = [step.seat for step in replay.steps]
    assert seats.count(0) > 20 and seats.count(1) > 20, embedded_engine.log()[-2000:]
