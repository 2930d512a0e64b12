"""benchmarks/ladder.py --pooled: earlier runs' games fitted together, as one run of them all."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from ai_workers.bots.rating import fit


def _ladder() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "ladder.py"
    spec = importlib.util.spec_from_file_location("bench_ladder", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _run(path: Path, pairs: list[tuple[str, str, int, int]]) -> None:
    rows = [{"a": a, "b": b, "games": n, "wins_a": w} for a, b, n, w in pairs]
    path.write_text(
        "progress lines...\n" + json.dumps({"benchmark": "ladder", "pairs": rows}) + "\n"
    )


def test_pooled_runs_fit_as_one(tmp_path: Path) -> None:
    _run(tmp_path / "one.json", [("x", "heuristic", 10, 7), ("x", "y", 10, 3)])
    _run(tmp_path / "two.json", [("y", "heuristic", 12, 11), ("x", "heuristic", 6, 4)])
    got = _ladder().pooled(
        [str(tmp_path / "one.json"), str(tmp_path / "two.json")], "heuristic", 1000.0
    )
    games = (
        [("x", "heuristic", 1.0)] * 11 + [("x", "heuristic", 0.0)] * 5
        + [("x", "y", 1.0)] * 3 + [("x", "y", 0.0)] * 7
        + [("y", "heuristic", 1.0)] * 11 + [("y", "heuristic", 0.0)] * 1
    )  # fmt: skip
    want = fit(games, anchor="heuristic", anchor_rating=1000.0)
    assert [(r.name, round(r.elo, 6), r.games) for r in got] == [
        (r.name, round(r.elo, 6), r.games) for r in want
    ]
    assert {r.name: r.games for r in got} == {"x": 26, "y": 22, "heuristic": 28}
