"""What one caller's review abuse costs the other players: a bot's move time, idle and while
one seat token cancels and restarts reviews and floods the engine with review starts.

    python benchmarks/review_abuse.py [--seconds 20] [--rounds 2] [--games 2] [--flood 4] [--json]

Real processes on loopback, all stopped at the end: a ``redis-server`` (free port), one
``ascension-engine serve`` dispatching to Celery with the default review and hint limits, one
``ascension-worker run`` (``--concurrency`` move processes, 2 by default, and its analyses node
with one process).

- **Bots**: ``--games`` games of two ``random`` AI seats, played by the worker, started again
  as they end. A move's time is the gap between two updates of a game on a ``WatchGame``
  stream: the engine dispatching the move, the worker reading the view, choosing and
  submitting, the commit.
- **The abuse**, by an attacker in a process of its own holding both seat tokens of a game of
  two people played to its end beforehand: the *cancel loop*, one thread with seat 0's token
  starting a review at the largest budget and cutting it after 0.25 s, again and again; the
  *flood*, ``--flood`` threads starting reviews as fast as the engine answers, with seat 0's
  and seat 1's tokens (each read until its first answer, then cut). ``--rounds`` idle phases
  and as many abused ones take turns, ``--seconds`` each, so that the machine's other work
  weighs on both alike.
- **A player's hint** every 11 s (the per-seat rate allows 6 a minute) in a game of two
  people left in the middle, in both phases: its wall time, or the error.

Printed: the move times of the idle and of the abused phases (median, p90, count), their
ratio (the run fails, exit 1, when the median or p90 under abuse is more than twice idle's),
the abuse's starts by answer, the analyses the worker ran, the CPU of the worker's move and
analyses nodes, of the engine and of the attacker, and the player's hint times.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ai_workers.metrics import _children, _is_analyses_node, _parents  # noqa: E402
from clients.sdk import Client  # noqa: E402
from clients.sdk.errors import from_rpc_error  # noqa: E402
from engine_service.api.ascension.v1 import engine_pb2 as epb  # noqa: E402
from tests.ai.test_celery_integration import Worker, ai, start_worker  # noqa: E402
from tests.analysis.test_analysis_workers import play_to_mid_game  # noqa: E402
from tests.review.support import play  # noqa: E402
from tests.service import support  # noqa: E402

CUT_SECONDS = 0.25  # the cancel loop cuts each review after this
HINT_EVERY = 11.0  # seconds between a player's hints (ENGINE_ANALYSIS_PER_MINUTE is 6)
KEYS = "benchmark-review-abuse-key-0123456789abcdef"


class Bots:
    """AI-vs-AI games kept running; every gap between two updates is one move's time."""

    def __init__(self, engine: support.Engine, games: int) -> None:
        self.engine = engine
        self.gaps: list[tuple[float, float]] = []  # (when, seconds)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(games)
        ]
        for t in self._threads:
            t.start()

    def _run(self, index: int) -> None:
        stub = self.engine.stub()
        n = 0
        while not self._stop.is_set():
            n += 1
            seed = 1000 * index + n
            game = stub.CreateGame(epb.CreateGameRequest(sets="ss", seed=seed, seats=[
                ai("random", seed=seed), ai("random", seed=seed + 1)]),
                timeout=support.CALL_TIMEOUT)  # fmt: skip
            last = time.monotonic()
            try:
                for u in stub.WatchGame(epb.WatchGameRequest(game_id=game.game_id), timeout=600):
                    now = time.monotonic()
                    if u.version > 1:
                        with self._lock:
                            self.gaps.append((now, now - last))
                    last = now
                    if u.over or self._stop.is_set():
                        break
            except grpc.RpcError as e:
                print(f"  bots: watch ended: {e.code().name}", flush=True)

    def between(self, start: float, end: float) -> list[float]:
        with self._lock:
            return [g for when, g in self.gaps if start <= when < end]

    def stop(self) -> None:
        self._stop.set()


