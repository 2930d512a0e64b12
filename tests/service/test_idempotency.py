"""A retried idempotency key returns the first answer and applies nothing twice."""

from __future__ import annotations

import concurrent.futures

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from tests.service import support
from tests.service.support import CALL_TIMEOUT


def _first_move(stub: rpc.EngineStub) -> tuple[epb.CreateGameResponse, epb.SubmitActionRequest]:
    game = support.create(stub)
    seat = game.view.to_move
    view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[seat]), timeout=CALL_TIMEOUT)
    req = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[seat], expected_version=1,
                                  action=view.legal_actions[3].id, idempotency_key="place-1")  # fmt: skip
    return game, req


def test_retry_returns_the_first_answer(stub: rpc.EngineStub) -> None:
    game, req = _first_move(stub)
    first = stub.SubmitAction(req, timeout=CALL_TIMEOUT)
    assert not first.replayed and first.update.version == 2
    again = stub.SubmitAction(req, timeout=CALL_TIMEOUT)
    assert again.replayed and again.update == first.update and again.view.version == 2
    # the game moved on: the retry still gets the first answer, and nothing is applied
    view = first.view
    if view.to_move != view.seat:
        view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[view.to_move]),
                            timeout=CALL_TIMEOUT)  # fmt: skip
    nxt = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[view.to_move],
                                  expected_version=2, action=view.legal_actions[0].id, idempotency_key="second")  # fmt: skip
    stub.SubmitAction(nxt, timeout=CALL_TIMEOUT)
    late = stub.SubmitAction(req, timeout=CALL_TIMEOUT)
    assert late.replayed and late.update == first.update and late.view.version == 3
    assert stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT).version == 3


def test_key_reused_for_another_request_is_refused(stub: rpc.EngineStub) -> None:
    _, req = _first_move(stub)
    stub.SubmitAction(req, timeout=CALL_TIMEOUT)
    other = epb.SubmitActionRequest()
    other.CopyFrom(req)
    other.action = req.action + 1
    err = support.rpc_error(stub.SubmitAction, other)
    assert err.code().name == "INVALID_ARGUMENT" and "idempotency_key" in err.details()


def test_concurrent_duplicates_apply_once(engine: support.Engine) -> None:
    """The same request sent by 8 clients at once: one applies it, the others get its answer."""
    stub = engine.stub()
    game, req = _first_move(stub)
    channels = [engine.new_channel() for _ in range(8)]
    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(rpc.EngineStub(ch).SubmitAction, req, timeout=CALL_TIMEOUT) for ch in channels]
            answers = [f.result() for f in futures]  # none fails: the key is checked before the version
    finally:
        for ch in channels:
            ch.close()
    assert answers
    assert sum(not a.replayed for a in answers) == 1
    assert len({a.update.SerializeToString() for a in answers}) == 1
    assert stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT).version == 2
