"""The ladder's Bradley-Terry fit on synthetic results from known ratings."""

from __future__ import annotations

import random

import pytest

from ai_workers.bots.rating import expected_score, fit

TRUE = {"a": 0.0, "b": 150.0, "c": 400.0, "d": 700.0}


def synthetic(games: int, seed: int | None = None) -> list[tuple[str, str, float]]:
    """Every pair plays ``games`` games; with a seed the results are drawn at random, else
    each pair scores exactly its expected share (rounded)."""
    rnd = random.Random(seed)
    out = []
    names = list(TRUE)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            p = expected_score(TRUE[a], TRUE[b])
            if seed is None:
                w = round(games * p)
                out += [(a, b, 1.0)] * w + [(a, b, 0.0)] * (games - w)
            else:
                out += [(a, b, 1.0 if rnd.random() < p else 0.0) for _ in range(games)]
    return out


def test_exact_results_give_back_the_ratings() -> None:
    ratings = {r.name: r for r in fit(synthetic(2000), anchor="a")}
    for name, elo in TRUE.items():
        assert ratings[name].elo == pytest.approx(elo, abs=6)
    assert ratings["a"].ci95 == (0.0, 0.0)  # the anchor is the reference
    assert [r.name for r in fit(synthetic(2000))] == ["d", "c", "b", "a"]


def test_intervals_cover_the_truth_and_shrink_with_more_games() -> None:
    covered = 0
    for seed in range(10):
        for r in fit(synthetic(200, seed), anchor="a"):
            covered += r.ci95[0] <= TRUE[r.name] <= r.ci95[1]
    assert covered >= 27  # 30 intervals (the anchor's excluded) at 95%
    small = {r.name: r.ci95[1] - r.ci95[0] for r in fit(synthetic(100, 1), anchor="a")}
    large = {r.name: r.ci95[1] - r.ci95[0] for r in fit(synthetic(1600, 1), anchor="a")}
    for name in ("b", "c", "d"):
        assert large[name] < 0.4 * small[name]


def test_a_clean_sweep_stays_finite_and_far_ahead() -> None:
    results = (
        [("strong", "weak", 1.0)] * 50 + [("weak", "mid", 0.0)] * 25 + [("weak", "mid", 1.0)] * 25
    )
    ratings = {r.name: r for r in fit(results, anchor="weak", anchor_rating=1000.0)}
    assert 1400 < ratings["strong"].elo < 2000
    assert ratings["mid"].elo == pytest.approx(1000, abs=1)
    assert ratings["strong"].games == 50 and ratings["strong"].score == 50


def test_mean_anchoring_and_bad_input() -> None:
    ratings = fit(synthetic(500))
    assert sum(r.elo for r in ratings) == pytest.approx(0.0, abs=1e-6)
    assert all(r.ci95[0] < r.elo < r.ci95[1] for r in ratings)
    with pytest.raises(ValueError, match="cannot play itself"):
        fit([("a", "a", 1.0)])
    with pytest.raises(ValueError, match="played no game"):
        fit(synthetic(10), anchor="z")
    assert fit([]) == []
