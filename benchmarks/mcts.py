"""ISMCTS speed: iterations per second on one core, from typical mid-game positions.

Positions come from heuristic self-play (with a little noise so that they vary) of 2-player
games of every set combination, taken at turns 6 to 24 where the seat has a real choice (more
than one legal action, none of them a forced card play). Each position gets the same budget;
the figure is total iterations over total search time. An iteration is: sample the hidden
cards (``rules.determinize``), walk down and grow the tree, play a heuristic rollout to the end
of the turn and evaluate it.

    python benchmarks/mcts.py [--positions N] [--time-ms T | --iterations I] [--seed S] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ai_workers.bots as bots
from ai_workers.bots import BotSettings
from ai_workers.bots.ismcts import search
from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import forced_action, rollout_action
from engine_service import rules

TARGET = 1500.0


@dataclass(frozen=True, slots=True)
class Row:
    position: str
    legal_actions: int
    iterations: int
    seconds: float
    iterations_per_s: float


def positions(count: int, seed: int) -> list[tuple[str, rules.View, list[int]]]:
    out: list[tuple[str, rules.View, list[int]]] = []
    sets = ("ss", "cotgi", "both")
    i = 0
    while len(out) < count:
        cfg = rules.GameConfig(sets=sets[i % 3], players=2, seed=seed * 1000 + i)
        turn = 6 + 3 * (i % 7)
        i += 1
        s = rules.new_game(cfg)
        K = knowledge(s.T)
        rnd = random.Random(cfg.seed)
        while not s.over:
            legal = rules.legal_actions(s)
            if s.turn >= turn and len(legal) > 1 and forced_action(s, legal, K) is None:
                out.append(
                    (f"{cfg.sets} seed {cfg.seed} turn {s.turn}", rules.view(s, s.to_move()), legal)
                )
                break
            rules.apply(s, rollout_action(s, legal, K, rnd, 0.05))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--positions", type=int, default=12, help="positions to search (default 12)")
    ap.add_argument(
        "--time-ms", type=int, default=1000, help="search time per position (default 1000)"
    )
    ap.add_argument(
        "--iterations", type=int, default=0, help="iterations per position instead of time"
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = ap.parse_args()

    budget = (
        BotSettings(iterations=args.iterations, seed=args.seed)
        if args.iterations
        else BotSettings(time_ms=args.time_ms, seed=args.seed)
    )
    rows = []
    for label, view, legal in positions(args.positions, args.seed):
        r = search(view, legal, budget)
        rows.append(Row(label, len(legal), r.iterations, r.seconds, r.iterations_per_second))
        if not args.json:
            print(
                f"{label:32s} {len(legal):3d} actions {r.iterations:7d} it {r.iterations_per_second:9.0f} it/s"
            )
    total_it = sum(r.iterations for r in rows)
    total_s = sum(r.seconds for r in rows)
    ips = total_it / total_s if total_s else 0.0
    per = [r.iterations_per_s for r in rows]
    summary = {
        "benchmark": "mcts",
        "positions": len(rows),
        "budget": {"iterations": args.iterations} if args.iterations else {"time_ms": args.time_ms},
        "iterations": total_it,
        "seconds": round(total_s, 3),
        "iterations_per_s": round(ips, 1),
        "median_iterations_per_s": round(statistics.median(per), 1),
        "min_iterations_per_s": round(min(per), 1),
        "target_iterations_per_s": TARGET,
        "meets_target": ips >= TARGET,
        "rules_build": rules.BUILD,
        "search_build": bots.BUILD,
        "per_position": [asdict(r) for r in rows],
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"\nISMCTS ({rules.BUILD} rules, {bots.BUILD} search): {ips:.0f} iterations/s over {len(rows)} positions "
              f"(median {summary['median_iterations_per_s']:.0f}, min {summary['min_iterations_per_s']:.0f}; "
              f"target {TARGET:.0f}: {'met' if ips >= TARGET else 'NOT met'})")  # fmt: skip


if __name__ == "__main__":
    main()
