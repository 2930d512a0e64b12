"""SubmitAction's ``seat_tokens``: a caller holding several seats gets the view of the seat to
move, so a table of every seat plays on with one call per action; no one else's view leaks."""

from __future__ import annotations

import random

import grpc  # type: ignore[import-untyped]
import pytest

from clients.sdk.errors import rich_status
from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from tests.service import support
from tests.service.support import CALL_TIMEOUT


def _submit(stub: rpc.EngineStub, game: epb.CreateGameResponse, view: pb.GameView, action: int,
            held: list[str], **kw: object) -> epb.SubmitActionResponse:  # fmt: skip
    req = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[view.to_move],
                                  expected_version=view.version, action=action, seat_tokens=held,
                                  **kw)  # type: ignore[arg-type]  # fmt: skip
    resp: epb.SubmitActionResponse = stub.SubmitAction(req, timeout=CALL_TIMEOUT)
    return resp


def _get(stub: rpc.EngineStub, game: epb.CreateGameResponse, seat: int) -> pb.GameView:
    v: pb.GameView = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[seat]),
                                  timeout=CALL_TIMEOUT)  # fmt: skip
    return v


def _before_a_pass(stub: rpc.EngineStub, game: epb.CreateGameResponse, sets: str, players: int,
                   seed: int) -> tuple[pb.GameView, int, int]:  # fmt: skip
    """Plays the game (a mirror of it kept with the rules) up to where an action would pass
    the move to another seat: (the view of the seat to move, that action, the seat it passes to)."""
    s = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=seed))
    view = _get(stub, game, game.view.to_move)
    while True:
        for a in rules.legal_actions(s):
            after = s.clone()
            rules.apply(after, a)
            if not after.over and after.to_move() != s.to_move():
                return view, a, after.to_move()
        a = rules.legal_actions(s)[0]
        rules.apply(s, a)
        view = _submit(stub, game, view, a, list(game.seat_tokens)).view


@pytest.mark.parametrize("players", [2, 3])
def test_a_table_of_every_seat_plays_a_whole_game_with_submits_alone(
    stub: rpc.EngineStub, players: int
) -> None:
    game = support.create(stub, sets="both", players=players, seed=21 + players)
    held = list(game.seat_tokens)
    view = _get(stub, game, game.view.to_move)
    rng = random.Random(players)
    passes = 0
    while not view.over:
        acting = view.to_move
        assert view.seat == acting and view.legal_actions  # every answer lets the table go on
        resp = _submit(
            stub, game, view, support.pick(view, rng), held, idempotency_key=f"k{view.version}"
        )
        view = resp.view
        if not view.over and view.to_move != acting:
            passes += 1
            # The answer is exactly what that seat's GetGame shows, hidden cards and all.
            assert view == _get(stub, game, view.to_move)
    assert passes > 10 and view.version > 100


def test_without_the_next_seats_token_the_answer_stays_the_acting_seats(
    stub: rpc.EngineStub,
) -> None:
    game = support.create(stub, players=3, seed=5)
    view, action, nxt = _before_a_pass(stub, game, "ss", 3, 5)
    acting = view.to_move
    other = next(s for s in range(3) if s not in (acting, nxt))
    # The caller holds the acting seat and a seat that is not next: the move passes to a seat
    # it does not hold, whose hand it must not see.
    resp = _submit(stub, game, view, action, [game.seat_tokens[acting], game.seat_tokens[other]])
    assert resp.view.to_move == nxt
    assert resp.view.seat == acting and not resp.view.legal_actions
    assert resp.view == _get(stub, game, acting)


def test_a_retried_submit_answers_with_the_same_seats_view(stub: rpc.EngineStub) -> None:
    game = support.create(stub, seed=9)
    view, action, nxt = _before_a_pass(stub, game, "ss", 2, 9)
    first = _submit(stub, game, view, action, list(game.seat_tokens), idempotency_key="pass-1")
    again = _submit(stub, game, view, action, list(game.seat_tokens), idempotency_key="pass-1")
    assert again.replayed and first.view.seat == again.view.seat == nxt != view.to_move
    assert again.view == first.view and first.view.legal_actions


def test_tokens_that_are_not_this_games_seats_are_refused(stub: rpc.EngineStub) -> None:
    game, elsewhere = support.create(stub, seed=3), support.create(stub, seed=4)
    view = _get(stub, game, game.view.to_move)
    action = view.legal_actions[0].id
    for held in ([elsewhere.seat_tokens[0]], [game.seat_tokens[0], game.admin_token], ["x" * 32]):
        err = support.rpc_error(stub.SubmitAction, epb.SubmitActionRequest(
            game_id=game.game_id, token=game.seat_tokens[view.to_move], expected_version=view.version,
            action=action, seat_tokens=held))  # fmt: skip
        assert err.code() == grpc.StatusCode.UNAUTHENTICATED, err
        assert f"seat_tokens[{len(held) - 1}] does not match any seat" in err.details()
        assert rich_status(err).reason == "UNKNOWN_TOKEN"
    assert _get(stub, game, view.to_move).version == view.version  # nothing was applied
    for held, what in ((["t"] * 7, "at most 6"), (["t" * 257], "seat_tokens[0]")):
        err = support.rpc_error(stub.SubmitAction, epb.SubmitActionRequest(
            game_id=game.game_id, token=game.seat_tokens[view.to_move], expected_version=view.version,
            action=action, seat_tokens=held))  # fmt: skip
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and what in err.details(), err


def test_legal_actions_only_answers_follow_the_seat_to_move_too(stub: rpc.EngineStub) -> None:
    game = support.create(stub, seed=12)
    view, action, nxt = _before_a_pass(stub, game, "ss", 2, 12)
    resp = _submit(
        stub, game, view, action, list(game.seat_tokens), view_detail=epb.VIEW_DETAIL_LEGAL_ACTIONS
    )
    light, full = resp.view, _get(stub, game, nxt)
    assert light.seat == full.seat == full.to_move == nxt and not light.HasField("board")
    assert list(light.legal_actions) == list(full.legal_actions) and light.legal_actions


def test_a_retry_holding_fewer_seats_is_shown_only_its_own(stub: rpc.EngineStub) -> None:
    """The answer to a retry follows the tokens the retry sends, not the first request's: a
    caller cannot see a seat by replaying someone else's key."""
    game = support.create(stub, seed=14)
    view, action, nxt = _before_a_pass(stub, game, "ss", 2, 14)
    first = _submit(stub, game, view, action, list(game.seat_tokens), idempotency_key="pass-2")
    again = _submit(stub, game, view, action, [], idempotency_key="pass-2")
    assert first.view.seat == nxt and again.replayed
    assert again.view.seat == view.to_move != nxt and not again.view.legal_actions
    assert again.view == _get(stub, game, view.to_move)
