"""A seat's accuracy and key moments, as docs/bots.md ("Game review") computes them."""

from __future__ import annotations

import pytest

from clients.sdk import DecisionReview, ReviewLabel, accuracy, key_moments
from clients.sdk.review import decision_accuracy


def rated(version: int, p: float, p_best: float, label: ReviewLabel) -> DecisionReview:
    return DecisionReview(version, 1, 0, 1, "a", 2, "b", p, p_best, label, (p, 1 - p),
                          1, 1, 100, 100, False)  # fmt: skip


def test_accuracy_is_the_mean_of_each_decisions_score() -> None:
    rs = [
        rated(1, 0.50, 0.52, ReviewLabel.BEST),  # within the noise: 100
        rated(2, 0.47, 0.50, ReviewLabel.INACCURACY),  # 0.03 down: 70
        rated(3, 0.30, 0.50, ReviewLabel.BLUNDER),  # beyond 0.10: 0
        rated(4, 0.45, 0.50, ReviewLabel.MISTAKE),  # 0.05: 50
    ]
    assert [round(decision_accuracy(r)) for r in rs] == [100, 70, 0, 50]
    assert accuracy(rs) == pytest.approx((100 + 70 + 0 + 50) / 4)
    assert accuracy([]) is None


def test_key_moments_are_the_biggest_swings_in_game_order() -> None:
    ps = [0.5, 0.52, 0.26, 0.30, 0.70, 0.68]
    rs = [rated(v, p, p, ReviewLabel.BEST) for v, p in enumerate(ps, start=1)]
    assert [r.version for r in key_moments(rs, 2)] == [3, 5]
    assert key_moments([]) == []
