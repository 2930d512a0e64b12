"""Thousands of WatchGame streams on one replica, while other calls keep their latency.

    python benchmarks/watchers.py [--idle 10000] [--active 300] [--active-games 20]
                                  [--seconds 20] [--rate 100] [--pin] [--json]

Starts a redis-server and one ``ascension-engine serve`` (its stream limits raised to fit),
then measures the same mixed load of other calls twice, without and with the watchers:

- the load: ``--active-games`` games played at ``--rate`` moves a second (default 100; 0: as
  fast as one client can) by one client (SubmitAction, with GetGame for the seat to move) plus
  a probe of CreateGame and ListGames every 50 ms;
- the watchers: ``--idle`` streams on games where nothing happens (one per game) and
  ``--active`` streams spread over the played games, opened from a separate process over
  ``--channels`` connections.

Printed: p50/p99 of SubmitAction, GetGame, CreateGame and ListGames in both phases and their
ratio, beside the mean time the engine spent in each call's handler (from its own metrics: what
the engine adds, apart from the machine's other work), updates delivered per second to the
active watchers and their delay (update time to receipt), the engine's Redis connections and resident memory with the watchers open, and the
CPU the engine and Redis used in each phase (cores busy: not disturbed by other work on the
machine as latencies are). ``--pin`` puts the engine on a CPU of its own and everything else
on the others, so that the latencies are the engine's rather than the machine's.
Loopback only; bounded; stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import grpc  # type: ignore[import-untyped]  # noqa: E402
import redis  # noqa: E402

from engine_service.api.ascension.v1 import engine_pb2 as epb  # noqa: E402
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc  # noqa: E402
from tests.service import support  # noqa: E402


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


# ---- the watchers (a separate process) --------------------------------------------------------


def watchers_main(address: str, idle: list[str], active: list[tuple[str, int]], channels: int,
                  ready: Any, stop: Any, results: Any) -> None:  # fmt: skip
    # The lowest priority: with --pin this process shares a CPU with the measured calls'
    # client and Redis (a deployment's spectators are on other machines), and its CPU must
    # not show up as the engine's latency.
    os.nice(19)

    async def run() -> None:
        chans = [grpc.aio.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])
                 for _ in range(channels)]  # fmt: skip
        stubs: list[Any] = [rpc.EngineStub(c) for c in chans]
        delays: list[float] = []
        counts = {"updates": 0, "opened": 0, "failed": 0}
        opened = asyncio.Event()
        total = len(idle) + len(active)

        def counted(what: str) -> None:
            counts[what] += 1
            if counts["opened"] + counts["failed"] >= total:
                opened.set()

        async def watch(i: int, game_id: str, after: int, record: bool) -> None:
            """Open; the first update (or, for a played game, the first received) marks it open."""
            call = stubs[i % channels].WatchGame(epb.WatchGameRequest(game_id=game_id, after_version=after))
            first = not record
            if record:
                counted("opened")  # its updates come when the game is played
            try:
                async for u in call:
                    if first:
                        first = False
                        counted("opened")
                    elif record:
                        counts["updates"] += 1
                        delays.append(time.time() - u.time_unix_ms / 1000)
            except grpc.aio.AioRpcError:
                if not stop.is_set():
                    counted("failed")  # CANCELLED included: gRPC refuses calls it cannot start

        tasks = [asyncio.ensure_future(watch(i, g, 0, False)) for i, g in enumerate(idle)]
        tasks += [asyncio.ensure_future(watch(len(idle) + i, g, v, True)) for i, (g, v) in enumerate(active)]
        t0 = time.monotonic()
        while not opened.is_set() and time.monotonic() - t0 < 300:
            await asyncio.sleep(0.2)
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.2)
        results.put({"opened": counts["opened"], "failed": counts["failed"], "updates": counts["updates"],
                     "delay_p50": pct(delays, 0.5), "delay_p99": pct(delays, 0.99),
                     "open_seconds": time.monotonic() - t0})  # fmt: skip
        for t in tasks:
            t.cancel()
        for c in chans:
            await c.close()

    asyncio.run(run())


# ---- the other calls ---------------------------------------------------------------------------


def play_and_probe(stub: rpc.EngineStub, games: list[epb.CreateGameResponse], seconds: float,
                   seed: int, rate: float) -> dict[str, list[float]]:  # fmt: skip
    """Moves at ``rate`` a second (0: as fast as one client can), with probes."""
    lat: dict[str, list[float]] = {"SubmitAction": [], "GetGame": [], "CreateGame": [], "ListGames": []}
    rng = random.Random(seed)
    end = time.monotonic() + seconds
    next_probe = 0.0
    next_move = time.monotonic()
    live = list(games)
    while time.monotonic() < end and live:
        if rate > 0:
            next_move += 1 / rate
            time.sleep(max(0.0, next_move - time.monotonic()))
        g = rng.choice(live)
        t = time.perf_counter()
        spectator = stub.GetGame(epb.GetGameRequest(game_id=g.game_id), timeout=10)
        lat["GetGame"].append(time.perf_counter() - t)
        if spectator.over:
            live.remove(g)
            continue
        seat = spectator.to_move
        view = stub.GetGame(epb.GetGameRequest(game_id=g.game_id, token=g.seat_tokens[seat]), timeout=10)
        req = epb.SubmitActionRequest(game_id=g.game_id, token=g.seat_tokens[seat], expected_version=view.version,
                                      action=support.pick(view, rng))  # fmt: skip
        t = time.perf_counter()
        stub.SubmitAction(req, timeout=10)
        lat["SubmitAction"].append(time.perf_counter() - t)
        if time.monotonic() >= next_probe:
            next_probe = time.monotonic() + 0.05
            t = time.perf_counter()
            stub.CreateGame(epb.CreateGameRequest(seats=support.human_seats(2)), timeout=10)
            lat["CreateGame"].append(time.perf_counter() - t)
            t = time.perf_counter()
            stub.ListGames(epb.ListGamesRequest(page_size=20), timeout=10)
            lat["ListGames"].append(time.perf_counter() - t)
    return lat


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def redis_cpu_seconds(url: str) -> float:
    with redis.Redis.from_url(url) as r:
        info = r.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def redis_pid(url: str) -> int:
    with redis.Redis.from_url(url) as r:
        return int(r.info("server")["process_id"])


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--idle", type=int, default=10_000, help="idle watchers (one per quiet game)")
    ap.add_argument("--active", type=int, default=300, help="watchers of the played games")
    ap.add_argument("--active-games", type=int, default=20)
    ap.add_argument("--channels", type=int, default=200,
                    help="client connections the watchers use (gRPC servers allow 100 streams per connection)")
    ap.add_argument("--seconds", type=float, default=20.0, help="measured seconds per phase")
    ap.add_argument("--rate", type=float, default=100.0,
                    help="moves a second of the load (each: two GetGame and a SubmitAction); 0 = as fast "
                         "as one client can, which keeps the engine busy and its p99 at the mercy of any "
                         "extra work")  # fmt: skip
    ap.add_argument("--pin", action="store_true",
                    help="the engine on CPU 0 alone, everything else (Redis, the load, the watchers' client) "
                         "on the other CPUs: the engine's own latency, without the clients' contention")  # fmt: skip
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    if args.pin and len(cpus) < 2:
        ap.error("--pin needs 2 CPUs or more")

    with support.redis_server() as url:
        room = str(args.idle + args.active + args.active_games + 10_000)  # probes create games too
        e = support.start_engine(url, LOG_LEVEL="WARNING", ENGINE_WATCH_MAX_STREAMS=room,
                                 ENGINE_WATCH_MAX_STREAMS_PER_PEER=room, ENGINE_MAX_LIVE_GAMES=room)  # fmt: skip
        try:
            if args.pin:
                rest = ",".join(str(c) for c in cpus[1:])
                for pid, where in ((e.proc.pid, str(cpus[0])), (os.getpid(), rest), (redis_pid(url), rest)):
                    subprocess.run(["taskset", "-a", "-cp", where, str(pid)], check=True, capture_output=True)
                print(f"pinned: the engine on CPU {cpus[0]}, Redis and the clients on CPU {rest}", flush=True)
            stub = e.stub()
            print(f"creating {args.idle} quiet games and {args.active_games} played ones ...", flush=True)
            quiet = [stub.CreateGame(epb.CreateGameRequest(seats=support.human_seats(2)), timeout=30).game_id
                     for _ in range(args.idle)]  # fmt: skip
            played = [support.create(stub, seed=None) for _ in range(args.active_games)]

            def connections() -> int:
                with redis.Redis.from_url(url) as r:
                    return sum(1 for c in r.client_list() if c.get("cmd") != "client|list")

            def served() -> dict[str, tuple[float, float]]:
                """Per method: seconds its calls spent in the engine's handler, and their count."""
                series = 'ascension_grpc_request_seconds_{}{{method="{}"}}'
                return {m: (support.metric(e, series.format("sum", m)), support.metric(e, series.format("count", m)))
                        for m in ("SubmitAction", "GetGame", "CreateGame", "ListGames")}  # fmt: skip

            print(f"phase 1: the load alone, {args.seconds:.0f}s", flush=True)
            s0 = served()
            c0, r0, t0 = cpu_seconds(e.proc.pid), redis_cpu_seconds(url), time.monotonic()
            base = play_and_probe(stub, played, args.seconds, seed=1, rate=args.rate)
            cpu_alone = ((cpu_seconds(e.proc.pid) - c0) / (time.monotonic() - t0),
                         (redis_cpu_seconds(url) - r0) / (time.monotonic() - t0))  # fmt: skip
            conns_before = connections()
            s1 = served()

            ctx = multiprocessing.get_context("spawn")
            ready, stop, results = ctx.Event(), ctx.Event(), ctx.Queue()
            now = {g.game_id: stub.GetGame(epb.GetGameRequest(game_id=g.game_id), timeout=10).version for g in played}
            active_ids = [(gid, now[gid]) for gid in (played[i % len(played)].game_id for i in range(args.active))]
            proc = ctx.Process(target=watchers_main, args=(e.address, quiet, active_ids, args.channels, ready, stop,
                                                           results))  # fmt: skip
            proc.start()
            print(f"opening {args.idle + args.active} watch streams ...", flush=True)
            ready.wait(330)
            conns_during = connections()
            rss = rss_mb(e.proc.pid)
            print(f"phase 2: the same load with the watchers open, {args.seconds:.0f}s", flush=True)
            c0, r0, t0 = cpu_seconds(e.proc.pid), redis_cpu_seconds(url), time.monotonic()
            s1b = served()  # (GetGame calls above are not the load's)
            loaded = play_and_probe(stub, played, args.seconds, seed=2, rate=args.rate)
            elapsed = time.monotonic() - t0
            cpu_with = ((cpu_seconds(e.proc.pid) - c0) / elapsed, (redis_cpu_seconds(url) - r0) / elapsed)
            s2 = served()
            stop.set()
            w = results.get(timeout=60)
            proc.join(60)
        finally:
            e.stop()

    print(f"watch streams open: {w['opened']} of {args.idle + args.active} ({w['failed']} failed), opened in "
          f"{w['open_seconds']:.1f}s")  # fmt: skip
    print(f"engine: Redis connections {conns_before} without the watchers, {conns_during} with them; "
          f"resident memory {rss:.0f} MB with them")  # fmt: skip
    print(f"active watchers: {w['updates'] / elapsed:.0f} updates/s delivered, delay p50 "
          f"{w['delay_p50'] * 1000:.1f} ms p99 {w['delay_p99'] * 1000:.1f} ms")  # fmt: skip
    print(f"CPU (cores busy): engine {cpu_alone[0]:.2f} alone, {cpu_with[0]:.2f} with the watchers; "
          f"Redis {cpu_alone[1]:.2f} alone, {cpu_with[1]:.2f} with them")  # fmt: skip
    out: dict[str, Any] = {"rate": args.rate, "pinned": args.pin, "engine_cpu_alone": round(cpu_alone[0], 3), "engine_cpu_with": round(cpu_with[0], 3),
                           "redis_cpu_alone": round(cpu_alone[1], 3), "redis_cpu_with": round(cpu_with[1], 3),
                           "opened": w["opened"], "failed": w["failed"], "redis_connections_without": conns_before,
                           "redis_connections_with": conns_during, "engine_rss_mb": round(rss, 1),
                           "updates_per_second": round(w["updates"] / elapsed, 1),
                           "delay_p99_ms": round(w["delay_p99"] * 1000, 1), "calls": {}}  # fmt: skip
    def mean_ms(a: dict[str, tuple[float, float]], b: dict[str, tuple[float, float]], m: str) -> float:
        n = b[m][1] - a[m][1]
        return (b[m][0] - a[m][0]) / n * 1000 if n else float("nan")

    print("latency at the client; 'in engine': the mean time in the engine's handler (its metrics)")
    print(f"{'call':<13} {'p50 alone':>10} {'p50 with':>10} {'p99 alone':>10} {'p99 with':>10} {'p99 ratio':>10} "
          f"{'in engine alone':>16} {'with':>7}")  # fmt: skip
    for name in base:
        b50, b99 = pct(base[name], 0.5) * 1000, pct(base[name], 0.99) * 1000
        l50, l99 = pct(loaded[name], 0.5) * 1000, pct(loaded[name], 0.99) * 1000
        ea, ew = mean_ms(s0, s1, name), mean_ms(s1b, s2, name)
        print(f"{name:<13} {b50:9.1f}ms {l50:9.1f}ms {b99:9.1f}ms {l99:9.1f}ms {l99 / b99:9.2f}x "
              f"{ea:14.2f}ms {ew:5.2f}ms")  # fmt: skip
        out["calls"][name] = {"p50_ms_alone": round(b50, 2), "p50_ms_with": round(l50, 2),
                              "p99_ms_alone": round(b99, 2), "p99_ms_with": round(l99, 2),
                              "n_alone": len(base[name]), "n_with": len(loaded[name]),
                              "engine_mean_ms_alone": round(ea, 3), "engine_mean_ms_with": round(ew, 3)}  # fmt: skip
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
