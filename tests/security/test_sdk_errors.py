"""Refusals over the wire, as an app sees them through the SDK: a typed exception with the
server's message, a stable reason from docs/security.md and metadata to act on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from clients.sdk import (
    AscensionError,
    Client,
    GameNotFoundError,
    GameNotOverError,
    GameOverError,
    IllegalActionError,
    InvalidArgumentError,
    NotYourTurnError,
    PermissionDeniedError,
    UnauthenticatedError,
    VersionConflictError,
    human,
)
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.rules import actions as A
from engine_service.server.errors import REASONS
from tests.service import support


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    e = support.start_engine()
    with Client(e.address, timeout=10.0) as c:
        yield c
    e.stop()


def _raises(cls: type[AscensionError], reason: str, fn: object, *args: object, **kw: object) -> AscensionError:
    with pytest.raises(cls) as info:
        fn(*args, **kw)  # type: ignore[operator]
    e = info.value
    assert e.reason == reason and reason in REASONS and REASONS[reason][0].value == e.code, (e.reason, e)
    return e


def test_refusals_carry_their_reasons(client: Client) -> None:
    game = client.create_game([human("A"), human("B")], seed=3)
    gid, to_move = game.game_id, game.view.to_move
    me, other = game.token(to_move), game.token(1 - to_move)
    e = _raises(NotYourTurnError, "NOT_YOUR_TURN", client.submit, gid, other, A.PLACE_SHIP << 16)
    assert e.metadata["to_move"] == str(to_move)
    _raises(IllegalActionError, "ILLEGAL_ACTION", client.submit, gid, me, A.DEFEAT << 16 | 3)
    e = _raises(InvalidArgumentError, "INVALID_FIELD", client.submit, gid, me, 99 << 16)
    assert [v.field for v in e.violations] == ["action"]
    _raises(GameNotFoundError, "GAME_NOT_FOUND", client.get_view, "0" * 22)
    _raises(UnauthenticatedError, "UNKNOWN_TOKEN", client.get_view, gid, "forged")
    _raises(UnauthenticatedError, "TOKEN_REQUIRED", client.submit, gid, "", 1, expected_version=1)
    _raises(PermissionDeniedError, "ADMIN_TOKEN_REQUIRED", client.delete_game, gid, me)
    _raises(GameNotOverError, "GAME_NOT_OVER", client.get_replay, gid)
    view = client.get_view(gid, me)
    action = view.legal_actions[0].id
    client.submit(gid, me, action, idempotency_key="once")
    _raises(InvalidArgumentError, "IDEMPOTENCY_KEY_REUSED", client.submit, gid, me,
            view.legal_actions[-1].id, expected_version=1, idempotency_key="once")  # fmt: skip
    e = _raises(VersionConflictError, "VERSION_MISMATCH", client.submit, gid, me, action,
                expected_version=1, retry_on_conflict=False)  # fmt: skip
    assert e.current_version == 2  # type: ignore[attr-defined]
    e = _raises(InvalidArgumentError, "INVALID_FIELD", client.list_games, page_size=9999)
    assert e.violations[0].field == "page_size"


def test_game_over(client: Client) -> None:
    stub = rpc.EngineStub(client._channel)
    game = support.create(stub, seed=5)
    final, _ = support.play_to_end(stub, game, seed=2)
    _raises(GameOverError, "GAME_OVER", client.submit, game.game_id, game.seat_tokens[0],
            A.END_TURN << 16, expected_version=final.version)  # fmt: skip
