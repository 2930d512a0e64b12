"""SubmitAction throughput and latency of the engine service, beside the floor of this machine.

    python benchmarks/service.py [--seconds 10] [--rounds 5] [--clients 16] [--client-procs 1]
                                 [--processes 2] [--json]

Starts a Redis (``redis-server`` on a free port, or ``--redis-url``), then measures, with the
same load generator (grpc.aio clients, one game or key per client coroutine):

1. the floor: a no-op gRPC call whose handler does one Redis GET and one Lua compare-and-set
   of a state-sized value (grpc.aio + redis.asyncio, like the engine), one server process;
2. the engine, one ``ascension-engine serve`` process: games played through the API, each
   client a table holding every seat's token, submitting for whichever seat is to move (its
   ``seat_tokens`` make each answer the view of the seat to move: one call per action);
3. the same with ``view_detail=VIEW_DETAIL_LEGAL_ACTIONS`` (answers without board and rules view);
4. the engine with ``--processes N`` (default 2): N server processes on one port, each client
   on a connection of its own (the kernel spreads connections over the processes), full views;
5. with ``--redis-clients hand,redis-py``: instead of 2-4, the engine once per Redis client
   library the store can use (``ENGINE_REDIS_CLIENT``), each in a server process of its own,
   the phases taking turns: the server CPU of a SubmitAction with each (docs/scaling.md, "The
   Redis client");
6. with ``--durability``: the engine on a Redis with an append-only file fsynced every second,
   at every write, and (fsync every second) with ``ENGINE_REDIS_WAIT_REPLICAS=1`` and a replica:
   what each durability setting costs (docs/reliability.md).

Latencies are measured at the client, around each SubmitAction (or floor call). On a 2-core
machine the load generator and Redis share the cores with the servers, so the N-process
figure is bounded by the machine, not the engine: see the printed CPU count.

The phases take turns (``--rounds``, each ``--seconds``/rounds long, games going on from one
turn to the next), so that other work on the machine weighs on all of them alike: the ratios
compare figures taken over the same stretch of time. ``--rounds 1`` runs each phase whole.
The CPU each call costs the server, Redis (when this script started it) and the load generator
is printed beside (docs/scaling.md, "Where a SubmitAction's CPU goes").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import grpc  # type: ignore[import-untyped]  # noqa: E402

from engine_service.api.ascension.v1 import engine_pb2 as epb  # noqa: E402
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc  # noqa: E402
from engine_service.api.ascension.v1 import game_pb2 as pb  # noqa: E402

FLOOR_METHOD = "/bench.Floor/Call"
FLOOR_CAS = """
local v = redis.call('GET', KEYS[2])
if v ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], tonumber(ARGV[1]) + 1)
return 1
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def state_sized_value() -> bytes:
    """A serialized mid-game state, as the engine stores it."""
    from engine_service import rules

    s = rules.new_game(rules.GameConfig(sets="both", players=2, seed=1))
    rng = random.Random(1)
    for _ in range(150):
        if s.over:
            break
        rules.apply(s, rng.choice(rules.legal_actions(s)))
    return rules.serialize(s)


# ---- the floor server (a subprocess of this script) -------------------------------------------


