"""Playing strength: a seat-balanced tournament with paired seeds between bots.

Each pair of bots plays ``--games`` 2-player games: for every seed, one game with the first
bot in seat 0 and one with the seats swapped, from the very same deal. Bots see only their
seat's view, as in the service; a decision with one legal action takes no search. Games run
in parallel on every core (one process each), with a progress bar on stderr. The report gives
each pair's win rate with a 95% confidence interval (Wilson), and the targets: ``ismcts`` beats
``heuristic`` in at least 65% of games, ``heuristic`` beats ``random`` in at least 90%, each
met when the interval's lower end clears it.

    python benchmarks/strength.py [--bots ismcts,heuristic,random] [--games N] [--budget-ms B]
                                  [--all-pairs] [--sets ss|cotgi|both] [--workers W] [--seed S]
                                  [--exploration C] [--json]

By default the bots play a ladder (each against the next in ``--bots``): ismcts vs heuristic
and heuristic vs random, 300 games each at 100 ms per decision (about 20 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ai_workers.bots import BotSettings, load_bot
from ai_workers.bots.settings import DEFAULT_EXPLORATION
from engine_service import rules

TARGETS = {("ismcts", "heuristic"): 0.65, ("heuristic", "random"): 0.90}
Z95 = 1.959964


@dataclass(frozen=True, slots=True)
class Job:
    a: str
    b: str
    seed: int
    a_seat: int
    sets: str
    budget_ms: int
    exploration: float


@dataclass(frozen=True, slots=True)
class Result:
    a: str
    b: str
    seed: int
    a_seat: int
    a_won: bool
    scores: tuple[int, ...]
    turns: int
    decisions: tuple[int, int]  # decisions asked of a, of b (more than one legal action)
    think_s: tuple[float, float]  # time a and b spent choosing


def play(job: Job) -> Result:
    names = [job.b, job.b]
    names[job.a_seat] = job.a
    settings = [
        BotSettings(
            name=n, time_ms=job.budget_ms, seed=job.seed * 2 + q, exploration=job.exploration
        )
        for q, n in enumerate(names)
    ]
    bots = [load_bot(n) for n in names]
    s = rules.new_game(rules.GameConfig(sets=job.sets, players=2, seed=job.seed))
    decisions = [0, 0]
    think = [0.0, 0.0]
    while not s.over:
        p = s.to_move()
        legal = rules.legal_actions(s)
        if len(legal) == 1:
            rules.apply(s, legal[0])
            continue
        t0 = time.perf_counter()
        a = bots[p].choose(rules.view(s, p), legal, settings[p])
        think[p] += time.perf_counter() - t0
        decisions[p] += 1
        rules.apply(s, a)
    ia, ib = job.a_seat, 1 - job.a_seat
    return Result(job.a, job.b, job.seed, job.a_seat, rules.winner(s) == ia, tuple(rules.scores(s)),
                  s.turn, (decisions[ia], decisions[ib]), (think[ia], think[ib]))  # fmt: skip


def wilson(wins: int, n: int, z: float = Z95) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, centre - half), min(1.0, centre + half)


def jobs(pairs: list[tuple[str, str]], games: int, args: argparse.Namespace) -> Iterator[Job]:
    for k in range(games // 2):
        for a, b in pairs:
            for seat in (0, 1):
                yield Job(a, b, args.seed + k, seat, args.sets, args.budget_ms, args.exploration)


def summarize(pairs: list[tuple[str, str]], results: list[Result]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for a, b in pairs:
        rs = [r for r in results if (r.a, r.b) == (a, b)]
        n = len(rs)
        wins = sum(r.a_won for r in rs)
        lo, hi = wilson(wins, n)
        target = TARGETS.get((a, b))
        dec_a = sum(r.decisions[0] for r in rs)
        out.append({
            "a": a, "b": b, "games": n, "wins_a": wins, "win_rate": wins / n if n else 0.0,
            "ci95": [lo, hi],
            "wins_a_by_seat": [sum(r.a_won for r in rs if r.a_seat == q) for q in (0, 1)],
            "mean_turns": sum(r.turns for r in rs) / n if n else 0.0,
            "mean_margin_a": sum(r.scores[r.a_seat] - r.scores[1 - r.a_seat] for r in rs) / n if n else 0.0,
            "decisions_a": dec_a,
            "mean_think_ms_a": 1000 * sum(r.think_s[0] for r in rs) / dec_a if dec_a else 0.0,
            "target": target,
            "meets_target": None if target is None else lo >= target,
        })  # fmt: skip
    return out


def print_table(rows: list[dict[str, Any]], args: argparse.Namespace, elapsed: float) -> None:
    print(f"\nStrength: 2 players, sets {args.sets}, {args.budget_ms} ms per decision, "
          f"paired seeds from {args.seed}, {elapsed / 60:.1f} min on {args.workers} processes")  # fmt: skip
    print(
        f"{'pair':24s} {'games':>5s} {'wins':>5s} {'win rate':>9s}  {'95% CI':>17s}  {'think/dec':>9s}  target"
    )
    for r in rows:
        lo, hi = r["ci95"]
        target = r["target"]
        verdict = "" if target is None else (
            f">= {target:.0%}: {'met' if r['meets_target'] else 'not met'} (lower end {lo:.1%})")  # fmt: skip
        print(f"{r['a'] + ' vs ' + r['b']:24s} {r['games']:5d} {r['wins_a']:5d} {r['win_rate']:9.1%}  "
              f"[{lo:6.1%}, {hi:6.1%}]  {r['mean_think_ms_a']:7.1f}ms  {verdict}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--bots", default="ismcts,heuristic,random", help="comma-separated bot names")
    ap.add_argument("--games", type=int, default=300, help="games per pair (even; default 300)")
    ap.add_argument(
        "--budget-ms", type=int, default=100, help="search time per decision (default 100)"
    )
    ap.add_argument("--all-pairs", action="store_true", help="every pair, not only neighbours")
    ap.add_argument("--sets", choices=["ss", "cotgi", "both"], default="both")
    ap.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="processes (default: CPUs)"
    )
    ap.add_argument("--seed", type=int, default=1, help="first game seed")
    ap.add_argument("--exploration", type=float, default=DEFAULT_EXPLORATION, help="UCT constant")
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = ap.parse_args()
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    for b in bots:
        load_bot(b)  # fail early on an unknown name
    if len(bots) < 2:
        ap.error("--bots needs at least two bots")
    games = max(2, args.games + args.games % 2)
    pairs = (
        [(bots[i], bots[j]) for i in range(len(bots)) for j in range(i + 1, len(bots))]
        if args.all_pairs
        else list(itertools.pairwise(bots))
    )
    todo = list(jobs(pairs, games, args))
    results: list[Result] = []
    t0 = time.time()
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    columns = (TextColumn("games"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"),
               TimeRemainingColumn())  # fmt: skip
    with (
        Progress(*columns, console=console, transient=False) as bar,
        ProcessPoolExecutor(args.workers) as ex,
    ):
        task = bar.add_task("games", total=len(todo))
        for fut in as_completed([ex.submit(play, j) for j in todo]):
            results.append(fut.result())
            bar.advance(task)
            if not console.is_terminal and len(results) % max(1, len(todo) // 10) == 0:
                print(
                    f"games: {len(results)}/{len(todo)} ({time.time() - t0:.0f} s)", file=sys.stderr
                )
    elapsed = time.time() - t0
    rows = summarize(pairs, results)
    print_table(rows, args, elapsed)
    if args.json:
        print(json.dumps({
            "benchmark": "strength", "players": 2, "sets": args.sets, "budget_ms": args.budget_ms,
            "exploration": args.exploration, "games_per_pair": games, "first_seed": args.seed,
            "workers": args.workers, "elapsed_s": round(elapsed, 1), "pairs": rows,
            "games": [asdict(r) for r in sorted(results, key=lambda r: (r.a, r.b, r.seed, r.a_seat))],
        }))  # fmt: skip


if __name__ == "__main__":
    main()
