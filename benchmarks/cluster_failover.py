"""Failover soak: games played without pause on a local Redis Cluster while its primaries are
killed (SIGKILL) one after another, each replaced by its replica and started again.

    python benchmarks/cluster_failover.py [--seconds 120] [--players 6] [--every 15]
                                          [--wait-replicas 1] [--json]

Starts a 6-node cluster (3 primaries with a replica each, 1 s node timeout; data in a
temporary directory) and one ``ascension-engine serve`` on it (``ENGINE_REDIS_MODE=cluster``,
``ENGINE_REDIS_WAIT_REPLICAS`` from ``--wait-replicas``). ``--players`` threads play games to
their end, one after another, each action with an idempotency key, retried on UNAVAILABLE;
each game has a watcher. Every ``--every`` seconds a primary serving games is killed; once
its replica took over it is started again (it comes back as that replica's replica).

At the end every game's history is checked against what the server acknowledged: with WAIT,
each acknowledged action is in the game exactly once, at its version; without WAIT, a game
may have lost its last actions (then the engine must have said so: the rollback counter, a
refused submit), never built on them silently. Prints the counts; ``--json`` one object last.
Stops by itself after ``--seconds``; everything it started is stopped.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import grpc  # type: ignore[import-untyped]

from engine_service.api.ascension.v1 import engine_pb2 as epb
from tests.cluster.cluster import LocalCluster, local_cluster
from tests.cluster.play import Follower, Player, call
from tests.service import support


@dataclass
class Stats:
    games: int = 0
    actions: int = 0
    retries: int = 0
    refused: int = 0  # submits refused on a lost version (no WAIT)
    lost_actions: int = 0  # acknowledged, then lost (allowed without WAIT, if detected)
    bad: list[str] = field(default_factory=list)  # histories that break the rules
    watch_skips: int = 0
    watch_errors: list[str] = field(default_factory=list)


def check(stub: object, p: Player, waited: bool, stats: Stats) -> None:
    """The game's log against the acknowledgements."""
    view = p.refresh()
    acked = {a.version: a for a in p.acked}
    if view.over:
        replay, _ = call(stub.GetReplay, epb.GetReplayRequest(game_id=p.game_id))  # type: ignore[attr-defined]
        assert isinstance(replay, epb.Replay)
        steps = {s.version: (s.seat, s.action) for s in replay.steps}
    else:
        steps = {}
    held = view.version
    for v, a in acked.items():
        if v > held:
            stats.lost_actions += 1
            if waited:
                stats.bad.append(f"{p.game_id}: acknowledged version {v} lost (store at {held})")
        elif steps and steps.get(v) != (a.seat, a.action) and waited:
            stats.bad.append(f"{p.game_id}: version {v} holds {steps.get(v)}, acknowledged {a}")


def player_loop(stub: object, cluster: LocalCluster, stop: threading.Event, waited: bool, stats: Stats,
                lock: threading.Lock, seed: int) -> None:  # fmt: skip
    rng = random.Random(seed)
    while not stop.is_set():
        game = support.create(stub, seed=rng.randrange(1 << 30))  # type: ignore[arg-type]
        p = Player(stub, game, seed=rng.randrange(1 << 30))  # type: ignore[arg-type]
        f = Follower(stub, game.game_id).start(timeout=600)  # type: ignore[arg-type]
        while not stop.is_set() and not p.over:
            try:
                p.step()
            except grpc.RpcError as e:
                if waited or e.code() not in (grpc.StatusCode.ABORTED, grpc.StatusCode.DATA_LOSS):
                    with lock:
                        stats.bad.append(f"{game.game_id}: {e.code()} {e.details()}")
                    break
                with lock:
                    stats.refused += 1  # a lost tail: the client reads the game again
                held = p.refresh().version
                p.acked = [a for a in p.acked if a.version <= held]
        with lock:
            stats.games += 1
            stats.actions += len(p.acked)
            stats.retries += p.retries
            check(stub, p, waited, stats)
            if p.over and f.done.wait(30):
                stats.watch_skips += f.skipped
                if f.error is not None and (waited or f.error.code() != grpc.StatusCode.DATA_LOSS):
                    stats.watch_errors.append(
                        f"{game.game_id}: {f.error.code()} {f.error.details()}"
                    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--players", type=int, default=6)
    ap.add_argument("--every", type=float, default=15.0, help="seconds between failovers")
    ap.add_argument("--wait-replicas", type=int, default=1)
    ap.add_argument("--log", default="", help="write the engine's log to this file")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    waited = args.wait_replicas > 0
    stats = Stats()
    lock = threading.Lock()
    failovers: list[float] = []
    with local_cluster(masters=3, replicas=1, node_timeout_ms=1000,
                       extra=["--cluster-replica-validity-factor", "0"]) as cluster:  # fmt: skip
        engine = support.start_engine(
            cluster.url, ENGINE_REDIS_MODE="cluster", ENGINE_REDIS_WAIT_REPLICAS=str(args.wait_replicas),
            ENGINE_REDIS_WAIT_TIMEOUT_MS="300", ENGINE_REDIS_RETRY_SECONDS="10",
        )  # fmt: skip
        stop = threading.Event()
        stub = engine.stub()
        threads = [
            threading.Thread(target=player_loop, args=(stub, cluster, stop, waited, stats, lock, i), daemon=True)
            for i in range(args.players)
        ]  # fmt: skip
        try:
            for t in threads:
                t.start()
            start = time.monotonic()
            rng = random.Random(1)
            while time.monotonic() - start < args.seconds:
                time.sleep(min(args.every, max(0.0, args.seconds - (time.monotonic() - start))))
                if time.monotonic() - start >= args.seconds:
                    break
                victim = rng.choice(cluster.masters())
                replica = cluster.replica_of(victim)
                t0 = time.monotonic()
                cluster.kill(victim)
                cluster.wait_ok(without=victim)
                took = time.monotonic() - t0
                failovers.append(took)
                cluster.restart(victim)
                cluster.wait_ok()
                if replica is not None:
                    cluster.wait_synced(replica)
                with lock:
                    print(f"{time.monotonic() - start:6.1f}s: primary {victim} killed, replica {replica} "
                          f"serving after {took:.1f}s; {stats.games} games, {stats.actions} actions so far",
                          flush=True)  # fmt: skip
        finally:
            stop.set()
            for t in threads:
                t.join(60)
            rollbacks = support.metric(engine, "ascension_store_rollbacks_detected_total")
            engine.stop()
    internal = engine.log().count("internal error")
    out = {
        "seconds": args.seconds, "wait_replicas": args.wait_replicas, "failovers": len(failovers),
        "failover_seconds_max": max(failovers, default=0.0), "games": stats.games, "actions": stats.actions,
        "retries": stats.retries, "refused_on_lost_versions": stats.refused, "lost_actions": stats.lost_actions,
        "rollbacks_detected": rollbacks, "watch_skips": stats.watch_skips, "internal_errors": internal,
        "bad_histories": stats.bad[:20], "watch_errors": stats.watch_errors[:20],
    }  # fmt: skip
    for k, v in out.items():
        print(f"{k}: {v}")
    if args.log:
        Path(args.log).write_text(engine.log())
    if internal:
        text = engine.log()
        print(text[text.index("internal error") - 200 :][:6000])
    ok = not stats.bad and not stats.watch_errors and not internal
    if not waited and stats.lost_actions and not (rollbacks or stats.refused):
        print("acknowledged actions were lost without the engine noticing")
        ok = False
    if args.json:
        print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