async def floor_server(port: int, redis_url: str) -> None:
    import redis.asyncio as aioredis

    r: Any = aioredis.Redis.from_url(redis_url, max_connections=256)
    cas = r.register_script(FLOOR_CAS)
    value = state_sized_value()

    async def call(request: epb.SubmitActionRequest, context: Any) -> pb.GameUpdate:
        key = f"floor:{request.game_id}"
        current = await r.get(key + ":v")
        version = int(current or 0)
        await cas(keys=[key, key + ":v"], args=[current or b"", value])
        return pb.GameUpdate(version=version + 1)

    handler = grpc.unary_unary_rpc_method_handler(
        call,
        request_deserializer=epb.SubmitActionRequest.FromString,
        response_serializer=pb.GameUpdate.SerializeToString,
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("bench.Floor", {"Call": handler})])
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("ready", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await server.stop(1)


# ---- load generators --------------------------------------------------------------------------


class Act(NamedTuple):
    """A legal action as the load generator keeps it between rounds (picklable)."""

    id: int
    kind: str


def pick(acts: Any, rng: random.Random) -> int:
    """Prefer buying and defeating, then playing cards: games end in a few hundred actions."""
    for kinds in (("acquire", "defeat", "acquire_crew", "defeat_crew"), ("play",)):
        best: list[int] = [a.id for a in acts if a.kind in kinds]
        if best:
            return rng.choice(best)
    others: list[int] = [a.id for a in acts if a.kind != "end_turn"]
    if others and rng.random() < 0.7:
        return rng.choice(others)
    first: int = acts[0].id
    return first


@dataclass
class Table:
    """One client's game in progress, kept from one round to the next."""

    rng: random.Random
    game_id: str = ""
    tokens: list[str] = field(default_factory=list)
    seat: int = 0
    version: int = 0
    actions: Any = field(default_factory=list)  # LegalAction messages, or Acts between rounds


def _acts(actions: Any) -> list[Act]:
    return [Act(a.id, a.kind) for a in actions]


async def engine_client(stub: Any, table: Table, warm_until: float, stop_at: float, lat: list[int],
                        stats: dict[str, int], detail: epb.ViewDetail) -> None:  # fmt: skip
    """Plays games through the API like a table holding every seat's token: it sends them all
    (``seat_tokens``), so each answer is the view of the seat to move, its legal actions
    included. Were it another seat's (it is not), it would ask for them with ListLegalActions.
    A game cut by the end of a round goes on in the next one."""
    t, rng = table, table.rng
    while time.monotonic() < stop_at:
        if not t.game_id:
            seats = [epb.SeatConfig(kind=pb.SeatInfo.HUMAN)] * 2
            game = await stub.CreateGame(epb.CreateGameRequest(sets="both", seats=seats), timeout=10)
            t.game_id, t.tokens, t.seat = game.game_id, list(game.seat_tokens), game.view.to_move
            legal = await stub.ListLegalActions(epb.ListLegalActionsRequest(game_id=t.game_id, token=t.tokens[t.seat]),
                                                timeout=10)  # fmt: skip
            t.version, t.actions = legal.version, legal.actions
        over = False
        while not over and time.monotonic() < stop_at:
            req = epb.SubmitActionRequest(game_id=t.game_id, token=t.tokens[t.seat], expected_version=t.version,
                                          action=pick(t.actions, rng), idempotency_key=f"{t.game_id}:{t.version}",
                                          view_detail=detail, seat_tokens=t.tokens)  # fmt: skip
            t0 = time.perf_counter_ns()
            resp = await stub.SubmitAction(req, timeout=10)
            t1 = time.perf_counter_ns()
            stats["all"] += 1
            if time.monotonic() >= warm_until:
                lat.append(t1 - t0)
            view = resp.view
            t.version, t.actions, over, t.seat = view.version, view.legal_actions, view.over, view.to_move
            if not over and view.seat != t.seat:
                legal = await stub.ListLegalActions(
                    epb.ListLegalActionsRequest(game_id=t.game_id, token=t.tokens[t.seat]), timeout=10)  # fmt: skip
                t.version, t.actions = legal.version, legal.actions
                stats["get_game"] += 1
        if over:
            stats["games_finished"] += 1
            t.game_id = ""


async def floor_client(channel: Any, i: int, warm_until: float, stop_at: float, lat: list[int], stats: dict[str, int]) -> None:
    call = channel.unary_unary(FLOOR_METHOD, request_serializer=epb.SubmitActionRequest.SerializeToString,
                               response_deserializer=pb.GameUpdate.FromString)  # fmt: skip
    req = epb.SubmitActionRequest(game_id=f"{os.getpid()}-{i}", token="t" * 32, expected_version=1, action=65536,
                                  idempotency_key="k" * 30)  # fmt: skip
    while time.monotonic() < stop_at:
        t0 = time.perf_counter_ns()
        await call(req, timeout=10)
        t1 = time.perf_counter_ns()
        stats["all"] += 1
        if time.monotonic() >= warm_until:
            lat.append(t1 - t0)


async def load(kind: str, addresses: list[str], clients: int, offset: int, warmup: float, seconds: float,
               tables: dict[int, Table]) -> dict[str, Any]:  # fmt: skip
    """One channel per address; an address given k times gets k channels on connections of
    their own (so that a server of several processes on one port sees k connections)."""
    channels = [grpc.aio.insecure_channel(a, options=[("grpc.use_local_subchannel_pool", 1)]) for a in addresses]
    lat: list[int] = []
    stats = {"get_game": 0, "games_finished": 0, "all": 0}
    cpu0 = time.process_time()
    now = time.monotonic()
    warm_until, stop_at = now + warmup, now + warmup + seconds
    tasks = []
    for i in range(clients):
        ch = channels[i % len(channels)]
        if kind == "floor":
            tasks.append(floor_client(ch, offset + i, warm_until, stop_at, lat, stats))
        else:
            detail = epb.VIEW_DETAIL_LEGAL_ACTIONS if kind == "engine-light" else epb.VIEW_DETAIL_FULL
            table = tables.setdefault(offset + i, Table(random.Random(offset + i)))
            tasks.append(engine_client(rpc.EngineStub(ch), table, warm_until, stop_at, lat, stats, detail))
    await asyncio.gather(*tasks)
    for ch in channels:
        await ch.close()
    client_cpu = time.process_time() - cpu0
    for t in tables.values():  # kept as messages while playing: no copy per submit
        t.actions = _acts(t.actions)
    return {"lat": lat, "tables": tables, "client_cpu": client_cpu, **stats}


def _load_proc(args: tuple[str, list[str], int, int, float, float, dict[int, Table]]) -> dict[str, Any]:
    return asyncio.run(load(*args))


def descendants(pid: int) -> tuple[int, ...]:
    """``pid`` and every process under it (Linux /proc)."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return (pid,)
    return (pid, *(d for k in kids for d in descendants(int(k))))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_load(kind: str, addresses: list[str], clients: int, procs: int, warmup: float, seconds: float,
             server_pids: tuple[int, ...] = (), tables: dict[int, Table] | None = None,
             redis_pid: int | None = None) -> dict[str, Any]:  # fmt: skip
    """One stretch of load; ``tables`` (updated) carries the engine clients' games on. CPU is
    counted for the servers, Redis (when this script started it) and the load generator."""
    tables = {} if tables is None else tables
    per = [clients // procs + (1 if p < clients % procs else 0) for p in range(procs)]
    jobs = []
    for p, n in enumerate(per):
        first = sum(per[:p])
        mine = {i: t for i, t in tables.items() if first <= i < first + n}
        jobs.append((kind, addresses, n, first, warmup, seconds, mine))
    cpu0 = sum(cpu_seconds(p) for p in server_pids)
    redis0 = cpu_seconds(redis_pid) if redis_pid else 0.0
    if procs == 1:
        results = [_load_proc(jobs[0])]
    else:
        with multiprocessing.get_context("spawn").Pool(procs) as pool:
            results = pool.map(_load_proc, jobs)
    cpu = sum(cpu_seconds(p) for p in server_pids) - cpu0
    redis_cpu = cpu_seconds(redis_pid) - redis0 if redis_pid else 0.0
    for r in results:
        tables.update(r.pop("tables"))
    return {
        "seconds": seconds,
        "lat": [x for r in results for x in r["lat"]],
        "all": sum(r["all"] for r in results),
        "get_game": sum(r["get_game"] for r in results),
        "games_finished": sum(r["games_finished"] for r in results),
        "cpu": cpu,
        "redis_cpu": redis_cpu,
        "client_cpu": sum(r["client_cpu"] for r in results),
    }


def summary(stretches: list[dict[str, Any]]) -> dict[str, Any]:
    """Figures over stretches of one phase: calls measured after warm-up, per second of them."""
    lat = sorted(x for s in stretches for x in s["lat"])
    n, seconds = len(lat), sum(s["seconds"] for s in stretches)
    every, cpu = sum(s["all"] for s in stretches), sum(s["cpu"] for s in stretches)
    redis_cpu, client_cpu = (sum(s[k] for s in stretches) for k in ("redis_cpu", "client_cpu"))

    def q(p: float) -> float:
        return lat[min(n - 1, int(p * n))] / 1000 if n else 0.0

    return {
        "calls": n,
        "rps": n / seconds,
        "p50_us": q(0.50),
        "p99_us": q(0.99),
        "get_game": sum(s["get_game"] for s in stretches),
        "games_finished": sum(s["games_finished"] for s in stretches),
        # server CPU per measured call (for the engine: per SubmitAction, its ListLegalActions and
        # CreateGame calls included), over the whole run with its warm-up
        "server_cpu_us": cpu / every * 1e6 if every else 0.0,
        "redis_cpu_us": redis_cpu / every * 1e6 if every else 0.0,
        "client_cpu_us": client_cpu / every * 1e6 if every else 0.0,
    }


# ---- processes ----------------------------------------------------------------------------------


def wait_line(proc: subprocess.Popen[str], needle: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        if needle in line:
            return line
    raise RuntimeError(f"process did not print {needle!r}")


def start_redis(*extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """A redis-server on a free port: no persistence, unless ``extra`` asks for some (its files
    then go to a fresh temporary directory)."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    data = tempfile.mkdtemp(prefix="bench-redis-")
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", data, *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    import redis

    r = redis.Redis(port=port)
    for _ in range(200):
        try:
            r.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    return proc, f"redis://127.0.0.1:{port}/0"


RULES_BUILDS: set[str] = set()  # what the engines said they run (rules.BUILD): "compiled"


def start_engine(redis_url: str, *, processes: int = 1, extra: dict[str, str] | None = None
                 ) -> tuple[subprocess.Popen[str], str]:  # fmt: skip
    env = {**os.environ, "REDIS_URL": redis_url, "ENGINE_GRPC_PORT": "0", "ENGINE_HOST": "127.0.0.1",
           "ENGINE_METRICS_PORT": "0", "ENGINE_AI_DISPATCH": "off", "LOG_LEVEL": "WARNING",
           "ENGINE_SHUTDOWN_DRAIN_SECONDS": "0", **(extra or {})}  # fmt: skip
    exe = Path(sys.executable).parent / "ascension-engine"
    proc = subprocess.Popen([str(exe), "serve", "--processes", str(processes)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip
    line = wait_line(proc, "listening on")
    RULES_BUILDS.add(line.split("rules: ")[1].split(")")[0] if "rules: " in line else "?")
    return proc, line.split("listening on ")[1].split()[0]


def start_floor(redis_url: str) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--floor-server", str(port), redis_url],
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    wait_line(proc, "ready")
    return proc, f"127.0.0.1:{port}"


# Durability settings compared by --durability: (phase, redis-server arguments, engine settings)
DURABILITY: list[tuple[str, tuple[str, ...], dict[str, str]]] = [
    ("aof-everysec", ("--appendonly", "yes", "--appendfsync", "everysec"), {}),
    ("aof-always", ("--appendonly", "yes", "--appendfsync", "always"), {}),
    ("wait-1-replica", ("--appendonly", "yes", "--appendfsync", "everysec"),
     {"ENGINE_REDIS_WAIT_REPLICAS": "1", "ENGINE_REDIS_WAIT_TIMEOUT_MS": "1000"}),
]


def wait_replica(primary_url: str) -> None:
    """Until the primary has a replica in sync."""
    import redis

    r = redis.Redis.from_url(primary_url)
    for _ in range(200):
        info = r.info("replication")
        if info.get("connected_slaves", 0) >= 1 and info.get("slave0", {}).get("state") == "online":
            return
        time.sleep(0.05)
    raise RuntimeError("the replica did not come online")


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def print_clients(clients: list[str], stretches: dict[str, list[dict[str, Any]]], args: Any) -> int:
    """The figures of ``--redis-clients``: per client, its SubmitAction's server CPU beside the
    first client's, over the whole run and round by round (the rounds are the pairs taken
    over the same stretch of time)."""
    floor = summary(stretches["floor"])
    runs = {c: summary(stretches[f"client:{c}"]) for c in clients}
    base = clients[0]

    def per_call(s: dict[str, Any]) -> float:
        return float(s["cpu"]) / max(int(s["all"]), 1) * 1e6

    print(f"machine: {os.cpu_count()} CPUs; {args.clients} clients; {args.seconds:.0f}s/phase in "
          f"{max(1, args.rounds)} round(s); rules: {', '.join(sorted(RULES_BUILDS))}")  # fmt: skip
    print(f"floor (gRPC + Redis GET + Lua CAS): {floor['rps']:8.0f} calls/s  server CPU {floor['server_cpu_us']:.0f} us")
    out: dict[str, Any] = {"floor_server_cpu_us": round(floor["server_cpu_us"], 1), "clients": {}}
    for c, r in runs.items():
        rounds = [per_call(s) / per_call(b) for s, b in zip(stretches[f"client:{c}"], stretches[f"client:{base}"],
                                                             strict=True)]  # fmt: skip
        print(f"engine, client {c:<9}: {r['rps']:8.0f} calls/s  p50 {r['p50_us']:7.0f} us  server CPU "
              f"{r['server_cpu_us']:5.0f} us/submit  x{r['server_cpu_us'] / max(runs[base]['server_cpu_us'], 1e-9):.3f} "
              f"of {base} (rounds {' '.join(f'{x:.3f}' for x in rounds)})  Redis {r['redis_cpu_us']:.0f} us")  # fmt: skip
        out["clients"][c] = {"rps": round(r["rps"], 1), "p50_us": round(r["p50_us"], 1),
                             "server_cpu_us": round(r["server_cpu_us"], 1), "redis_cpu_us": round(r["redis_cpu_us"], 1),
                             "vs_first_by_round": [round(x, 3) for x in rounds]}  # fmt: skip
    if args.json:
        print(json.dumps(out))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="measured seconds per phase")
    ap.add_argument("--rounds", type=int, default=5, help="turns the phases take (1: each phase whole)")
    ap.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring (0.5 in later rounds)")
    ap.add_argument("--clients", type=int, default=16, help="concurrent client coroutines (games)")
    ap.add_argument("--client-procs", type=int, default=1, help="load generator processes")
    ap.add_argument("--redis-url", default="", help="use this Redis instead of starting one (it is not flushed)")
    ap.add_argument("--processes", type=int, default=2, help="server processes of the multi-process phase")
    ap.add_argument("--skip-multi", "--skip-two", action="store_true", help="skip the multi-process phase")
    ap.add_argument("--durability", action="store_true",
                    help="also measure the engine on Redis with an append-only file fsynced every second, "
                         "fsynced at every write, and with WAIT for one replica")  # fmt: skip
    ap.add_argument("--redis-clients", default="",
                    help="compare these Redis clients of the store (ENGINE_REDIS_CLIENT, comma-separated) "
                         "instead of the one-process, light and multi-process phases")  # fmt: skip
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    ap.add_argument("--floor-server", nargs=2, metavar=("PORT", "REDIS_URL"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.floor_server:
        asyncio.run(floor_server(int(args.floor_server[0]), args.floor_server[1]))
        return 0
    rounds = max(1, args.rounds)
    clients = [c for c in args.redis_clients.split(",") if c]

    procs: list[subprocess.Popen[Any]] = []
    stretches: dict[str, list[dict[str, Any]]] = {}
    try:
        redis_pid: int | None = None
        if args.redis_url:
            redis_url = args.redis_url
        else:
            rp, redis_url = start_redis()
            procs.append(rp)
            redis_pid = rp.pid
        fp, faddr = start_floor(redis_url)
        procs.append(fp)
        # (phase, load, addresses, server pids, pid of its Redis when this script started it)
        phases: list[tuple[str, str, list[str], tuple[int, ...], int | None]] = [
            ("floor", "floor", [faddr], (fp.pid,), redis_pid),
        ]
        for client in clients:
            cp, caddr = start_engine(redis_url, extra={"ENGINE_REDIS_CLIENT": client})
            procs.append(cp)
            phases.append((f"client:{client}", "engine", [caddr], (cp.pid,), redis_pid))
        if not clients:
            ep, eaddr = start_engine(redis_url)
            procs.append(ep)
            phases += [("one", "engine", [eaddr], (ep.pid,), redis_pid),
                       ("light", "engine-light", [eaddr], (ep.pid,), redis_pid)]  # fmt: skip
        if not args.skip_multi and not clients:
            mp, maddr = start_engine(redis_url, processes=args.processes)
            procs.append(mp)
            phases.append(("multi", "engine", [maddr] * args.clients, descendants(mp.pid), redis_pid))
        if args.durability:
            for name, redis_args, engine_env in DURABILITY:
                rp2, url2 = start_redis(*redis_args)
                procs.append(rp2)
                if engine_env.get("ENGINE_REDIS_WAIT_REPLICAS"):
                    port = url2.rsplit(":", 1)[1].split("/")[0]
                    replica, _ = start_redis("--replicaof", "127.0.0.1", port)
                    procs.append(replica)
                    wait_replica(url2)
                dp, daddr = start_engine(url2, extra=engine_env)
                procs.append(dp)
                phases.append((name, "engine", [daddr], (dp.pid,), rp2.pid))
        tables: dict[str, dict[int, Table]] = {name: {} for name, *_ in phases}
        for r in range(rounds):
            warmup = args.warmup if r == 0 else min(args.warmup, 0.5)
            for name, kind, addresses, pids, phase_redis in phases:
                s = run_load(kind, addresses, args.clients, args.client_procs, warmup, args.seconds / rounds,
                             pids, tables[name], phase_redis)  # fmt: skip
                stretches.setdefault(name, []).append(s)
    finally:
        for p in procs:
            stop(p)

    if clients:
        return print_clients(clients, stretches, args)
    floor, one, light = (summary(stretches[k]) for k in ("floor", "one", "light"))
    multi = summary(stretches["multi"]) if "multi" in stretches else None
    ratio = one["rps"] / floor["rps"] if floor["rps"] else 0.0
    by_round = [len(e["lat"]) / max(len(f["lat"]), 1) for f, e in zip(stretches["floor"], stretches["one"], strict=True)]
    cpus = os.cpu_count() or 1
    print(f"machine: {cpus} CPUs; {args.clients} clients in {args.client_procs} process(es); "
          f"{args.seconds:.0f}s/phase in {rounds} round(s); rules: {', '.join(sorted(RULES_BUILDS))}")  # fmt: skip
    print(f"floor (gRPC + Redis GET + Lua CAS) : {floor['rps']:8.0f} calls/s  p50 {floor['p50_us']:7.0f} us  "
          f"p99 {floor['p99_us']:7.0f} us")  # fmt: skip
    print(f"engine, 1 process  SubmitAction    : {one['rps']:8.0f} calls/s  p50 {one['p50_us']:7.0f} us  "
          f"p99 {one['p99_us']:7.0f} us  ({ratio:.0%} of the floor; {one['games_finished']} games finished, "
          f"{one['get_game']} ListLegalActions calls beside)")  # fmt: skip
    if rounds > 1:
        print(f"  of the floor, round by round     : {' '.join(f'{x:.0%}' for x in by_round)}")
    print(f"server CPU per call                : floor {floor['server_cpu_us']:.0f} us, engine "
          f"{one['server_cpu_us']:.0f} us per SubmitAction (its ListLegalActions/CreateGame included): capacity "
          f"{floor['server_cpu_us'] / max(one['server_cpu_us'], 1e-9):.0%} of the floor")  # fmt: skip
    print(f"CPU per call, server/Redis/client  : floor {floor['server_cpu_us']:.0f}/{floor['redis_cpu_us']:.0f}/"
          f"{floor['client_cpu_us']:.0f} us, engine {one['server_cpu_us']:.0f}/{one['redis_cpu_us']:.0f}/"
          f"{one['client_cpu_us']:.0f} us (Redis: only when this script started it)")  # fmt: skip
    print(f"engine, 1 process, legal-actions-only answers: {light['rps']:8.0f} calls/s  p50 {light['p50_us']:7.0f} us  "
          f"p99 {light['p99_us']:7.0f} us  server CPU {light['server_cpu_us']:.0f} us/submit "
          f"({light['rps'] / max(floor['rps'], 1e-9):.0%} of the floor)")  # fmt: skip
    if multi is not None:
        print(f"engine, --processes {args.processes} SubmitAction: {multi['rps']:8.0f} calls/s  p50 {multi['p50_us']:7.0f} us  "
              f"p99 {multi['p99_us']:7.0f} us  (x{multi['rps'] / max(one['rps'], 1e-9):.2f} of one process; server CPU "
              f"{multi['server_cpu_us']:.0f} us/submit, all processes)")  # fmt: skip
    durability: dict[str, dict[str, Any]] = {}
    for name, *_ in DURABILITY if args.durability else ():
        d = durability[name] = summary(stretches[name])
        print(f"engine, 1 process, Redis {name:<14}: {d['rps']:8.0f} calls/s  p50 {d['p50_us']:7.0f} us  "
              f"p99 {d['p99_us']:7.0f} us  (x{d['rps'] / max(one['rps'], 1e-9):.2f} of no persistence)")  # fmt: skip
    if args.json:
        out = {
            "submit_rps": round(one["rps"], 1),
            "submit_p50_us": round(one["p50_us"], 1),
            "submit_p99_us": round(one["p99_us"], 1),
            "floor_rps": round(floor["rps"], 1),
            "floor_p50_us": round(floor["p50_us"], 1),
            "floor_p99_us": round(floor["p99_us"], 1),
            "submit_vs_floor": round(ratio, 3),
            "submit_vs_floor_by_round": [round(x, 3) for x in by_round],
            "floor_server_cpu_us": round(floor["server_cpu_us"], 1),
            "submit_server_cpu_us": round(one["server_cpu_us"], 1),
            "floor_redis_cpu_us": round(floor["redis_cpu_us"], 1),
            "submit_redis_cpu_us": round(one["redis_cpu_us"], 1),
            "floor_client_cpu_us": round(floor["client_cpu_us"], 1),
            "submit_client_cpu_us": round(one["client_cpu_us"], 1),
            "submit_rps_light": round(light["rps"], 1),
            "submit_p50_us_light": round(light["p50_us"], 1),
            "submit_server_cpu_us_light": round(light["server_cpu_us"], 1),
            "processes": args.processes,
            "submit_rps_nproc": round(multi["rps"], 1) if multi else None,
            "submit_p50_us_nproc": round(multi["p50_us"], 1) if multi else None,
            "submit_server_cpu_us_nproc": round(multi["server_cpu_us"], 1) if multi else None,
            "nproc_vs_one": round(multi["rps"] / max(one["rps"], 1e-9), 3) if multi else None,
            "durability": {name: {"rps": round(d["rps"], 1), "p50_us": round(d["p50_us"], 1),
                                  "p99_us": round(d["p99_us"], 1),
                                  "vs_no_persistence": round(d["rps"] / max(one["rps"], 1e-9), 3)}
                           for name, d in durability.items()},
            "cpus": cpus,
            "rules_build": ",".join(sorted(RULES_BUILDS)),
            "clients": args.clients,
            "client_procs": args.client_procs,
            "seconds": args.seconds,
            "rounds": rounds,
        }
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
