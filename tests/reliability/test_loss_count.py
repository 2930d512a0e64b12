"""One count per loss, however many replicas find it: two engine replicas on one Redis both
served every game; the store then loses games and versions in every way it can (an older
snapshot restored, a game's keys deleted, FLUSHALL), both replicas find every loss, and the
counters summed over the replicas equal the losses exactly. Watchers of a game the store was
emptied of are told GAME_LOST within 5 s, by both replicas' watch readers, before anyone asks.

Real processes: a redis-server of the test's own (its RDB file in a temporary directory), two
``ascension-engine serve`` replicas, gRPC clients."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import grpc  # type: ignore[import-untyped]

from clients.sdk.errors import rich_status
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.store import keys
from tests.reliability.redis_proc import RedisProcess
from tests.reliability.test_rollback import play
from tests.service import support
from tests.service.support import CALL_TIMEOUT

LOST = "ascension_store_games_lost_total"
ROLLBACKS = "ascension_store_rollbacks_detected_total"


def _total(engines: list[support.Engine], name: str) -> float:
    return sum(support.metric(e, name) for e in engines)


def _served_by_both(a: support.Engine, b: support.Engine, seed: int) -> epb.CreateGameResponse:
    game = support.create(a.stub(), seed=seed)
    play(a.stub(), game, 3, seed=seed)
    play(b.stub(), game, 3, seed=seed + 1)
    return game


def _both_ask(engines: list[support.Engine], games: list[epb.CreateGameResponse]) -> list[str]:
    """Each replica reads each game (twice: a replica asked again counts nothing more); the
    reason of each answer that is an error."""
    reasons = []
    for e in engines:
        for g in games:
            for _ in range(2):
                try:
                    e.stub().GetGame(epb.GetGameRequest(game_id=g.game_id), timeout=CALL_TIMEOUT)
                except grpc.RpcError as err:
                    reasons.append(rich_status(err).reason)
    return reasons


class _Watch:
    """A WatchGame stream in a thread; ``ended`` is set when it ends, ``reason`` then says why
    and ``at`` when (monotonic clock)."""

    def __init__(self, stub: rpc.EngineStub, game_id: str, after: int) -> None:
        self.updates: list[int] = []
        self.got = threading.Event()
        self.ended = threading.Event()
        self.reason = ""
        self.at = 0.0
        req = epb.WatchGameRequest(game_id=game_id, after_version=after)
        self._call = stub.WatchGame(req, timeout=120)
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        try:
            for u in self._call:
                self.updates.append(u.version)
                self.got.set()
        except grpc.RpcError as e:
            self.reason = rich_status(e).reason or e.code().name
        self.at = time.monotonic()
        self.ended.set()

    def following(self, stub: rpc.EngineStub, game: epb.CreateGameResponse) -> None:
        """Wait until the stream follows the game's feed: a move played now reaches it."""
        assert self.got.wait(30), "the watcher got nothing"
        version = play(stub, game, 1, seed=9).version
        deadline = time.monotonic() + 30
        while version not in self.updates:
            assert time.monotonic() < deadline and not self.ended.is_set(), self.reason
            time.sleep(0.02)


def test_each_loss_is_counted_once_over_two_replicas(tmp_path: Path) -> None:
    r = RedisProcess(tmp_path / "redis").start()
    a = support.start_engine(r.url)
    b = support.start_engine(r.url)
    engines = [a, b]
    try:
        # Three games both replicas served, in a snapshot; played on past it by both.
        kept = [_served_by_both(a, b, seed) for seed in (11, 12, 13)]
        with r.client() as c:
            c.save()
        for g in kept:
            play(a.stub(), g, 2, seed=5)
            play(b.stub(), g, 2, seed=6)
        # Two more games, never in the snapshot.
        new = [_served_by_both(a, b, seed) for seed in (14, 15)]

        r.restart()  # back to the snapshot: 3 histories rolled back, 2 games lost whole
        assert _both_ask(engines, kept) == []  # (the store's versions, served)
        assert _both_ask(engines, new) == ["GAME_LOST"] * 8
        assert _total(engines, ROLLBACKS) == 3
        assert _total(engines, LOST) == 2
        for e in engines:  # each replica found each loss: it says so in its log
            assert _logged(e, "the store lost the whole game")

        # One game's keys deleted.
        with r.client() as c:
            c.delete(*keys.game_keys(kept[0].game_id))
        assert _both_ask(engines, kept[:1]) == ["GAME_LOST"] * 4
        assert _total(engines, LOST) == 3

        # Emptied while watched on both replicas: each watcher is told within 5 s, unasked.
        watches = [_Watch(e.stub(), g.game_id, after=_version(e, g) - 1)
                   for e, g in zip(engines, kept[1:], strict=True)]  # fmt: skip
        for w, e, g in zip(watches, engines, kept[1:], strict=True):
            w.following(e.stub(), g)
        with r.client() as c:
            c.flushall()
        flushed = time.monotonic()
        for w in watches:
            assert w.ended.wait(30), "the watcher was not told"
            assert w.reason == "GAME_LOST", w.reason
            assert w.at - flushed < 5.0, f"told after {w.at - flushed:.1f}s"
        assert _both_ask(engines, kept[1:]) == ["GAME_LOST"] * 8
        assert _total(engines, LOST) == 5  # 2 + 1 + 2 games lost, whoever found each
        assert _total(engines, ROLLBACKS) == 3
        # both replicas counted some: the first to find each loss did
        assert min(support.metric(e, LOST) for e in engines) >= 1
    finally:
        a.stop()
        b.stop()
        r.stop()


def _version(engine: support.Engine, game: epb.CreateGameResponse) -> int:
    req = epb.GetGameRequest(game_id=game.game_id)
    return int(engine.stub().GetGame(req, timeout=CALL_TIMEOUT).version)


def _logged(engine: support.Engine, text: str, seconds: float = 10.0) -> bool:
    """(The engine's log is read from its output by a thread.)"""
    deadline = time.monotonic() + seconds
    while text not in engine.log():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
