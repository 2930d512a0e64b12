"""Honest labels and explained mistakes: a drop within the search's noise is no drop, a move
that gave up an affordable defeat is never GOOD, and the explanation names the card."""

from __future__ import annotations

import base64
import random

import pytest

from ai_workers.analysis import analyse_payload, analyse_view
from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import rollout_action
from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.rules import actions as A
from engine_service.server import explain, review
from engine_service.server.analysis import ANALYSIS_SEED, Answer, Candidate, _answer_of_result

BEST, GOOD, MISTAKE = epb.REVIEW_LABEL_BEST, epb.REVIEW_LABEL_GOOD, epb.REVIEW_LABEL_MISTAKE


def test_a_drop_within_the_noise_is_best() -> None:
    # 2 points down with standard errors of 1 point each: within 2 SE of the difference
    assert review.label(5, 6, 0.51, 0.53, 0.01, 0.01) == BEST
    # the same drop from a precise search is a real one
    assert review.label(5, 6, 0.515, 0.53, 0.001, 0.001) == GOOD
    # a large drop is labelled whatever the noise
    assert review.label(5, 6, 0.30, 0.53, 0.02, 0.02) == epb.REVIEW_LABEL_BLUNDER
    assert review.label(5, 5, 0.1, 0.9, 0.0, 0.0) == BEST  # the search's own choice


def test_a_wasted_move_is_at_least_a_mistake() -> None:
    assert review.label(5, 6, 0.53, 0.53, 0.05, 0.05, wasted=True) == MISTAKE
    assert review.label(5, 6, 0.3, 0.53, 0.0, 0.0, wasted=True) == epb.REVIEW_LABEL_BLUNDER
    assert review.label(5, 5, 0.53, 0.53, 0.0, 0.0, wasted=True) == BEST  # the search agrees


def free_defeat(seed: int) -> rules.State:
    """A state where the seat to move may end its turn while it can afford a defeat."""
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=seed))
    K = knowledge(s.T)
    rnd = random.Random(seed)
    while not s.over:
        legal = rules.legal_actions(s)
        if A.END_TURN << 16 in legal and any(a >> 16 == A.DEFEAT for a in legal):
            return s
        rules.apply(s, rollout_action(s, legal, K, rnd, 0.2))
    raise AssertionError("no affordable defeat in the game")


def decision(s: rules.State, action: int) -> review.Decision:
    legal = rules.legal_actions(s)
    seat = s.to_move()
    described = {a: rules.describe_action(s, a) for a in legal}
    return review.Decision(1, s.turn, action, legal, rules.view(s, seat), described, s.clone())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ending_the_turn_with_a_free_defeat_is_never_good(seed: int) -> None:
    s = free_defeat(seed)
    end = A.END_TURN << 16
    d = decision(s, end)
    defeats = [a for a in d.legal if a >> 16 == A.DEFEAT]
    monster = s.T.names[s.center[defeats[0] & 0xFFFF]] if (defeats[0] & 0xFFFF) < 6 else ""
    # whatever the search's chances, as long as it prefers another move
    for p_end in (0.50, 0.505, 0.52):
        answer = Answer(
            [Candidate(defeats[0], 300, 0.51, (), 0.01), Candidate(end, 200, p_end, (), 0.01)],
            500,
        )
        r = review.rated(d, answer, s.to_move(), 100)
        assert r.label not in (BEST, GOOD), (p_end, r.label)
        assert f"left {s.power} Power unspent" in r.explanation
        assert monster in r.explanation
        assert [c.action for c in r.candidates] == [defeats[0], end]
    # and from a real search of what the seat saw
    view = base64.b64encode(d.view.serialize()).decode()
    out = analyse_payload(view=view, legal=d.legal, budget_ms=60_000, iterations=200,
                          seed=ANALYSIS_SEED)  # fmt: skip
    r = review.rated(d, _answer_of_result(out), s.to_move(), 100)
    assert r.label != GOOD
    if r.best_action != end:
        assert r.label >= MISTAKE and "Power unspent" in r.explanation


def test_a_banished_card_is_named() -> None:
    s = free_defeat(4)
    T = s.T
    seat = s.to_move()
    card = max(explain._own_cards(s, seat), key=lambda c: T.cost[c])  # the best card
    action = A.BANISH_HAND << 16 | card
    why = explain.explain(s, seat, [action, A.END_TURN << 16], action, A.END_TURN << 16)
    assert T.names[card] in why and why.startswith("banished")
    if T.cost[card] > 0:
        assert why.endswith("your best card")


def test_each_rated_action_carries_visits_and_a_standard_error() -> None:
    s = free_defeat(5)
    legal = rules.legal_actions(s)
    out = analyse_view(rules.view(s, s.to_move()), legal, 60_000, iterations=200)
    cands = out["candidates"]
    assert sum(c[1] for c in cands) == out["iterations"] == 200
    for _, visits, _p, _, se in cands:
        if visits >= 2:
            assert 0.0 <= se < 0.5
            # the standard error shrinks with visits: at most the spread of a 0..1 value
            assert se <= 0.5 / visits**0.5 + 1e-9
    r = review.rated(decision(s, legal[0]), _answer_of_result(out), s.to_move(), 100)
    assert r.visits + r.best_visits > 0 and len(r.candidates) == len(legal)
    assert r.undersearched == (min(r.visits, r.best_visits) < review.MIN_VISITS)


def test_an_undersearched_decision_is_searched_again_with_its_two_actions_alone() -> None:
    """A search spends few iterations on what its first samples rated low, and those few rate
    it too low: the played and the best action are searched again, alone, and rated from it."""
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=3))
    rnd = random.Random(1)
    while len(rules.legal_actions(s)) < 6:
        rules.apply(s, rnd.choice(rules.legal_actions(s)))
    legal = rules.legal_actions(s)
    played, best, other = legal[0], legal[1], legal[2]
    d = decision(s, played)
    first = Answer([Candidate(best, 280, 0.50, (), 0.01), Candidate(other, 12, 0.45, (), 0.04),
                    Candidate(played, 8, 0.38, (), 0.05)], 300)  # fmt: skip
    r = review.rated(d, first, s.to_move(), 100)
    assert r.undersearched and review.to_focus(r) == [best, played]
    # alone, the played action holds its own: as good as the best
    focus = Answer([Candidate(best, 160, 0.49, (), 0.01), Candidate(played, 140, 0.495, (), 0.01)], 300)
    again = review.rated(d, first, s.to_move(), 100, focus)
    assert (again.label, again.best_action, again.undersearched) == (BEST, played, False)
    assert (again.visits, again.iterations) == (140, 600)
    assert [c.action for c in again.candidates] == [played, best, other]
    assert review.to_focus(again) is None
    # alone, it is as bad as it looked: still a blunder, now from enough visits to say so
    focus = Answer([Candidate(best, 200, 0.52, (), 0.01), Candidate(played, 100, 0.36, (), 0.01)], 300)
    again = review.rated(d, first, s.to_move(), 100, focus)
    assert again.label == epb.REVIEW_LABEL_BLUNDER and not again.undersearched
    # and from real searches of the seat's view
    view = rules.view(s, s.to_move())
    full = review.rated(d, _answer_of_result(analyse_view(view, legal, 0, 300, ANALYSIS_SEED)),
                        s.to_move(), 100)  # fmt: skip
    two = review.to_focus(full)
    if two is not None:
        alone = _answer_of_result(analyse_view(view, two, 0, 300, ANALYSIS_SEED))
        assert {c.action for c in alone.candidates} == set(two)
        assert min(c.visits for c in alone.candidates) >= review.MIN_VISITS
