"""Watchers get every version, in order, once, even when the store's window no longer holds
them: the history is rebuilt from the game's replay log (server/history.py), and only a log
that does not replay to the stored state leaves a watcher with OUT_OF_RANGE.

The engine's own Games, WatchHub and in-process store, in one event loop (no server): the
window and the watcher's queue are set small, so that a late spectator and a slow stream are
the common case rather than a race.
"""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server.dispatch import NoDispatcher
from engine_service.server.errors import Code, ServiceError
from engine_service.server.games import Games
from engine_service.server.metrics import Metrics
from engine_service.server.watch import WatchHub, WatchLimits
from engine_service.store import StoreSettings
from engine_service.store.memory import MemoryStore

WINDOW = 4


def setup(queue: int = 64, rebuilds_per_minute: int = 0) -> tuple[Games, MemoryStore]:
    store = MemoryStore(StoreSettings(window=WINDOW))
    metrics = Metrics(CollectorRegistry())
    limits = WatchLimits(queue=queue, rebuilds_per_minute=rebuilds_per_minute)
    hub = WatchHub(store, metrics, limits, block_ms=50)
    return Games(store, NoDispatcher(), metrics, "local", hub), store


async def create(games: Games, players: int = 3, seed: int = 5) -> epb.CreateGameResponse:
    seats = [epb.SeatConfig(kind=pb.SeatInfo.HUMAN, name=f"P{i}") for i in range(players)]
    return await games.create(epb.CreateGameRequest(sets="both", seats=seats, seed=seed))


async def play(
    games: Games, game: epb.CreateGameResponse, moves: int, rng: random.Random
) -> list[pb.GameUpdate]:
    """Up to ``moves`` random legal moves (whoever is to move); their updates."""
    out: list[pb.GameUpdate] = []
    for _ in range(moves):
        view = await games.view(game.game_id, "")
        if view.over:
            break
        token = game.seat_tokens[view.to_move]
        legal = await games.legal_actions(game.game_id, token)
        resp = await games.submit(
            epb.SubmitActionRequest(
                game_id=game.game_id,
                token=token,
                action=rng.choice(list(legal.actions)).id,
                expected_version=view.version,
            )
        )
        out.append(resp.update)
    return out


def untimed(raw: bytes | pb.GameUpdate) -> pb.GameUpdate:
    u = (
        pb.GameUpdate.FromString(raw)
        if isinstance(raw, bytes)
        else pb.GameUpdate.FromString(raw.SerializeToString())
    )
    u.time_unix_ms = 0
    u.commit_id = u.parent_commit_id = ""
    return u


async def collect(it: AsyncIterator[bytes]) -> list[pb.GameUpdate]:
    return [pb.GameUpdate.FromString(b) async for b in it]


def watch(
    games: Games,
    game_id: str,
    after: int = 0,
    after_commit_id: str = "",
    peer: str = "ipv4:127.0.0.1:1",
) -> AsyncIterator[bytes]:
    return games.watch(game_id, after, after_commit_id, peer, lambda: True)


def test_a_late_spectator_gets_the_whole_game_as_it_was_sent() -> None:
    async def run() -> None:
        games, store = setup()
        game = await create(games)
        live = watch(games, game.game_id)  # from the start, as it is played
        first = pb.GameUpdate.FromString(await anext(live))
        sent = await play(games, game, 10_000, random.Random(3))
        assert sent[-1].over and len(sent) > 50
        rest = await collect(live)
        seen = [first, *rest]
        assert [u.version for u in seen] == list(range(1, len(sent) + 2))
        # The window holds the last WINDOW updates only: a spectator from version 0 now gets
        # versions rebuilt from the log, the same as those sent live but for time and commit ids.
        assert len(store._games[game.game_id].updates) <= WINDOW
        late = await collect(watch(games, game.game_id))
        assert [untimed(u) for u in late] == [untimed(u) for u in seen]
        # ... and equal to the updates the submits answered with (never rebuilt themselves).
        assert [untimed(u) for u in late[1:]] == [untimed(u) for u in sent]
        assert late[-1].over and late[-1].commit_id == sent[-1].commit_id != ""
        # ... with the commit ids they were sent with: each names its history (the parent's
        # id and the action), so the log gives them again.
        ids = [(u.commit_id, u.parent_commit_id) for u in late]
        assert ids == [(u.commit_id, u.parent_commit_id) for u in seen]
        assert all(c and (p or u.version == 1) for (c, p), u in zip(ids, late, strict=True))
        # ... from any version, with the parent check of the last one a caller holds.
        rebuilt = games.metrics.watch_rebuilt._value.get()
        tail = await collect(watch(games, game.game_id, 40))
        assert [u.version for u in tail] == list(range(41, len(seen) + 1))
        assert games.metrics.watch_rebuilt._value.get() - rebuilt == len(tail)  # counted

    asyncio.run(run())


