"""Golden searches: what ISMCTS decides at fixed iterations on fixed positions, kept in a file.

Speed work on the rules engine, the policy or the search loop must not change a single
decision: the search is deterministic for a seed (tests/ai/test_hidden_information.py), so
the same code path gives the same root action, visit counts, mean values and tree size. A
change meant to alter the search (a new evaluation, another rollout policy) updates the file,
and says so in its commit:

    python -m tests.bots.test_search_golden --write
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ai_workers.bots import BotSettings
from ai_workers.bots.ismcts import search
from engine_service import rules
from tests.ai.positions import mid_game_states

GOLDEN = Path(__file__).with_name("golden_search.json")
POSITIONS = 6
SEEDS = (1, 2)
ITERATIONS = 200


def searches() -> list[dict[str, Any]]:
    out = []
    for i, s in enumerate(mid_game_states(POSITIONS)):
        seat = s.to_move()
        view, legal = rules.view(s, seat), rules.legal_actions(s)
        for seed in SEEDS:
            r = search(view, legal, BotSettings(iterations=ITERATIONS, seed=seed))
            out.append(
                {
                    "position": i,
                    "seed": seed,
                    "action": r.action,
                    "iterations": r.iterations,
                    "visits": sorted(r.visits.items()),
                    "values": sorted(r.values.items()),
                    "tree_nodes": len(r.tree) if r.tree is not None else 0,
                }
            )
    return out


def _canonical(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    parsed: list[dict[str, Any]] = json.loads(json.dumps(rows))  # tuples -> lists, as stored
    return parsed


def test_searches_decide_as_recorded() -> None:
    want = json.loads(GOLDEN.read_text())
    got = _canonical(searches())
    assert len(got) == len(want) == POSITIONS * len(SEEDS)
    for g, w in zip(got, want, strict=True):
        assert g == w, f"position {w['position']} seed {w['seed']} searched differently"


def test_the_record_tells_searches_apart() -> None:
    """The file is not trivially matched: seeds and positions give different trees."""
    want = json.loads(GOLDEN.read_text())
    assert len({json.dumps(w["visits"]) for w in want}) > POSITIONS
    assert all(w["iterations"] == ITERATIONS and w["tree_nodes"] > 1 for w in want)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.bots.test_search_golden --write")
    GOLDEN.write_text(json.dumps(_canonical(searches()), indent=None) + "\n")
    print(f"wrote {GOLDEN}")
