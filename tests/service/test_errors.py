"""Every error a caller can act on, with its status code and a message that says what to fix."""

from __future__ import annotations

from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.rules import actions as A
from tests.service import support

UNKNOWN_GAME = "0" * 22
AI = pb.SeatInfo.AI


def _fails(call: Any, request: Any, code: str, *words: str) -> Any:
    err = support.rpc_error(call, request)
    assert err.code().name == code, (err.code(), err.details())
    for w in words:
        assert w in err.details(), (w, err.details())
    return err


def _ai(**bot: Any) -> epb.SeatConfig:
    return epb.SeatConfig(kind=AI, bot=epb.BotSettings(**bot))


HUMAN = epb.SeatConfig()


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (epb.CreateGameRequest(sets="chess", seats=[HUMAN, HUMAN]), "sets"),
        (epb.CreateGameRequest(seats=[HUMAN]), "seats"),
        (epb.CreateGameRequest(sets="ss", seats=[HUMAN] * 5), "seats"),
        (epb.CreateGameRequest(seats=[HUMAN, epb.SeatConfig(kind=AI)]), "seats[1].bot"),
        (epb.CreateGameRequest(seats=[HUMAN, _ai(name="deep-blue", iterations=10)]), "seats[1].bot.name"),
        (epb.CreateGameRequest(seats=[_ai(name="ismcts", iterations=2_000_000), HUMAN]), "seats[0].bot.iterations"),
        (epb.CreateGameRequest(seats=[_ai(name="ismcts", time_ms=61_000), HUMAN]), "seats[0].bot.time_ms"),
        (epb.CreateGameRequest(seats=[_ai(name="ismcts"), HUMAN]), "seats[0].bot.iterations"),
        (epb.CreateGameRequest(seats=[HUMAN, epb.SeatConfig(bot=epb.BotSettings(name="random"))]), "seats[1].bot"),
        (epb.CreateGameRequest(seats=[HUMAN, epb.SeatConfig(name="x" * 65)]), "seats[1].name"),
        (epb.CreateGameRequest(seats=[HUMAN, HUMAN], seed=2**63), "seed"),
    ],
)
def test_create_game_names_the_bad_field(stub: rpc.EngineStub, request_: epb.CreateGameRequest, field: str) -> None:
    err = _fails(stub.CreateGame, request_, "INVALID_ARGUMENT")
    assert err.details().startswith(field + ":"), err.details()


def test_malformed_requests_name_the_field(stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    tok = game.seat_tokens[game.view.to_move]
    _fails(stub.GetGame, epb.GetGameRequest(game_id="not a game"), "INVALID_ARGUMENT", "game_id")
    _fails(stub.GetGame, epb.GetGameRequest(), "INVALID_ARGUMENT", "game_id", "required")
    _fails(stub.SubmitAction, epb.SubmitActionRequest(game_id=game.game_id, token=tok, expected_version=0, action=1),
           "INVALID_ARGUMENT", "expected_version")  # fmt: skip
    _fails(stub.SubmitAction, epb.SubmitActionRequest(game_id=game.game_id, token=tok, expected_version=1,
                                                     action=99 << 16), "INVALID_ARGUMENT", "action")  # fmt: skip
    _fails(stub.SubmitAction, epb.SubmitActionRequest(game_id=game.game_id, token=tok, expected_version=1,
                                                     action=A.PLACE_SHIP << 16, idempotency_key="k" * 129),
           "INVALID_ARGUMENT", "idempotency_key")  # fmt: skip
    _fails(stub.ListGames, epb.ListGamesRequest(page_size=501), "INVALID_ARGUMENT", "page_size")
    _fails(stub.ListGames, epb.ListGamesRequest(page_token="?"), "INVALID_ARGUMENT", "page_token")
    stream = stub.WatchGame(epb.WatchGameRequest(game_id=game.game_id, after_version=-1), timeout=5)
    with pytest.raises(grpc.RpcError) as info:
        list(stream)
    assert info.value.code().name == "INVALID_ARGUMENT" and "after_version" in info.value.details()


def test_illegal_action_gives_the_rules_reason(stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    seat = game.view.to_move
    req = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[seat], expected_version=1,
                                  action=A.DEFEAT << 16 | 3)  # fmt: skip
    _fails(stub.SubmitAction, req, "FAILED_PRECONDITION", "defeat", "pending choice", "place_ship")
    # nothing was applied
    assert stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=5).version == 1


def test_not_your_turn(stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    other = 1 - game.view.to_move
    req = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[other], expected_version=1,
                                  action=A.PLACE_SHIP << 16)  # fmt: skip
    _fails(stub.SubmitAction, req, "FAILED_PRECONDITION", "not your turn", f"seat {game.view.to_move}")


