"""Where a game review's labels come from: how the bots' own decisions rate.

    python benchmarks/review_thresholds.py [--games 8] [--review-iterations 300]
        [--bots ismcts@400it,heuristic] [--sets ss] [--json]

Plays ``--games`` two-player games between the two bots (each deal twice, the bots swapping
seats) and reviews every decision of both with a real choice, as ``ReviewGame`` does: the
seat's view at that version, one search of ``--review-iterations`` (a fixed count, so that the
figures do not depend on the machine's load), the drop in the seat's chance to win between its
action and the search's best one. Prints, for each bot, the share of its decisions in each
label under the server's thresholds (``engine_service/server/review.py``), the drop's
quantiles, and the shares under a few other threshold sets for comparison.

A label is a claim about a decision; a bot's own decisions are the control: the ISMCTS bot
plays what a search of the same kind prefers, so most of its decisions should rate BEST or
GOOD and few MISTAKE or BLUNDER, while the heuristic (one greedy look, no search) should show
more of the bad labels. Thresholds are chosen so that both hold.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ai_workers.analysis import analyse_view  # noqa: E402
from ai_workers.bots.settings import BotSettings  # noqa: E402
from ai_workers.bots.specs import make_bot, parse_spec  # noqa: E402
from engine_service import rules  # noqa: E402
from engine_service.api.ascension.v1 import engine_pb2 as epb  # noqa: E402
from engine_service.server import review  # noqa: E402
from engine_service.server.analysis import ANALYSIS_SEED, _answer_of_result  # noqa: E402

NAMES = ("BEST", "GOOD", "INACCURACY", "MISTAKE", "BLUNDER")
# Other threshold sets shown beside the server's: (GOOD below, INACCURACY below, MISTAKE below)
ALTERNATIVES = ((0.01, 0.03, 0.06), (0.02, 0.05, 0.10), (0.03, 0.07, 0.15), (0.05, 0.10, 0.20))


def band(drop: float, best: bool, cuts: tuple[float, float, float]) -> str:
    if best:
        return "BEST"
    for name, cut in zip(NAMES[1:], cuts, strict=False):
        if drop < cut:
            return name
    return "BLUNDER"


def review_game(specs: list[str], seed: int, sets: str, iterations: int) -> list[dict[str, Any]]:
    """Play one game and rate every decision of both seats with a real choice."""
    parsed = [parse_spec(x) for x in specs]
    bots = [make_bot(sp) for sp in parsed]
    settings = [
        BotSettings(
            name=sp.name,
            iterations=sp.iterations,
            time_ms=0 if sp.iterations else 300,
            seed=seed * 8 + q,
        )
        for q, sp in enumerate(parsed)
    ]
    s = rules.new_game(rules.GameConfig(sets=sets, players=len(specs), seed=seed))
    rows = []
    while not s.over:
        p = s.to_move()
        legal = rules.legal_actions(s)
        if len(legal) == 1:
            rules.apply(s, legal[0])
            continue
        view = rules.view(s, p)
        action = bots[p].choose(view, legal, settings[p])
        if review.real_choice(s, legal, action):
            # rated as ReviewGame rates it (review.rated: the noise rule, the unspent rule)
            out = analyse_view(view, legal, 0, iterations, ANALYSIS_SEED)
            described = {a: rules.describe_action(s, a) for a in legal}
            d = review.Decision(0, s.turn, action, legal, view, described, s)
            r = review.rated(d, _answer_of_result(out), p, 0)
            focus = review.to_focus(r)
            if focus is not None:  # (searched again, the two alone: as ReviewGame does)
                again = analyse_view(view, focus, 0, iterations, ANALYSIS_SEED)
                r = review.rated(d, _answer_of_result(out), p, 0, _answer_of_result(again))
            best = r.label == epb.REVIEW_LABEL_BEST
            rows.append({
                "bot": specs[p],
                "drop": 0.0 if best else max(0.0, r.best_win_probability - r.win_probability),
                "best": best,
                "label": epb.ReviewLabel.Name(r.label).removeprefix("REVIEW_LABEL_"),
                "undersearched": r.undersearched,
                "turn": s.turn,
            })  # fmt: skip
        rules.apply(s, action)
    return rows


def shares(
    rows: list[dict[str, Any]], cuts: tuple[float, float, float] | None = None
) -> dict[str, float]:
    """Each label's share: the server's own labels (``cuts`` None), or by the drop alone
    under other thresholds (the unspent-resources rule left out)."""
    c = Counter(r["label"] if cuts is None else band(r["drop"], r["best"], cuts) for r in rows)
    n = max(1, len(rows))
    return {k: c[k] / n for k in NAMES}


def quantiles(drops: list[float]) -> dict[str, float]:
    if len(drops) < 2:
        return {}
    q = statistics.quantiles(drops, n=20)
    return {"p50": q[9], "p75": q[14], "p90": q[17], "p95": q[18]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=8, help="deals (each played twice, seats swapped)")
    ap.add_argument("--review-iterations", type=int, default=300)
    ap.add_argument("--bots", default="ismcts@400it,heuristic")
    ap.add_argument("--sets", default="ss")
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    a, b = args.bots.split(",")
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for g in range(args.games):
        for specs in ([a, b], [b, a]):
            rows += review_game(specs, args.seed + g, args.sets, args.review_iterations)
        print(f"deal {g + 1}/{args.games}: {len(rows)} decisions rated, "
              f"{time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)  # fmt: skip
    server = (review.GOOD_BELOW, review.INACCURACY_BELOW, review.MISTAKE_BELOW)
    report: dict[str, Any] = {"review_iterations": args.review_iterations, "thresholds": server,
                              "games": 2 * args.games, "bots": {}}  # fmt: skip
    for bot in (a, b):
        mine = [r for r in rows if r["bot"] == bot]
        report["bots"][bot] = {
            "decisions": len(mine),
            "shares": shares(mine),
            "undersearched": sum(r["undersearched"] for r in mine) / max(1, len(mine)),
            "drop_quantiles_not_best": quantiles([r["drop"] for r in mine if not r["best"]]),
            "alternatives": {str(c): shares(mine, c) for c in ALTERNATIVES},
        }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{2 * args.games} games, {len(rows)} decisions, review search "
          f"{args.review_iterations} iterations; thresholds GOOD < {server[0]}, "
          f"INACCURACY < {server[1]}, MISTAKE < {server[2]}, else BLUNDER")  # fmt: skip
    print(f"{'bot':<16} {'decisions':>9} " + " ".join(f"{n:>10}" for n in NAMES))
    for bot, r in report["bots"].items():
        print(f"{bot:<16} {r['decisions']:>9} "
              + " ".join(f"{100 * r['shares'][n]:>9.1f}%" for n in NAMES))  # fmt: skip
    for bot, r in report["bots"].items():
        print(f"{bot}: {100 * r['undersearched']:.1f}% of its decisions undersearched")
        q = r["drop_quantiles_not_best"]
        print(f"{bot}: drop when not BEST: " + ", ".join(f"{k} {v:.3f}" for k, v in q.items()))
    print("other thresholds (GOOD, INACCURACY, MISTAKE below):")
    for c in ALTERNATIVES:
        line = "; ".join(
            f"{bot} " + "/".join(f"{100 * report['bots'][bot]['alternatives'][str(c)][n]:.0f}"
                                 for n in NAMES)
            for bot in (a, b)
        )  # fmt: skip
        print(f"  {c}: {line}   (% BEST/GOOD/INACCURACY/MISTAKE/BLUNDER)")


if __name__ == "__main__":
    main()
