"""Many watchers on one replica: they share its store readers (the number of watchers does not
set the number of Redis connections), every one gets every update, the other calls go on, and
the stream limits answer RESOURCE_EXHAUSTED naming the limit."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc  # type: ignore[import-untyped]
import redis
from prometheus_client import CollectorRegistry

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server.dispatch import NoDispatcher
from engine_service.server.games import Games
from engine_service.server.metrics import Metrics
from engine_service.server.watch import WatchHub
from engine_service.store import StoreSettings
from engine_service.store.redis_store import RedisStore
from engine_service.store.wrapper import StoreWrapper
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


class _MovesAfterRead(StoreWrapper):
    """Commits a move of ``game`` right after the next read of its updates returns, and lets
    the group's reader see its news first: the move lands between a joining watcher's read and
    its join, passed over by the reader."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.game: epb.CreateGameResponse | None = None
        self.games: Any = None

    async def read_updates(self, cursors: Any, block_ms: int, position: Any = None) -> Any:
        out = await self.inner.read_updates(cursors, block_ms, position)
        g, self.game = self.game, None
        if g is not None and g.game_id in cursors:
            await move(self.games, g)
            await asyncio.sleep(0.3)
        return out


async def move(games: Games, g: epb.CreateGameResponse) -> None:
    view = await games.view(g.game_id, "")
    token = g.seat_tokens[view.to_move]
    legal = await games.legal_actions(g.game_id, token)
    req = epb.SubmitActionRequest(game_id=g.game_id, token=token, action=legal.actions[0].id,
                                  expected_version=view.version)  # fmt: skip
    await games.submit(req)


def test_a_new_watcher_is_served_at_once_while_its_reader_waits_long() -> None:
    """A group's reader waits for news for long (here a minute: idle readers cost nothing),
    yet a watcher joining a game new to it gets that game's moves at once: the move committed
    between its own read and its join (read again once it has joined), and the moves after
    (the reader looks the game up as news comes), each once."""
    with support.redis_server() as url:

        async def run() -> None:
            store = _MovesAfterRead(RedisStore(url, StoreSettings(), timeout=2.0))
            metrics = Metrics(CollectorRegistry())
            games = Games(store, NoDispatcher(), metrics, "local", WatchHub(store, metrics, block_ms=60_000))
            store.games = games
            seats = support.human_seats(2)
            by_group: dict[int, epb.CreateGameResponse] = {}
            while True:  # two games one reader serves
                g = await games.create(epb.CreateGameRequest(seats=seats))
                if (other := by_group.setdefault(store.group_of(g.game_id), g)) is not g:
                    a, b = other, g
                    break

            def watched(g: epb.CreateGameResponse) -> asyncio.Queue[int]:
                got: asyncio.Queue[int] = asyncio.Queue()

                async def follow() -> None:
                    async for raw in games.watch(g.game_id, 0, "", "ipv4:127.0.0.1:1", lambda: True):
                        got.put_nowait(pb.GameUpdate.FromString(raw).version)

                tasks.append(asyncio.ensure_future(follow()))
                return got

            async def next_of(q: asyncio.Queue[int]) -> int:
                return await asyncio.wait_for(q.get(), 2)

            tasks: list[asyncio.Future[None]] = []
            wa = watched(a)
            assert await next_of(wa) == 1
            await asyncio.sleep(0.3)  # a's feed is its group's, whose reader now waits for news
            store.game = b
            wb = watched(b)  # b's first read is followed by a move the reader passes over
            assert [await next_of(wb), await next_of(wb)] == [1, 2]
            await move(games, b)
            assert await next_of(wb) == 3
            await move(games, a)
            assert await next_of(wa) == 2
            await move(games, b)
            assert await next_of(wb) == 4
            await asyncio.sleep(0.3)
            assert wa.empty() and wb.empty()  # each once
            for t in tasks:
                t.cancel()
            await games.hub.stop()
            await store.close()

        asyncio.run(run())
