"""Acknowledged moves and a Redis process crash, on a disk that stops answering.

A redis-server of the test's own on a disk the test controls (slow_disk.py), one engine,
players on several games and an SDK watcher. Under load the disk stops answering its fsyncs,
and Redis is SIGKILLed at the moment the test creates, then restarted from its append-only
file:

- ``appendfsync everysec``: Redis postpones writing the file behind the fsync in progress (up
  to 2 s, then its write waits on the disk too) while it acknowledges the writes; it is killed
  once the write it holds back holds an acknowledged move, so the crash loses acknowledged
  moves, whatever the machine's speed. Each loss is told: the engine counts the rollback, a
  player (the SDK, playing every seat from the answers' views) whose next submit was decided
  on a lost version gets DataLossError naming the versions lost (never "another action was
  applied first"), and the SDK watcher resynchronises rather than keep updates of the lost
  history.
- ``appendfsync always`` (the shipped setting): killed while it waits for an fsync of writes
  it has made, nothing acknowledged is lost.
"""

from __future__ import annotations

import concurrent.futures
import random
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from clients.sdk import (
    AscensionError,
    Client,
    DataLossError,
    RetryPolicy,
    UnavailableError,
    VersionConflictError,
)
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.store import chain_ids
from tests.reliability.redis_proc import RedisProcess
from tests.reliability.slow_disk import SlowDisk, slow_fsync_library
from tests.reliability.test_crashes import stored_log
from tests.service import support

GAMES = 6


class SdkPlayer(threading.Thread):
    """Plays every seat of its games, one after the other, with the SDK, deciding each move at
    random on the view the last submit answered with (as a table of several seats does):
    after a crash that lost versions its next submit names one of them. Records every
    acknowledgement and what it was told."""

    def __init__(self, address: str, games: list[epb.CreateGameResponse], seed: int,
                 stop: threading.Event, pause: float = 0.0) -> None:  # fmt: skip
        super().__init__(daemon=True)
        self.address, self.games, self.stop_, self.pause = address, games, stop, pause
        self.rng = random.Random(seed)
        self.acks: list[tuple[str, int, str]] = []  # (game, version, commit id) told
        self.errors: list[str] = []
        self.data_losses: list[tuple[int, int, str]] = []  # (version decided on, current, message)
        self.go = threading.Event()  # cleared: no new move is decided (a submit sent goes on)
        self.go.set()

    def run(self) -> None:
        with Client(self.address, retry=RetryPolicy(transient=50)) as c:
            for game in self.games:
                self.play(c, game.game_id, list(game.seat_tokens))
                if self.stop_.is_set() or self.errors:
                    return

    def play(self, c: Client, gid: str, tokens: list[str]) -> None:
        view = c.get_view(gid, tokens[0])
        while not self.stop_.is_set() and not view.over:
            try:
                if view.seat != view.to_move or not view.legal_actions:
                    view = c.get_view(gid, tokens[view.to_move])
                    continue
                self.go.wait()
                resp = c.submit(gid, tokens[view.to_move], self.rng.choice(view.legal_actions).id,
                                seat_tokens=tokens, retry_on_conflict=False)  # fmt: skip
                self.acks.append((gid, resp.update.version, resp.update.commit_id))
                view = resp.view
                time.sleep(self.pause)
            except DataLossError as e:
                self.data_losses.append((view.version, e.current_version or 0, str(e)))
                view = c.get_view(gid, tokens[0])
            except (UnavailableError, VersionConflictError):
                view = c.get_view(gid, tokens[0])
            except AscensionError as e:
                self.errors.append(f"{type(e).__name__}: {e}")
                return


def acknowledged_and_lost(r: RedisProcess, players: list[SdkPlayer]) -> tuple[int, int]:
    """Acknowledged moves, and those the store does not hold: versions it does not reach, or
    holds with another history (commit id); a version lost and played again counts twice."""
    chains: dict[str, list[str]] = {}
    acked = missing = 0
    for p in players:
        for gid, v, cid in p.acks:
            if gid not in chains:
                chains[gid] = chain_ids(gid, stored_log(r, gid))
            acked += 1
            missing += v > len(chains[gid]) or chains[gid][v - 1] != cid
    return acked, missing


