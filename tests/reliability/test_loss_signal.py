"""The loss signal fires on a loss and only then.

- Spectators polling GetGame beside a submitter, on one engine and a healthy Redis (standalone,
  and a Redis Cluster): thousands of reads, no rollback counted or logged, and no reader ever
  sees a version go back. (A read sent before a commit of the same replica may come back
  after it: that is not the store going back.)
- A real rollback (Redis restarted from an older snapshot) is counted at the first read.
- A game the store lost whole (Redis restarted without its data) is DATA_LOSS / GAME_LOST to
  its players and watchers on the replica that served it, counted once; an id never served
  stays NOT_FOUND, and so does a game deleted through another replica, or one that expired.

Real processes: redis-server(s) of the test's own, ``ascension-engine serve``, gRPC clients."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest

from clients.sdk import Client, DataLossError, GameNotFoundError
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.server.errors import REASONS
from engine_service.server.ids import new_game_id
from tests.cluster.cluster import local_cluster
from tests.reliability.redis_proc import RedisProcess
from tests.reliability.test_rollback import play
from tests.service import support
from tests.service.support import CALL_TIMEOUT

READERS = 4
MIN_READS = 2000
MIN_MOVES = 150


def spectators_beside_a_submitter(engine: support.Engine, seconds: float = 25.0) -> tuple[int, int]:
    """READERS threads poll GetGame as spectators while one thread plays (a new game when one
    ends), until MIN_READS reads and MIN_MOVES moves (or ``seconds``). Returns (reads, moves);
    fails if a reader sees a game's version go back."""
    stub = engine.stub()
    current = [support.create(stub, seed=11)]
    stop = threading.Event()
    counts = {"reads": 0, "moves": 0}
    problems: list[str] = []
    lock = threading.Lock()

    def read() -> None:
        channel = grpc.insecure_channel(engine.address)
        mine = rpc.EngineStub(channel)
        last: dict[str, int] = {}
        try:
            while not stop.is_set():
                gid = current[0].game_id
                v = mine.GetGame(epb.GetGameRequest(game_id=gid), timeout=CALL_TIMEOUT).version
                if v < last.get(gid, 0):
                    problems.append(f"{gid}: version {v} read after {last[gid]}")
                last[gid] = v
                with lock:
                    counts["reads"] += 1
        except Exception as e:
            problems.append(repr(e))
        finally:
            channel.close()

    def submit() -> None:
        rng = random.Random(3)
        try:
            while not stop.is_set():
                game = current[0]
                view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT)
                if view.over:
                    current[0] = support.create(stub, seed=rng.randrange(1000))
                    continue
                play(stub, game, 1, seed=rng.randrange(1 << 30))
                with lock:
                    counts["moves"] += 1
        except Exception as e:
            problems.append(repr(e))

    threads = [threading.Thread(target=read, daemon=True) for _ in range(READERS)]
    threads.append(threading.Thread(target=submit, daemon=True))
    for t in threads:
        t.start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not problems:
        if counts["reads"] >= MIN_READS and counts["moves"] >= MIN_MOVES:
            break
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join(30)
    assert not problems, problems[:5]
    return counts["reads"], counts["moves"]


def test_spectators_beside_a_submitter_see_no_rollback_and_a_real_one_is_seen_at_once(
    tmp_path: Path,
) -> None:
    r = RedisProcess(tmp_path / "redis").start()
    e = support.start_engine(r.url)
    try:
        reads, moves = spectators_beside_a_submitter(e)
        assert reads >= 500 and moves >= 50, (reads, moves)  # (a loaded machine: fewer)
        assert support.metric(e, "ascension_store_rollbacks_detected_total") == 0
        assert "the store lost" not in e.log()

        # A real rollback: restarted from a snapshot 5 versions back. The first read sees it.
        stub = e.stub()
        game = support.create(stub, seed=21)
        play(stub, game, 9, seed=1)
        with r.client() as c:
            c.save()  # version 10
        assert play(stub, game, 5, seed=2).version == 15
        r.restart()
        view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT)
        assert view.version == 10
        assert support.metric(e, "ascension_store_rollbacks_detected_total") == 1
        _eventually(lambda: "versions 11-15 this replica saw" in e.log(), 10)
    finally:
        e.stop()
        r.stop()


def test_spectators_beside_a_submitter_on_a_cluster_see_no_rollback() -> None:
    with local_cluster(masters=3) as cluster:
        e = support.start_engine(cluster.url, ENGINE_REDIS_MODE="cluster")
        try:
            reads, moves = spectators_beside_a_submitter(e)
            assert reads >= 500 and moves >= 50, (reads, moves)
            assert support.metric(e, "ascension_store_rollbacks_detected_total") == 0
            assert "the store lost" not in e.log()
        finally:
            e.stop()


