"""A primary and its replica swap roles behind one fixed address, as a managed service's
primary endpoint (or a DNS name) does in a failover: the connections made before the switch
still reach the old primary, now a replica, which answers every write ``READONLY``.

The switch is Redis's own coordinated ``FAILOVER`` (writes paused until the replica has
caught up, then the roles swapped), and the address a proxy that sends new connections to
the new primary (proxy.py). The engine (``ENGINE_REDIS_WAIT_REPLICAS=1``) meets READONLY on
its old connections, drops them all and sends the call again on a fresh one: the games go on,
nobody is told UNAVAILABLE for long, nothing acknowledged is lost or doubled, and no read from
the old primary makes the engine believe the store went back in time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.cluster.play import Follower, Player, check_history, check_watched
from tests.failover.proxy import Endpoint
from tests.failover.sentinel import Server, free_ports
from tests.service import support

WAIT_ENV = {"ENGINE_REDIS_WAIT_REPLICAS": "1", "ENGINE_REDIS_WAIT_TIMEOUT_MS": "500"}


def role(server: Server) -> str:
    with server.client() as c:
        return str(c.execute_command("ROLE")[0], "ascii")


def wait_until(what: str, ok: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if ok():  # type: ignore[operator]
                return
        except redis.RedisError:
            pass
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Server, Server]]:
    a, b = free_ports(2)
    primary = Server(tmp_path / "a", a)
    replica = Server(tmp_path / "b", b, "--replicaof", "127.0.0.1", str(a))
    try:
        primary.start()
        replica.start()
        wait_until("the replica did not sync",
                   lambda: replica.client().info("replication")["master_link_status"] == "up")
        yield primary, replica
    finally:
        replica.stop()
        primary.stop()


@pytest.mark.parametrize("client", ["hand", "redis-py"])
def test_a_primary_switch_behind_one_address_is_followed(
    pair: tuple[Server, Server], client: str
) -> None:
    old, new = pair
    endpoint = Endpoint(old.port)
    e = support.start_engine(endpoint.url, ENGINE_REDIS_CLIENT=client, **WAIT_ENV)
    try:
        stub = e.stub()
        games = [support.create(stub, seed=60 + i) for i in range(3)]
        players = [Player(stub, g, seed=i) for i, g in enumerate(games)]
        followers = [Follower(stub, g.game_id).start(timeout=240) for g in games]
        for p in players:
            p.play()
        for p in players:
            p.wait_for(10)
        with old.client() as c:
            c.execute_command("FAILOVER", "TO", "127.0.0.1", new.port, "TIMEOUT", 20000)
        wait_until("the roles did not swap", lambda: role(new) == "master" and role(old) == "slave")
        endpoint.point_at(new.port)
        switched = time.monotonic()
        at_switch = [len(p.acked) for p in players]
        wait_until("no move acknowledged again within 30 s of the switch", lambda: all(
            len(p.acked) >= n + 2 or p.done.is_set() for p, n in zip(players, at_switch, strict=True)),
            timeout=30)  # fmt: skip
        back = time.monotonic() - switched
        for p in players:
            assert p.done.wait(180), f"{p.game_id} did not end: {len(p.acked)} actions"
            assert p.error is None, (p.error, e.log()[-3000:])
            assert p.over
            check_history(stub, p)
        assert all(len(p.acked) > n for p, n in zip(players, at_switch, strict=True)), back
        for f, p in zip(followers, players, strict=True):
            check_watched(f, p.acked)
        with old.client() as c:  # the engine did meet the old primary's refusals
            assert int(c.info("errorstats").get("errorstat_READONLY", {}).get("count", 0)) >= 1
        assert support.metric(e, "ascension_store_rollbacks_detected_total") == 0
    finally:
        e.stop()
        endpoint.close()
