"""What only a Redis Cluster shows: games spread over every primary, a slot moved while its
games are played (ASK and MOVED replies, TRYAGAIN while its keys are half moved), AI moves
pending in the cluster and re-dispatched by the sweeper through a broker of their own."""

from __future__ import annotations

import base64
import collections
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.store import keys
from tests.cluster.cluster import LocalCluster
from tests.cluster.conftest import CLUSTER_ENV
from tests.cluster.play import Acked, Follower, Player, call, check_watched
from tests.service import support


def test_games_spread_over_every_primary(cluster: LocalCluster, stub: rpc.EngineStub) -> None:
    """Each game's keys (and its bucket's indexes) live on the primary serving its bucket's
    slot; 30 games land on every primary, and each primary holds the keys it should."""
    games = [support.create(stub, seed=i) for i in range(30)]
    by_master: dict[int, list[str]] = collections.defaultdict(list)
    for g in games:
        by_master[cluster.owner_of_key(keys.game_keys(g.game_id)[0])].append(g.game_id)
    assert set(by_master) == set(cluster.masters())
    for port, ids in by_master.items():
        with cluster.client(port) as c:
            for gid in ids:
                record, window, _, _ = keys.game_keys(gid)
                assert c.exists(record, window) == 2  # on this primary, without redirection
                slot = int(c.execute_command("CLUSTER", "KEYSLOT", record))
                assert int(c.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)) >= 2
                games_index = keys.index_keys(keys.bucket_of(gid))[0]
                assert int(c.execute_command("CLUSTER", "KEYSLOT", games_index)) == slot
    listed = stub.ListGames(epb.ListGamesRequest(page_size=500), timeout=10)
    assert {g.game_id for g in games} <= {g.game_id for g in listed.games}


def _migrate(cluster: LocalCluster, src: int, dst: int, keys_: list[bytes]) -> None:
    with cluster.client(src) as c:
        c.execute_command("MIGRATE", "127.0.0.1", dst, "", 0, 5000, "KEYS", *keys_)


def test_a_slot_moved_while_its_game_is_played(cluster: LocalCluster, stub: rpc.EngineStub) -> None:
    """Resharding: the slot of a game's bucket moves to another primary while the game goes on.
    While its keys are half moved, reads follow ASK replies and a submit (a script over several
    keys) waits out TRYAGAIN; once the slot is moved, the engine follows the MOVED replies."""
    game = support.create(stub, seed=3)
    record = keys.game_keys(game.game_id)[0]
    src = cluster.owner_of_key(record)
    dst = next(p for p in cluster.masters() if p != src)
    with cluster.client(src) as c:
        slot = int(c.execute_command("CLUSTER", "KEYSLOT", record))
        src_id = c.execute_command("CLUSTER", "MYID").decode()
    with cluster.client(dst) as c:
        dst_id = c.execute_command("CLUSTER", "MYID").decode()
    p = Player(stub, game)
    follower = Follower(stub, game.game_id).start()
    for _ in range(5):
        p.step()
    with cluster.client(dst) as c:
        c.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
    with cluster.client(src) as c:
        c.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
    # The game's record moves first: reading it is answered ASK (the source lacks it).
    _migrate(cluster, src, dst, [record.encode()])
    for token in ("", game.seat_tokens[0]):
        view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=token), timeout=10)
        assert view.version == 6
    # A submit touches keys on both sides: TRYAGAIN until the slot has moved.
    req = p.request()
    sent: list[Any] = []
    t = threading.Thread(target=lambda: sent.append(call(stub.SubmitAction, req)[0]), daemon=True)
    t.start()
    time.sleep(1.0)
    assert t.is_alive(), "a submit ran while the game's keys were on two primaries"
    with cluster.client(src) as c:
        rest = c.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100_000)
    _migrate(cluster, src, dst, rest)
    for port in cluster.masters():
        with cluster.client(port) as c:
            c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
    cluster.wait_ok()
    assert cluster.owner_of_key(record) == dst
    t.join(60)
    assert sent, "the submit did not go through once the slot had moved"
    p.view = None
    u = sent[0].update
    p.acked.append(Acked(u.version, u.seat, u.action, u.commit_id, sent[0].replayed))
    p.play().join(120)  # on to the end
    assert p.error is None and p.over
    replay = stub.GetReplay(epb.GetReplayRequest(game_id=game.game_id), timeout=10)
    assert [(s.version, s.action) for s in replay.steps] == [(a.version, a.action) for a in p.acked]
    check_watched(follower, p.acked)
    listed = stub.ListGames(epb.ListGamesRequest(page_size=500), timeout=10)
    assert game.game_id in {g.game_id for g in listed.games}


