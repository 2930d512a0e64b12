"""Acknowledged moves and a Redis process crash on a slow disk.

A redis-server of the test's own whose every fsync takes half a second (slow_disk.py), one
engine, players on several games and an SDK watcher; Redis is SIGKILLed mid-load and restarted
from its append-only file.

- ``appendfsync everysec``: Redis postpones writing the file behind the fsync in progress (up
  to 2 s) while it acknowledges the writes, so the crash loses acknowledged moves. Each loss
  is told: the engine counts the rollback, a player (the SDK, playing every seat from the
  answers' views) whose next submit was decided on a lost version gets DataLossError naming
  the versions lost (never "another action was applied first"), and the SDK watcher
  resynchronises rather than keep updates of the lost history.
- ``appendfsync always`` (the shipped setting): nothing acknowledged is lost.
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
FSYNC_MS = 500


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


def written_late(r: RedisProcess, seconds: float = 10.0) -> None:
    """Wait (a little) for a moment when Redis holds acknowledged writes it has not written to
    its file: a postponed write, behind a slow fsync (``everysec`` only: ``always`` writes
    and fsyncs before it replies). Within one turn of its event loop Redis always holds that
    turn's writes until it writes them, so a postponed write is one still held two looks
    apart, while a background fsync runs."""
    deadline = time.monotonic() + seconds
    with r.client() as c:
        held = 0
        while time.monotonic() < deadline:
            info = c.info("persistence")
            now = int(info.get("aof_buffer_length", 0)) if info.get("aof_pending_bio_fsync") else 0
            if held >= 4096 and now >= held:
                return
            held = now
            time.sleep(0.02)


def crash_under_load(disk: SlowDisk, r: RedisProcess, load_seconds: float = 4.0) -> Crash:
    """Games created, the disk made slow, load, SIGKILL, the disk fast again, and a restart
    from the files the crash left (what the crash left is the point; with the disk slow the
    set-up alone would take many seconds)."""
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
        disk.slow(FSYNC_MS)
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
        time.sleep(load_seconds)
        if "everysec" in r.args:
            written_late(r)
        else:  # (on the slow disk it acknowledges a few moves a second)
            deadline = time.monotonic() + 10
            while sum(len(p.acks) for p in out.players) < 2 * GAMES and time.monotonic() < deadline:
                time.sleep(0.05)
        before = out.acked_before_crash = sum(len(p.acks) for p in out.players)
        out.watch_over_before_crash = watch.closed
        r.kill()
        disk.fast()
        r.start()
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
        e.stop()
        r.stop()


def test_a_crash_on_a_slow_disk_loses_acknowledged_moves_with_everysec_and_none_with_always(
    tmp_path: Path,
) -> None:
    library = slow_fsync_library(tmp_path)
    aof = ("--appendonly", "yes", "--appendfsync")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # (both at once: half the time)
        running = {}
        for setting in ("everysec", "always"):
            disk = SlowDisk(library, tmp_path / f"{setting}.fsync-ms")
            running[setting] = pool.submit(
                crash_under_load, disk, disk.redis(tmp_path / setting, *aof, setting)
            )
        everysec, always = running["everysec"].result(), running["always"].result()

    assert everysec.lost > 0, "the crash lost nothing: the slow disk did not postpone the writes"
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
    assert always.lost == 0
    assert always.rollbacks == 0
    assert not [d for p in always.players for d in p.data_losses]