class Abuse:
    """The cancel loop and the flood, each counting its starts by answer."""

    def __init__(self, address: str, game_id: str, tokens: list[str], flood: int,
                 budget_ms: int) -> None:  # fmt: skip
        self.address = address
        self.game_id = game_id
        self.tokens = tokens
        self.budget_ms = budget_ms
        self.cancel_loop: Counter[str] = Counter()
        self.flood: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._cancel_loop, daemon=True)]
        self._threads += [
            threading.Thread(target=self._flood, args=(i,), daemon=True) for i in range(flood)
        ]
        for t in self._threads:
            t.start()

    def _count(self, counter: Counter[str], what: str) -> None:
        with self._lock:
            counter[what] += 1

    @staticmethod
    def _outcome(e: grpc.RpcError) -> str:
        if e.code() == grpc.StatusCode.CANCELLED:
            return "cut"
        err = from_rpc_error(e)
        return f"{e.code().name} {getattr(err, 'reason', '')}".strip()

    def _cancel_loop(self) -> None:
        channel = grpc.insecure_channel(self.address)
        stub = epb_stub(channel)
        req = epb.ReviewGameRequest(game_id=self.game_id, token=self.tokens[0],
                                    budget_ms=self.budget_ms)  # fmt: skip
        while not self._stop.is_set():
            call = stub.ReviewGame(req, timeout=60)
            time.sleep(CUT_SECONDS)
            call.cancel()
            try:
                for _ in call:
                    pass
                self._count(self.cancel_loop, "finished")
            except grpc.RpcError as e:
                self._count(self.cancel_loop, self._outcome(e))
        channel.close()

    def _flood(self, index: int) -> None:
        channel = grpc.insecure_channel(self.address)
        stub = epb_stub(channel)
        token = self.tokens[index % len(self.tokens)]
        req = epb.ReviewGameRequest(game_id=self.game_id, token=token, budget_ms=self.budget_ms)
        while not self._stop.is_set():
            call = stub.ReviewGame(req, timeout=60)
            try:
                next(iter(call))
                self._count(self.flood, "admitted")
            except StopIteration:
                self._count(self.flood, "finished")
            except grpc.RpcError as e:
                self._count(self.flood, self._outcome(e))
            finally:
                call.cancel()
        channel.close()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(30)


def attack(address: str, game_id: str, tokens: list[str], flood: int, budget_ms: int,
           seconds: float, out: Any) -> None:  # fmt: skip
    """The abuse, in a process of its own (as an attacker's client would be: its threads do not
    hold this script's interpreter while it times the bots): its counts go to ``out``."""
    abuse = Abuse(address, game_id, tokens, flood, budget_ms)
    time.sleep(seconds)
    abuse.stop()
    out.put({"cancel_loop": dict(abuse.cancel_loop), "flood": dict(abuse.flood),
             "cpu_s": time.process_time()})  # fmt: skip


def epb_stub(channel: Any) -> Any:
    from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc

    return rpc.EngineStub(channel)


class Hints:
    """A player asking for a hint every ``HINT_EVERY`` seconds: (when, seconds or error)."""

    def __init__(self, engine: support.Engine, game_id: str, token: str) -> None:
        self.results: list[tuple[float, float | str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(engine, game_id, token),
                                        daemon=True)  # fmt: skip
        self._thread.start()

    def _run(self, engine: support.Engine, game_id: str, token: str) -> None:
        with Client(engine.address, timeout=60.0) as c:
            while not self._stop.wait(0 if not self.results else HINT_EVERY):
                t0 = time.monotonic()
                try:
                    c.analyze(game_id, token, 500)
                    self.results.append((t0, time.monotonic() - t0))
                except Exception as e:
                    self.results.append((t0, f"{type(e).__name__} {getattr(e, 'reason', '')}"))

    def between(self, start: float, end: float) -> list[float | str]:
        return [r for when, r in self.results if start <= when < end]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def own_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc); 0 once it has exited."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int, parents: dict[int, int]) -> float:
    return own_cpu(root) + sum(tree_cpu(c, parents) for c in _children(root, parents))


