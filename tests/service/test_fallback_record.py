"""AI seats' fallback moves are stored with the game, in the same write as the move, and shown
in every replica's view and in the replay (engine_service/server/fallbacks.py).

Two engine replicas (the engine's own ``Games``, each with its cache) on one real Redis
(a redis-server on a free port), moves submitted through either as the workers do: with a
credential minted for the move and, for a fallback move, its reason.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server import fallbacks
from engine_service.server.dispatch import NoDispatcher
from engine_service.server.errors import Code, ServiceError
from engine_service.server.games import Games
from engine_service.server.metrics import Metrics
from engine_service.server.tokens import AiCredentials
from engine_service.store import CachingStore, StoreSettings
from engine_service.store.redis_store import RedisStore
from tests.service import support

RAISED = "bot_raised: ValueError"


def test_the_record_rides_behind_the_state_and_the_rules_still_read_it() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=4))
    state = rules.serialize(s)
    assert fallbacks.join(state, {}) == state and fallbacks.split(state) == (state, {})
    record = fallbacks.add(fallbacks.add({}, 1, 7, "deadline: no answer"), 1, 9, "x" * 500)
    assert record == {1: fallbacks.SeatFallbacks(2, 9, "x" * fallbacks.MAX_REASON)}
    stored = fallbacks.join(state, record)
    assert fallbacks.split(stored) == (state, record)
    assert rules.deserialize(stored) == s  # a reader that knows nothing of the record
    with pytest.raises(fallbacks.DamagedRecord):
        fallbacks.split(state + b"[[1,2" + (5).to_bytes(2, "big") + fallbacks.MARK)
    with pytest.raises(fallbacks.DamagedRecord):
        fallbacks.split(b"{}" + (999).to_bytes(2, "big") + fallbacks.MARK)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with support.redis_server() as url:
        yield url


def replicas(redis_url: str, n: int = 2) -> list[Games]:
    credentials = AiCredentials.generate()  # one key for all replicas, as deployed
    out = []
    for _ in range(n):
        store = CachingStore(RedisStore(redis_url, StoreSettings(), timeout=2.0), lambda *_: None)
        out.append(Games(store, NoDispatcher(), Metrics(CollectorRegistry()), "local",
                         ai_credentials=credentials))  # fmt: skip
    return out


def ai_seat(bot: str) -> epb.SeatConfig:
    return epb.SeatConfig(kind=pb.SeatInfo.AI, name=bot, bot=epb.BotSettings(name=bot, time_ms=100))


async def move(games: Games, game_id: str, reason: str, rng: random.Random) -> pb.GameView:
    """The seat to move plays a quick-ending legal action as a worker would (``reason``: this
    is a fallback move)."""
    view = await games.view(game_id, "")
    token = games.ai_credentials.mint(game_id, view.to_move, view.version)
    mine = await games.view(game_id, token)
    req = epb.SubmitActionRequest(
        game_id=game_id, token=token, expected_version=view.version,
        action=support.pick(mine, rng), idempotency_key=f"ai:{game_id}:{view.version}",
        fallback_reason=reason,
    )  # fmt: skip
    await games.submit(req)
    again = await games.submit(req)  # a retried submit: replayed, never counted twice
    assert again.replayed
    return await games.view(game_id, "")


def seat(view: pb.GameView, i: int) -> pb.SeatInfo:
    return next(s for s in view.seat_info if s.seat == i)


def test_fallbacks_are_counted_with_the_game_across_replicas(redis_url: str) -> None:
    async def body() -> None:
        a, b = replicas(redis_url)
        game = await a.create(epb.CreateGameRequest(sets="ss", seats=[ai_seat("greedy-honor"),
                              ai_seat("heuristic")], seed=3))  # fmt: skip
        rng = random.Random(1)
        counted, last_version = 0, 0
        for i in range(5000):
            view = await (a, b)[i % 2].view(game.game_id, "")
            if view.over:
                break
            reason = RAISED if view.to_move == 0 and i % 3 else ""
            await move((a, b)[i % 2], game.game_id, reason, rng)
            if reason:
                counted, last_version = counted + 1, view.version + 1
            if i == 20:  # each replica's view, its cache warm or not, says the same
                for games in (a, b):
                    v = await games.view(game.game_id, game.seat_tokens[1])
                    assert seat(v, 0).fallback_moves == counted > 0
                    assert seat(v, 1).fallback_moves == 0 and not seat(v, 1).last_fallback_reason
        view = await b.view(game.game_id, "")
        assert view.over
        mine = seat(view, 0)
        assert (mine.fallback_moves, mine.last_fallback_reason, mine.last_fallback_version) == (
            counted, RAISED, last_version
        )
        replay = await a.replay(game.game_id)
        assert replay.seats[0].fallback_moves == counted and replay.seats[1].fallback_moves == 0
        # the state the store holds still replays: the record is not part of the game
        s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=replay.seed))
        for step in replay.steps:
            rules.apply(s, step.action)
        assert rules.scores(s) == [x.total for x in replay.scores]

    asyncio.run(body())


def test_only_an_ai_seat_reports_a_fallback_and_within_bounds(redis_url: str) -> None:
    async def body() -> None:
        (games,) = replicas(redis_url, 1)
        human = epb.SeatConfig(kind=pb.SeatInfo.HUMAN, name="me")
        game = await games.create(epb.CreateGameRequest(sets="ss", seats=[human, human]))
        view = await games.view(game.game_id, "")
        token = game.seat_tokens[view.to_move]
        legal = await games.legal_actions(game.game_id, token)

        async def refused(reason: str) -> ServiceError:
            req = epb.SubmitActionRequest(game_id=game.game_id, token=token,
                                          expected_version=view.version,
                                          action=legal.actions[0].id, fallback_reason=reason)  # fmt: skip
            with pytest.raises(ServiceError) as e:
                await games.submit(req)
            return e.value

        e = await refused("deadline")
        assert e.code is Code.INVALID_ARGUMENT and "not an AI seat" in str(e)
        for bad in ("x" * (fallbacks.MAX_REASON + 1), "two\nlines", "\x1b[2Jwiped"):
            e = await refused(bad)
            assert e.code is Code.INVALID_ARGUMENT and "fallback_reason" in str(e)
        assert (await games.view(game.game_id, "")).version == view.version  # nothing applied

    asyncio.run(body())