def test_scripts_lost_by_every_primary_are_sent_again(
    cluster: LocalCluster, stub: rpc.EngineStub
) -> None:
    """As after a failover to a replica that never ran them, or a restart: NOSCRIPT is
    answered by sending the script itself (EVAL) to the node that lacks it."""
    p = Player(stub, support.create(stub, seed=4))
    p.step()
    for port in cluster.masters():
        with cluster.client(port) as c:
            c.execute_command("SCRIPT", "FLUSH")
    for _ in range(3):
        p.step()
    view = stub.GetGame(epb.GetGameRequest(game_id=p.game_id), timeout=10)
    assert view.version == 5


# ---- AI moves ------------------------------------------------------------------------------

QUEUE = "ascension.moves"


def _ai_seat(seed: int) -> epb.SeatConfig:
    return epb.SeatConfig(kind=pb.SeatInfo.AI, name=f"bot{seed}",
                          bot=epb.BotSettings(name="random", iterations=10, seed=seed))  # fmt: skip


def _queued(r: redis.Redis, game_id: str) -> list[dict[str, Any]]:
    out = []
    for raw in r.lrange(QUEUE, 0, -1):
        msg = json.loads(raw)
        _args, kwargs, _embed = json.loads(base64.b64decode(msg["body"]))
        if kwargs["game_id"] == game_id:
            out.append(kwargs)
    return out


@pytest.fixture(scope="module")
def broker() -> Iterator[str]:
    """A Celery broker of its own: a Redis Cluster cannot be one (the queue's keys would be
    spread over slots), so in cluster mode the engine does not fall back to REDIS_URL."""
    with support.redis_server() as url:
        yield url


def test_ai_moves_pending_in_the_cluster_are_swept(cluster: LocalCluster, broker: str) -> None:
    engine = support.start_engine(cluster.url, **CLUSTER_ENV, CELERY_BROKER_URL=broker, ENGINE_AI_DISPATCH="celery",
                                  ENGINE_AI_SWEEP_SECONDS="1", ENGINE_AI_STALL_SECONDS="1")  # fmt: skip
    r = redis.Redis.from_url(broker)
    try:
        stub = engine.stub()
        games = [
            stub.CreateGame(epb.CreateGameRequest(seats=[_ai_seat(5), _ai_seat(6)], seed=i), timeout=10)
            for i in range(6)
        ]  # fmt: skip
        assert len({cluster.owner_of_key(keys.game_keys(g.game_id)[0]) for g in games}) >= 2
        for g in games:
            assert [q["version"] for q in _queued(r, g.game_id)] == [1]
        deadline = time.monotonic() + 20
        while not all(len(_queued(r, g.game_id)) >= 2 for g in games):  # the sweeper, per bucket
            assert time.monotonic() < deadline, engine.log()[-3000:]
            time.sleep(0.2)
        assert support.metric(engine, "ascension_games_active") >= len(games)
        assert support.metric(engine, "ascension_ai_seat_wait_seconds") > 0
        # one move answered (with the credential the worker got): the game's pending move moves on
        g = games[0]
        p = _queued(r, g.game_id)[-1]
        view = stub.GetGame(epb.GetGameRequest(game_id=g.game_id, token=p["token"]), timeout=10)
        resp = stub.SubmitAction(epb.SubmitActionRequest(game_id=g.game_id, token=p["token"], expected_version=1,
                                                         action=view.legal_actions[0].id), timeout=10)  # fmt: skip
        assert [q["seat"] for q in _queued(r, g.game_id) if q["version"] == 2] == [
            resp.view.to_move
        ]
    finally:
        r.delete(QUEUE)
        r.close()
        engine.stop()


def test_cluster_mode_does_not_take_the_cluster_for_a_broker(cluster: LocalCluster) -> None:
    """With ENGINE_REDIS_MODE=cluster and no CELERY_BROKER_URL, AI moves are played locally
    (auto) rather than queued in a Redis Cluster that cannot hold a Celery queue."""
    engine = support.start_engine(cluster.url, **CLUSTER_ENV, ENGINE_AI_DISPATCH="auto")
    try:
        assert "AI dispatch: local" in engine.log()
    finally:
        engine.stop()