def _reason(err: grpc.RpcError) -> str:
    from clients.sdk.errors import rich_status

    return rich_status(err).reason


def test_a_game_the_store_lost_is_game_lost_where_it_was_served(tmp_path: Path) -> None:
    r = RedisProcess(tmp_path / "redis").start()  # (no persistence: a restart starts empty)
    a = support.start_engine(r.url, ENGINE_IDLE_GAME_TTL_SECONDS="3")
    b = support.start_engine(r.url, ENGINE_IDLE_GAME_TTL_SECONDS="3")
    try:
        stub_a, stub_b = a.stub(), b.stub()
        # Deleted through another replica: not a loss.
        deleted = support.create(stub_a, seed=31)
        play(stub_a, deleted, 3, seed=1)
        stub_b.DeleteGame(epb.DeleteGameRequest(game_id=deleted.game_id, admin_token=deleted.admin_token),
                          timeout=CALL_TIMEOUT)  # fmt: skip
        err = support.rpc_error(stub_a.GetGame, epb.GetGameRequest(game_id=deleted.game_id))
        assert err.code() == grpc.StatusCode.NOT_FOUND, err
        # Expired (idle past its 3 s): not a loss.
        idle = support.create(stub_a, seed=32)
        play(stub_a, idle, 2, seed=2)
        time.sleep(4.5)
        err = support.rpc_error(stub_a.GetGame, epb.GetGameRequest(game_id=idle.game_id))
        assert err.code() == grpc.StatusCode.NOT_FOUND, err

        # Served through A, watched on A (raw and SDK), then Redis restarts without its data.
        lost = support.create(stub_a, seed=33)
        played = play(stub_a, lost, 6, seed=3)
        raw_watch = stub_a.WatchGame(
            epb.WatchGameRequest(game_id=lost.game_id, after_version=played.version)
        )
        sdk = Client(a.address)
        sdk_watch = sdk.watch(lost.game_id, after_version=played.version)
        sdk_error: list[BaseException] = []
        follower = threading.Thread(target=lambda: sdk_error.extend(_drain(sdk_watch)), daemon=True)
        follower.start()
        time.sleep(0.5)  # (both streams joined)
        r.restart()

        for call, req in ((stub_a.GetGame, epb.GetGameRequest(game_id=lost.game_id)),
                          (stub_a.SubmitAction, epb.SubmitActionRequest(
                              game_id=lost.game_id, token=lost.seat_tokens[played.to_move],
                              expected_version=played.version, action=played.legal_actions[0].id
                              if played.legal_actions else 65536))):  # fmt: skip
            err = support.rpc_error(call, req)
            assert err.code() == grpc.StatusCode.DATA_LOSS and _reason(err) == "GAME_LOST", err
            assert f"version {played.version}" in err.details()
        with pytest.raises(grpc.RpcError) as ended:
            for _ in raw_watch:
                pass
        assert (
            ended.value.code() == grpc.StatusCode.DATA_LOSS and _reason(ended.value) == "GAME_LOST"
        )
        follower.join(30)
        assert sdk_error and isinstance(sdk_error[0], DataLossError), sdk_error
        assert sdk_error[0].reason == "GAME_LOST"
        sdk.close()
        assert support.metric(a, "ascension_store_games_lost_total") == 1  # (asked 4 times)
        _eventually(lambda: "the store lost the whole game" in a.log(), 10)

        # B never served it, and an id nobody created: NOT_FOUND.
        err = support.rpc_error(stub_b.GetGame, epb.GetGameRequest(game_id=lost.game_id))
        assert err.code() == grpc.StatusCode.NOT_FOUND, err
        never = new_game_id()
        assert (
            support.rpc_error(stub_a.GetGame, epb.GetGameRequest(game_id=never)).code()
            == grpc.StatusCode.NOT_FOUND
        )
        with Client(a.address) as c, pytest.raises(GameNotFoundError):
            c.get_view(never)
        assert support.metric(b, "ascension_store_games_lost_total") == 0
        assert REASONS["GAME_LOST"][0].value == "DATA_LOSS"
    finally:
        a.stop()
        b.stop()
        r.stop()


def _eventually(cond: Callable[[], bool], seconds: float) -> None:
    """(The engine's log is read from its output by a thread.)"""
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.05)


def _drain(watch: object) -> list[BaseException]:
    try:
        for _ in watch:  # type: ignore[attr-defined]
            pass
    except BaseException as e:
        return [e]
    return []
