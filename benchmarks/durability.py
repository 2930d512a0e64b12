"""Acknowledged moves lost when Redis crashes or fails over, and the time until moves are
acknowledged again.

    python benchmarks/durability.py [--runs 5] [--settings everysec,always] [--games 8]
                                    [--load-seconds 3] [--slow-fsync-ms 0] [--json]
    python benchmarks/durability.py --failover [--settings 0,1] [--replicas 1] [--runs 5] ...

Each run: ``--games`` clients playing their games as fast as they can through one
``ascension-engine serve`` (plain gRPC, idempotency keys, retrying a request until it has an
answer); after ``--load-seconds`` the primary is SIGKILLed; the clients go on. Then every move
a client was told was applied is looked up in the stored replay log.

- A crash (default): one redis-server of its own (append-only file with the setting's
  ``appendfsync``, in a temporary directory), started again from its files.
- ``--failover``: a primary, ``--replicas`` replicas and three Sentinels (the shipped
  persistence, ``appendfsync always``), the engine on ``redis+sentinel://``; each setting is an
  ``ENGINE_REDIS_WAIT_REPLICAS`` value. The Sentinels promote a replica; with one replica the
  killed primary is started again as the new primary's replica as soon as the Sentinels name
  it (a supervisor's restart whose start script asks them), since commits that wait for a
  replica have none until then.

Figures per run:

- lost (RPO): acknowledged moves the store does not hold (or holds with another history);
- recovery (RTO): from the kill until moves are acknowledged again (more acknowledgements than
  the clients had requests in flight at the kill: at least one was sent after it);
- failover (``--failover``): from the kill until the Sentinels name a new primary;
- rollbacks: the engine's ``ascension_store_rollbacks_detected_total`` (it notices the store
  holding less than it had seen, instead of building on it silently);
- told: submits answered DATA_LOSS (decided on a version the store lost, and told which).

``--slow-fsync-ms N``: a slow disk during the load (every fsync of Redis waits N ms more,
tests/reliability/slow_disk.py: needs a C compiler), as a busy disk; ``everysec`` then
postpones writing the file behind the fsync in progress while it acknowledges the writes.

Loopback only; bounded (runs x (load + a few seconds)); stops by itself.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.failover.sentinel import local_sentinel  # noqa: E402
from tests.reliability.redis_proc import RedisProcess  # noqa: E402
from tests.reliability.slow_disk import SlowDisk, slow_fsync_library  # noqa: E402
from tests.reliability.test_crashes import Player, lost  # noqa: E402
from tests.service import support  # noqa: E402


def rollbacks(engine: support.Engine) -> float:
    url = f"http://127.0.0.1:{engine.metrics_port}/metrics"
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("ascension_store_rollbacks_detected_total"))  # fmt: skip


def fsync_ms(directory: str, n: int = 200) -> tuple[float, float]:
    """(median, 90th percentile) of one small append and fdatasync on this disk, in ms: what an
    ``appendfsync always`` Redis waits for once per batch of writes."""
    import os

    path = os.path.join(directory, "fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    times = []
    try:
        for _ in range(n):
            os.write(fd, b"x" * 300)
            t0 = time.perf_counter()
            os.fdatasync(fd)
            times.append((time.perf_counter() - t0) * 1000)
    finally:
        os.close(fd)
        os.unlink(path)
    times.sort()
    return times[n // 2], times[n * 9 // 10]


def recovered_after(players: list[Player], before: int, killed: float, limit: float = 60.0) -> float:
    """Seconds from ``killed`` until more moves were acknowledged than the clients had in flight
    at the kill (one each, at most): NaN past ``limit``."""
    while time.monotonic() - killed < limit:
        if sum(len(p.acks) for p in players) > before + len(players):
            return time.monotonic() - killed
        time.sleep(0.01)
    return float("nan")


def failover_run(wait: str, games: int, load_seconds: float, seed: int, replicas: int) -> dict[str, float]:
    with local_sentinel(replicas) as s:
        e = support.start_engine(s.url(), LOG_LEVEL="WARNING", ENGINE_REDIS_WAIT_REPLICAS=wait)
        stop = threading.Event()
        try:
            stub = e.stub()
            created = [support.create(stub, seed=seed * 100 + i) for i in range(games)]
            players = [Player(lambda: e.address, g, seed * 100 + i, stop) for i, g in enumerate(created)]
            for p in players:
                p.start()
            time.sleep(load_seconds)
            old = s.primary()
            before = sum(len(p.acks) for p in players)
            killed = time.monotonic()
            s.kill(old)
            recovery: list[float] = []
            watch = threading.Thread(target=lambda: recovery.append(recovered_after(players, before, killed)))
            watch.start()
            new = s.wait_failover(old)
            failover = time.monotonic() - killed
            if replicas == 1:
                s.restart(old, replica_of=new)
            watch.join(90)
            time.sleep(1.0)
            stop.set()
            for p in players:
                p.join(30)
            errors = [x for p in players for x in p.errors]
            return {
                "acked": float(sum(len(p.acks) for p in players)),
                "acked_before_kill": float(before),
                "moves_per_second": before / load_seconds,
                "lost": float(lost(s.servers[new], players)),
                "recovery_seconds": recovery[0] if recovery else float("nan"),
                "failover_seconds": failover,
                "rollbacks_detected": rollbacks(e),
                "told": float(sum(len(p.data_losses) for p in players)),
                "client_errors": float(len(errors)),
            }
        finally:
            stop.set()
            e.stop()


def one_run(setting: str, games: int, load_seconds: float, seed: int, fsync_ms: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        aof = ("--appendonly", "yes", "--appendfsync", setting)
        disk = SlowDisk(slow_fsync_library(Path(tmp)), Path(tmp) / "fsync-ms") if fsync_ms else None
        r = (disk.redis(Path(tmp) / "redis", *aof) if disk else RedisProcess(Path(tmp) / "redis", *aof)).start()
        e = support.start_engine(r.url, LOG_LEVEL="WARNING")
        stop = threading.Event()
        try:
            stub = e.stub()
            created = [support.create(stub, seed=seed * 100 + i) for i in range(games)]
            players = [Player(lambda: e.address, g, seed * 100 + i, stop) for i, g in enumerate(created)]
            if disk:
                disk.slow(fsync_ms)
            for p in players:
                p.start()
            time.sleep(load_seconds)
            before = sum(len(p.acks) for p in players)
            killed = time.monotonic()
            r.kill()
            if disk:
                disk.fast()
            r.start()
            recovered = recovered_after(players, before, killed)
            time.sleep(1.0)
            stop.set()
            for p in players:
                p.join(30)
            errors = [x for p in players for x in p.errors]
            return {
                "acked": float(sum(len(p.acks) for p in players)),
                "acked_before_kill": float(before),
                "moves_per_second": before / load_seconds,
                "lost": float(lost(r, players)),
                "recovery_seconds": recovered,
                "rollbacks_detected": rollbacks(e),
                "told": float(sum(len(p.data_losses) for p in players)),
                "client_errors": float(len(errors)),
            }
        finally:
            stop.set()
            e.stop()
            r.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--settings", default=None,
                    help="appendfsync values to compare (default everysec,always); with --failover, "
                    "ENGINE_REDIS_WAIT_REPLICAS values (default 0,1)")
    ap.add_argument("--failover", action="store_true",
                    help="kill the primary of a Sentinel setup instead of crashing a lone Redis")
    ap.add_argument("--replicas", type=int, default=1, help="--failover: replicas of the primary")
    ap.add_argument("--games", type=int, default=8, help="concurrent games (client threads)")
    ap.add_argument("--load-seconds", type=float, default=3.0, help="load before each crash")
    ap.add_argument("--slow-fsync-ms", type=int, default=0,
                    help="every fsync of Redis waits this much more during the load (a busy disk)")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args()
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        median, p90 = fsync_ms(tmp)
    print(f"this disk: a 300-byte append and fdatasync takes {median:.1f} ms (median), {p90:.1f} ms "
          f"(90th percentile)", flush=True)  # fmt: skip
    out["fsync_ms"] = {"median": median, "p90": p90}
    settings = args.settings or ("0,1" if args.failover else "everysec,always")
    for setting in settings.split(","):
        runs = []
        label = f"WAIT {setting} of {args.replicas} replica(s)" if args.failover else f"appendfsync {setting:<8}"
        for i in range(args.runs):
            if args.failover:
                res = failover_run(setting, args.games, args.load_seconds, seed=i + 1, replicas=args.replicas)
            else:
                res = one_run(setting, args.games, args.load_seconds, seed=i + 1, fsync_ms=args.slow_fsync_ms)
            runs.append(res)
            failover = f" (new primary named after {res['failover_seconds']:.2f}s)" if args.failover else ""
            print(f"{label} run {i + 1}/{args.runs}: {res['acked_before_kill']:.0f} moves "
                  f"acknowledged before the kill ({res['moves_per_second']:.0f}/s), {res['lost']:.0f} lost, "
                  f"recovered in {res['recovery_seconds']:.2f}s{failover}, {res['rollbacks_detected']:.0f} "
                  f"rollback(s) detected, {res['told']:.0f} submit(s) told DATA_LOSS, "
                  f"{res['client_errors']:.0f} client error(s)", flush=True)  # fmt: skip
        lost_counts = [r["lost"] for r in runs]
        summary = {
            "runs": len(runs),
            "runs_with_loss": sum(1 for x in lost_counts if x > 0),
            "lost_total": sum(lost_counts),
            "lost_max": max(lost_counts),
            "moves_per_second_median": statistics.median(r["moves_per_second"] for r in runs),
            "recovery_seconds_median": statistics.median(r["recovery_seconds"] for r in runs),
            "rollbacks_detected_total": sum(r["rollbacks_detected"] for r in runs),
            "told_total": sum(r["told"] for r in runs),
            "client_errors_total": sum(r["client_errors"] for r in runs),
        }
        if args.failover:
            summary["failover_seconds_median"] = statistics.median(r["failover_seconds"] for r in runs)
            summary["recovery_seconds_max"] = max(r["recovery_seconds"] for r in runs)
        out[setting] = summary
        print(f"{label}: {summary['runs_with_loss']}/{summary['runs']} kills lost moves "
              f"({summary['lost_total']:.0f} in all, at most {summary['lost_max']:.0f} in one), "
              f"median {summary['moves_per_second_median']:.0f} moves/s, median recovery "
              f"{summary['recovery_seconds_median']:.2f}s", flush=True)  # fmt: skip
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
