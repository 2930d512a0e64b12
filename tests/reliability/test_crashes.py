"""Crashes under load, with real processes: Redis SIGKILLed (appendfsync always: no acknowledged
move lost), an engine SIGKILLed (each action applied exactly once, retries answered as the
first time), Redis dropping every connection again and again (reads never see UNAVAILABLE,
submits are neither lost nor doubled)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

import grpc  # type: ignore[import-untyped]

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.store import chain_ids, keys
from tests.reliability.redis_proc import RedisProcess
from tests.service import support

GAMES = 4


class Player(threading.Thread):
    """Plays one game through one engine address, recording every acknowledged action as
    (version, seat, action). Transient failures are retried with the same idempotency key. A
    submit decided on a version the store lost is told so (DATA_LOSS, kept in ``data_losses``
    with the (expected, current) versions); the player reads the game again and goes on."""

    def __init__(self, address: Callable[[], str], game: epb.CreateGameResponse, seed: int,
                 stop: threading.Event) -> None:  # fmt: skip
        super().__init__(daemon=True)
        self.address = address
        self.game = game
        self.rng = random.Random(seed)
        self.stop_ = stop
        self.acked: dict[int, tuple[int, int]] = {}  # version -> (seat, action): the last told
        self.acks: list[tuple[int, str]] = []  # every (version, commit id) told, in order
        self.replayed = 0
        self.errors: list[str] = []
        self.data_losses: list[tuple[int, int, str]] = []  # (expected, current version, message)

    def run(self) -> None:
        channel = grpc.insecure_channel(self.address())
        stub = rpc.EngineStub(channel)
        gid = self.game.game_id
        try:
            while not self.stop_.is_set():
                try:
                    spectator = stub.GetGame(epb.GetGameRequest(game_id=gid), timeout=5)
                    if spectator.over:
                        return
                    seat = spectator.to_move
                    view = stub.GetGame(epb.GetGameRequest(game_id=gid, token=self.game.seat_tokens[seat]),
                                        timeout=5)  # fmt: skip
                except grpc.RpcError as e:
                    channel, stub = self._reconnect(channel, e)
                    continue
                if not view.legal_actions:  # (the game moved, or went back, between the reads)
                    continue
                req = epb.SubmitActionRequest(
                    game_id=gid, token=self.game.seat_tokens[seat], expected_version=view.version,
                    action=support.pick(view, self.rng), idempotency_key=f"{gid}:{view.version}",
                )  # fmt: skip
                for _ in range(40):  # the same request until it has an answer
                    try:
                        resp = stub.SubmitAction(req, timeout=5)
                    except grpc.RpcError as e:
                        if e.code() == grpc.StatusCode.DATA_LOSS:
                            current = int(dict(e.trailing_metadata() or ()).get("current-version", -1))
                            self.data_losses.append((view.version, current, e.details()))
                            break
                        if e.code() == grpc.StatusCode.ABORTED:
                            current = int(dict(e.trailing_metadata() or ()).get("current-version", -1))
                            if current < view.version:  # ("another action" cannot explain it)
                                self.errors.append(f"ABORTED below the version seen: {e.details()}")
                            break
                        if e.code() == grpc.StatusCode.FAILED_PRECONDITION:
                            break
                        channel, stub = self._reconnect(channel, e)
                        continue
                    self.replayed += resp.replayed
                    self.acked[resp.update.version] = (resp.update.seat, resp.update.action)
                    self.acks.append((resp.update.version, resp.update.commit_id))
                    break
        except Exception as e:
            self.errors.append(repr(e))
        finally:
            channel.close()

    def _reconnect(self, channel: grpc.Channel, e: grpc.RpcError) -> tuple[grpc.Channel, rpc.EngineStub]:
        if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                            grpc.StatusCode.CANCELLED):  # fmt: skip
            self.errors.append(f"{e.code().name}: {e.details()}")
            self.stop_.set()
        time.sleep(0.1)
        channel.close()
        channel = grpc.insecure_channel(self.address())
        return channel, rpc.EngineStub(channel)


def stored_log(r: RedisProcess, game_id: str) -> list[tuple[int, int]]:
    with r.client() as c:
        return keys.unpack_log(c.get(keys.game_keys(game_id)[2]) or b"")


def lost(r: RedisProcess, players: list[Player]) -> int:
    """Acknowledged actions the store does not hold: versions it does not reach, or holds with
    another history (commit id), counting each acknowledgement (a version lost and played
    again is two)."""
    missing = 0
    for p in players:
        ids = chain_ids(p.game.game_id, stored_log(r, p.game.game_id))
        missing += sum(1 for v, cid in p.acks if v > len(ids) or ids[v - 1] != cid)
    return missing


def test_redis_killed_with_appendfsync_always_loses_no_acknowledged_move(tmp_path: Path) -> None:
    r = RedisProcess(tmp_path / "redis", "--appendonly", "yes", "--appendfsync", "always").start()
    e = support.start_engine(r.url)
    stop = threading.Event()
    try:
        stub = e.stub()
        games = [support.create(stub, seed=40 + i) for i in range(GAMES)]
        players = [Player(lambda: e.address, g, i, stop) for i, g in enumerate(games)]
        for p in players:
            p.start()
        time.sleep(1.5)
        r.kill()  # mid-load: some commits in flight
        time.sleep(0.5)
        r.start()  # from its append-only file
        time.sleep(2.0)
        stop.set()
        for p in players:
            p.join(30)
        assert all(not p.errors for p in players), [p.errors for p in players]
        acked = sum(len(p.acked) for p in players)
        assert acked > 20, "too little load to mean anything"
        assert lost(r, players) == 0
        # and the games go on after the crash
        assert max(max(p.acked) for p in players) > 2
    finally:
        stop.set()
        e.stop()
        r.stop()


def test_an_engine_killed_under_load_applies_each_action_exactly_once(tmp_path: Path) -> None:
    r = RedisProcess(tmp_path / "redis").start()
    engines = [support.start_engine(r.url), support.start_engine(r.url)]
    current = [engines[0]]
    stop = threading.Event()
    try:
        games = [support.create(engines[0].stub(), seed=60 + i) for i in range(GAMES)]
        players = [Player(lambda: current[0].address, g, i, stop) for i, g in enumerate(games)]
        for p in players:
            p.start()
        time.sleep(1.5)
        current[0] = engines[1]  # clients retry their requests on the other replica ...
        engines[0].stop(sig=9)  # ... after this one is SIGKILLed mid-request
        time.sleep(2.0)
        stop.set()
        for p in players:
            p.join(30)
        assert all(not p.errors for p in players), [p.errors for p in players]
        for p in players:
            log = stored_log(r, p.game.game_id)
            # every acknowledged action is the stored one of its version, and no version holds
            # an action nobody asked for: versions are dense and each appears once
            assert all(log[v - 2] == entry for v, entry in p.acked.items())
            assert set(p.acked) == set(range(2, len(log) + 2))
        assert sum(len(p.acked) for p in players) > 20
    finally:
        stop.set()
        for eng in engines:
            eng.stop()
        r.stop()


def test_dropped_redis_connections_never_reach_callers(tmp_path: Path) -> None:
    """CLIENT KILL of every engine connection, over and over, while a client (plain gRPC, no
    retries of its own) reads and submits: no call fails UNAVAILABLE, every submit is applied
    exactly once."""
    r = RedisProcess(tmp_path / "redis").start()
    e = support.start_engine(r.url)
    stop = threading.Event()
    kills = [0]

    def killer() -> None:
        with r.client() as admin:
            while not stop.is_set():
                kills[0] += int(admin.client_kill_filter(_type="normal", skipme=True) or 0)
                time.sleep(0.05)

    try:
        stub = e.stub()
        game = support.create(stub, seed=7)
        t = threading.Thread(target=killer, daemon=True)
        t.start()
        rng = random.Random(3)
        applied: dict[int, tuple[int, int]] = {}
        reads = 0
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            spectator = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=10)
            reads += 1
            if spectator.over:
                break
            seat = spectator.to_move
            view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[seat]),
                                timeout=10)  # fmt: skip
            action = support.pick(view, rng)
            req = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[seat],
                                          expected_version=view.version, action=action)  # fmt: skip
            resp = stub.SubmitAction(req, timeout=10)  # raises on any failure
            applied[resp.update.version] = (seat, action)
        stop.set()
        t.join(5)
        assert kills[0] > 10, "the connections were not dropped"
        log = stored_log(r, game.game_id)
        assert reads > 20 and len(applied) > 10
        assert {v: log[v - 2] for v in applied} == applied  # none lost
        assert len(log) == len(applied)  # none doubled, none unasked
    finally:
        stop.set()
        e.stop()
        r.stop()