def test_stale_version_is_aborted_with_the_current_version(stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    seat = game.view.to_move
    ok = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[seat], expected_version=1,
                                 action=A.PLACE_SHIP << 16 | 2)  # fmt: skip
    stub.SubmitAction(ok, timeout=5)
    err = _fails(stub.SubmitAction, ok, "ABORTED", "version 2")
    assert dict(err.trailing_metadata())["current-version"] == "2"


def test_unknown_game(stub: rpc.EngineStub) -> None:
    for call, req in [
        (stub.GetGame, epb.GetGameRequest(game_id=UNKNOWN_GAME)),
        (stub.ListLegalActions, epb.ListLegalActionsRequest(game_id=UNKNOWN_GAME)),
        (stub.SubmitAction, epb.SubmitActionRequest(game_id=UNKNOWN_GAME, token="t", expected_version=1, action=1)),
        (stub.GetReplay, epb.GetReplayRequest(game_id=UNKNOWN_GAME)),
        (stub.DeleteGame, epb.DeleteGameRequest(game_id=UNKNOWN_GAME, admin_token="t")),
    ]:
        _fails(call, req, "NOT_FOUND", UNKNOWN_GAME)
    with pytest.raises(grpc.RpcError) as info:
        list(stub.WatchGame(epb.WatchGameRequest(game_id=UNKNOWN_GAME), timeout=5))
    assert info.value.code().name == "NOT_FOUND"


def test_wrong_or_missing_token(stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    other = support.create(stub)
    seat = game.view.to_move

    def submit(token: str) -> epb.SubmitActionRequest:
        return epb.SubmitActionRequest(game_id=game.game_id, token=token, expected_version=1, action=A.PLACE_SHIP << 16)

    _fails(stub.SubmitAction, submit(""), "UNAUTHENTICATED", "token is required")
    _fails(stub.SubmitAction, submit("forged"), "UNAUTHENTICATED")
    # a token of another game is no token of this one
    _fails(stub.SubmitAction, submit(other.seat_tokens[seat]), "UNAUTHENTICATED")
    _fails(stub.GetGame, epb.GetGameRequest(game_id=game.game_id, token="forged"), "UNAUTHENTICATED")
    _fails(stub.DeleteGame, epb.DeleteGameRequest(game_id=game.game_id), "UNAUTHENTICATED", "admin_token")
    _fails(stub.DeleteGame, epb.DeleteGameRequest(game_id=game.game_id, admin_token=other.admin_token),
           "UNAUTHENTICATED")  # fmt: skip
    _fails(stub.DeleteGame, epb.DeleteGameRequest(game_id=game.game_id, admin_token=game.seat_tokens[0]),
           "PERMISSION_DENIED", "admin token")  # fmt: skip
    assert stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=5).version == 1


def test_replay_of_a_running_game_is_refused(stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    _fails(stub.GetReplay, epb.GetReplayRequest(game_id=game.game_id), "FAILED_PRECONDITION", "not over")


def test_submit_after_the_end(stub: rpc.EngineStub) -> None:
    game = support.create(stub, seed=3)
    final, _ = support.play_to_end(stub, game, seed=2)
    req = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[0], expected_version=final.version,
                                  action=A.END_TURN << 16)  # fmt: skip
    _fails(stub.SubmitAction, req, "FAILED_PRECONDITION", "over")


def test_message_size_limit(stub: rpc.EngineStub) -> None:
    req = epb.GetGameRequest(game_id="0" * 22, token="x" * (4 * 1024 * 1024 + 10))
    err = support.rpc_error(stub.GetGame, req)
    assert err.code().name == "RESOURCE_EXHAUSTED"


def test_tokens_are_never_shown_or_logged(engine: support.Engine, stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    secrets = [*game.seat_tokens, game.admin_token]
    seat = game.view.to_move
    view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[seat]), timeout=5)
    resp = stub.SubmitAction(epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[seat],
                                                     expected_version=1, action=view.legal_actions[0].id),
                             timeout=5)  # fmt: skip
    support.rpc_error(stub.GetGame, epb.GetGameRequest(game_id=game.game_id, token=secrets[0] + "x"))
    shown = [view.SerializeToString(), resp.SerializeToString(), game.view.SerializeToString(),
             stub.ListGames(epb.ListGamesRequest(), timeout=5).SerializeToString()]  # fmt: skip
    for t in secrets:
        assert all(t.encode() not in blob for blob in shown)
        assert t not in engine.log()
