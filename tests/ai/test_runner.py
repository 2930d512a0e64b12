"""``play_move`` against a real engine process (in-memory store, AI dispatch off, so that the
test is the only one playing the AI seats, with move credentials it mints under the engine's
key as the engine's dispatcher would: no stored token plays an AI seat)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest

from ai_workers import engine_client, runner
from ai_workers.bots import BotSettings, decide, registry
from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server.tokens import AiCredentials
from tests.service import support

CALL = support.CALL_TIMEOUT
KEY = "runner-test-key-" * 2
CREDENTIALS = AiCredentials([KEY], 900)


@pytest.fixture(scope="module")
def engine() -> Iterator[support.Engine]:
    e = support.start_engine(ENGINE_AI_DISPATCH="off", ENGINE_AI_TOKEN_KEYS=KEY)
    yield e
    e.stop()


def new_game(
    engine: support.Engine, bot: str = "heuristic"
) -> tuple[epb.CreateGameResponse, dict[str, Any]]:
    seats = [
        epb.SeatConfig(
            kind=pb.SeatInfo.AI, name=f"ai{i}", bot=epb.BotSettings(name=bot, seed=i, time_ms=50)
        )
        for i in range(2)
    ]
    game = engine.stub().CreateGame(
        epb.CreateGameRequest(sets="ss", seats=seats, seed=11), timeout=CALL
    )
    seat = game.view.to_move
    payload = {
        "game_id": game.game_id,
        "seat": seat,
        "version": game.view.version,
        "token": CREDENTIALS.mint(game.game_id, seat, game.view.version),
        "bot": {"name": bot, "iterations": 0, "time_ms": 50, "seed": 1, "exploration": 0.0},
        "engine_address": engine.address,
        "enqueued_at": time.time(),
    }
    return game, payload


@pytest.fixture
def in_process_bots(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bots of these race tests are objects of the test (they hold its engine): run them in
    this process instead of the bot host, which would not know them (the host is tested in
    test_supervisor.py and tests/reliability/test_bad_bots.py)."""

    def decide_here(view: Any, rules_view: bytes, legal: list[int], settings: BotSettings,
                    *_: Any) -> Any:  # fmt: skip
        return decide.decide(view, legal, settings)

    monkeypatch.setattr(runner, "supervised_decide", decide_here)


def version(engine: support.Engine, game_id: str) -> int:
    v: int = engine.stub().GetGame(epb.GetGameRequest(game_id=game_id), timeout=CALL).version
    return v


def test_plays_once_then_the_same_request_is_stale(engine: support.Engine) -> None:
    game, p = new_game(engine, "ismcts")
    assert runner.play_move(**p) == runner.PLAYED
    assert version(engine, game.game_id) == p["version"] + 1
    assert runner.play_move(**p) == runner.STALE  # a duplicate task: dropped
    assert version(engine, game.game_id) == p["version"] + 1


def test_a_request_for_a_seat_not_to_move_is_stale(engine: support.Engine) -> None:
    game, p = new_game(engine)
    other = 1 - p["seat"]
    q = {**p, "seat": other, "token": CREDENTIALS.mint(game.game_id, other, p["version"])}
    assert runner.play_move(**q) == runner.STALE
    assert version(engine, game.game_id) == p["version"]


class SomeoneElseMovesFirst:
    """While this bot thinks, the seat's move is made by another client."""

    def __init__(self, engine: support.Engine, game_id: str, token: str) -> None:
        self.engine, self.game_id, self.token = engine, game_id, token

    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        stub = self.engine.stub()
        gv = stub.GetGame(epb.GetGameRequest(game_id=self.game_id, token=self.token), timeout=CALL)
        stub.SubmitAction(
            epb.SubmitActionRequest(game_id=self.game_id, token=self.token, expected_version=gv.version,
                                    action=legal[0]), timeout=CALL)  # fmt: skip
        return legal[-1]


def test_a_lost_race_is_dropped_not_retried(
    engine: support.Engine, monkeypatch: pytest.MonkeyPatch, in_process_bots: None
) -> None:
    game, p = new_game(engine)
    monkeypatch.setitem(
        registry._cache, "racer", SomeoneElseMovesFirst(engine, game.game_id, p["token"])
    )
    q = {**p, "bot": {**p["bot"], "name": "racer"}}
    assert runner.play_move(**q) == runner.LOST_RACE
    assert version(engine, game.game_id) == p["version"] + 1  # only the other client's move


