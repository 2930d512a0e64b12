"""A rating ladder: every pair of bots plays, and one Bradley-Terry fit rates them all.

Each pair plays 2-player games on the same deals, each deal from both seats (``--games`` per
pair, rounded up to whole deals). All results go into one Bradley-Terry fit (maximum
likelihood with a prior of one virtual draw per pair: ``ai_workers/bots/rating.py``); the
ratings are Elo points with 95% intervals relative to the anchor (``heuristic`` at 1000 by
default). The table of pairs gives each result with its Wilson interval, the Elo difference it
implies, and the search speed of the searching bots (iterations per second: a wall-clock budget
gives fewer iterations on a busy machine).

    python benchmarks/ladder.py [--bots random,heuristic,expert,ismcts@100ms,ismcts@1s]
        [--games G] [--sets ss|cotgi|both] [--workers W] [--seed S] [--max-minutes M]
        [--anchor heuristic] [--anchor-rating 1000] [--json]
    python benchmarks/ladder.py --pooled RUN.json [RUN.json ...] [--anchor heuristic]

``--pooled`` plays nothing: it fits the games of earlier runs together (each file holds a
run's output, whose last line is its ``--json`` object), e.g. runs on other deals.

A bot is a spec ``name[@budget][:option=value]...`` (``ai_workers/bots/specs.py``). The
default, 40 games per pair of the five bots, takes about 2 hours on 2 busy cores (the 1 s
bot thinks for a minute a game); ``--max-minutes`` bounds it (only whole deals count).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ai_workers.arena import Result, check_specs, matches, run_matches, wilson
from ai_workers.bots.rating import Rating, fit
from clients.bots_runner import fallback_note, mostly_fallbacks

DEFAULT_BOTS = "random,heuristic,expert,ismcts@100ms,ismcts@1s"


def results_for_fit(results: list[Result]) -> list[tuple[str, str, float]]:
    """(A, B, A's score) per game: 1 if A's seat won, else 0 (2-player games)."""
    return [(m.a, m.b, 1.0 if g.winner == m.a_seat else 0.0) for m, g in results]


def pair_rows(pairs: list[tuple[str, str]], results: list[Result]) -> list[dict[str, Any]]:
    rows = []
    for a, b in pairs:
        rs = [(m, g) for m, g in results if (m.a, m.b) == (a, b)]
        n = len(rs)
        wins = sum(g.winner == m.a_seat for m, g in rs)
        lo, hi = wilson(wins, n)
        it = {a: [0, 0.0], b: [0, 0.0]}
        for m, g in rs:
            for q, st in enumerate(g.stats):
                who = a if q == m.a_seat else b
                it[who][0] += st.iterations
                it[who][1] += st.search_s
        rows.append({
            "a": a, "b": b, "games": n, "wins_a": wins, "win_rate": wins / n if n else 0.0,
            "ci95": [lo, hi], "elo_diff": _elo(wins / n) if n else 0.0,
            "iterations_per_s": {k: (v[0] / v[1] if v[1] else 0.0) for k, v in it.items()},
        })  # fmt: skip
    return rows


def fallbacks_by_bot(results: list[Result]) -> dict[str, tuple[int, int, str]]:
    """Per bot: (fallback moves, decisions, the latest fallback's reason)."""
    out: dict[str, tuple[int, int, str]] = {}
    for m, g in results:
        for q, st in enumerate(g.stats):
            who = m.a if q == m.a_seat else m.b
            f, d, latest = out.get(who, (0, 0, ""))
            out[who] = (f + st.fallbacks, d + st.decisions, st.last_fallback or latest)
    return out


def _elo(p: float) -> float:
    p = min(max(p, 1e-3), 1 - 1e-3)
    return 400.0 * math.log10(p / (1 - p))


def print_report(
    ratings: list[Rating],
    rows: list[dict[str, Any]],
    bots: list[str],
    elapsed: float,
    args: Any,
    fallbacks: dict[str, tuple[int, int, str]] | None = None,
) -> None:
    print(f"\nLadder: 2 players, sets {args.sets}, deals from seed {args.seed} each played from "
          f"both seats; {elapsed / 60:.1f} min on {args.workers} processes")  # fmt: skip
    print(f"\nElo (Bradley-Terry over all {sum(r['games'] for r in rows)} games, "
          f"{args.anchor} = {args.anchor_rating:.0f}, 95% intervals relative to it)")  # fmt: skip
    print(
        f"{'rank':>4s}  {'bot':24s} {'Elo':>6s}  {'95% interval':>15s}  {'games':>5s} {'score':>6s}"
    )
    fallbacks = fallbacks or {}
    for k, rt in enumerate(ratings, 1):
        f, d, _ = fallbacks.get(rt.name, (0, 0, ""))
        elo, ci = f"{rt.elo:6.0f}", f"[{rt.ci95[0]:5.0f}, {rt.ci95[1]:5.0f}]"
        if mostly_fallbacks(f, d):  # the fallback's rating, not the bot's
            elo, ci = f"{'—':>6s}", f"{'—':>15s}"
        elif f:
            elo += " (!)"
        print(f"{k:4d}  {rt.name + (' (!)' if f else ''):24s} {elo}  {ci}  "
              f"{rt.games:5d} {rt.score / max(1, rt.games):6.1%}")  # fmt: skip
    for name, (f, d, latest) in sorted(fallbacks.items()):
        if f:
            print(f"  (!) {fallback_note(name, f, d, latest, 'rating')}")
    print(f"\n{'A vs B':36s} {'games':>5s} {'A wins':>6s} {'rate':>6s}  {'95% CI':>16s}  "
          f"{'Elo diff':>8s}  search it/s")  # fmt: skip
    for r in rows:
        lo, hi = r["ci95"]
        ips = ", ".join(f"{k} {v:.0f}" for k, v in r["iterations_per_s"].items() if v)
        print(f"{r['a'] + ' vs ' + r['b']:36s} {r['games']:5d} {r['wins_a']:6d} "
              f"{r['win_rate']:6.1%}  [{lo:6.1%}, {hi:6.1%}]  {r['elo_diff']:+8.0f}  {ips}")  # fmt: skip
    # cross table: row's win rate against column
    short = {b: b[:12] for b in bots}
    print("\n" + " " * 14 + " ".join(f"{short[b]:>12s}" for b in bots))
    by = {(r["a"], r["b"]): r for r in rows}
    for a in bots:
        cells = []
        for b in bots:
            if a == b:
                cells.append(f"{'-':>12s}")
            elif (a, b) in by:
                cells.append(f"{by[a, b]['win_rate']:12.0%}")
            elif (b, a) in by:
                cells.append(f"{1 - by[b, a]['win_rate']:12.0%}")
            else:
                cells.append(" " * 12)
        print(f"{short[a]:>14s}" + " ".join(cells))


def pooled(paths: list[str], anchor: str, anchor_rating: float) -> list[Rating]:
    """One fit over the games of several runs' ``--json`` outputs; prints the table."""
    games: list[tuple[str, str, float]] = []
    tally: dict[tuple[str, str], list[int]] = {}
    for path in paths:
        last = Path(path).read_text().strip().splitlines()[-1]
        for r in json.loads(last)["pairs"]:
            games += [(r["a"], r["b"], 1.0)] * r["wins_a"]
            games += [(r["a"], r["b"], 0.0)] * (r["games"] - r["wins_a"])
            t = tally.setdefault((r["a"], r["b"]), [0, 0])
            t[0] += r["games"]
            t[1] += r["wins_a"]
    ratings = fit(games, anchor=anchor, anchor_rating=anchor_rating)
    print(f"Elo pooled over {len(paths)} runs, {len(games)} games ({anchor} = {anchor_rating:.0f},"
          " 95% intervals relative to it)")  # fmt: skip
    print(f"{'bot':24s} {'Elo':>6s}  {'95% interval':>15s}  {'games':>5s} {'score':>6s}")
    for rt in ratings:
        print(f"{rt.name:24s} {rt.elo:6.0f}  [{rt.ci95[0]:5.0f}, {rt.ci95[1]:5.0f}]  "
              f"{rt.games:5d} {rt.score / max(1, rt.games):6.1%}")  # fmt: skip
    print(f"\n{'A vs B':36s} {'games':>5s} {'A wins':>6s}  {'95% CI':>16s}")
    for (a, b), (n, w) in tally.items():
        lo, hi = wilson(w, n)
        print(f"{a + ' vs ' + b:36s} {n:5d} {w:6d}  [{lo:6.1%}, {hi:6.1%}]")
    return ratings


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--bots", default=DEFAULT_BOTS, help="comma-separated bot specs")
    ap.add_argument("--games", type=int, default=40, help="games per pair (default 40)")
    ap.add_argument("--budget-ms", type=int, default=100, help="budget of specs without @")
    ap.add_argument("--sets", choices=["ss", "cotgi", "both"], default="both")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes")
    ap.add_argument("--seed", type=int, default=1, help="first deal's seed")
    ap.add_argument("--max-minutes", type=float, default=0.0, help="stop taking games after this")
    ap.add_argument("--progress-s", type=float, default=60.0, help="seconds between progress lines")
    ap.add_argument("--anchor", default="heuristic", help="the bot whose rating is fixed")
    ap.add_argument("--anchor-rating", type=float, default=1000.0)
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    ap.add_argument("--pooled", nargs="+", metavar="RUN", help="fit earlier runs' outputs together")
    args = ap.parse_args()
    if args.pooled:
        ratings = pooled(args.pooled, args.anchor, args.anchor_rating)
        if args.json:
            print(json.dumps({"benchmark": "ladder-pooled", "runs": args.pooled, "ratings": [
                {"bot": r.name, "elo": r.elo, "ci95": list(r.ci95), "games": r.games,
                 "score": r.score} for r in ratings]}))  # fmt: skip
        return
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    if len(bots) < 2:
        ap.error("--bots needs at least two bots")
    check_specs(bots)  # fail early on an unknown name
    if args.anchor not in bots:
        args.anchor = bots[0]
    pairs = [(bots[i], bots[j]) for i in range(len(bots)) for j in range(i + 1, len(bots))]
    deals = max(1, -(-args.games // 2))
    todo = matches(pairs, deals, players=2, first_seed=args.seed, sets=args.sets,
                   budget_ms=args.budget_ms)  # fmt: skip
    # slow pairs last within each deal does not matter: all run in parallel; cheap pairs
    # simply finish first

    def brief(results: list[Result]) -> str:
        return ", ".join(f"{r['a']}-{r['b']} {r['wins_a']}/{r['games']}"
                         for r in pair_rows(pairs, results))  # fmt: skip

    t0 = time.time()
    results = run_matches(todo, args.workers, max_minutes=args.max_minutes,
                          progress_s=args.progress_s, progress=brief)  # fmt: skip
    elapsed = time.time() - t0
    ratings = fit(results_for_fit(results), anchor=args.anchor, anchor_rating=args.anchor_rating)
    rows = pair_rows(pairs, results)
    fallbacks = fallbacks_by_bot(results)
    print_report(ratings, rows, bots, elapsed, args, fallbacks)
    if args.json:
        print(json.dumps({
            "benchmark": "ladder", "sets": args.sets, "deals": deals, "first_seed": args.seed,
            "workers": args.workers, "elapsed_s": round(elapsed, 1), "anchor": args.anchor,
            "ratings": [{"bot": r.name, "elo": r.elo, "ci95": list(r.ci95), "games": r.games,
                         "score": r.score, "fallbacks": fallbacks.get(r.name, (0, 0, ""))[0],
                         "decisions": fallbacks.get(r.name, (0, 0, ""))[1],
                         "own": not mostly_fallbacks(*fallbacks.get(r.name, (0, 0, ""))[:2])}
                        for r in ratings],
            "pairs": rows,
        }))  # fmt: skip


if __name__ == "__main__":
    main()
