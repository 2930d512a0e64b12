"""The balance benchmark's players finish games with the full decks, in every configuration."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BALANCE = Path(__file__).resolve().parents[2] / "benchmarks" / "balance.py"


def _balance() -> ModuleType:
    spec = importlib.util.spec_from_file_location("balance_bench", BALANCE)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("sets", ["ss", "cotgi", "both"])
@pytest.mark.parametrize("policy", ["greedy", "random"])
def test_games_end(sets: str, policy: str) -> None:
    bal = _balance()
    results = [bal.play_game(sets, 2, seed, policy, 0.6) for seed in range(3)]
    assert all(r.finished for r in results)
    assert all(5 <= r.turns < bal.TURN_CAP for r in results)
    report = bal.summarize(sets, 2, policy, results, flag=0.12, min_took=1)
    assert sum(report.honor_split.values()) == pytest.approx(1.0)
    assert any(c.took for c in report.cards)
