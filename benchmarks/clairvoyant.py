"""What hidden information and the search's horizon cost: an ISMCTS that sees everything.

A *clairvoyant* search is the ISMCTS bot with one change: every iteration starts from the true
state (every hand, every deck order, the center deck and the RNG, so the future shuffles too)
instead of a sample of what the seat cannot see. What still stands between it and winning every
game is the search itself (its horizon, its evaluation, its model of the other seat) and the
deal. It plays ``--games`` games against ``heuristic``, each deal from both seats, at a fixed
number of iterations per decision (so the machine's load changes nothing); the fair search on
the same deals is ``benchmarks/strength.py --bots ismcts@300it --vs heuristic --seed S``.

    python benchmarks/clairvoyant.py [--iterations 300] [--games 80] [--seed 9001]
        [--options tree_turns=1,rollout_eps=0] [--sets both] [--workers W] [--json]

``--options`` are ISMCTS options (docs/bots.md): ``tree_turns=1,rollout_eps=0`` plays the other
seat's turn with the heuristic's own policy, an exact model of this opponent;
``horizon_turns=60`` plays every rollout to the end of the game. A benchmark, never a bot: the
service's bots only ever see their seat's view.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ai_workers.arena import wilson
from ai_workers.bots.ismcts import parse_options, search
from ai_workers.bots.registry import load_bot
from ai_workers.bots.settings import BotSettings
from engine_service import rules

# seed, the clairvoyant seat, iterations, sets, ISMCTS options
Job = tuple[int, int, int, str, dict[str, object]]


def _true_state(s: rules.State) -> Callable[[rules.View, int], rules.State]:
    """A deal that ignores the view and its seed: a copy of the true state, every time."""
    true = s.clone()
    return lambda _view, _seed: true.clone()


def play(job: Job) -> dict[str, Any]:
    """One game: the clairvoyant search in ``seat`` against the heuristic."""
    seed, seat, iterations, sets, raw = job
    options = parse_options(raw)
    heuristic = load_bot("heuristic")
    s = rules.new_game(rules.GameConfig(sets=sets, players=2, seed=seed))
    first = s.first
    while not s.over:
        p = s.to_move()
        legal = rules.legal_actions(s)
        if len(legal) == 1:
            rules.apply(s, legal[0])
            continue
        view = rules.view(s, p)
        if p == seat:
            settings = BotSettings(name="ismcts", iterations=iterations, seed=seed * 8 + p)
            a = search(view, legal, settings, options, deal=_true_state(s)).action
        else:
            a = heuristic.choose(view, legal, BotSettings(name="heuristic", seed=seed * 8 + p))
        rules.apply(s, a)
    scores = rules.scores(s)
    return {"seed": seed, "seat": seat, "first": first, "won": rules.winner(s) == seat,
            "margin": scores[seat] - scores[1 - seat], "turns": s.turn}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--iterations", type=int, default=300, help="per decision (default 300)")
    ap.add_argument("--games", type=int, default=80, help="rounded up to whole deals")
    ap.add_argument("--seed", type=int, default=9001, help="first deal's seed")
    ap.add_argument("--options", default="", help="ISMCTS options, e.g. tree_turns=1,rollout_eps=0")
    ap.add_argument("--sets", choices=["ss", "cotgi", "both"], default="both")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes")
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = ap.parse_args()
    raw: dict[str, object] = dict(kv.split("=", 1) for kv in args.options.split(",") if kv.strip())
    parse_options(raw)  # a bad option fails here, not in every worker
    if args.iterations <= 0:
        ap.error("--iterations must be > 0")
    deals = max(1, -(-args.games // 2))
    jobs: list[Job] = [(args.seed + k, seat, args.iterations, args.sets, raw)
                       for k in range(deals) for seat in (0, 1)]  # fmt: skip
    t0 = time.time()
    games: list[dict[str, Any]] = []
    with ProcessPoolExecutor(args.workers) as ex:
        for g in ex.map(play, jobs):
            games.append(g)
            if len(games) % 10 == 0 or len(games) == len(jobs):
                won = sum(x["won"] for x in games)
                print(f"[{(time.time() - t0) / 60:5.1f} min] {len(games)}/{len(jobs)} games, "
                      f"{won} won", file=sys.stderr, flush=True)  # fmt: skip
    n = len(games)
    won = sum(g["won"] for g in games)
    lo, hi = wilson(won, n)
    margin = sum(g["margin"] for g in games) / n
    label = f"clairvoyant ismcts@{args.iterations}it" + (f":{args.options}" if args.options else "")
    print(f"{label} vs heuristic: {won}/{n} = {won / n:.1%} [{lo:.1%}, {hi:.1%}], "
          f"mean margin {margin:+.1f} Honor, {time.time() - t0:.0f} s")  # fmt: skip
    lost = [f"{g['seed']}/{g['seat']} ({g['margin']:+d})" for g in games if not g["won"]]
    print("lost (deal/seat, margin): " + (", ".join(lost) or "none"))
    if args.json:
        print(json.dumps({"benchmark": "clairvoyant", "bot": label, "iterations": args.iterations,
                          "options": raw, "sets": args.sets, "first_seed": args.seed,
                          "games": n, "wins": won, "win_rate": won / n, "ci95": [lo, hi],
                          "mean_margin": margin, "results": games}))  # fmt: skip


if __name__ == "__main__":
    main()
