"""The costs a capacity plan is made of (docs/scaling.md), each measured as CPU time of the
process that pays it, so that other work on the machine changes the wall time, not the figure.

    python benchmarks/capacity.py redis [--seconds 10] [--clients 64] [--aof] [--json]
    python benchmarks/capacity.py redis --appendfsync always --clients 1,4,16,64,256 [--seconds 10]
    python benchmarks/capacity.py bots [--decisions 150] [--bots random,expert,ismcts:100] [--json]
    python benchmarks/capacity.py watch [--games 20] [--watchers 10] [--seconds 10] [--json]

``redis``: commits per second one Redis primary can take. Starts its own ``redis-server``
(free port, data in a temporary directory of this machine's disk; ``--appendfsync``: no
persistence (default), ``everysec`` (``--aof``) or ``always``, the shipped setting), creates
games with states, metadata and updates of real size (mid-game, 4 players, both sets), then
``--clients`` coroutines, one game each, commit through ``RedisStore.commit`` (the engine's
own code: the commit script and its hot path) for ``--seconds``; a list (``1,4,16,64``)
measures each number of games committing at once in turn. The figures: commits per second of
Redis CPU (``INFO cpu``: Redis runs commands on one thread, so that is what one primary
sustains with a whole core), and commits per second of wall time with their latency. Under
``always`` Redis writes and fsyncs its file once per turn of its event loop, before the
replies of that turn, on its one thread: the wall-time figures say what the disk allows with
that many commits in flight (each turn's fsync shared by the commits it carries). The load
generator shares this machine's two cores. First, the disk's fsync time (a small append and
fdatasync, as benchmarks/durability.py measures it).

``bots``: AI decisions per second of one worker core, per bot and budget: games of each bot
against the heuristic, in process, every decision of the bot's seat timed in process CPU
(``decide``, as the worker runs it; a move with one legal action is answered without the bot,
as the runner does). Plus a worker's own cost per move beside the bot's: a ``GetGame`` and a
``SubmitAction`` over gRPC (client CPU, against a local engine; Celery's own handling is not
included).

``watch``: engine CPU per update delivered to a watcher: one engine on its own Redis, games
played at a steady pace with and without ``--watchers`` WatchGame streams each; the extra
engine CPU over the updates delivered. Also the Redis CPU per SubmitAction in each phase: all
that Redis does for an action played through the API (the load, the commit, the GetGame of a
seat whose turn came, the sweeper and gauges, and with watchers the replica's reader of their
games), beside the commit alone that ``redis`` measures. Last, the engine and Redis CPU of one
``GetGame`` (a seat's client reads its view again after each update of another seat).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine_service import rules  # noqa: E402
from tests.service import support  # noqa: E402
from tests.service.support import pick  # noqa: E402


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---- redis ------------------------------------------------------------------------------------


def _sample_game(players: int = 4, actions: int = 200) -> tuple[bytes, bytes]:
    """(state bytes, an update's bytes) of a mid-game position, as the engine writes them."""
    from engine_service.api.ascension.v1 import game_pb2 as pb
    from engine_service.server import convert

    s = rules.new_game(rules.GameConfig(sets="both", players=players, seed=7))
    rng = random.Random(7)
    for _ in range(actions):
        rules.apply(s, rng.choice(rules.legal_actions(s)))
    a = rng.choice(rules.legal_actions(s))
    desc = rules.describe_action(s, a)
    seat = s.to_move()
    evs = rules.apply_unchecked(s, a)
    upd = pb.GameUpdate()
    convert.fill_update(upd, "01m8p7tg4keybhv0xpda66", actions + 2, seat, a, desc, s, evs)
    upd.commit_id, upd.parent_commit_id = "98b85bcd0d7abb49", "6e98d1b298e58108"
    return rules.serialize(s), upd.SerializeToString()


async def _commit_load(url: str, seconds: float, clients: int) -> dict[str, Any]:
    from engine_service.server.ids import new_game_id
    from engine_service.store import Commit, CommitStatus, NewGame, new_commit_id
    from engine_service.store.redis_store import RedisStore

    state, update = _sample_game()
    meta = json.dumps({"sets": "both", "players": 4, "seats": [{"kind": "human"}] * 4,
                       "tokens": [f"{random.getrandbits(256):064x}" for _ in range(5)]}).encode()  # fmt: skip
    store = RedisStore(url)
    games = []
    for _ in range(clients):
        gid, cid = new_game_id(), new_commit_id()
        await store.create(NewGame(gid, cid, state, meta, update, 0, int(time.time() * 1000), None, 0.0))
        games.append([gid, 1, cid])
    commits = 0
    latencies: list[float] = []
    stop_at = time.monotonic() + seconds

    async def client(g: list[Any]) -> None:
        nonlocal commits
        n = 0
        while time.monotonic() < stop_at:
            sent = time.perf_counter()
            cid = new_commit_id()
            c = Commit(game_id=g[0], expected_version=g[1], expected_commit_id=g[2], commit_id=cid,
                       state=state, update=update, seat=n % 4, action=(4 << 16) | (n % 7), idem_key=f"k-{g[1]}",
                       fingerprint=b"0:1:262145", over=False, to_move=(n + 1) % 4, updated_ms=int(time.time() * 1000),
                       ai_pending=None, enqueued_at=0.0)  # fmt: skip
            res = await store.commit(c)
            latencies.append(time.perf_counter() - sent)
            assert res.status is CommitStatus.OK, res
            g[1], g[2] = g[1] + 1, cid
            n += 1
            commits += 1

    info = await store.r.info("cpu")
    cpu0 = float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    t0 = time.monotonic()
    await asyncio.gather(*(client(g) for g in games))
    wall = time.monotonic() - t0
    info = await store.r.info("cpu")
    cpu = float(info["used_cpu_user"]) + float(info["used_cpu_sys"]) - cpu0
    await store.close()
    latencies.sort()
    return {
        "clients": clients, "commits": commits, "wall_seconds": round(wall, 2),
        "commits_per_s": round(commits / wall),
        "latency_ms_p50": round(latencies[len(latencies) // 2] * 1000, 2),
        "latency_ms_p99": round(latencies[len(latencies) * 99 // 100] * 1000, 2),
        "redis_cpu_seconds": round(cpu, 2), "redis_cpu_us_per_commit": round(cpu / commits * 1e6, 1),
        "commits_per_redis_core_second": round(commits / cpu), "state_bytes": len(state),
        "update_bytes": len(update),
    }  # fmt: skip


def bench_redis(args: argparse.Namespace) -> dict[str, Any]:
    from durability import fsync_ms  # (benchmarks/durability.py, beside this script)

    fsync = args.appendfsync or ("everysec" if args.aof else "")
    aof = ("--appendonly", "yes", "--appendfsync", fsync) if fsync else ()
    runs = []
    for clients in (int(c) for c in str(args.clients).split(",")):
        directory = tempfile.mkdtemp(prefix="asc-capacity-")  # (this machine's disk, not tmpfs)
        with support.redis_server(*aof, "--dir", directory) as url:
            runs.append(asyncio.run(_commit_load(url, args.seconds, clients)))
        if not args.json:
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    median, p90 = fsync_ms(tempfile.gettempdir())
    out: dict[str, Any] = {"appendfsync": fsync or "no persistence", "aof": bool(fsync),
                           "fsync_ms_median": round(median, 2), "fsync_ms_p90": round(p90, 2)}  # fmt: skip
    if len(runs) == 1:
        return {**out, **runs[0]}
    return {**out, "runs": runs}


# ---- bots -------------------------------------------------------------------------------------


BUDGETS: tuple[tuple[str, dict[str, int]], ...] = (
    ("random", {}),
    ("heuristic", {}),
    ("expert", {}),
    ("ismcts", {"time_ms": 50}),
    ("ismcts", {"time_ms": 100}),
    ("ismcts", {"time_ms": 300}),
    ("ismcts", {"time_ms": 1000}),
)


def _bot_cost(name: str, budget: dict[str, int], decisions: int, seed: int) -> dict[str, Any]:
    from ai_workers.bots.decide import decide
    from ai_workers.bots.settings import BotSettings

    settings = BotSettings(name=name, seed=seed, **budget)
    opponent = BotSettings(name="heuristic", seed=seed)
    rng = random.Random(seed)
    asked = single = 0
    cpu: list[float] = []
    wall: list[float] = []
    game = 0
    while asked + single < decisions:
        s = rules.new_game(rules.GameConfig(sets="both", players=2, seed=rng.randrange(1 << 30)))
        mine = game % 2
        game += 1
        while not s.over and asked + single < decisions:
            seat = s.to_move()
            legal = rules.legal_actions(s)
            if seat == mine and len(legal) == 1:
                single += 1
                action = legal[0]
            else:
                view = rules.view(s, seat)
                t0, w0 = time.process_time(), time.perf_counter()
                action = decide(view, legal, settings if seat == mine else opponent).action
                if seat == mine:
                    cpu.append(time.process_time() - t0)
                    wall.append(time.perf_counter() - w0)
                    asked += 1
            rules.apply(s, action)
    total = sum(cpu)
    moves = asked + single
    searched = sum(1 for w in wall if w > 0.5 * budget.get("time_ms", 1e9) / 1000)
    return {
        "bot": name, **budget, "moves": moves, "asked": asked, "single_legal": single,
        "searched": searched,
        "wall_ms_per_move": round(sum(wall) / moves * 1000, 2),
        "cpu_ms_per_move": round(total / moves * 1000, 2),
        "cpu_ms_per_asked": round(total / max(1, asked) * 1000, 2),
        "median_cpu_ms_asked": round(statistics.median(cpu) * 1000, 2) if cpu else 0.0,
        "moves_per_core_second_bot_only": round(moves / total, 1) if total else None,
    }  # fmt: skip


def _worker_overhead(n: int) -> float:
    """Client CPU seconds of one GetGame + one SubmitAction, against a local engine."""
    from engine_service.api.ascension.v1 import engine_pb2 as epb
    from tests.service import support

    engine = support.start_engine()
    try:
        stub = engine.stub()
        rng = random.Random(1)
        done = 0
        cpu = 0.0
        while done < n:
            game = support.create(stub, seed=rng.randrange(1 << 30))
            view = game.view
            while not view.over and done < n:
                t0 = time.process_time()
                view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[view.to_move]),
                                    timeout=10)  # fmt: skip
                req = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[view.seat],
                                              expected_version=view.version, action=pick(view, rng))  # fmt: skip
                view = stub.SubmitAction(req, timeout=10).view
                cpu += time.process_time() - t0
                done += 1
        return cpu / n
    finally:
        engine.stop()


def bench_bots(args: argparse.Namespace) -> dict[str, Any]:
    rows = []
    wanted = {w.strip() for w in args.bots.split(",") if w.strip()}
    for name, budget in BUDGETS:
        label = f"{name}:{budget['time_ms']}" if "time_ms" in budget else name
        if wanted and not wanted & {name, label}:
            continue
        n = args.decisions if budget.get("time_ms", 0) < 1000 else max(20, args.decisions // 3)
        row = _bot_cost(name, budget, n, args.seed)
        rows.append(row)
        print(f"{name:9s} {budget!s:18s} {row['moves']:4d} moves ({row['asked']} asked, {row['searched']} searched): "
              f"{row['wall_ms_per_move']:8.2f} ms per move ({row['cpu_ms_per_move']:.2f} CPU)", flush=True)  # fmt: skip
    overhead = _worker_overhead(args.overhead_moves)
    for row in rows:
        # A searching bot holds its core for its time budget (wall time: on a core of its
        # own that is CPU time too; on this shared machine it got less CPU than that).
        per_move = max(row["cpu_ms_per_move"], row["wall_ms_per_move"]) / 1000 + overhead
        row["moves_per_core_second"] = round(1 / per_move, 1)
    print(f"worker's own cost per move (GetGame + SubmitAction, client CPU): {overhead * 1000:.2f} ms")
    return {"rows": rows, "worker_overhead_ms_per_move": round(overhead * 1000, 2)}


# ---- watch ------------------------------------------------------------------------------------


def bench_watch(args: argparse.Namespace) -> dict[str, Any]:
    import grpc  # type: ignore[import-untyped]
    import redis

    from engine_service.api.ascension.v1 import engine_pb2 as epb
    from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc

    stack = contextlib.ExitStack()
    redis_url = stack.enter_context(support.redis_server())
    with redis.Redis.from_url(redis_url) as r:
        redis_pid = int(r.info("server")["process_id"])  # its CPU is read from /proc
    engine = support.start_engine(redis_url)
    pid = engine.proc.pid
    try:
        stub = engine.stub()
        results = {}
        for watchers in (0, args.watchers):
            games = [support.create(stub, seed=i) for i in range(args.games)]
            delivered = [0]  # (one list per phase: the threads of this phase count into it)
            streams: list[Any] = []
            channels = [grpc.insecure_channel(engine.address) for _ in range(max(1, watchers))]

            def follow(stream: Any, delivered: list[int] = delivered) -> None:
                try:
                    for _ in stream:
                        delivered[0] += 1
                except grpc.RpcError:
                    pass

            threads = []
            for g in games:
                for w in range(watchers):
                    st = rpc.EngineStub(channels[w]).WatchGame(epb.WatchGameRequest(game_id=g.game_id))
                    streams.append(st)
                    t = threading.Thread(target=follow, args=(st,), daemon=True)
                    t.start()
                    threads.append(t)
            time.sleep(1.0)
            rng = random.Random(watchers)
            views = {g.game_id: g.view for g in games}
            submits = 0
            cpu0, rcpu0 = _cpu_of(pid), _cpu_of(redis_pid)
            t0 = time.monotonic()
            while time.monotonic() - t0 < args.seconds:
                for g in games:
                    v = views[g.game_id]
                    if v.over:
                        continue
                    if v.seat != v.to_move:
                        v = stub.GetGame(epb.GetGameRequest(game_id=g.game_id, token=g.seat_tokens[v.to_move]), timeout=10)
                    req = epb.SubmitActionRequest(game_id=g.game_id, token=g.seat_tokens[v.seat],
                                                  expected_version=v.version, action=pick(v, rng))  # fmt: skip
                    views[g.game_id] = stub.SubmitAction(req, timeout=10).view
                    submits += 1
                time.sleep(args.pace)
            time.sleep(1.0)
            cpu, rcpu = _cpu_of(pid) - cpu0, _cpu_of(redis_pid) - rcpu0
            for st in streams:
                st.cancel()
            for ch in channels:
                ch.close()
            results[watchers] = {"submits": submits, "delivered": delivered[0], "engine_cpu_s": round(cpu, 3),
                                 "redis_cpu_s": round(rcpu, 3),
                                 "redis_cpu_us_per_submit": round(rcpu / max(1, submits) * 1e6, 1)}  # fmt: skip
            print(f"{watchers} watchers per game: {submits} submits, {delivered[0]} updates delivered, "
                  f"engine CPU {cpu:.2f}s, Redis CPU {rcpu:.2f}s", flush=True)  # fmt: skip
        # A seat's client reads its view again (GetGame) after each update of another seat
        # (the browser client does): the engine and Redis CPU of one such read.
        games = [support.create(stub, seed=100 + i) for i in range(args.games)]
        reads = 0
        cpu0, rcpu0 = _cpu_of(pid), _cpu_of(redis_pid)
        t0 = time.monotonic()
        while time.monotonic() - t0 < args.seconds / 2:
            g = games[reads % len(games)]
            token = g.seat_tokens[(reads // len(games)) % len(g.seat_tokens)]
            stub.GetGame(epb.GetGameRequest(game_id=g.game_id, token=token), timeout=10)
            reads += 1
        cpu, rcpu = _cpu_of(pid) - cpu0, _cpu_of(redis_pid) - rcpu0
        print(f"{reads} GetGame calls: engine CPU {cpu:.2f}s, Redis CPU {rcpu:.2f}s", flush=True)
        base, loaded = results[0], results[args.watchers]
        per_submit = base["engine_cpu_s"] / base["submits"]
        extra = loaded["engine_cpu_s"] - per_submit * loaded["submits"]
        return {
            "phases": results, "engine_cpu_us_per_submit": round(per_submit * 1e6),
            "engine_cpu_us_per_delivered_update": round(extra / max(1, loaded["delivered"]) * 1e6, 1),
            "redis_cpu_us_per_submit": base["redis_cpu_us_per_submit"],
            "redis_cpu_us_per_submit_watched": loaded["redis_cpu_us_per_submit"],
            "get_game_calls": reads, "engine_cpu_us_per_get_game": round(cpu / max(1, reads) * 1e6, 1),
            "redis_cpu_us_per_get_game": round(rcpu / max(1, reads) * 1e6, 1),
        }  # fmt: skip
    finally:
        engine.stop()
        stack.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("redis")
    r.add_argument("--seconds", type=float, default=10.0)
    r.add_argument("--clients", default="64", help="games committing at once; a list measures each")
    r.add_argument("--aof", action="store_true", help="appendonly with appendfsync everysec")
    r.add_argument("--appendfsync", choices=("everysec", "always"), default=None)
    b = sub.add_parser("bots")
    b.add_argument("--decisions", type=int, default=150)
    b.add_argument("--overhead-moves", type=int, default=300)
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--bots", default="", help="only these, e.g. random,expert,ismcts:100 (default: all)")
    w = sub.add_parser("watch")
    w.add_argument("--games", type=int, default=20)
    w.add_argument("--watchers", type=int, default=10)
    w.add_argument("--seconds", type=float, default=10.0)
    w.add_argument("--pace", type=float, default=0.05, help="seconds between rounds of moves")
    for p in (r, b, w):
        p.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = {"redis": bench_redis, "bots": bench_bots, "watch": bench_watch}[args.what](args)
    out = {"benchmark": f"capacity.{args.what}", "cpus": os.cpu_count(), **out}
    if args.json:
        print(json.dumps(out))
    else:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