def test_a_slow_stream_catches_up_without_losing_a_version() -> None:
    async def run() -> None:
        games, _ = setup(queue=2)  # a stream may fall 2 updates behind its feed
        game = await create(games, players=2, seed=9)
        rng = random.Random(4)
        stream = watch(games, game.game_id)
        got = [pb.GameUpdate.FromString(await anext(stream))]
        # The stream has joined the feed; now the game runs far ahead of it, again and again.
        over = False
        while not over:
            sent = await play(games, game, 25, rng)
            over = not sent or sent[-1].over
            await asyncio.sleep(0.05)  # the feed's reader delivers (and overflows the queue)
            for _ in range(len(sent) // 2):  # the stream reads only half of what was sent
                got.append(pb.GameUpdate.FromString(await anext(stream)))
        got += await collect(stream)
        assert games.metrics.watch_rebuilt._value.get() > 0, "the stream fell behind"
        assert [u.version for u in got] == list(range(1, got[-1].version + 1))
        view = await games.view(game.game_id, "")
        assert view.over and got[-1].version == view.version

    asyncio.run(run())


def test_a_log_that_does_not_replay_is_out_of_range() -> None:
    async def run() -> None:
        games, store = setup()
        game = await create(games)
        await play(games, game, 30, random.Random(1))
        # The stored state no longer is what the log replays to (as after a catalog change).
        g = store._games[game.game_id]
        s = rules.deserialize(g.state)
        s.pool += 1
        g.state = rules.serialize(s)
        with pytest.raises(ServiceError) as e:
            await collect(watch(games, game.game_id))
        assert e.value.code is Code.OUT_OF_RANGE and e.value.reason == "HISTORY_TRIMMED"
        # What the window holds is still served.
        tail = await collect_some(watch(games, game.game_id, 31 - WINDOW + 1), WINDOW - 1)
        assert [u.version for u in tail] == list(range(31 - WINDOW + 2, 32))

    asyncio.run(run())


def test_a_history_is_rebuilt_at_every_version() -> None:
    """Whatever version the game is at, a watcher beyond the window gets the history rebuilt:
    the replay ends on the stored state (once, states whose bytes changed on a round trip,
    about 1 in 100, were taken for a log that does not replay: OUT_OF_RANGE), what every seat
    knows of the hands (``hand_known``) included."""

    async def run() -> None:
        games, _ = setup()
        game = await create(games, players=2, seed=0)
        rng = random.Random(0)
        version, known = 1, 0
        while True:
            sent = await play(games, game, 1, rng)
            if not sent:
                break
            version = sent[0].version
            after = max(0, version - WINDOW - 2)
            rebuilt = await games.hub.history.since(game.game_id, after)
            assert rebuilt is not None, f"no history rebuilt at version {version}"
            assert [u.version for u in rebuilt] == list(range(after + 1, version + 1))
            seats = (await games.view(game.game_id, "")).board.seats
            known += any(s.hand_known for s in seats)
        assert version > 100 and known > 0

    asyncio.run(run())


def test_rebuilt_histories_are_rate_limited_per_peer() -> None:
    async def run() -> None:
        games, _ = setup(rebuilds_per_minute=2)
        game = await create(games)
        await play(games, game, 20, random.Random(2))
        for _ in range(2):
            assert len(await collect_some(watch(games, game.game_id), 21)) == 21
        with pytest.raises(ServiceError) as e:
            await collect_some(watch(games, game.game_id), 21)
        assert (
            e.value.code is Code.RESOURCE_EXHAUSTED
            and "ENGINE_WATCH_REBUILDS_PER_MINUTE" in str(e.value)
        )
        # Another peer has its own count; what the window holds needs no rebuild.
        assert len(await collect_some(watch(games, game.game_id, peer="ipv4:10.0.0.2:9"), 21)) == 21
        assert len(await collect_some(watch(games, game.game_id, 20), 1)) == 1

    asyncio.run(run())


async def collect_some(it: AsyncIterator[bytes], n: int) -> list[pb.GameUpdate]:
    out = []
    async for b in it:
        out.append(pb.GameUpdate.FromString(b))
        if len(out) == n:
            break
    return out


def test_a_history_the_store_lost_is_data_loss_however_far_behind_the_window() -> None:
    """A store rollback (a snapshot restored) played on differently, further than the window
    reaches: a watcher resuming after a lost version gets DATA_LOSS, not the other history
    rebuilt from the log; one that has the store's history goes on. Replaying the same actions
    gives the same commit ids: a watcher of that history has lost nothing."""

    async def run() -> None:
        games, store = setup()
        game = await create(games, players=2, seed=11)
        gid = game.game_id
        await play(games, game, 10, random.Random(1))  # versions 2..11
        snapshot = copy.deepcopy(store._games[gid])
        lost = await play(games, game, 10, random.Random(2))  # 12..21, then lost
        store._games[gid] = copy.deepcopy(snapshot)
        same = await play(games, game, 10, random.Random(2))  # the same actions again
        assert [u.commit_id for u in same] == [u.commit_id for u in lost]
        store._games[gid] = snapshot
        other = await play(games, game, 15, random.Random(3))  # 12..26: another history
        assert other[-1].version == 26 and other[-1].version - lost[-1].version > WINDOW
        assert other[9].commit_id != lost[-1].commit_id
        with pytest.raises(ServiceError) as e:
            await collect_some(watch(games, gid, 21, lost[-1].commit_id), 1)
        assert e.value.code is Code.DATA_LOSS and e.value.metadata["current_version"] == "26"
        # From the middle of the lost history alike.
        for u in (lost[3], lost[-2]):
            with pytest.raises(ServiceError) as e:
                await collect_some(watch(games, gid, u.version, u.commit_id), 1)
            assert e.value.code is Code.DATA_LOSS
        # The store's own history at version 21 goes on, rebuilt, with its commit ids.
        tail = await collect_some(watch(games, gid, 21, other[9].commit_id), 5)
        assert [(u.version, u.commit_id, u.parent_commit_id) for u in tail] == [
            (u.version, u.commit_id, u.parent_commit_id) for u in other[10:]
        ]

    asyncio.run(run())


def _damage(store: MemoryStore, game_id: str, index: int) -> int:
    """Overwrite the bytes of one update in the game's window (its entry stays whole): with
    bytes that do not parse, or (odd versions) that parse as another version's update; its
    version."""
    import dataclasses

    updates = store._games[game_id].updates
    u, key = updates[index]
    bad = b"\xff\xff\xff" if u.version % 2 == 0 else pb.GameUpdate(version=1).SerializeToString()
    updates[index] = (dataclasses.replace(u, update=bad), key)
    return u.version


def test_damaged_updates_reach_watchers_rebuilt_not_as_bytes_they_cannot_read() -> None:
    """An update whose stored bytes do not parse is read as a gap: a following stream and a
    late one get that version rebuilt from the log, never the bytes (a client's stream failed
    on them, and again on every reconnect)."""

    async def run() -> None:
        games, store = setup()
        game = await create(games, players=2, seed=13)
        rng = random.Random(13)
        live = watch(games, game.game_id)
        got = [pb.GameUpdate.FromString(await anext(live))]
        sent: list[pb.GameUpdate] = []
        damaged = []
        for _ in range(40):
            moved = await play(games, game, 1, rng)
            if not moved:
                break
            sent += moved
            if moved[0].version % 3 == 0:  # before the feed's reader has read it
                damaged.append(_damage(store, game.game_id, -1))
            got.append(pb.GameUpdate.FromString(await anext(live)))
        assert damaged and games.metrics.watch_rebuilt._value.get() >= len(damaged)
        assert [u.version for u in got] == list(range(1, len(sent) + 2))
        assert [untimed(u) for u in got[1:]] == [untimed(u) for u in sent]
        # A late stream, from the first version the window holds, one in its middle damaged
        # and its top too: every version, readable.
        first = store._games[game.game_id].updates[0][0].version
        _damage(store, game.game_id, 1)
        _damage(store, game.game_id, -1)
        stream = watch(games, game.game_id, first - 1)  # (the game goes on: no end)
        late = [pb.GameUpdate.FromString(await anext(stream)) for _ in range(first, len(sent) + 2)]
        assert [u.version for u in late] == list(range(first, len(sent) + 2))
        assert [untimed(u) for u in late] == [untimed(u) for u in sent[first - 2 :]]

    asyncio.run(run())
