"""A primary of the cluster fails and its replica is promoted, while games are played.

- With ``ENGINE_REDIS_WAIT_REPLICAS=1`` no acknowledged action is lost: a commit no replica
  confirmed is not acknowledged (UNAVAILABLE), and its retry (same idempotency key) applies it
  once.
- Without WAIT, a replica that had not received the last commits may be promoted: the lost
  tail is detected (the rollback counter, DATA_LOSS for watchers, the next submit on it
  refused), never built upon.
- Either way no action is applied twice, and the games go on to their end.

Each test restores the cluster: the killed node comes back as its replica's replica.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc  # type: ignore[import-untyped]
import pytest

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.store import keys
from tests.cluster.cluster import LocalCluster
from tests.cluster.conftest import CLUSTER_ENV
from tests.cluster.play import CALL_TIMEOUT, Follower, Player, call, check_history, check_watched
from tests.service import support

WAIT_ENV = {"ENGINE_REDIS_WAIT_REPLICAS": "1", "ENGINE_REDIS_WAIT_TIMEOUT_MS": "300"}


def _owner(cluster: LocalCluster, game_id: str) -> int:
    return cluster.owner_of_key(keys.game_keys(game_id)[0])


def _games_on(
    cluster: LocalCluster, stub: rpc.EngineStub, master: int, n: int, elsewhere: int = 0
) -> list[epb.CreateGameResponse]:
    """``n`` new games whose keys live on ``master`` (then ``elsewhere`` on other primaries)."""
    on: list[epb.CreateGameResponse] = []
    off: list[epb.CreateGameResponse] = []
    for i in range(400):
        g = support.create(stub, seed=i)
        (on if _owner(cluster, g.game_id) == master else off).append(g)
        if len(on) >= n and len(off) >= elsewhere:
            return on[:n] + off[:elsewhere]
    raise AssertionError("the games did not land on the primary")


def _restore(cluster: LocalCluster, killed: int, promoted: int) -> None:
    cluster.restart(killed)
    cluster.wait_ok()
    cluster.wait_synced(promoted)


@pytest.fixture(scope="module")
def wait_engine(cluster: LocalCluster) -> Iterator[support.Engine]:
    e = support.start_engine(cluster.url, **CLUSTER_ENV, **WAIT_ENV)
    yield e
    e.stop()


def test_master_killed_while_games_are_played(
    cluster: LocalCluster, wait_engine: support.Engine
) -> None:
    """SIGKILL a primary in the middle of games (WAIT 1): the games go on to their end through
    the promoted replica with every acknowledged action, once; watchers see one history."""
    stub = wait_engine.stub()
    victim = cluster.masters()[0]
    replica = cluster.replica_of(victim)
    assert replica is not None
    games = _games_on(cluster, stub, victim, 2, elsewhere=1)
    players = [Player(stub, g, seed=i) for i, g in enumerate(games)]
    followers = [Follower(stub, g.game_id).start() for g in games]
    for p in players:
        p.play()
    for p in players:
        p.wait_for(15)
    cluster.kill(victim)
    cluster.wait_ok(without=victim)
    assert replica in cluster.masters() and victim not in cluster.masters()
    _restore(cluster, victim, replica)
    for p in players:
        assert p.done.wait(90), f"{p.game_id} did not end: {len(p.acked)} actions"
        assert p.error is None, (p.error, wait_engine.log()[-5000:])
        assert p.over
        check_history(stub, p)
    assert sum(p.retries for p in players[:2]) >= 1  # the primary's games did see the outage
    for f, p in zip(followers, players, strict=True):
        check_watched(f, p.acked)
    # (The rollback counter may count a version that was read but never acknowledged: a commit
    # whose WAIT the primary's death cut short, read by GetGame before it died.)


def test_with_wait_an_unconfirmed_commit_is_not_acknowledged(
    cluster: LocalCluster, wait_engine: support.Engine
) -> None:
    """The replica is cut off: the next commit reaches no replica, so it is answered
    UNAVAILABLE. The primary dies, the lagging replica is promoted; the retry applies the
    action once, and nothing acknowledged is missing."""
    stub = wait_engine.stub()
    master = cluster.masters()[1]
    replica = cluster.replica_of(master)
    assert replica is not None
    (game,) = _games_on(cluster, stub, master, 1)
    p = Player(stub, game)
    for _ in range(5):
        p.step()
    cluster.pause(replica)
    try:
        cluster.cut_off_replicas(master)
        req = p.request()
        with pytest.raises(grpc.RpcError) as e:
            stub.SubmitAction(req, timeout=CALL_TIMEOUT)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE  # (the log names the replicas)
        cluster.kill(master)
    finally:
        cluster.resume(replica)
    cluster.wait_ok(without=master)
    assert replica in cluster.masters()
    _restore(cluster, master, replica)
    p.send(req)  # the same request again: applied now (the promoted replica never had it)
    for _ in range(10):
        p.step()
    check_history(stub, p)
    assert support.metric(wait_engine, "ascension_store_rollbacks_detected_total") == 0


def test_without_wait_a_lost_tail_is_detected_not_built_upon(
    cluster: LocalCluster, engine: support.Engine
) -> None:
    """No WAIT: commits acknowledged after the replica was cut off are lost with the primary.
    The engine notices (rollback counter, DATA_LOSS to the watcher, the client's next submit on
    its lost version refused); the game goes on from what the store holds."""
    stub = engine.stub()
    master = cluster.masters()[2]
    replica = cluster.replica_of(master)
    assert replica is not None
    (game,) = _games_on(cluster, stub, master, 1)
    p = Player(stub, game)
    for _ in range(5):
        p.step()
    kept = p.acked[-1]
    follower = Follower(stub, game.game_id).start()
    rollbacks = support.metric(engine, "ascension_store_rollbacks_detected_total")
    cluster.pause(replica)
    try:
        cluster.cut_off_replicas(master)
        for _ in range(4):
            p.step()  # acknowledged by the primary alone
        deadline = time.monotonic() + 10
        while not (follower.updates and follower.updates[-1].version == p.acked[-1].version):
            assert time.monotonic() < deadline, "the watcher did not see the last commits"
            time.sleep(0.02)
        cluster.kill(master)
    finally:
        cluster.resume(replica)
    cluster.wait_ok(without=master)
    assert replica in cluster.masters()
    lost = p.acked[-1]
    # The store went back to the last version the replica had.
    view = call(stub.GetGame, epb.GetGameRequest(game_id=game.game_id))[0]
    assert isinstance(view, pb.GameView)
    held = view.version
    assert kept.version <= held < lost.version
    # The client's next move, built on its lost version, is refused ...
    last = p.view
    assert last is not None and last.version == lost.version
    mine = last.seat == last.to_move and last.legal_actions
    req = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[max(last.to_move, 0)],
                                  expected_version=lost.version, expected_commit_id=lost.commit_id,
                                  action=last.legal_actions[0].id if mine else 1 << 16)  # fmt: skip
    with pytest.raises(grpc.RpcError) as e:
        call(stub.SubmitAction, req)
    assert e.value.code() in (grpc.StatusCode.DATA_LOSS, grpc.StatusCode.ABORTED), e.value.details()
    # ... the watcher is told ...
    assert follower.done.wait(40), "the watcher was not told"
    assert follower.error is not None and follower.error.code() == grpc.StatusCode.DATA_LOSS
    # ... and counted.
    assert support.metric(engine, "ascension_store_rollbacks_detected_total") > rollbacks
    # The game goes on from what the store holds: a new history from there. Commit ids name
    # the history, so a version carries a lost version's id only if the same actions were
    # played again up to it (the policy may pick them again): the same game.
    gone = {a.version: a for a in p.acked if a.version > held}
    p.acked = [a for a in p.acked if a.version <= held]
    p.refresh()
    for _ in range(5):
        p.step()
    same = True
    for a in p.acked[-5:]:
        old = gone.get(a.version)
        same = same and old is not None and (old.seat, old.action) == (a.seat, a.action)
        assert (old is not None and a.commit_id == old.commit_id) == same, (a, old)
    check_history(stub, p)
    _restore(cluster, master, replica)
