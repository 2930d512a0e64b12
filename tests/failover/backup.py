"""The backup and restore runbook of docs/operations.md ("Backup and restore"), step by step,
for a redis-server of a test's own (RedisProcess) running with the shipped persistence
(append-only file, ``appendfsync always``):

- ``snapshot``: ``BGSAVE SCHEDULE``, wait until ``rdb_saves`` counts it (``LASTSAVE`` has whole
  seconds: a save in the same second as the last one does not move it), copy ``dump.rdb``;
- ``copy_aof``: automatic rewrites off, no rewrite running, copy ``appendonlydir``, rewrites on;
- ``restore_snapshot``: Redis stopped, its ``appendonlydir`` moved aside (Redis 7 with
  ``appendonly yes`` would start from it, or from a new empty one: never from ``dump.rdb``),
  the snapshot put in as ``dump.rdb``, Redis started with ``appendonly no`` (it loads the
  snapshot), ``CONFIG SET appendonly yes`` (it writes a new append-only file from memory),
  restarted as usual;
- ``restore_aof``: Redis stopped, ``appendonlydir`` replaced by the copy, Redis started.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from tests.reliability.redis_proc import RedisProcess


def _wait_persistence(r: RedisProcess, done: dict[str, str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with r.client() as c:
            info = c.info("persistence")
        if all(str(info.get(k)) == v for k, v in done.items()):
            return
        assert time.monotonic() < deadline, f"Redis persistence not {done}: {info}"
        time.sleep(0.05)


def snapshot(r: RedisProcess, dest: Path) -> Path:
    with r.client() as c:
        saves = int(c.info("persistence")["rdb_saves"])
        c.bgsave()  # (SCHEDULE: after an append-only file rewrite, if one runs)
        deadline = time.monotonic() + 60
        while True:
            info = c.info("persistence")
            if int(info["rdb_saves"]) > saves and not int(info["rdb_bgsave_in_progress"]):
                break
            if info["rdb_last_bgsave_status"] != "ok" and not int(info["rdb_bgsave_in_progress"]):
                raise AssertionError(f"BGSAVE failed: {info}")
            assert time.monotonic() < deadline, f"BGSAVE did not finish: {info}"
            time.sleep(0.05)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(r.dir / "dump.rdb", dest)
    return dest


def copy_aof(r: RedisProcess, dest: Path) -> Path:
    with r.client() as c:
        percentage = c.config_get("auto-aof-rewrite-percentage")["auto-aof-rewrite-percentage"]
        c.config_set("auto-aof-rewrite-percentage", 0)
    try:
        _wait_persistence(r, {"aof_rewrite_in_progress": "0", "aof_rewrite_scheduled": "0"})
        shutil.copytree(r.dir / "appendonlydir", dest)
    finally:
        with r.client() as c:
            c.config_set("auto-aof-rewrite-percentage", percentage)
    return dest


def restore_snapshot(r: RedisProcess, backup: Path) -> None:
    r.stop()
    aside = r.dir / f"appendonlydir.before-restore-{int(time.time())}"
    (r.dir / "appendonlydir").rename(aside)
    shutil.copy2(backup, r.dir / "dump.rdb")
    usual = r.args
    r.args = (*usual, "--appendonly", "no")
    try:
        r.start()
        with r.client() as c:
            c.config_set("appendonly", "yes")
        _wait_persistence(r, {"aof_enabled": "1", "aof_rewrite_in_progress": "0",
                              "aof_rewrite_scheduled": "0", "aof_last_bgrewrite_status": "ok"})  # fmt: skip
        r.stop()
    finally:
        r.args = usual
    r.start()


def restore_aof(r: RedisProcess, backup: Path) -> None:
    r.stop()
    shutil.rmtree(r.dir / "appendonlydir")
    shutil.copytree(backup, r.dir / "appendonlydir")
    r.start()