@dataclass
class Crash:
    acked: int = 0
    acked_before_crash: int = 0
    lost: int = 0
    rollbacks: float = 0.0
    players: list[SdkPlayer] = field(default_factory=list)
    watched: list[tuple[int, str]] = field(default_factory=list)  # the SDK watcher's updates
    resyncs: list[tuple[int, int]] = field(default_factory=list)  # (at update #, to version)
    watch_error: list[BaseException] = field(default_factory=list)
    watch_over_before_crash: bool = False
    store_ids: list[str] = field(default_factory=list)  # the watched game's, after the crash
    held_acked: int = 0  # acknowledged moves in the write Redis held back at the crash
    lost_at_crash: int = 0  # acknowledged moves the store did not hold after the restart


def commit_in(data: bytes, version: int, commit_id: str) -> bool:
    """Does ``data`` (append-only file bytes) hold the commit that wrote ``version`` with
    ``commit_id``? (commit.lua's HSET of the record, as Redis writes it to the file.)"""
    cid = commit_id.encode()
    v = str(version).encode()
    return b"$7\r\nversion\r\n$%d\r\n%s\r\n$3\r\ncid\r\n$%d\r\n%s\r\n" % (
        len(v), v, len(cid), cid) in data  # fmt: skip


def acked(players: list[SdkPlayer]) -> int:
    return sum(len(p.acks) for p in players)


