"""The production Redis path: a primary, a replica and three Sentinels
(``REDIS_URL=redis+sentinel://...``, ``ENGINE_REDIS_WAIT_REPLICAS=1``), two engine replicas,
players and watchers; the primary is SIGKILLed in the middle of the games.

- Sentinel promotes the replica; the engines find it (each new connection asks the Sentinels)
  and the games go on: moves are acknowledged again within 30 s of the kill.
- No acknowledged move is lost, none is applied twice: each commit was confirmed by the
  replica (WAIT) before it was acknowledged; one the kill cut short is answered UNAVAILABLE
  and applied once by its retry (same idempotency key). Watchers see one history.

The killed server comes back as the new primary's replica, as a supervisor's start script
that asks the Sentinels brings it back (docs/operations.md, "Redis failover"): until a
replica is back, commits are refused (UNAVAILABLE) rather than acknowledged unconfirmed.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest

from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from tests.cluster.play import Follower, Player, check_history, check_watched
from tests.failover.sentinel import LocalSentinel, local_sentinel
from tests.service import support

WAIT_ENV = {"ENGINE_REDIS_WAIT_REPLICAS": "1", "ENGINE_REDIS_WAIT_TIMEOUT_MS": "500"}
GAMES = 4
BACK_WITHIN = 30.0  # seconds from the kill until every game has a move acknowledged again


class Alternating:
    """The engine stubs taken in turn, call after call: a client behind a load balancer."""

    def __init__(self, stubs: list[rpc.EngineStub], first: int = 0) -> None:
        self._next = itertools.islice(itertools.cycle(stubs), first, None)

    def __getattr__(self, method: str) -> Any:
        return getattr(next(self._next), method)


@pytest.fixture(scope="module")
def sentinel() -> Iterator[LocalSentinel]:
    with local_sentinel(replicas=1) as s:
        yield s


@pytest.fixture(scope="module")
def engines(sentinel: LocalSentinel) -> Iterator[list[support.Engine]]:
    started: list[support.Engine] = []
    try:
        for _ in range(2):
            started.append(support.start_engine(sentinel.url(), **WAIT_ENV))
        yield started
    finally:
        for e in started:
            e.stop()


def test_the_primary_killed_mid_game_loses_no_acknowledged_move(
    sentinel: LocalSentinel, engines: list[support.Engine]
) -> None:
    stubs = [e.stub() for e in engines]
    games = [support.create(stubs[i % 2], seed=40 + i) for i in range(GAMES)]
    players = [Player(Alternating(stubs, i), g, seed=i) for i, g in enumerate(games)]  # type: ignore[arg-type]
    followers = [Follower(stubs[(i + 1) % 2], g.game_id).start(timeout=240) for i, g in enumerate(games)]
    for p in players:
        p.play()
    for p in players:
        p.wait_for(10)
    old = sentinel.primary()
    sentinel.kill(old)
    killed = time.monotonic()
    at_kill = [len(p.acked) for p in players]
    new = sentinel.wait_failover(old)
    sentinel.restart(old, replica_of=new)
    # Back: every game has a move acknowledged that was sent after the kill (the second after
    # it: the first may have been in flight).
    deadline = killed + BACK_WITHIN + 30  # (past BACK_WITHIN the assertion below says by how much)
    while not all(len(p.acked) >= n + 2 or p.done.is_set() for p, n in zip(players, at_kill, strict=True)):
        assert time.monotonic() < deadline, ([len(p.acked) for p in players], at_kill, sentinel.describe())
        time.sleep(0.02)
    back = time.monotonic() - killed
    assert back <= BACK_WITHIN, f"moves acknowledged again {back:.1f} s after the kill"
    for p in players:
        assert p.done.wait(180), f"{p.game_id} did not end: {len(p.acked)} actions"
        assert p.error is None, (p.error, engines[0].log()[-3000:], engines[1].log()[-3000:])
        assert p.over
        check_history(stubs[0], p)
    assert sum(p.retries for p in players) >= 1  # (the games did see the outage)
    for f, p in zip(followers, players, strict=True):
        check_watched(f, p.acked)
    assert sentinel.primary() == new and sentinel.role(old) == "slave"
