"""The asyncio SDK against a real engine: the same guarantees as the sync client."""

from __future__ import annotations

import asyncio

import pytest

from clients.embedded import EmbeddedEngine
from clients.sdk import (
    AsyncClient,
    GameNotFoundError,
    IllegalActionError,
    RetryPolicy,
    VersionConflictError,
    human,
)
from clients.sdk.types import CreatedGame
from tests.clients.proxy import CuttableProxy


async def _main_phase(c: AsyncClient, seed: int) -> tuple[CreatedGame, str]:
    game = await c.create_game([human("A"), human("B")], seed=seed)
    token = game.token(game.view.to_move)
    view = await c.get_view(game.game_id, token)
    place = next(a for a in view.legal_actions if a.kind == "place_ship")
    await c.submit(game.game_id, token, place.id)
    return game, token


async def _advance(c: AsyncClient, game: CreatedGame, steps: int) -> None:
    for _ in range(steps):
        spec = await c.get_view(game.game_id)
        token = game.token(spec.to_move)
        view = await c.get_view(game.game_id, token)
        acts = [a for a in view.legal_actions if a.kind != "end_turn"] or list(view.legal_actions)
        await c.submit(game.game_id, token, acts[0].id)


def test_async_calls_and_errors(engine: EmbeddedEngine) -> None:
    async def main() -> None:
        async with AsyncClient(engine.address) as c:
            await c.wait_ready(5)
            game, token = await _main_phase(c, seed=31)
            listed = await c.legal_actions(game.game_id, token)
            assert listed.version == 2 and listed.actions
            cat = await c.catalog()
            assert cat.find("cultist") is not None
            with pytest.raises(GameNotFoundError):
                await c.get_view("0" * 22)
            other = game.token(1 - game.view.to_move)
            with pytest.raises(IllegalActionError, match="not your turn"):
                await c.submit(game.game_id, other, listed.actions[0].id)

    asyncio.run(main())


def test_async_race_retry(engine: EmbeddedEngine) -> None:
    async def main() -> None:
        async with AsyncClient(engine.address) as a, AsyncClient(engine.address) as b:
            game, token = await _main_phase(a, seed=32)
            view = await a.get_view(game.game_id, token)
            plays = [x for x in view.legal_actions if x.kind == "play"][:2]
            v = view.version
            r1, r2 = await asyncio.gather(
                a.submit(game.game_id, token, plays[0].id, expected_version=v),
                b.submit(game.game_id, token, plays[1].id, expected_version=v),
            )
            assert sorted([r1.update.version, r2.update.version]) == [v + 1, v + 2]
            with pytest.raises(VersionConflictError) as err:
                await a.submit(
                    game.game_id, token, plays[0].id, expected_version=v, retry_on_conflict=False
                )
            assert err.value.current_version == v + 2

    asyncio.run(main())


def test_async_watch_resumes(engine: EmbeddedEngine) -> None:
    host, port = engine.address.rsplit(":", 1)
    proxy = CuttableProxy(host, int(port))
    fast = RetryPolicy(reconnects=20, backoff_s=0.05, max_backoff_s=0.2)

    async def main() -> None:
        async with (
            AsyncClient(engine.address) as direct,
            AsyncClient(proxy.address, retry=fast) as via,
        ):
            game = await direct.create_game([human(), human()], seed=33)
            await _advance(direct, game, 3)
            watch = via.watch(game.game_id, after_version=1)
            seen = [(await watch.__anext__()).version for _ in range(3)]
            proxy.cut()
            await _advance(direct, game, 3)
            seen += [(await asyncio.wait_for(watch.__anext__(), 20)).version for _ in range(3)]
            watch.cancel()
            assert seen == [2, 3, 4, 5, 6, 7]
            assert watch.reconnects >= 1 and watch.last_version == 7
            # A new watch from a version sends exactly what came after it.
            async with via.watch(game.game_id, after_version=5) as again:
                got = [(await again.__anext__()).version for _ in range(2)]
            assert got == [6, 7]

    try:
        asyncio.run(main())
    finally:
        proxy.close()


def test_async_table_of_every_seat(engine: EmbeddedEngine) -> None:
    async def main() -> set[int]:
        async with AsyncClient(engine.address, timeout=10.0) as c:
            game = await c.create_game([human("A"), human("B")], seed=32)
            view = await c.get_view(game.game_id, game.token(game.view.to_move))
            seen = set()
            for _ in range(40):
                assert view.seat == view.to_move and view.legal_actions
                seen.add(view.seat)
                acts = [a for a in view.legal_actions if a.kind != "end_turn"] or list(view.legal_actions)
                resp = await c.submit(game.game_id, game.token(view.seat), acts[-1].id, seat_tokens=game.seat_tokens)
                view = resp.view
            return seen

    assert asyncio.run(main()) == {0, 1}


def test_async_wait_turn(engine: EmbeddedEngine) -> None:
    """The other seat's wait ends when the move passes to it, not before; a wait that does not
    end in time raises TimeoutError; a spectator cannot wait for a turn."""

    async def main() -> None:
        async with AsyncClient(engine.address) as c:
            game, token_a = await _main_phase(c, seed=45)
            b = 1 - game.view.to_move
            waiter = asyncio.create_task(c.wait_turn(game.game_id, game.token(b)))
            await asyncio.sleep(0.5)
            assert not waiter.done(), "seat b's move came while seat a was in its turn"
            mine = await c.wait_turn(game.game_id, token_a)
            end = next(x for x in mine.legal_actions if x.kind == "end_turn")
            done = await c.submit(game.game_id, token_a, end.id, expected_version=mine.version)
            view = await asyncio.wait_for(waiter, 10)
            assert view.seat == view.to_move == b and view.legal_actions
            assert view.version >= done.view.version
            with pytest.raises(TimeoutError):
                await c.wait_turn(game.game_id, token_a, timeout=0.5)
            with pytest.raises(ValueError, match="spectator"):
                await c.wait_turn(game.game_id, "")

    asyncio.run(main())
