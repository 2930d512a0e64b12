"""AnalyzePosition (hints) end to end: how long past its budget a hint takes to arrive, and how
many iterations its search runs, through each way the engine can hand it out.

    python benchmarks/analysis.py [--calls 8] [--budget-ms 500] [--json]

Modes (each on its own real processes, loopback only, all stopped at the end):

- ``local``: ``ascension-engine serve`` with its local AI pool (the embedded default);
- ``celery``: the engine on Redis dispatching to Celery, one ``ascension-worker run``
  (concurrency 1): the worker hands the answer back to the engine that waits;
- ``relayed``: the same, but the worker is told to answer at a second engine replica (as a
  load balancer would send it), which leaves the answer in Redis for the waiting one.

For each, ``--calls`` analyses of a mid-game position (one at a time, a new game each so that
the per-seat limits do not apply) at ``--budget-ms``: the overhead is the wall time of the
call less the budget (queueing, process hops, the engine's polling of the store).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clients.sdk import Client, human  # noqa: E402
from engine_service import rules  # noqa: E402
from tests.ai.test_celery_integration import start_worker  # noqa: E402
from tests.service import support  # noqa: E402

KEYS = "benchmark-analysis-key-0123456789abcdef"


def mid_game(client: Client, seed: int) -> tuple[str, str]:
    """A game of two people, played a few turns by the first legal non-ending action."""
    g = client.create_game([human("A"), human("B")], seed=seed, sets="both")
    s = rules.new_game(rules.GameConfig(sets="both", players=2, seed=seed))
    while s.turn < 3 or len(rules.legal_actions(s)) < 3:
        legal = rules.legal_actions(s)
        action = legal[-1] if s.turn < 3 else legal[0]
        client.submit(g.game_id, g.token(s.to_move()), action)
        rules.apply(s, action)
    return g.game_id, g.token(s.to_move())


def measure(address: str, calls: int, budget_ms: int, label: str) -> dict[str, Any]:
    overheads, iterations = [], []
    with Client(address, timeout=60.0) as c:
        for i in range(calls + 1):
            gid, token = mid_game(c, 100 + i)
            t0 = time.perf_counter()
            a = c.analyze(gid, token, budget_ms)
            wall = time.perf_counter() - t0
            if i == 0:
                continue  # warm-up: the first call starts the search process
            overheads.append(wall - budget_ms / 1000)
            iterations.append(a.iterations)
            print(f"  {label}: call {i}/{calls}: {wall * 1000:.0f} ms, {a.iterations} iterations",
                  flush=True)  # fmt: skip
    return {
        "calls": calls,
        "budget_ms": budget_ms,
        "overhead_ms_median": round(statistics.median(overheads) * 1000, 1),
        "overhead_ms_max": round(max(overheads) * 1000, 1),
        "iterations_median": statistics.median(iterations),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--budget-ms", type=int, default=500)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    common = {"ENGINE_ANALYSIS_PER_MINUTE": "0", "ENGINE_ANALYSIS_MAX_BUDGET_MS": "60000",
              "ENGINE_AI_TOKEN_KEYS": KEYS, "LOG_LEVEL": "WARNING"}  # fmt: skip
    results: dict[str, Any] = {}
    print("local pool", flush=True)
    e = support.start_engine(ENGINE_AI_DISPATCH="local", **common)
    try:
        results["local"] = measure(e.address, args.calls, args.budget_ms, "local")
    finally:
        e.stop()
    with support.redis_server() as url, tempfile.TemporaryDirectory() as tmp:
        celery = {**common, "ENGINE_AI_DISPATCH": "celery", "CELERY_BROKER_URL": url}
        b = support.start_engine(url, **celery)
        a = support.start_engine(url, ENGINE_ADVERTISE_ADDRESS=b.address, **celery)
        worker = start_worker(url, str(ROOT), Path(tmp), "bench", WORKER_CONCURRENCY="1")
        try:
            print("celery, answered to the waiting engine", flush=True)
            results["celery"] = measure(b.address, args.calls, args.budget_ms, "celery")
            print("celery, answered to another replica (relayed through Redis)", flush=True)
            results["relayed"] = measure(a.address, args.calls, args.budget_ms, "relayed")
        finally:
            worker.stop()
            a.stop()
            b.stop()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"{'mode':<10} {'calls':>5} {'budget':>7} {'overhead p50':>13} {'max':>8} {'iterations':>11}")
        for mode, r in results.items():
            print(f"{mode:<10} {r['calls']:>5} {r['budget_ms']:>5}ms {r['overhead_ms_median']:>11.0f}ms "
                  f"{r['overhead_ms_max']:>6.0f}ms {r['iterations_median']:>11.0f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
