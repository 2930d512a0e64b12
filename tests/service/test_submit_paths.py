"""A submit naming the version a replica holds skips reading the game (the commit's
compare-and-set checks the version): the answers must stay those of reading first, also when
another replica moved the game on, deleted it, or the request is refused."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from tests.service import support
from tests.service.support import CALL_TIMEOUT


@pytest.fixture(scope="module")
def other(redis_url: str) -> Iterator[support.Engine]:
    """A second replica on the same Redis."""
    e = support.start_engine(redis_url)
    yield e
    e.stop()


def _loads(engine: support.Engine) -> float:
    url = f"http://127.0.0.1:{engine.metrics_port}/metrics"
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    prefix = 'ascension_store_seconds_count{op="load"}'
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(prefix))


def _view(stub: rpc.EngineStub, game: epb.CreateGameResponse) -> pb.GameView:
    """The view of the seat to move."""
    spectator = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT)
    token = game.seat_tokens[spectator.to_move]
    return stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=token), timeout=CALL_TIMEOUT)


def _submit(game: epb.CreateGameResponse, view: pb.GameView, key: str = "", seat: int | None = None,
            action: int | None = None) -> epb.SubmitActionRequest:  # fmt: skip
    seat = view.to_move if seat is None else seat
    action = view.legal_actions[0].id if action is None else action
    return epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[seat], expected_version=view.version,
                                   action=action, idempotency_key=key)  # fmt: skip


def _warm(stub: rpc.EngineStub, game: epb.CreateGameResponse) -> pb.GameView:
    """Play one action through ``stub``'s replica: it now holds the new version."""
    resp = stub.SubmitAction(_submit(game, _view(stub, game)), timeout=CALL_TIMEOUT)
    return _view(stub, game) if resp.view.to_move != resp.view.seat else resp.view


def test_submits_on_a_warm_replica_skip_the_read(engine: support.Engine, stub: rpc.EngineStub) -> None:
    game = support.create(stub, seed=41)
    view = _warm(stub, game)
    before = _loads(engine)
    for _ in range(5):
        resp = stub.SubmitAction(_submit(game, view), timeout=CALL_TIMEOUT)
        assert resp.update.version == view.version + 1 and not resp.replayed
        if resp.view.to_move != resp.view.seat:
            break
        view = resp.view
    assert _loads(engine) == before


def test_game_moved_on_by_another_replica(stub: rpc.EngineStub, other: support.Engine) -> None:
    game = support.create(stub, seed=42)
    seen = _warm(stub, game)  # this replica holds version v
    applied = other.stub().SubmitAction(_submit(game, seen, key="k-42"), timeout=CALL_TIMEOUT)  # v+1 elsewhere
    # refused on version v (not this seat's turn) but judged on the current one: ABORTED
    idle = next(q for q in range(len(game.seat_tokens)) if q != seen.to_move)
    err = support.rpc_error(stub.SubmitAction, _submit(game, seen, seat=idle))
    assert err.code().name == "ABORTED"
    # another request on version v: ABORTED with the current version, as when reading first
    err = support.rpc_error(stub.SubmitAction, _submit(game, seen, action=seen.legal_actions[-1].id))
    assert err.code().name == "ABORTED"
    assert dict(err.trailing_metadata())["current-version"] == str(seen.version + 1)
    # the applied request again, here: the first answer, nothing applied twice
    again = stub.SubmitAction(_submit(game, seen, key="k-42"), timeout=CALL_TIMEOUT)
    assert again.replayed and again.update == applied.update
    assert stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT).version == seen.version + 1


def test_refusals_on_the_version_held(stub: rpc.EngineStub) -> None:
    game = support.create(stub, seed=43)
    seen = _warm(stub, game)
    idle = next(q for q in range(len(game.seat_tokens)) if q != seen.to_move)
    err = support.rpc_error(stub.SubmitAction, _submit(game, seen, seat=idle))
    assert err.code().name == "FAILED_PRECONDITION" and "not your turn" in err.details()
    err = support.rpc_error(stub.SubmitAction, _submit(game, seen, action=0xFFFF_FFFF))
    assert err.code().name == "INVALID_ARGUMENT" and err.details().startswith("action")
    forged = _submit(game, seen)
    forged.token = "forged"
    assert support.rpc_error(stub.SubmitAction, forged).code().name == "UNAUTHENTICATED"
    assert stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT).version == seen.version


def test_game_deleted_by_another_replica(stub: rpc.EngineStub, other: support.Engine) -> None:
    game = support.create(stub, seed=44)
    seen = _warm(stub, game)
    other.stub().DeleteGame(epb.DeleteGameRequest(game_id=game.game_id, admin_token=game.admin_token),
                            timeout=CALL_TIMEOUT)  # fmt: skip
    assert support.rpc_error(stub.SubmitAction, _submit(game, seen)).code().name == "NOT_FOUND"
    forged = _submit(game, seen)
    forged.token = "forged"  # read first, the game is missing before the token is wrong
    assert support.rpc_error(stub.SubmitAction, forged).code().name == "NOT_FOUND"
