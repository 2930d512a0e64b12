"""A seat's view never holds another seat's hand; a spectator sees no hand at all. Checked on
the structured board and on the rules view bytes, all along a game."""

from __future__ import annotations

import random
from collections import Counter

from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from tests.service import support
from tests.service.support import CALL_TIMEOUT


def _check(view: pb.GameView, hands: dict[int, list[int]], players: int) -> None:
    rv = rules.View.deserialize(view.rules_view)
    assert rv.seat == view.seat
    for q in range(players):
        seat = view.board.seats[q]
        assert seat.hand_count == len(hands[q])
        if q == view.seat:
            assert sorted(seat.hand) == sorted(hands[q])
            assert sorted(rv.state.hands[q]) == sorted(hands[q])
        else:
            assert not seat.hand, f"seat {view.seat} sees the hand of seat {q}"
            known = list(seat.hand_known)  # what every seat knows to be there
            assert rv.state.hands[q] == known, f"seat {view.seat}'s rules view holds the hand of seat {q}"
            assert not Counter(known) - Counter(hands[q]), f"seat {q}'s known cards are not in its hand"
    assert rv.state.rng == 0  # no way to predict draws


def test_views_hide_other_hands(stub: rpc.EngineStub) -> None:
    players = 3
    game = support.create(stub, sets="both", players=players, seed=21)
    rng = random.Random(4)
    version = 1
    for _ in range(60):
        views = {q: stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[q]),
                                 timeout=CALL_TIMEOUT) for q in range(players)}  # fmt: skip
        spectator = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT)
        assert {v.version for v in views.values()} == {spectator.version} == {version}
        hands = {q: list(views[q].board.seats[q].hand) for q in range(players)}
        for v in views.values():
            _check(v, hands, players)
        assert spectator.seat == -1 and not spectator.legal_actions
        assert all(not s.hand for s in spectator.board.seats)
        spectator_hands = rules.View.deserialize(spectator.rules_view).state.hands
        assert spectator_hands == [list(s.hand_known) for s in spectator.board.seats]
        to_move = spectator.to_move
        if to_move < 0:
            break
        # only the seat to move gets actions
        assert all(bool(v.legal_actions) == (q == to_move) for q, v in views.items())
        resp = stub.SubmitAction(epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[to_move],
                                                         expected_version=version,
                                                         action=support.pick(views[to_move], rng)),
                                 timeout=CALL_TIMEOUT)  # fmt: skip
        _check(resp.view, {**hands, to_move: list(resp.view.board.seats[to_move].hand)}, players)
        version = resp.view.version


def test_updates_carry_no_hidden_card(stub: rpc.EngineStub) -> None:
    """Events say how many cards were drawn, never which."""
    game = support.create(stub, seed=8)
    watcher = support.Watcher(stub, game.game_id)
    watcher.until(1)  # its stream is open before the moves start (they could outrun the window)
    final, _ = support.play_to_end(stub, game, seed=9, max_actions=80)
    for u in watcher.until(final.version):
        for e in u.events:
            if e.kind == "draw":
                assert len(e.data.split(",")) == 3  # ["draw", seat, count]
