"""benchmarks/strength.py: the per-pair summary its --json keeps (win rate beside the fair
share 1/N, a 95% interval, the target), on synthetic games."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ai_workers.arena import GameRecord, Match, Result, SeatStats, wilson


def _strength() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "strength.py"
    spec = importlib.util.spec_from_file_location("bench_strength", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _games(players: int, deals: int, a_wins_when: set[tuple[int, int]]) -> list[Result]:
    """Every deal from every seat of A; A wins the (deal, seat) games listed."""
    out: list[Result] = []
    for d in range(deals):
        for seat in range(players):
            winner = seat if (d, seat) in a_wins_when else (seat + 1) % players
            scores = tuple(30 if q == winner else 20 for q in range(players))
            stats = tuple(SeatStats(5, 0.5, 2, 1000, 0.4) for _ in range(players))
            g = GameRecord(100 + d, ("x",) * players, d % players, winner, scores, 20, stats)
            out.append((Match("ismcts", "heuristic", 100 + d, seat, players), g))
    return out


@pytest.mark.parametrize("players", [3, 4])
def test_pairs_keep_win_rate_fair_share_and_interval(players: int) -> None:
    mod = _strength()
    deals = 10
    wins = {(d, s) for d in range(deals) for s in range(players) if (d + s) % 2 == 0}
    args = argparse.Namespace(players=players, budget_ms=100, replays=1)
    rows = mod.summarize([("ismcts", "heuristic")], _games(players, deals, wins), args)
    (row,) = json.loads(json.dumps(rows))  # what --json prints under "pairs"
    games = deals * players
    assert row["games"] == games and row["wins_a"] == len(wins)
    assert row["win_rate"] == pytest.approx(len(wins) / games)
    assert row["fair_share"] == pytest.approx(1 / players)
    assert row["ci95"] == pytest.approx(list(wilson(len(wins), games)))
    assert row["ci95"][0] < row["win_rate"] < row["ci95"][1]
    assert row["share_ratio"] == pytest.approx(row["win_rate"] * players)
    assert row["target"] == pytest.approx(2 / players)  # twice the fair share
    assert row["meets_target"] == (row["ci95"][0] >= 2 / players)
    assert sum(row["games_by_turn_order"]) == games
    assert row["iterations_per_s_a"] == pytest.approx(1000 / 0.4)


def test_two_player_targets() -> None:
    mod = _strength()
    spec = mod.parse_spec
    assert mod.target(spec("ismcts"), spec("heuristic"), 2, 100) == 0.85
    assert mod.target(spec("ismcts@1s"), spec("heuristic"), 2, 100) == 0.95
    assert mod.target(spec("expert"), spec("heuristic"), 2, 100) == 0.60
    assert mod.target(spec("ismcts"), spec("heuristic"), 5, 100) is None


def test_replays_report_how_losses_spread_over_deal_and_seat() -> None:
    mod = _strength()
    replays = 3
    rs: list[Result] = []
    # deal 0 seat 0 lost every replay, deal 0 seat 1 once, deal 1 never, deal 1 seat 1 twice
    lost = {(0, 0): {0, 1, 2}, (0, 1): {2}, (1, 0): set(), (1, 1): {0, 1}}
    stats = tuple(SeatStats(5, 0.5, 2, 1000, 0.4) for _ in range(2))
    for (d, seat), losing in lost.items():
        for r in range(replays):
            winner = 1 - seat if r in losing else seat
            g = GameRecord(100 + d, ("x", "x"), 0, winner, (30, 20), 20, stats)
            rs.append((Match("ismcts", "heuristic", 100 + d, seat, 2, replay=r), g))
    args = argparse.Namespace(players=2, budget_ms=100, replays=replays)
    (row,) = json.loads(json.dumps(mod.summarize([("ismcts", "heuristic")], rs, args)))
    spread = row["loss_spread"]
    assert spread["positions"] == 4 and spread["losses"] == 6
    assert spread["positions_by_losses"] == [1, 1, 1, 1]
    assert spread["share_of_losses_in_positions_mostly_lost"] == pytest.approx(5 / 6)
    without = mod.summarize(
        [("ismcts", "heuristic")], rs, argparse.Namespace(players=2, budget_ms=100, replays=1)
    )
    assert "loss_spread" not in without[0]


def test_replays_play_the_same_deal_with_other_bot_seeds() -> None:
    from ai_workers.arena import matches, play_match

    todo = matches([("random", "heuristic")], 1, first_seed=7, replays=2)
    assert [(m.seed, m.a_seat, m.replay) for m in todo] == [
        (7, 0, 0),
        (7, 0, 1),
        (7, 1, 0),
        (7, 1, 1),
    ]
    first, again, other = play_match(todo[0])[1], play_match(todo[0])[1], play_match(todo[1])[1]
    # a replay is a seed: the same one plays the same game (but for the time it took)
    assert (first.winner, first.scores, first.turns) == (again.winner, again.scores, again.turns)
    assert (first.scores, first.turns) != (other.scores, other.turns)  # another seed, another game


def test_variants_are_compared_game_by_game_on_the_same_deals() -> None:
    mod = _strength()
    stats = tuple(SeatStats(5, 0.5, 2, 1000, 0.4) for _ in range(2))
    won = {  # (deal, seat) -> won by the baseline, by the variant
        (0, 0): (True, True), (0, 1): (False, True), (1, 0): (False, True),
        (1, 1): (True, False), (2, 0): (False, False), (2, 1): (False, True),
    }  # fmt: skip
    rs: list[Result] = []
    for (d, seat), outcome in won.items():
        for bot, w in zip(("ismcts", "ismcts:x=1"), outcome, strict=True):
            scores = (30, 20) if (w == (seat == 0)) else (20, 30)
            g = GameRecord(100 + d, ("x", "x"), 0, seat if w else 1 - seat, scores, 20, stats)
            rs.append((Match(bot, "heuristic", 100 + d, seat, 2), g))
    rs.append((Match("random", "expert", 100, 0, 2), rs[0][1]))  # another opponent: no baseline
    pairs = [("ismcts", "heuristic"), ("ismcts:x=1", "heuristic"), ("random", "expert")]
    (p,) = json.loads(json.dumps(mod.paired(pairs, rs)))
    assert (p["a"], p["baseline"], p["b"], p["games"]) == ("ismcts:x=1", "ismcts", "heuristic", 6)
    assert (p["gained"], p["lost"]) == (3, 1)
    assert p["p_value"] == pytest.approx(2 * 5 / 16)  # P(at most 1 of 4) = 5/16, two-sided
    assert p["mean_margin_gain"] == pytest.approx((3 - 1) * 20 / 6)
    assert mod.sign_test(0, 0) == 1.0 and mod.sign_test(10, 0) == pytest.approx(2 / 1024)


def test_positions_name_deal_and_seat(tmp_path: Path) -> None:
    mod = _strength()
    assert mod.parse_positions("31002:0, 31011:1 31002:1", 2) == {
        (31002, 0), (31011, 1), (31002, 1)
    }
    f = tmp_path / "hard.txt"
    f.write_text("7:2\n8:0\n")
    assert mod.parse_positions(f"@{f}", 3) == {(7, 2), (8, 0)}
    for bad in ("31002", "31002:2", "x:0", ""):
        with pytest.raises(ValueError, match="--positions"):
            mod.parse_positions(bad, 2)


def test_a_stopped_run_keeps_only_deals_played_in_full() -> None:
    from ai_workers.arena import complete_deals

    todo = [Match("a", "b", 5, 0, 2), Match("a", "b", 6, 0, 2), Match("a", "b", 6, 1, 2)]
    g = GameRecord(5, ("x", "x"), 0, 0, (30, 20), 20, ())
    played = [(todo[0], g), (todo[1], g)]  # deal 5 has its one game, deal 6 half of its two
    assert complete_deals(played, todo) == [(todo[0], g)]
