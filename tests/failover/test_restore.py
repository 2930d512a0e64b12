"""An older backup restored under running engines (the runbook of docs/operations.md, "Backup
and restore", as backup.py does it): a snapshot (``BGSAVE``'s ``dump.rdb``) or a copy of the
append-only files, taken while two engines serve games; more moves and a new game after it;
Redis restored from the backup. The engines say what the restore lost, and only that:

- a move made after the backup, on a game the backup holds: the engine that served it answers
  a submit built on it ``DATA_LOSS`` (naming the versions lost) and serves the backup's
  version; the rollback is counted;
- a game created after the backup: ``DATA_LOSS`` ``GAME_LOST`` from the engine that served it,
  ``NOT_FOUND`` from one that never did; counted as a lost game;
- a game untouched since the backup plays on; new games are created; the game that went back
  is played on from the backup's version.
"""

from __future__ import annotations

from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest

from clients.sdk.errors import rich_status
from engine_service.api.ascension.v1 import engine_pb2 as epb
from tests.failover import backup
from tests.reliability.redis_proc import RedisProcess
from tests.reliability.test_rollback import play
from tests.service import support

SHIPPED = ("--appendonly", "yes", "--appendfsync", "always")


@pytest.mark.parametrize("kind", ["snapshot", "aof"])
def test_a_restored_backup_is_told_as_what_it_lost(tmp_path: Path, kind: str) -> None:
    r = RedisProcess(tmp_path / "redis", *SHIPPED).start()
    a = support.start_engine(r.url)
    b = support.start_engine(r.url)
    try:
        stub_a, stub_b = a.stub(), b.stub()
        went_back = support.create(stub_a, seed=51)
        kept_view = play(stub_a, went_back, 10, seed=1)
        untouched = support.create(stub_b, seed=52)
        play(stub_b, untouched, 4, seed=2)
        saved = tmp_path / "backup"
        if kind == "snapshot":
            saved = backup.snapshot(r, saved / "dump.rdb")
        else:
            saved = backup.copy_aof(r, saved / "appendonlydir")
        lost_view = play(stub_a, went_back, 10, seed=3)  # versions 12-21: after the backup
        new = support.create(stub_b, seed=53)  # a game after the backup
        new_view = play(stub_b, new, 3, seed=4)
        assert lost_view.version == kept_view.version + 10

        if kind == "snapshot":
            backup.restore_snapshot(r, saved)
        else:
            backup.restore_aof(r, saved)

        # The game that went back: a submit built on a lost version is DATA_LOSS on A, which
        # served it, naming the versions lost; the game is served at the backup's version.
        seat = lost_view.to_move
        mine = lost_view.legal_actions[0].id if lost_view.legal_actions else 1 << 16
        err = support.rpc_error(stub_a.SubmitAction, epb.SubmitActionRequest(
            game_id=went_back.game_id, token=went_back.seat_tokens[seat],
            expected_version=lost_view.version, expected_commit_id=lost_view.commit_id,
            action=mine))  # fmt: skip
        assert err.code() == grpc.StatusCode.DATA_LOSS, err
        assert f"{kept_view.version + 1}-{lost_view.version}" in err.details(), err.details()
        now = stub_a.GetGame(epb.GetGameRequest(game_id=went_back.game_id), timeout=support.CALL_TIMEOUT)
        assert (now.version, now.commit_id) == (kept_view.version, kept_view.commit_id)

        # The game created after the backup: GAME_LOST where it was served, NOT_FOUND elsewhere.
        err = support.rpc_error(stub_b.GetGame, epb.GetGameRequest(game_id=new.game_id))
        assert err.code() == grpc.StatusCode.DATA_LOSS and rich_status(err).reason == "GAME_LOST", err
        assert f"version {new_view.version}" in err.details()
        err = support.rpc_error(stub_a.GetGame, epb.GetGameRequest(game_id=new.game_id))
        assert err.code() == grpc.StatusCode.NOT_FOUND, err

        def counted(name: str) -> float:
            return support.metric(a, name) + support.metric(b, name)

        assert counted("ascension_store_rollbacks_detected_total") >= 1
        assert counted("ascension_store_games_lost_total") >= 1

        # The rest goes on: the untouched game, the one that went back (through B), new games.
        play(stub_a, untouched, 3, seed=5)
        assert play(stub_b, went_back, 3, seed=6).version == kept_view.version + 3
        play(stub_a, support.create(stub_a, seed=54), 2, seed=7)
    finally:
        a.stop()
        b.stop()
        r.stop()