def wait_acked(players: list[SdkPlayer], n: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while acked(players) < n:
        assert time.monotonic() < deadline, f"{acked(players)} of {n} moves acknowledged"
        assert all(not p.errors for p in players), [p.errors for p in players]
        time.sleep(0.02)


def hold_an_acknowledged_write(disk: SlowDisk, players: list[SdkPlayer]) -> int:
    """(``everysec``) Make the disk stop answering, and return once Redis holds back a write of
    its file that holds an acknowledged move (the number of such moves): a SIGKILL now loses
    them. The fsync Redis starts next is held; Redis postpones its writes behind it while it
    acknowledges them, then (after 1-2 s) writes, and that write is held too, its bytes known.
    The engine passes on the replies Redis sent meanwhile; if none of the held write's moves
    was acknowledged (no move was played in that time), the disk answers again and it starts
    over."""
    for _ in range(3):
        disk.hold()
        assert disk.wait_fsync_held(30), "Redis started no fsync within 30 s"
        assert disk.wait_write_held(30), "Redis did not write its file within 30 s"
        held = disk.held_bytes()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # (the replies sent before the write was held)
            n = sum(commit_in(held, v, cid) for p in players for _, v, cid in list(p.acks))
            if n:
                return n
            time.sleep(0.05)
        disk.release()
        wait_acked(players, acked(players) + GAMES)
    raise AssertionError("no acknowledged move was among the writes held back, in 3 tries")


def crash_under_load(disk: SlowDisk, r: RedisProcess) -> Crash:
    """Games created, load, the crash the setting is about (see the module's doc), the disk
    answering again, and a restart from the files the crash left."""
    r.start()
    e = support.start_engine(r.url)
    stop = threading.Event()
    out = Crash()
    try:
        stub = e.stub()
        games = [support.create(stub, seed=70 + i) for i in range(3 * GAMES)]
        # (The watched game, the first, is played at most 30 moves a second: it is still going
        # on at the crash, and its watcher has something to learn.)
        out.players = [SdkPlayer(e.address, games[i::GAMES], i, stop, 0.03 if i == 0 else 0.0)
                       for i in range(GAMES)]  # fmt: skip
        sdk = Client(e.address)
        watch = sdk.watch(games[0].game_id)

        def follow() -> None:
            try:
                for u in watch:
                    if len(watch.resyncs) > len(out.resyncs):
                        out.resyncs.append((len(out.watched), watch.resyncs[-1].to_version))
                        assert isinstance(watch.resyncs[-1].error, DataLossError)
                    out.watched.append((u.version, u.commit_id))
            except BaseException as ex:
                out.watch_error.append(ex)

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        for p in out.players:
            p.start()
        wait_acked(out.players, 2 * GAMES)
        if "everysec" in r.args:
            out.held_acked = hold_an_acknowledged_write(disk, out.players)
        else:  # (always: the fsync is the main thread's, before the replies)
            disk.hold()
            assert disk.wait_fsync_held(30), "Redis started no fsync within 30 s"
        before = out.acked_before_crash = sum(len(p.acks) for p in out.players)
        out.watch_over_before_crash = watch.closed
        for p in out.players:  # (a move lost and played again the same way is no loss)
            p.go.clear()
        r.kill()
        disk.release()
        r.start()
        out.lost_at_crash = acknowledged_and_lost(r, out.players)[1]
        for p in out.players:
            p.go.set()
        deadline = time.monotonic() + 30
        while (
            sum(len(p.acks) for p in out.players) <= before + GAMES and time.monotonic() < deadline
        ):
            time.sleep(0.05)  # (the games go on after the crash)
        time.sleep(1.0)
        stop.set()
        for p in out.players:
            p.join(30)
        # The watcher catches up with the store (what it had of a lost history or not).
        watched = games[0].game_id
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not watch.closed:
            ids = chain_ids(watched, stored_log(r, watched))
            if (watch.last_version, watch.last_commit_id) == (len(ids), ids[-1]):
                break
            time.sleep(0.1)
        watch.cancel()
        follower.join(10)
        sdk.close()
        assert all(not p.errors for p in out.players), [p.errors for p in out.players]
        out.acked, out.lost = acknowledged_and_lost(r, out.players)
        out.rollbacks = support.metric(e, "ascension_store_rollbacks_detected_total")
        out.store_ids = chain_ids(games[0].game_id, stored_log(r, games[0].game_id))
        return out
    finally:
        stop.set()
        disk.release()
        e.stop()
        r.stop()


def test_a_crash_while_the_disk_stalls_loses_acknowledged_moves_with_everysec_and_none_with_always(
    tmp_path: Path,
) -> None:
    library = slow_fsync_library(tmp_path)
    aof = ("--appendonly", "yes", "--appendfsync")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # (both at once: half the time)
        running = {}
        for setting in ("everysec", "always"):
            disk = SlowDisk(library, tmp_path / f"{setting}.disk")
            running[setting] = pool.submit(
                crash_under_load, disk, disk.redis(tmp_path / setting, *aof, setting)
            )
        everysec, always = running["everysec"].result(), running["always"].result()

    assert everysec.held_acked > 0
    assert everysec.lost_at_crash >= everysec.held_acked, (everysec.lost_at_crash, everysec.held_acked)
    assert everysec.rollbacks >= 1
    told = [d for p in everysec.players for d in p.data_losses]
    assert told, "no player was told that the store lost the versions it decided on"
    for expected, current, message in told:
        named = re.search(r"the store lost versions? (\d+)(?:-(\d+))?", message)
        assert named is not None, message
        first, last = int(named[1]), int(named[2] or named[1])
        assert current < first <= last == expected, message
    # The SDK watcher: whatever it received that the store lost, a resync followed.
    ids = everysec.store_ids
    kept = [ids[v - 1] == cid if v <= len(ids) else False for v, cid in everysec.watched]
    after = everysec.resyncs[-1][0] if everysec.resyncs else 0
    assert not everysec.watch_over_before_crash, "the watched game ended before the crash"
    assert all(kept[after:]), (everysec.resyncs, kept)
    assert not everysec.watch_error, everysec.watch_error

    assert always.acked_before_crash >= 2 * GAMES, "too little load to mean anything"
    assert always.lost_at_crash == always.lost == 0
    assert always.rollbacks == 0
    assert not [d for p in always.players for d in p.data_losses]
