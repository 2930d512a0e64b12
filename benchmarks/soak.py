"""The faults of tests/reliability, one after another for minutes, with the invariants checked.

    python benchmarks/soak.py [--minutes 10] [--games 6] [--seed 1] [--json]

Runs a redis-server of its own (append-only file, ``appendfsync always``) and two engine
replicas; ``--games`` clients play games through either replica, each submit with an
idempotency key retried until it has an answer, starting a new game when theirs ends. Every
few seconds one fault, chosen at random:

- ``redis-crash``: Redis SIGKILLed and started again from its append-only file;
- ``engine-crash``: the replica the clients use SIGKILLed; the clients move to the other one,
  and the killed one is started again;
- ``connection-kills``: every engine connection to Redis dropped every 50 ms for 3 s.

At the end, for every game: each acknowledged move is the stored one of its version (none
lost), and each stored move was acknowledged to a client (none doubled, none unasked); the
replicas' ``ascension_store_rollbacks_detected_total`` stays 0 (with ``always`` Redis loses
nothing). Progress is printed after each fault. Loopback only; stops after ``--minutes``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import grpc  # type: ignore[import-untyped]  # noqa: E402

from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc  # noqa: E402
from tests.reliability.redis_proc import RedisProcess  # noqa: E402
from tests.reliability.test_crashes import Player, stored_log  # noqa: E402
from tests.service import support  # noqa: E402

FAULTS = ("redis-crash", "engine-crash", "connection-kills")


class Table(threading.Thread):
    """One client seat at the table for the whole soak: a game after another."""

    def __init__(self, address: list[str], seed: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.address = address
        self.seed = seed
        self.stop_ = stop
        self.played: list[Player] = []

    def run(self) -> None:
        n = 0
        while not self.stop_.is_set():
            try:
                with grpc.insecure_channel(self.address[0]) as ch:
                    game = support.create(rpc.EngineStub(ch), seed=self.seed * 1000 + n)
            except grpc.RpcError:
                time.sleep(0.2)
                continue
            n += 1
            p = Player(lambda: self.address[0], game, self.seed * 1000 + n, self.stop_)
            self.played.append(p)
            p.run()  # in this thread: returns when the game ends or the soak stops


def rollbacks(engine: support.Engine) -> float:
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{engine.metrics_port}/metrics", timeout=5).read().decode()
    except OSError:
        return 0.0
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("ascension_store_rollbacks_detected_total"))  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--games", type=int, default=6, help="clients playing at once")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    end = time.monotonic() + args.minutes * 60
    faults: dict[str, int] = dict.fromkeys(FAULTS, 0)
    detected = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        r = RedisProcess(Path(tmp), "--appendonly", "yes", "--appendfsync", "always").start()
        engines = [support.start_engine(r.url, LOG_LEVEL="WARNING") for _ in range(2)]
        address = [engines[0].address]
        stop = threading.Event()
        tables = [Table(address, args.seed * 100 + i, stop) for i in range(args.games)]
        try:
            for t in tables:
                t.start()
            while time.monotonic() < end:
                time.sleep(rng.uniform(2.0, 5.0))
                fault = rng.choice(FAULTS)
                faults[fault] += 1
                t0 = time.monotonic()
                if fault == "redis-crash":
                    r.kill()
                    r.start()
                elif fault == "engine-crash":
                    victim = 0 if address[0] == engines[0].address else 1
                    address[0] = engines[1 - victim].address
                    detected += rollbacks(engines[victim])
                    engines[victim].stop(sig=9)
                    engines[victim] = support.start_engine(r.url, LOG_LEVEL="WARNING")
                else:
                    with r.client() as admin:
                        while time.monotonic() - t0 < 3:
                            admin.client_kill_filter(_type="normal", skipme=True)
                            time.sleep(0.05)
                acked = sum(len(p.acked) for t in tables for p in t.played)
                games = sum(len(t.played) for t in tables)
                print(f"{time.strftime('%H:%M:%S')} {fault:<16} ({time.monotonic() - t0:4.1f}s): {acked} moves "
                      f"acknowledged in {games} games so far", flush=True)  # fmt: skip
        finally:
            stop.set()
            for t in tables:
                t.join(60)
            detected += sum(rollbacks(e) for e in engines)
            for e in engines:
                e.stop()
            players = [p for t in tables for p in t.played]
            lost = doubled = 0
            for p in players:
                log = stored_log(r, p.game.game_id)
                lost += sum(1 for v, entry in p.acked.items() if v - 2 >= len(log) or log[v - 2] != entry)
                doubled += sum(1 for v in range(2, len(log) + 2) if v not in p.acked)
            errors = [x for p in players for x in p.errors]
            r.stop()
    acked = sum(len(p.acked) for p in players)
    ok = lost == 0 and doubled == 0 and not errors and detected == 0
    print(f"{sum(faults.values())} faults ({', '.join(f'{k} {v}' for k, v in faults.items())}); {acked} moves "
          f"acknowledged in {len(players)} games; lost {lost}, stored but not acknowledged {doubled}, "
          f"rollbacks detected {detected:.0f}, client errors {len(errors)}: {'OK' if ok else 'FAILED'}")  # fmt: skip
    for x in errors[:5]:
        print("  client error:", x)
    if args.json:
        print(json.dumps({"faults": faults, "acked": acked, "games": len(players), "lost": lost,
                          "unacknowledged": doubled, "rollbacks_detected": detected, "client_errors": len(errors),
                          "ok": ok}))  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