class SecondWorker:
    """While this bot thinks, a second worker takes the same task and plays it."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload, self.nested = payload, False

    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        if not self.nested:
            self.nested = True
            assert runner.play_move(**self.payload) == runner.PLAYED
        return legal[0]


def test_two_workers_on_one_move_apply_it_once(
    engine: support.Engine, monkeypatch: pytest.MonkeyPatch, in_process_bots: None
) -> None:
    game, p = new_game(engine)
    q = {**p, "bot": {**p["bot"], "name": "twice"}}
    monkeypatch.setitem(registry._cache, "twice", SecondWorker(q))
    assert runner.play_move(**q) == runner.REPLAYED  # same idempotency key: the first result
    assert version(engine, game.game_id) == p["version"] + 1


class LosesTheAnswer:
    """A stub whose SubmitAction reaches the engine but whose answer is lost on the way back."""

    def __init__(self, stub: Any) -> None:
        self.stub = stub

    def GetGame(self, *a: Any, **k: Any) -> Any:
        return self.stub.GetGame(*a, **k)

    def SubmitAction(self, *a: Any, **k: Any) -> Any:
        self.stub.SubmitAction(*a, **k)
        raise FakeUnavailable()


class FakeUnavailable(grpc.RpcError):  # type: ignore[misc]
    def code(self) -> Any:
        return grpc.StatusCode.UNAVAILABLE


def test_a_retry_after_a_lost_answer_does_not_move_twice(
    engine: support.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    game, p = new_game(engine)
    real = engine_client.stub
    monkeypatch.setattr(engine_client, "stub", lambda address: LosesTheAnswer(real(address)))
    with pytest.raises(engine_client.TransientEngineError):
        runner.play_move(**p)
    monkeypatch.setattr(engine_client, "stub", real)
    assert runner.play_move(**p) == runner.STALE  # the retry sees the move was made
    assert version(engine, game.game_id) == p["version"] + 1


def test_unreachable_engine_is_transient_and_missing_game_is_gone(engine: support.Engine) -> None:
    _, p = new_game(engine)
    with pytest.raises(engine_client.TransientEngineError):
        runner.play_move(**{**p, "engine_address": f"127.0.0.1:{support.free_port()}"})
    assert runner.play_move(**{**p, "game_id": "0" * 22}) == runner.GONE


def test_engine_address_from_the_environment(
    engine: support.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, p = new_game(engine)
    monkeypatch.setenv("ENGINE_ADDRESS", engine.address)
    assert runner.play_move(**{**p, "engine_address": ""}) == runner.PLAYED


class CountsItsCalls:
    def __init__(self) -> None:
        self.calls = 0

    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        self.calls += 1
        return legal[0]


def test_a_move_with_one_legal_action_is_submitted_without_running_the_bot(
    engine: support.Engine, monkeypatch: pytest.MonkeyPatch, in_process_bots: None
) -> None:
    # e.g. a Raid the seat has no card to prevent (every victim is asked, so that the question
    # reveals nothing); here the simplest such move: spent out, only ending the turn is left.
    game, p = new_game(engine)
    stub = engine.stub()
    for _ in range(60):  # (a credential plays one version: one per move)
        token = CREDENTIALS.mint(game.game_id, p["seat"], version(engine, game.game_id))
        gv = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=token), timeout=CALL)
        if gv.to_move != p["seat"] or len(gv.legal_actions) == 1:
            break
        action = next(a.id for a in reversed(gv.legal_actions) if a.kind != "end_turn")
        stub.SubmitAction(
            epb.SubmitActionRequest(game_id=game.game_id, token=token, expected_version=gv.version,
                                    action=action), timeout=CALL)  # fmt: skip
    assert gv.to_move == p["seat"] and [a.kind for a in gv.legal_actions] == ["end_turn"]
    bot = CountsItsCalls()
    monkeypatch.setitem(registry._cache, "counts", bot)
    q = {**p, "version": gv.version, "token": token, "bot": {**p["bot"], "name": "counts"}}
    assert runner.play_move(**q) == runner.PLAYED
    assert version(engine, game.game_id) == gv.version + 1 and bot.calls == 0


def test_an_expired_request_is_dropped_unplayed(engine: support.Engine) -> None:
    game, p = new_game(engine)
    assert runner.play_move(**{**p, "expires_at": time.time() - 1}) == runner.EXPIRED
    assert version(engine, game.game_id) == p["version"]
    assert runner.play_move(**{**p, "expires_at": time.time() + 60}) == runner.PLAYED


def test_a_dead_lettered_move_plays_the_fallback_without_the_bot(
    engine: support.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    monkeypatch.setattr(runner, "supervised_decide", lambda *a, **k: asked.append("bot"))
    game, p = new_game(engine, "ismcts")
    assert runner.play_move(**{**p, "fallback_only": True}) == runner.PLAYED
    assert version(engine, game.game_id) == p["version"] + 1 and not asked
