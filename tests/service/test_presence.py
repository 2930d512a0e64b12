"""Presence across two engines on one real Redis: a seat whose player has a watch stream open
(on either engine) is present in views and in the presence updates of streams that ask, and
goes when the stream closes."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import grpc  # type: ignore[import-untyped]
import pytest

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from tests.service import support


class Stream:
    """A WatchGame stream in a thread; its presence updates in a queue."""

    def __init__(self, stub: rpc.EngineStub, game_id: str, token: str = "") -> None:
        self.here: queue.Queue[tuple[int, ...]] = queue.Queue()
        self.error: list[grpc.RpcError] = []
        req = epb.WatchGameRequest(game_id=game_id, token=token, with_presence=True)
        self.call = stub.WatchGame(req, timeout=120)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for u in self.call:
                if u.presence_only:
                    self.here.put(tuple(u.present_seats))
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                self.error.append(e)

    def until(self, seats: tuple[int, ...], timeout: float = 30.0) -> None:
        """Wait for a presence update naming exactly ``seats``."""
        seen: list[tuple[int, ...]] = []
        while True:
            try:
                got = self.here.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no presence update {seats}; saw {seen} {self.error}") from None
            seen.append(got)
            if got == seats:
                return

    def close(self) -> None:
        self.call.cancel()
        self.thread.join(10)


@pytest.fixture
def two(redis_url: str) -> Iterator[tuple[support.Engine, support.Engine]]:
    a = support.start_engine(redis_url)
    b = support.start_engine(redis_url)
    yield a, b
    a.stop()
    b.stop()


def _present(stub: rpc.EngineStub, game_id: str) -> list[bool]:
    view = stub.GetGame(epb.GetGameRequest(game_id=game_id), timeout=support.CALL_TIMEOUT)
    return [s.present for s in view.seat_info]


def test_a_seat_with_an_open_stream_is_present_on_every_engine(
    two: tuple[support.Engine, support.Engine],
) -> None:
    a, b = two
    game = support.create(a.stub())
    assert _present(b.stub(), game.game_id) == [False, False]
    spectator = Stream(b.stub(), game.game_id)
    spectator.until(())
    first = Stream(a.stub(), game.game_id, game.seat_tokens[0])
    try:
        first.until((0,))  # its own stream says so at once
        spectator.until((0,))  # the other engine's, at its next poll
        assert _present(b.stub(), game.game_id) == [True, False]
        second = Stream(b.stub(), game.game_id, game.seat_tokens[1])
        spectator.until((0, 1))
        first.until((0, 1))
        second.close()
        spectator.until((0,))  # gone as soon as its stream closed
    finally:
        first.close()
    spectator.until(())
    assert _present(a.stub(), game.game_id) == [False, False]
    spectator.close()


def test_a_stream_with_a_token_of_no_seat_is_refused(stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    req = epb.WatchGameRequest(game_id=game.game_id, token="not-a-seat-token")
    with pytest.raises(grpc.RpcError) as e:
        next(iter(stub.WatchGame(req, timeout=support.CALL_TIMEOUT)))
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_an_ai_seat_is_never_present(stub: rpc.EngineStub) -> None:
    seats = [epb.SeatConfig(name="P1"),
             epb.SeatConfig(kind=pb.SeatInfo.AI, bot=epb.BotSettings(name="random"))]  # fmt: skip
    game = stub.CreateGame(epb.CreateGameRequest(sets="ss", seats=seats), timeout=support.CALL_TIMEOUT)
    assert game.seat_tokens[1] == ""
    s = Stream(stub, game.game_id, game.seat_tokens[0])
    try:
        s.until((0,))
        assert _present(stub, game.game_id) == [True, False]
    finally:
        s.close()
