"""Resigning and handing seats over, against a real engine: each is a version of the game (an
update, an entry of the replay), a resigned seat is out, a handed-over seat's old token stops
working at once and its new player (or bot) plays it."""

from __future__ import annotations

import random
import time

import grpc  # type: ignore[import-untyped]

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server import seats
from tests.service import support


def _view(stub: rpc.EngineStub, game_id: str, token: str = "") -> pb.GameView:
    v: pb.GameView = stub.GetGame(epb.GetGameRequest(game_id=game_id, token=token),
                                  timeout=support.CALL_TIMEOUT)  # fmt: skip
    return v


def _play(stub: rpc.EngineStub, game: epb.CreateGameResponse, actions: int, tokens: list[str]) -> None:
    """``actions`` moves of whoever is to move (their tokens are ``tokens``)."""
    rng = random.Random(5)
    for _ in range(actions):
        v = _view(stub, game.game_id)
        mine = _view(stub, game.game_id, tokens[v.to_move])
        stub.SubmitAction(epb.SubmitActionRequest(game_id=game.game_id, token=tokens[v.to_move],
                                                  expected_version=mine.version,
                                                  action=support.pick(mine, rng)),
                          timeout=support.CALL_TIMEOUT)  # fmt: skip


def _resign(stub: rpc.EngineStub, game_id: str, token: str) -> epb.ResignResponse:
    r: epb.ResignResponse = stub.Resign(epb.ResignRequest(game_id=game_id, token=token),
                                        timeout=support.CALL_TIMEOUT)  # fmt: skip
    return r


def test_resigning_a_two_seat_game_ends_it_and_the_other_seat_wins(stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    _play(stub, game, 12, list(game.seat_tokens))  # (past the window of recent updates)
    r = _resign(stub, game.game_id, game.seat_tokens[1])
    assert r.update.action_kind == "resign" and r.update.description == "Seat 2 resigns"
    assert r.update.over and r.update.to_move == -1
    assert r.view.over and r.view.winner == 0 and r.view.seat_info[1].resigned
    assert not r.view.legal_actions and len(r.view.scores) == 2
    err = support.rpc_error(stub.SubmitAction, epb.SubmitActionRequest(
        game_id=game.game_id, token=game.seat_tokens[0], expected_version=r.update.version,
        action=65536))  # fmt: skip
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION and "over" in (err.details() or "")
    replay = stub.GetReplay(epb.GetReplayRequest(game_id=game.game_id), timeout=support.CALL_TIMEOUT)
    assert (replay.steps[-1].seat, replay.steps[-1].action) == (1, seats.RESIGN)
    assert replay.winner == 0 and replay.seats[1].resigned
    # A watcher from the start gets the whole history, rebuilt from the log, the resignation
    # (and the end of the game) included.
    updates = support.Watcher(stub, game.game_id).result()
    assert [u.version for u in updates] == list(range(1, r.update.version + 1))
    assert updates[-1].action_kind == "resign" and updates[-1].over


def test_a_resigned_seat_is_out_and_the_engine_plays_its_default(stub: rpc.EngineStub) -> None:
    game = support.create(stub, players=3)
    first = game.view.to_move
    out = (first + 1) % 3
    r = _resign(stub, game.game_id, game.seat_tokens[out])
    assert not r.update.over and r.view.seat_info[out].resigned
    err = support.rpc_error(stub.Resign, epb.ResignRequest(game_id=game.game_id,
                                                           token=game.seat_tokens[out]))  # fmt: skip
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION and "resigned" in (err.details() or "")
    watcher = support.Watcher(stub, game.game_id, after_version=r.update.version)
    for kind in ("place_ship", "end_turn"):  # the first seat's first turn
        mine = _view(stub, game.game_id, game.seat_tokens[first])
        action = next(a.id for a in mine.legal_actions if a.kind == kind)
        stub.SubmitAction(epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[first],
                                                  expected_version=mine.version, action=action),
                          timeout=support.CALL_TIMEOUT)  # fmt: skip
    deadline = time.monotonic() + 30
    while _view(stub, game.game_id).to_move in (first, out):  # the sweeper plays for it
        assert time.monotonic() < deadline, "nobody played for the resigned seat"
        time.sleep(0.05)
    played_for = [u for u in watcher.until(_view(stub, game.game_id).version) if u.seat == out]
    assert played_for and all(u.timeout.startswith("resigned") for u in played_for)
    assert _view(stub, game.game_id).winner == -1  # two seats still in play: the game goes on


def test_a_seat_handed_to_a_new_player_refuses_the_old_token(stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    seat = game.view.to_move
    req = epb.HandOverSeatRequest(game_id=game.game_id, admin_token=game.seat_tokens[0],
                                  seat=seat, to=epb.SeatConfig(name="Newcomer"))  # fmt: skip
    err = support.rpc_error(stub.HandOverSeat, req)
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED  # a seat token is not the admin's
    req.admin_token = game.admin_token
    h = stub.HandOverSeat(req, timeout=support.CALL_TIMEOUT)
    assert h.seat_token and h.update.action_kind == "hand_over"
    assert h.view.seat_info[seat].name == "Newcomer"
    err = support.rpc_error(stub.GetGame, epb.GetGameRequest(game_id=game.game_id,
                                                             token=game.seat_tokens[seat]))  # fmt: skip
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED
    mine = _view(stub, game.game_id, h.seat_token)
    assert mine.seat == seat and mine.legal_actions
    resp = stub.SubmitAction(epb.SubmitActionRequest(game_id=game.game_id, token=h.seat_token,
                                                     expected_version=mine.version,
                                                     action=mine.legal_actions[0].id),
                             timeout=support.CALL_TIMEOUT)  # fmt: skip
    assert resp.update.seat == seat


def test_a_seat_handed_to_a_bot_is_played_by_it(redis_url: str) -> None:
    e = support.start_engine(redis_url, ENGINE_AI_DISPATCH="local", ENGINE_AI_SWEEP_SECONDS="1",
                             ENGINE_AI_STALL_SECONDS="5")  # fmt: skip
    try:
        stub = e.stub()
        game = support.create(stub)
        seat = game.view.to_move
        h = stub.HandOverSeat(epb.HandOverSeatRequest(
            game_id=game.game_id, admin_token=game.admin_token, seat=seat,
            to=epb.SeatConfig(kind=pb.SeatInfo.AI, bot=epb.BotSettings(name="random"))),
            timeout=support.CALL_TIMEOUT)  # fmt: skip
        assert h.seat_token == "" and h.view.seat_info[seat].kind == pb.SeatInfo.AI
        updates = support.Watcher(stub, game.game_id).until(h.update.version + 1, timeout=120)
        assert updates[-1].seat == seat  # the bot's move
        err = support.rpc_error(stub.SubmitAction, epb.SubmitActionRequest(
            game_id=game.game_id, token=game.seat_tokens[seat], expected_version=1, action=65536))  # fmt: skip
        assert err.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        e.stop()


def test_bad_hand_overs_name_the_field(stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    for seat, to, field in (
        (5, epb.SeatConfig(), "seat"),
        (0, epb.SeatConfig(kind=pb.SeatInfo.AI), "to.bot"),
        (0, epb.SeatConfig(name="\x00"), "to.name"),
    ):
        err = support.rpc_error(stub.HandOverSeat, epb.HandOverSeatRequest(
            game_id=game.game_id, admin_token=game.admin_token, seat=seat, to=to))  # fmt: skip
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and field in (err.details() or ""), field
