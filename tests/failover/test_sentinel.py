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
from pathlib import Path
from typing import Any

import pytest

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from tests.ai.test_celery_integration import ai, metrics, start_worker, wait_over
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


def test_ai_moves_go_through_the_sentinels_broker_across_a_failover(
    sentinel: LocalSentinel, tmp_path: Path
) -> None:
    """The Celery broker is the same Sentinel-managed primary (CELERY_BROKER_URL unset: the
    engine's REDIS_URL; the worker's CELERY_BROKER_URL the same redis+sentinel:// URL): AI moves
    are sent and played through it; `ascension-worker check` pings the worker through it; its
    primary killed mid-game, engine and worker find the new one and the game ends, every move
    a worker's (a move message the old primary took with it is sent again by the sweeper; the
    engine plays no move itself: ENGINE_AI_MAX_DISPATCHES=0)."""
    e = support.start_engine(sentinel.url(), ENGINE_AI_DISPATCH="celery", ENGINE_AI_SWEEP_SECONDS="1",
                             ENGINE_AI_STALL_SECONDS="3", ENGINE_AI_MAX_DISPATCHES="0", **WAIT_ENV)  # fmt: skip
    w = start_worker(sentinel.url(), str(support.ROOT), tmp_path, "sentinel")
    try:
        stub = e.stub()
        game = stub.CreateGame(epb.CreateGameRequest(sets="ss", seed=9, seats=[
            ai("heuristic", seed=1), ai("heuristic", seed=2)]), timeout=support.CALL_TIMEOUT)  # fmt: skip
        checked = w.check(timeout=10)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "redis+sentinel://" in checked.stdout  # (the broker it names, no password)

        def version() -> int:
            return int(stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=30).version)

        deadline = time.monotonic() + 120
        while version() < 20:
            assert time.monotonic() < deadline, (version(), w.log()[-3000:])
            time.sleep(0.1)
        old = sentinel.primary()
        sentinel.kill(old)
        sentinel.restart(old, replica_of=sentinel.wait_failover(old))
        try:
            final = wait_over(e, game.game_id, 180)
        except AssertionError as stuck:
            raise AssertionError(f"{stuck}\nengine:\n{e.log()[-4000:]}\nworker:\n{w.log()[-6000:]}") from None
        assert final.over  # (every move a worker's: the engine plays none, see above)
        assert "Unrecoverable error" not in w.log()  # (ai_workers/broker.py)
        m = metrics(w.metrics_port)
        assert sum(v for k, v in m.items() if k.startswith("ascension_worker_moves_total{")) > 20
    finally:
        w.stop()
        e.stop()
