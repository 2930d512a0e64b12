"""The chances players are shown: the search's raw chances through the fitted scaling
(ai_workers/chances.py). What holds for any weights the fit gives, that the fit finds the
scaling that made the outcomes, and that hints show the scaled chances."""

from __future__ import annotations

import random

import pytest

from ai_workers import chances, fit_chances
from ai_workers.analysis import analyse_view
from ai_workers.bots.evaluation import pool_left
from engine_service import rules


@pytest.mark.parametrize("taken", [0.0, 0.4, 0.9])
def test_two_seats_still_sum_to_one_and_keep_their_order(taken: float) -> None:
    before = None
    for p in (0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95):
        for first in (0, 1):
            a, b = chances.shown([p, 1.0 - p], first, taken)
            assert a + b == pytest.approx(1.0) and 0.0 < a < 1.0
        a, _ = chances.shown([p, 1.0 - p], 0, taken)
        assert before is None or a > before  # (a higher raw chance is shown higher)
        before = a


def test_a_certain_outcome_stays_certain_and_more_seats_sum_to_one() -> None:
    assert chances.shown([1.0, 0.0], 0, 1.0) == [1.0, 0.0]
    assert chances.shown([0.0, 1.0], 1, 0.2) == [0.0, 1.0]
    three = chances.shown([0.6, 0.3, 0.1], 2, 0.5)
    assert sum(three) == pytest.approx(1.0) and three[0] > three[1] > three[2]


def test_the_fit_finds_the_scaling_that_made_the_outcomes() -> None:
    """Outcomes drawn from a known scaling of raw chances: the fit gives it back."""
    rnd = random.Random(7)
    a, b, c = 0.7, -0.2, 0.15
    rows = []
    for game in range(4000):
        taken, order = rnd.random(), game % 2
        p = min(0.98, max(0.02, rnd.betavariate(2, 2)))
        z = (a + b * taken) * chances.logit(p) + c * (1.0 if order else -1.0)
        rows.append({"game": game, "chance": p, "taken": taken, "order": order,
                     "won": int(rnd.random() < chances.sigmoid(z))})  # fmt: skip
    fa, fb, fc = fit_chances.fit(rows)
    assert fa == pytest.approx(a, abs=0.12) and fb == pytest.approx(b, abs=0.25)
    assert fc == pytest.approx(c, abs=0.1)


def test_hints_show_the_scaled_chances_of_the_search() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=12))
    rnd = random.Random(2)
    while s.turn < 6 or len(rules.legal_actions(s)) < 3:
        rules.apply(s, rnd.choice(rules.legal_actions(s)))
    seat = s.to_move()
    view = rules.view(s, seat)
    legal = rules.legal_actions(s)
    raw = analyse_view(view, legal, 0, 200, 1, raw=True)["candidates"]
    out = analyse_view(view, legal, 0, 200, 1)["candidates"]
    assert [c[:2] for c in out] == [c[:2] for c in raw]  # (the same search: visits, order)
    taken = 1.0 - pool_left(s)
    for r, c in zip(raw, out, strict=True):
        if r[3]:
            want = chances.shown(r[3], s.first, taken)
            assert c[3] == pytest.approx(want) and c[2] == pytest.approx(want[seat])
            assert c[4] == pytest.approx(chances.scaled_error(r[4], r[2], c[2], taken))
