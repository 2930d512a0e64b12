"""The review of a whole two-player game (ReviewGame) at the default budget: wall time, the
AI workers' CPU, the engine's CPU, and asking again (answered from the store).

    python benchmarks/review.py [--games 2] [--budget-ms 0] [--processes 2] [--celery] [--json]

A game of two people is played to its end through the engine (the heuristic policy with a
little noise, seed 100 + i), then seat 1's decisions are reviewed once (``--budget-ms`` 0: the
engine's default, ENGINE_REVIEW_BUDGET_MS) and again. Modes, each on its own real processes
(loopback only, all stopped at the end):

- ``local`` (the embedded default): ``ascension-engine serve`` with ``--processes`` local AI
  processes; the workers' CPU is that of the engine's child processes;
- ``celery`` (``--celery``): the engine on Redis and one ``ascension-worker run`` with
  ``--processes`` as its concurrency; the workers' CPU is that of the worker's process tree.

CPU is read from /proc (user + system time of each process tree) before and after each review.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clients.sdk import Client  # noqa: E402
from tests.ai.test_celery_integration import start_worker  # noqa: E402
from tests.review.support import play  # noqa: E402
from tests.service import support  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of a process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def tree_cpu(root: int, *, include_root: bool = True) -> float:
    """CPU seconds of ``root`` and all its descendants (alive now)."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (s := _stat(int(entry))) is not None:
            stats[int(entry)] = s
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        kids.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats and (include_root or pid != root):
            total += stats[pid][1]
        todo.extend(kids.get(pid, []))
    return total


def own_cpu(pid: int) -> float:
    s = _stat(pid)
    return s[1] if s is not None else 0.0


def measure(engine: support.Engine, workers_root: int, workers_include_root: bool,
            games: int, budget_ms: int, mode: str) -> dict[str, Any]:  # fmt: skip
    rows = []
    with Client(engine.address, timeout=120.0) as c:
        for i in range(games):
            g, s, _ = play(c, 100 + i)
            assert s.over
            w0 = tree_cpu(workers_root, include_root=workers_include_root)
            e0 = own_cpu(engine.proc.pid)
            t0 = time.perf_counter()
            reviews = list(c.review(g.game_id, g.token(1), budget_ms=budget_ms))
            wall = time.perf_counter() - t0
            w1 = tree_cpu(workers_root, include_root=workers_include_root)
            e1 = own_cpu(engine.proc.pid)
            t1 = time.perf_counter()
            again = list(c.review(g.game_id, g.token(1), budget_ms=budget_ms))
            again_wall = time.perf_counter() - t1
            assert all(r.stored for r in again) and len(again) == len(reviews)
            row = {
                "game": g.game_id,
                "decisions": len(reviews),
                "budget_ms": reviews[0].budget_ms if reviews else budget_ms,
                "wall_s": round(wall, 2),
                "worker_cpu_s": round(w1 - w0, 2),
                "engine_cpu_s": round(e1 - e0, 2),
                "iterations_median": statistics.median(r.iterations for r in reviews),
                "again_wall_s": round(again_wall, 3),
                "labels": {lbl: sum(r.label.name == lbl for r in reviews)
                           for lbl in ("BEST", "GOOD", "INACCURACY", "MISTAKE", "BLUNDER")},
            }  # fmt: skip
            print(f"  {mode} game {i + 1}: {row}", flush=True)
            rows.append(row)
    return {"games": rows}


def loop_seconds() -> float:
    t = time.time()
    i = 0
    while i < 20_000_000:
        i += 1
    return time.time() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=2)
    ap.add_argument("--budget-ms", type=int, default=0, help="0: the engine's default")
    ap.add_argument("--processes", type=int, default=2, help="AI processes (local or Celery)")
    ap.add_argument("--celery", action="store_true", help="also through Celery and a worker")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results: dict[str, Any] = {"loadavg": os.getloadavg(), "loop_20m_s": round(loop_seconds(), 2)}
    common = {"LOG_LEVEL": "WARNING", "ENGINE_ANALYSIS_GRACE_SECONDS": "30"}
    print("local pool", flush=True)
    e = support.start_engine(ENGINE_AI_DISPATCH="local",
                             ENGINE_LOCAL_AI_PROCESSES=str(args.processes),
                             ENGINE_LOCAL_ANALYSIS_PROCESSES=str(args.processes), **common)  # fmt: skip
    try:
        results["local"] = measure(e, e.proc.pid, False, args.games, args.budget_ms, "local")
    finally:
        e.stop()
    if args.celery:
        with support.redis_server() as url, tempfile.TemporaryDirectory() as tmp:
            e = support.start_engine(url, ENGINE_AI_DISPATCH="celery", CELERY_BROKER_URL=url,
                                     ENGINE_AI_TOKEN_KEYS="benchmark-review-key-0123456789abcdef",
                                     **common)  # fmt: skip
            w = start_worker(url, str(ROOT), Path(tmp), "review",
                             WORKER_CONCURRENCY=str(args.processes))  # fmt: skip
            try:
                print("celery", flush=True)
                results["celery"] = measure(e, w.proc.pid, True, args.games, args.budget_ms,
                                            "celery")  # fmt: skip
            finally:
                w.stop()
                e.stop()
    results["loadavg_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"load average {results['loadavg']} -> {results['loadavg_after']}; "
          f"20M-step Python loop {results['loop_20m_s']} s")  # fmt: skip
    print(f"{'mode':<7} {'decisions':>9} {'budget':>7} {'wall':>8} {'worker CPU':>11} "
          f"{'engine CPU':>11} {'iterations':>10} {'again':>8}")  # fmt: skip
    for mode in ("local", "celery"):
        for r in results.get(mode, {}).get("games", []):
            print(f"{mode:<7} {r['decisions']:>9} {r['budget_ms']:>5}ms {r['wall_s']:>7.1f}s "
                  f"{r['worker_cpu_s']:>10.1f}s {r['engine_cpu_s']:>10.2f}s "
                  f"{r['iterations_median']:>10.0f} {r['again_wall_s'] * 1000:>6.0f}ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
