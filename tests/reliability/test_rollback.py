"""A Redis that goes back in time (restarted from an older snapshot) while replicas hold newer
versions: no replica serves or builds on what the store no longer holds, the rollback is
detected once (metric, log), DATA_LOSS naming the versions lost (11-20) to watchers and to
callers who decided on them, the SDK's watch resynchronises and its submit raises
DataLossError, and the stored game still replays from its log.

Real processes: a redis-server of the test's own (RDB file in a temporary directory), two
``ascension-engine serve`` replicas, gRPC clients."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from pathlib import Path

import grpc  # type: ignore[import-untyped]

from clients.sdk import AsyncClient, Client, DataLossError
from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.rules.serialize import to_primitive
from engine_service.store import keys
from tests.reliability.redis_proc import RedisProcess
from tests.service import support
from tests.service.support import CALL_TIMEOUT


def play(stub: rpc.EngineStub, game: epb.CreateGameResponse, n: int, seed: int) -> pb.GameView:
    """``n`` more actions (a game that ends first stops there); returns the last view."""
    import random

    rng = random.Random(seed)
    view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT)
    for _ in range(n):
        if view.over:
            break
        seat = view.to_move
        view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[seat]),
                            timeout=CALL_TIMEOUT)  # fmt: skip
        req = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[seat],
                                      expected_version=view.version, action=support.pick(view, rng))  # fmt: skip
        view = stub.SubmitAction(req, timeout=CALL_TIMEOUT).view
    return view


def replays_from_its_log(r: RedisProcess, game_id: str, seed: int) -> bool:
    """The stored state is what the seed and the stored action log give."""
    g, _, log, _ = keys.game_keys(game_id)
    with r.client() as c:
        state, version = c.hmget(g, "state", "version")
        entries = keys.unpack_log(c.get(log) or b"")
    assert state is not None and version is not None
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=seed))
    for seat, action in entries:
        assert s.to_move() == seat
        rules.apply(s, action)
    assert len(entries) + 1 == int(version), (len(entries), version)
    # the same plain data (bytes may differ: marshal marks shared strings as it meets them)
    return to_primitive(s) == to_primitive(rules.deserialize(state))


def test_a_snapshot_rollback_is_detected_and_never_built_upon(tmp_path: Path) -> None:
    r = RedisProcess(tmp_path / "redis").start()
    a = support.start_engine(r.url)
    b = support.start_engine(r.url)
    try:
        stub_a, stub_b = a.stub(), b.stub()
        game = support.create(stub_a, seed=5)
        play(stub_a, game, 9, seed=1)  # version 10 ...
        with r.client() as c:
            c.save()  # ... is in the snapshot
        sdk = Client(a.address)
        sdk_watch = sdk.watch(game.game_id, after_version=10)
        seen_by_sdk: list[pb.GameUpdate] = []
        sdk_error: list[BaseException] = []

        def follow() -> None:
            try:
                for u in sdk_watch:
                    seen_by_sdk.append(u)
                    if sdk_watch.resyncs and u.version >= 24:
                        break
            except BaseException as e:
                sdk_error.append(e)

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        raw_watch = stub_a.WatchGame(epb.WatchGameRequest(game_id=game.game_id, after_version=10))
        lost = play(stub_a, game, 10, seed=2)  # versions 11..20: acknowledged, then lost
        assert lost.version == 20
        lost_updates = [next(raw_watch) for _ in range(10)]
        assert [u.version for u in lost_updates] == list(range(11, 21))
        lost_at = {u.version: u.commit_id for u in lost_updates}

        r.restart()  # back at version 10
        b_view = play(stub_b, game, 10, seed=3)  # versions 11..20 again, another history
        assert b_view.version == 20 and b_view.commit_id != lost.commit_id

        # Replica A serves the store's game, not the one it had cached.
        seen_a = stub_a.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT)
        assert (seen_a.version, seen_a.commit_id) == (20, b_view.commit_id)
        assert support.metric(a, "ascension_store_rollbacks_detected_total") == 1
        assert support.metric(b, "ascension_store_rollbacks_detected_total") == 0
        deadline = time.monotonic() + 10  # the log is read from the engine's output by a thread
        while "the store lost versions: versions 11-20 this replica saw" not in a.log():
            assert time.monotonic() < deadline, a.log()
            time.sleep(0.05)

        # A caller who decided on the lost version 20 is refused, naming it ...
        seat = seen_a.to_move
        mine = stub_a.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[seat]),
                              timeout=CALL_TIMEOUT)  # fmt: skip
        for stub in (stub_a, stub_b):  # (B never saw it: only a lower bound, said as such)
            err = support.rpc_error(stub.SubmitAction, epb.SubmitActionRequest(
                game_id=game.game_id, token=game.seat_tokens[seat], expected_version=20,
                expected_commit_id=lost.commit_id, action=mine.legal_actions[0].id))  # fmt: skip
            assert err.code() == grpc.StatusCode.DATA_LOSS, err
            assert "another action" not in err.details()
        assert "versions 11-15 of game" in support.rpc_error(stub_a.SubmitAction, epb.SubmitActionRequest(
            game_id=game.game_id, token=game.seat_tokens[seat], expected_version=15,
            action=mine.legal_actions[0].id, expected_commit_id=lost_at[15])).details()  # fmt: skip
        # ... so does the SDK (which names the commit id of the version it saw)
        with Client(a.address) as stale:
            stale._seen(game.game_id, 20, lost.commit_id)
            try:
                stale.submit(game.game_id, game.seat_tokens[seat], mine.legal_actions[0].id)
                raise AssertionError("a submit on a lost version was applied")
            except DataLossError as e:
                assert e.lost_versions == (11, 20), e.metadata
            assert stale.known_version(game.game_id) == 20  # (the store's version 20 now)

        async def stale_async() -> tuple[int, int] | None:
            async with AsyncClient(a.address) as c:
                c._seen(game.game_id, 20, lost.commit_id)
                try:
                    await c.submit(game.game_id, game.seat_tokens[seat], mine.legal_actions[0].id)
                except DataLossError as e:
                    return e.lost_versions
            return None

        assert asyncio.run(stale_async()) == (11, 20)
        # ... one who names the store's version 20 plays on it, through either replica.
        ok = stub_a.SubmitAction(epb.SubmitActionRequest(
            game_id=game.game_id, token=game.seat_tokens[seat], expected_version=20,
            expected_commit_id=b_view.commit_id, action=mine.legal_actions[0].id), timeout=CALL_TIMEOUT)  # fmt: skip
        assert ok.update.version == 21 and ok.update.parent_commit_id == b_view.commit_id

        # A watcher that had received the lost updates is told, with the versions.
        try:
            extra = next(raw_watch)
            raise AssertionError(f"the stream went on after a rollback: {extra.version}")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.DATA_LOSS, e
            assert "the store lost versions 11-20 of game" in e.details(), e.details()

        # The SDK's watch resynchronised and went on with the store's history.
        play(stub_b, game, 3, seed=4)
        follower.join(30)
        assert not sdk_error, sdk_error
        assert sdk_watch.resyncs and isinstance(sdk_watch.resyncs[0].error, DataLossError)
        resync = sdk_watch.resyncs[0]
        assert resync.from_version == 20 and 10 <= resync.to_version <= 24
        after = seen_by_sdk[10:]  # what came after the resync
        assert [u.version for u in after] == list(range(resync.to_version + 1, 25))
        assert all(b.parent_commit_id == a.commit_id for a, b in itertools.pairwise(after))
        sdk.close()

        assert replays_from_its_log(r, game.game_id, seed=5)
    finally:
        a.stop()
        b.stop()
        r.stop()