def node_cpu(worker: Worker) -> tuple[float, float]:
    """CPU seconds of the worker's moves node (its process and pool) and of its analyses node."""
    parents = _parents()
    analyses = [p for p in _children(worker.proc.pid, parents) if _is_analyses_node(p)]
    total = tree_cpu(worker.proc.pid, parents)
    part = sum(tree_cpu(p, parents) for p in analyses)
    return total - part, part


def loop_seconds() -> float:
    """A 20-million-step Python loop: how fast this machine is right now."""
    t, i = time.perf_counter(), 0
    while i < 20_000_000:
        i += 1
    return time.perf_counter() - t


def analyses_run(worker: Worker) -> int:
    """Analyses the worker searched (its log: one line per answered or failed search)."""
    return worker.log().count("iterations in")


def stats(gaps: list[float]) -> dict[str, float]:
    if len(gaps) < 2:
        return {"n": len(gaps), "median_s": float("nan"), "p90_s": float("nan")}
    q = statistics.quantiles(gaps, n=10)
    return {"n": len(gaps), "median_s": round(statistics.median(gaps), 4), "p90_s": round(q[-1], 4)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="of each phase")
    ap.add_argument("--rounds", type=int, default=2, help="idle and abuse phases, in turn")
    ap.add_argument("--games", type=int, default=2, help="AI-vs-AI games played at once")
    ap.add_argument("--flood", type=int, default=4, help="threads flooding review starts")
    ap.add_argument("--concurrency", type=int, default=2, help="the worker's move processes")
    ap.add_argument("--budget-ms", type=int, default=1000, help="the abusive reviews' budget")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out: dict[str, Any] = {"loadavg": os.getloadavg(), "loop_20m_s": round(loop_seconds(), 2)}
    with support.redis_server() as url, tempfile.TemporaryDirectory() as tmp:
        engine = support.start_engine(url, ENGINE_AI_DISPATCH="celery", CELERY_BROKER_URL=url,
                                      ENGINE_AI_TOKEN_KEYS=KEYS, LOG_LEVEL="WARNING")  # fmt: skip
        worker = start_worker(url, str(ROOT), Path(tmp), "abuse", LOG_LEVEL="INFO",
                              WORKER_CONCURRENCY=str(args.concurrency))  # fmt: skip
        bots = hints = None
        attacker = None
        try:
            with Client(engine.address, timeout=60.0) as c:
                target, s, _ = play(c, 7)  # the game the abuser reviews
                assert s.over
                hint_game, hint_tokens, hs = play_to_mid_game(c, 8)
            print(f"abused game {target.game_id}; a player's hints in {hint_game}", flush=True)
            bots = Bots(engine, args.games)
            hints = Hints(engine, hint_game, hint_tokens[hs.to_move()])
            time.sleep(3)  # the first games under way
            idle_w: list[tuple[float, float]] = []
            abuse_w: list[tuple[float, float]] = []
            cancel_loop: Counter[str] = Counter()
            flood: Counter[str] = Counter()
            spent: Counter[str] = Counter()  # CPU seconds during the abuse, analyses run
            ctx = multiprocessing.get_context("spawn")
            for _ in range(args.rounds):  # idle and abuse in turn: the machine's drift is shared
                t0 = time.monotonic()
                time.sleep(args.seconds)
                t1 = time.monotonic()
                idle_w.append((t0, t1))
                cpu0, analyses0 = node_cpu(worker), analyses_run(worker)
                e0, me0 = own_cpu(engine.proc.pid), time.process_time()
                results = ctx.Queue()
                attacker = ctx.Process(target=attack, args=(
                    engine.address, target.game_id, [target.token(0), target.token(1)],
                    args.flood, args.budget_ms, args.seconds, results))  # fmt: skip
                attacker.start()
                counts = results.get(timeout=args.seconds + 120)
                t2 = time.monotonic()
                attacker.join(30)
                abuse_w.append((t1, t2))
                cpu1, analyses1 = node_cpu(worker), analyses_run(worker)
                e1, me1 = own_cpu(engine.proc.pid), time.process_time()
                cancel_loop.update(counts["cancel_loop"])
                flood.update(counts["flood"])
                spent.update({"attacker": counts["cpu_s"], "analyses_run": analyses1 - analyses0,
                              "moves_node": cpu1[0] - cpu0[0], "analyses_node": cpu1[1] - cpu0[1],
                              "engine": e1 - e0, "benchmark": me1 - me0})  # fmt: skip
            idle = stats([g for w in idle_w for g in bots.between(*w)])
            abused = stats([g for w in abuse_w for g in bots.between(*w)])

            def hint_times(windows: list[tuple[float, float]]) -> list[float | str]:
                return [r if isinstance(r, str) else round(r, 2)
                        for w in windows for r in hints.between(*w)]  # fmt: skip

            out.update({
                "rounds": args.rounds,
                "seconds": args.seconds,
                "games": args.games,
                "flood_threads": args.flood,
                "idle": idle,
                "abuse": abused,
                "ratio_median": round(abused["median_s"] / idle["median_s"], 2),
                "ratio_p90": round(abused["p90_s"] / idle["p90_s"], 2),
                "cancel_loop": dict(cancel_loop),
                "flood": dict(flood),
                "attacker_cpu_s": round(spent["attacker"], 1),
                "analyses_run_during_abuse": int(spent["analyses_run"]),
                "moves_node_cpu_s": round(spent["moves_node"], 1),
                "analyses_node_cpu_s": round(spent["analyses_node"], 1),
                "engine_cpu_s": round(spent["engine"], 1),
                "benchmark_cpu_s": round(spent["benchmark"], 1),
                "hints_idle": hint_times(idle_w),
                "hints_abuse": hint_times(abuse_w),
            })  # fmt: skip
        finally:
            if attacker is not None and attacker.is_alive():
                attacker.kill()
            for part in (hints, bots):
                if part is not None:
                    part.stop()
            worker.stop()
            engine.stop()
    out["loadavg_after"] = os.getloadavg()
    ok = out["ratio_median"] <= 2.0 and out["ratio_p90"] <= 2.0
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"load average {out['loadavg']} -> {out['loadavg_after']}; 20M-step Python loop "
              f"{out['loop_20m_s']} s")  # fmt: skip
        for phase in ("idle", "abuse"):
            p = out[phase]
            print(f"{phase:<6} bot move: median {p['median_s'] * 1000:.0f} ms, p90 "
                  f"{p['p90_s'] * 1000:.0f} ms ({p['n']} moves)")  # fmt: skip
        print(f"ratio: median {out['ratio_median']}x, p90 {out['ratio_p90']}x "
              f"({'within' if ok else 'ABOVE'} 2x)")  # fmt: skip
        print(f"cancel loop: {out['cancel_loop']}")
        print(f"flood: {out['flood']}")
        print(f"analyses run during the abuse: {out['analyses_run_during_abuse']}; CPU: moves "
              f"node {out['moves_node_cpu_s']} s, analyses node {out['analyses_node_cpu_s']} s")  # fmt: skip
        print(f"CPU during the abused phases: engine {out['engine_cpu_s']} s, attacker "
              f"{out['attacker_cpu_s']} s, this script (bots' watchers, hints) "
              f"{out['benchmark_cpu_s']} s")  # fmt: skip
        print(f"a player's hints (s): idle {out['hints_idle']}, abuse {out['hints_abuse']}")
    return 0 if ok else 1


if __name__ == "__main__":
    random.seed(0)
    sys.exit(main())
