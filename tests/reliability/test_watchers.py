"""Many watchers on one replica: they share its store readers (the number of watchers does not
set the number of Redis connections), every one gets every update, the other calls go on, and
the stream limits answer RESOURCE_EXHAUSTED naming the limit."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc  # type: ignore[import-untyped]
import redis

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from tests.service import support

WATCHERS = 1500  # more than gRPC lets wait to be started by default (1,000): none may be cancelled
GAMES = 6


def engine_connections(redis_url: str) -> int:
    with redis.Redis.from_url(redis_url) as r:
        return sum(1 for c in r.client_list() if c.get("cmd") != "client|list")


def test_a_crowd_of_watchers_shares_the_replica_store_access(redis_url: str) -> None:
    e = support.start_engine(redis_url, ENGINE_WATCH_MAX_STREAMS_PER_PEER="5000")
    try:
        stub = e.stub()
        games = [support.create(stub, seed=80 + i) for i in range(GAMES)]
        before = engine_connections(redis_url)

        async def main() -> tuple[list[list[int]], int, int]:
            async with grpc.aio.insecure_channel(e.address) as ch:
                astub: Any = rpc.EngineStub(ch)  # the aio stub (typed as the sync one)
                got: list[list[int]] = [[] for _ in range(WATCHERS)]
                opened = asyncio.Event()
                count = [0]

                async def watch(i: int) -> None:
                    call = astub.WatchGame(epb.WatchGameRequest(game_id=games[i % GAMES].game_id))
                    async for u in call:
                        got[i].append(u.version)
                        if u.version == 1:
                            count[0] += 1
                            if count[0] == WATCHERS:
                                opened.set()
                        if u.version >= 6:
                            return

                tasks = [asyncio.ensure_future(watch(i)) for i in range(WATCHERS)]
                await asyncio.wait_for(opened.wait(), 60)
                during = engine_connections(redis_url)
                # other calls go on, from this replica, while every watcher is open
                created = await astub.CreateGame(epb.CreateGameRequest(seats=support.human_seats(2)), timeout=10)
                listed = await astub.ListGames(epb.ListGamesRequest(page_size=10), timeout=10)
                assert created.game_id and listed.games
                for g in games:  # five moves in each game, through the same replica
                    await asyncio.to_thread(support.play_to_end, stub, g, 1, 5)
                await asyncio.wait_for(asyncio.gather(*tasks), 60)
                return got, during, before

        got, during, before = asyncio.run(main())
        assert all(v == [1, 2, 3, 4, 5, 6] for v in got), got[:3]
        # one reader per group of watched games (at most GAMES), not one per watcher
        assert during - before <= GAMES + 2 * 8 + 2, (before, during)  # readers + joining + calls
    finally:
        e.stop()


def test_stream_limits_name_the_limit(redis_url: str) -> None:
    e = support.start_engine(redis_url, ENGINE_WATCH_MAX_STREAMS_PER_PEER="5", ENGINE_WATCH_MAX_STREAMS="8")
    try:
        game = support.create(e.stub())

        async def main() -> list[str]:
            async with grpc.aio.insecure_channel(e.address) as ch:
                astub: Any = rpc.EngineStub(ch)  # the aio stub (typed as the sync one)
                calls = [astub.WatchGame(epb.WatchGameRequest(game_id=game.game_id)) for _ in range(6)]
                firsts = await asyncio.gather(*(c.read() for c in calls), return_exceptions=True)
                refused = [f for f in firsts if isinstance(f, grpc.aio.AioRpcError)]
                assert len(refused) == 1 and refused[0].code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                details = [refused[0].details() or ""]
                for c in calls:
                    c.cancel()
                await asyncio.sleep(0.5)  # the cancelled streams are counted out
                again = astub.WatchGame(epb.WatchGameRequest(game_id=game.game_id))
                assert (await again.read()).version == 1  # a freed slot is usable again
                again.cancel()
                return details

        details = asyncio.run(main())
        assert "ENGINE_WATCH_MAX_STREAMS_PER_PEER=5" in details[0]
        assert support.metric(e, 'ascension_watch_refused_total{limit="per_peer"}') == 1
    finally:
        e.stop()


def test_a_callers_claim_of_unseen_versions_is_not_counted_as_a_rollback(redis_url: str) -> None:
    """Anyone may claim to have seen versions the store never held: the answer is DATA_LOSS
    (so an honest client resynchronises), but only what a replica read itself is counted."""
    e = support.start_engine(redis_url)
    try:
        stub = e.stub()
        game = support.create(stub)
        for req in (
            epb.WatchGameRequest(game_id=game.game_id, after_version=50),
            epb.WatchGameRequest(game_id=game.game_id, after_version=1, after_commit_id="0" * 16),
        ):
            err = support.rpc_error(lambda r, **kw: list(stub.WatchGame(r, **kw)), req)
            assert err.code() == grpc.StatusCode.DATA_LOSS
        assert support.metric(e, "ascension_store_rollbacks_detected_total") == 0
        assert "store lost versions" not in e.log()
    finally:
        e.stop()
