"""AI-move latency of a healthy game, alone and beside games played by bad bots.

    python benchmarks/bad_bots.py [--seconds 120] [--bad sleeper,stubborn,exiter]
                                  [--concurrency 2] [--root DIR] [--json]

Starts on loopback: a ``redis-server`` on a free port (store and broker), one
``ascension-engine serve`` (Celery dispatch; sweeper at its defaults) and one
``ascension-worker run`` (``WORKER_CONCURRENCY=--concurrency``, other settings at their
defaults), with the bad bot plug-ins of ``tests/ai/bad_bots.py`` registered through a
``*.dist-info`` on PYTHONPATH, as a separately installed package would be.

1. alone (``--seconds``): heuristic-against-heuristic games, one after the other. An AI
   move's latency is the time from one version of the game to the next, as ``WatchGame``
   delivers them (queue wait, the worker's reads, the decision and the submit).
2. beside bad bots (``--seconds``): the same, while one game per bad bot (bad bot against
   the heuristic, ``time_ms`` 200) runs; a bad game that ends is replaced by another.

Printed: the healthy moves' latency (count, median, p95, max) in each phase, and what the
bad games did (moves, games over, the worker's dead pool processes). ``--root`` runs the
engine and the worker from another checkout (for example ``git archive <commit>`` extracted
into a directory) with the same script: how the figures of docs/reliability.md compare a
commit before the bot supervision with one after. Stops by itself after about twice
``--seconds`` plus start-up; every process it started is stopped at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import grpc  # type: ignore[import-untyped]  # noqa: E402

from engine_service.api.ascension.v1 import engine_pb2 as epb  # noqa: E402
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc  # noqa: E402
from engine_service.api.ascension.v1 import game_pb2 as pb  # noqa: E402

BAD_TIME_MS = 200
CALL = 10.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def plugins(directory: Path) -> Path:
    """The bad bots as a module of their own and a dist-info registering them."""
    from tests.ai.bad_bots import ENTRY_POINTS

    shutil.copy(ROOT / "tests" / "ai" / "bad_bots.py", directory / "ascension_bad_bots.py")
    info = directory / "ascension_bad_bots-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ascension-bad-bots\nVersion: 0.0\n"
    )
    lines = "".join(
        f"{name} = ascension_bad_bots:{target.split(':')[1]}\n"
        for name, target in ENTRY_POINTS.items()
    )
    (info / "entry_points.txt").write_text(f"[ascension.bots]\n{lines}")
    return directory


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind",
         "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(0.5)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


def start(argv: list[str], env: dict[str, str], root: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(argv, env=env, cwd=root, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def wait_for(path: Path, text: str, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        content = path.read_text(errors="replace") if path.exists() else ""
        if text in content:
            return content
        time.sleep(0.2)
    raise RuntimeError(f"{path.name}: no {text!r} after {seconds}s:\n{content[-3000:]}")


def seat(bot: str, seed: int, time_ms: int = 0) -> epb.SeatConfig:
    return epb.SeatConfig(
        kind=pb.SeatInfo.AI, name=bot, bot=epb.BotSettings(name=bot, seed=seed, time_ms=time_ms)
    )


@dataclass
class Watched:
    """One game and the arrival time of each of its versions."""

    game_id: str
    times: list[float] = field(default_factory=list)
    over: bool = False

    def latencies(self, since: float, until: float) -> list[float]:
        t = self.times
        return [b - a for a, b in itertools.pairwise(t) if since <= a < until]


def watch(stub: rpc.EngineStub, game: Watched, until: float) -> None:
    try:
        for u in stub.WatchGame(epb.WatchGameRequest(game_id=game.game_id),
                                timeout=max(1.0, until - time.monotonic())):  # fmt: skip
            game.times.append(time.monotonic())
            if u.over:
                game.over = True
                return
    except grpc.RpcError:
        return


class Games:
    """Keeps ``n`` games of a kind going until ``until`` (a finished one is replaced)."""

    def __init__(self, stub: rpc.EngineStub, seats: list[epb.SeatConfig], until: float) -> None:
        self.stub, self.seats, self.until = stub, seats, until
        self.games: list[Watched] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        seed = 1
        while time.monotonic() < self.until:
            resp = self.stub.CreateGame(
                epb.CreateGameRequest(sets="ss", seed=seed, seats=self.seats), timeout=CALL
            )
            g = Watched(resp.game_id, [time.monotonic()])
            self.games.append(g)
            watch(self.stub, g, self.until)
            seed += 1

    def latencies(self, since: float, until: float) -> list[float]:
        return [x for g in self.games for x in g.latencies(since, until)]


def summary(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {"moves": 0}
    s = sorted(xs)
    return {
        "moves": len(s),
        "median_s": round(statistics.median(s), 4),
        "p95_s": round(s[min(len(s) - 1, int(0.95 * len(s)))], 4),
        "max_s": round(s[-1], 3),
    }


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def descendants(root_pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of every process under ``root_pid``."""
    parents: dict[int, int] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (p / "stat").read_text()
                parents[int(p.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [root_pid]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent:
                frontier.append(pid)
                with contextlib.suppress(OSError):
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                    found.append((pid, cmd.decode(errors="replace")))
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=120.0, help="length of each phase")
    ap.add_argument("--bad", default="sleeper,stubborn,exiter", help="bad bots, one game each")
    ap.add_argument("--concurrency", type=int, default=2, help="the worker's pool processes")
    ap.add_argument(
        "--root", type=Path, default=ROOT, help="checkout to run engine and worker from"
    )
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    bad = [b for b in args.bad.split(",") if b]
    tmp = Path(tempfile.mkdtemp(prefix="bench-bad-bots-"))
    procs: list[subprocess.Popen[bytes]] = []
    result: dict[str, Any] = {"root": str(root), "concurrency": args.concurrency,
                              "seconds": args.seconds, "cpus": os.cpu_count()}  # fmt: skip
    try:
        path = f"{root}{os.pathsep}{plugins(tmp)}"
        with redis_server() as url:
            base = {k: v for k, v in os.environ.items() if not k.startswith(("ENGINE_", "WORKER_"))}
            engine_env = {**base, "REDIS_URL": url, "CELERY_BROKER_URL": url, "PYTHONPATH": path,
                          "ENGINE_AI_DISPATCH": "celery", "ENGINE_HOST": "127.0.0.1",
                          "ENGINE_GRPC_PORT": "0", "ENGINE_METRICS_PORT": "0"}  # fmt: skip
            engine = start([sys.executable, "-m", "engine_service.server.cli", "serve"],
                           engine_env, root, tmp / "engine.log")  # fmt: skip
            procs.append(engine)
            line = wait_for(tmp / "engine.log", "listening on", 60)
            address = line.split("listening on ")[1].split()[0]
            worker_env = {**base, "CELERY_BROKER_URL": url, "PYTHONPATH": path,
                          "WORKER_CONCURRENCY": str(args.concurrency), "WORKER_METRICS_PORT": "0",
                          "PROMETHEUS_MULTIPROC_DIR": str(tmp / "metrics")}  # fmt: skip
            worker = start([sys.executable, "-m", "ai_workers.cli", "run"], worker_env, root,
                           tmp / "worker.log")  # fmt: skip
            procs.append(worker)
            wait_for(tmp / "worker.log", "ready.", 60)
            channel = grpc.insecure_channel(address)
            stub = rpc.EngineStub(channel)
            healthy = [seat("heuristic", 1), seat("heuristic", 2)]
            print(f"engine {address}, worker of {args.concurrency} processes, root {root}",
                  file=sys.stderr)  # fmt: skip

            t0 = time.monotonic()
            alone = Games(stub, healthy, t0 + args.seconds)
            alone.thread.join(args.seconds + 30)
            t1 = time.monotonic()
            result["alone"] = summary(alone.latencies(t0, t1))
            print(f"alone: {result['alone']}", file=sys.stderr)

            bad_games = {b: Games(stub, [seat(b, 1, time_ms=BAD_TIME_MS), seat("heuristic", 2)],
                                  t1 + args.seconds) for b in bad}  # fmt: skip
            beside = Games(stub, healthy, t1 + args.seconds)
            step = max(5.0, args.seconds / 6)
            while time.monotonic() < t1 + args.seconds:
                time.sleep(min(step, max(0.0, t1 + args.seconds - time.monotonic())))
                done = {b: sum(len(g.times) - 1 for g in gs.games) for b, gs in bad_games.items()}
                print(f"  {time.monotonic() - t1:5.0f}s: healthy "
                      f"{summary(beside.latencies(t1, time.monotonic()))}, bad games' moves {done}",
                      file=sys.stderr)  # fmt: skip
            beside.thread.join(30)
            t2 = time.monotonic()
            result["beside_bad_bots"] = summary(beside.latencies(t1, t2))
            result["bad_games"] = {
                b: {"games": len(gs.games), "over": sum(g.over for g in gs.games),
                    "moves": sum(len(g.times) - 1 for g in gs.games)}
                for b, gs in bad_games.items()
            }  # fmt: skip
            log = (tmp / "worker.log").read_text(errors="replace")
            # billiard: "Process 'ForkPoolWorker-1' pid:123 exited with 'signal 9 (SIGKILL)'"
            result["pool_processes_lost"] = log.count(" exited with '")
            tree = descendants(worker.pid)
            hosts = [pid for pid, cmd in tree if "ai_workers.supervisor" in cmd]
            pool = [pid for pid, cmd in tree if pid not in hosts]
            result["worker_rss_mb"] = {
                "main": round(rss_mb(worker.pid), 1),
                "pool": [round(rss_mb(p), 1) for p in pool],
                "bot_hosts": [round(rss_mb(p), 1) for p in hosts],
            }
            channel.close()
    finally:
        for p in reversed(procs):
            stop(p)
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key in ("alone", "beside_bad_bots"):
            r = result.get(key, {})
            print(f"{key:16} healthy AI moves {r.get('moves', 0):5}  median {r.get('median_s', 0):.3f}s"
                  f"  p95 {r.get('p95_s', 0):.3f}s  max {r.get('max_s', 0):.2f}s")  # fmt: skip
        print(f"bad games: {result.get('bad_games')}")
        print(f"pool processes lost: {result.get('pool_processes_lost')}; "
              f"worker RSS MB: {result.get('worker_rss_mb')}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
