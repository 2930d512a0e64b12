"""ISMCTS options (tree reuse, progressive widening, backups), the per-action analysis the hint
service uses, and the benchmarks' bot specs."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import replace

import pytest

from ai_workers.arena import play_game
from ai_workers.bots import BotSettings
from ai_workers.bots.evaluation import (
    PROJECTION,
    WEIGHT_SETS,
    Weights,
    deck_play,
    evaluate,
    evaluate_projection,
    hand_value,
    projected,
    scores_linear,
    seat_stats,
    seat_turns_left,
    turns_left,
)
from ai_workers.bots.fit_eval import FIELDS, fit, projection_features, self_play
from ai_workers.bots.ismcts import ISMCTSBot, SearchOptions, analyse, parse_options, search
from ai_workers.bots.knowledge import HONOR_R, knowledge
from ai_workers.bots.policy import rollout_action
from ai_workers.bots.specs import parse_spec
from engine_service import rules
from engine_service.rules import actions as A
from tests.ai.positions import mid_game_states

FEW = BotSettings(name="ismcts", iterations=60, seed=3)


def main_phase_decision(s: rules.State) -> bool:
    legal = rules.legal_actions(s)
    return (
        s.decision is None
        and len(legal) > 2
        and not any(rules.kind_of(a) in (A.PLAY, A.USE, A.FLIP_COINS) for a in legal)
    )


def test_analysis_lists_every_legal_action_best_first() -> None:
    s = mid_game_states(1)[0]
    legal = rules.legal_actions(s)
    cands = analyse(rules.view(s, s.to_move()), legal, FEW)
    assert sorted(c.action for c in cands) == sorted(legal)
    assert sum(c.visits for c in cands) == 60
    assert all(0.0 <= c.win_probability <= 1.0 and c.description for c in cands)
    keys = [(-c.visits, -c.win_probability) for c in cands]
    assert keys == sorted(keys)
    best = search(rules.view(s, s.to_move()), legal, FEW).action
    assert cands[0].action == best


def test_analysis_also_covers_forced_plays_and_single_answers() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=3))
    while s.decision is not None:
        rules.apply(s, rules.legal_actions(s)[0])
    legal = rules.legal_actions(s)  # playing cards: the bot would not search
    assert search(rules.view(s, s.to_move()), legal, FEW).iterations == 0
    cands = analyse(rules.view(s, s.to_move()), legal, FEW)
    assert sum(c.visits for c in cands) == 60
    one = analyse(rules.view(s, s.to_move()), legal[:1], FEW)
    assert [c.action for c in one] == legal[:1] and one[0].visits == 60


def test_reused_tree_continues_within_the_turn_only() -> None:
    bot = ISMCTSBot(reuse=True)
    s = rules.new_game(rules.GameConfig(sets="both", players=2, seed=5))
    reused = fresh = 0
    settings = BotSettings(name="ismcts", iterations=40, seed=1)
    while not s.over and s.turn < 16:
        p = s.to_move()
        legal = rules.legal_actions(s)
        a = bot.choose(rules.view(s, p), legal, settings)
        assert a in legal
        if bot.last is not None:
            if bot.last.root:
                reused += 1
                assert bot.last.tree is not None and bot.last.tree.visits[bot.last.root] > 40
            else:
                fresh += 1
        rules.apply(s, a)
    assert reused > 3 and fresh > 3


def test_widening_and_paranoid_searches_answer_legal_actions() -> None:
    for s in mid_game_states(3):
        legal = rules.legal_actions(s)
        for opts in (SearchOptions(widening=1.0), SearchOptions(backup="paranoid")):
            r = search(rules.view(s, s.to_move()), legal, FEW, opts)
            assert r.action in legal and r.iterations == 60


def test_a_one_turn_tree_leaves_the_next_turn_to_the_rollout() -> None:
    """tree_turns=1: the tree holds the searching seat's turn only (the next seat's turn is
    played by the policy), where the default tree grows into it."""
    settings = BotSettings(name="ismcts", iterations=400, seed=2)
    for s in mid_game_states(3):
        legal = rules.legal_actions(s)
        me = s.to_move()
        others = {}
        for turns in (1, 2):
            r = search(rules.view(s, me), legal, settings, SearchOptions(tree_turns=turns))
            assert r.action in legal and r.tree is not None
            others[turns] = sum(a != me for a in r.tree.actor[1:])
        assert others[2] > 10 * max(1, others[1])


def test_options_from_text() -> None:
    assert parse_options({"backup": "paranoid", "reuse": "1", "widening": "2"}) == SearchOptions(
        backup="paranoid", reuse=True, widening=2.0
    )
    with pytest.raises(ValueError, match="unknown ismcts option"):
        parse_options({"depth": "3"})
    with pytest.raises(ValueError, match="backup must be"):
        SearchOptions(backup="minimax")


def test_bot_specs() -> None:
    spec = parse_spec("ismcts@1s:backup=paranoid:reuse=1")
    assert (spec.name, spec.time_ms, spec.options) == (
        "ismcts",
        1000,
        (("backup", "paranoid"), ("reuse", "1")),
    )
    assert parse_spec("ismcts@250ms").time_ms == 250
    assert parse_spec("heuristic") == parse_spec(" heuristic ")
    assert parse_spec("heuristic").time_ms is None
    fixed = parse_spec("ismcts@300it:reuse=1")
    assert (fixed.iterations, fixed.time_ms, fixed.options) == (300, None, (("reuse", "1"),))
    with pytest.raises(ValueError, match="iterations must be > 0"):
        parse_spec("ismcts@0it")
    with pytest.raises(ValueError, match="not key=value"):
        parse_spec("ismcts:reuse")


def test_a_fixed_iteration_budget_searches_exactly_that_many() -> None:
    g = play_game([parse_spec("ismcts@20it"), parse_spec("heuristic")], seed=2, sets="ss",
                  budget_ms=1)  # fmt: skip
    st = g.stats[0]
    assert st.searches > 0 and st.iterations == 20 * st.searches


def test_a_three_player_game_between_specs_reports_the_search() -> None:
    g = play_game([parse_spec("ismcts:backup=paranoid"), parse_spec("expert"),
                   parse_spec("heuristic")], seed=4, sets="both", budget_ms=5)  # fmt: skip
    assert g.winner in (0, 1, 2) and len(g.scores) == 3
    assert g.stats[0].searches > 0 and g.stats[0].iterations > 0
    assert g.stats[1].searches == 0 and g.stats[1].decisions > 0


def test_weight_sets_are_named_options_and_change_the_evaluation() -> None:
    assert parse_options({"weights": "ismcts"}).weights == "ismcts"
    with pytest.raises(ValueError, match="weights must be one of"):
        SearchOptions(weights="alphazero")
    s = rules.new_game(rules.GameConfig(sets="both", players=3, seed=3))  # 5 cards in hand
    K = knowledge(s.T)
    stats = [seat_stats(s, q, K) for q in range(s.n)]
    plain = scores_linear(s, stats, K, Weights())
    with_hand = scores_linear(s, stats, K, Weights(hand=1.0))
    hand = hand_value(s, s.active, K)
    assert hand > 0
    for q in range(s.n):  # only the seat to play next gains what its hand holds
        assert with_hand[q] == pytest.approx(plain[q] + (hand if q == s.active else 0.0))
    assert evaluate(s, K, w=WEIGHT_SETS["ismcts"]) != evaluate(s, K)
    s = mid_game_states(1)[0]
    legal = rules.legal_actions(s)
    r = search(rules.view(s, s.to_move()), legal, FEW, SearchOptions(weights="ismcts"))
    assert r.action in legal and r.iterations == 60


def test_fit_rows_from_the_self_play_of_a_bot_spec() -> None:
    rows = self_play(4, "ismcts@10it")
    assert len(rows) > 20 and {y for _, y in rows} == {0, 1}
    assert all(len(x) == len(FIELDS) for x, _ in rows)
    # Each position gives both seats' rows: the same differences, opposite signs and labels.
    (x0, y0), (x1, y1) = rows[0], rows[1]
    assert y0 + y1 == 1 and x0[0] == -x1[0]


def test_the_projection_is_fitted_to_its_own_features() -> None:
    rows = [r for seed in range(12) for r in self_play(seed, features=projection_features)]
    assert all(len(x) == 3 for x, _ in rows)
    (x0, _), (x1, _) = rows[0], rows[1]  # one position, both seats
    assert x0[0] == pytest.approx(-x1[0]) and {x0[2], x1[2]} == {1.0, -1.0}
    w, loss = fit(rows)
    assert w[0] > 0 and w[1] > 0  # a projected lead wins games, at every stage
    assert loss < math.log(2)  # better than a coin


def _always(s: rules.State) -> Callable[[rules.View, int], rules.State]:
    return lambda _view, _seed: s.clone()


def test_a_deal_hook_decides_what_each_iteration_sees() -> None:
    """``deal`` replaces the sampling of hidden cards (benchmarks/clairvoyant.py gives the true
    state): two games that look the same to the seat are then searched apart, where the
    default search cannot tell them apart."""
    from tests.ai.test_hidden_information import other_deal

    for s in mid_game_states(4):
        me = s.to_move()
        t = other_deal(s, me, 1)
        legal = rules.legal_actions(s)
        assert rules.view(s, me).serialize() == rules.view(t, me).serialize()
        fair = [search(rules.view(x, me), legal, FEW).visits for x in (s, t)]
        assert fair[0] == fair[1]
        seen = [search(rules.view(x, me), legal, FEW, deal=_always(x)).visits for x in (s, t)]
        if seen[0] != seen[1]:
            return
    raise AssertionError("the true states never changed the search")


def test_the_policys_deck_figures_are_the_evaluations() -> None:
    """``deck_play`` repeats ``seat_stats``' deck sums for the policy (without the rest): the
    same floats on every seat of many states, and one seat's turns left as all seats' are."""
    seen = 0
    for s in mid_game_states(9):
        K = knowledge(s.T)
        while not s.over and seen < 400:
            for q in range(s.n):
                st = seat_stats(s, q, K)
                assert deck_play(s, q, K) == (st.play_sum, st.size)
                assert seat_turns_left(s, q) == turns_left(s)[q]
            rules.apply(s, rules.legal_actions(s)[-1])
            seen += 1
        seen = 0


def test_the_projection_evaluation_prices_honor_and_future_yield() -> None:
    assert parse_options({"evaluation": "projection"}).evaluation == "projection"
    with pytest.raises(ValueError, match="evaluation must be one of"):
        SearchOptions(evaluation="nnue")
    for s in mid_game_states(6):
        K = knowledge(s.T)
        r = evaluate_projection(s, K)
        assert all(0.0 <= x <= 1.0 for x in r)
        if s.n == 2:  # the logistic of a lead and of its opposite
            assert r[0] + r[1] == pytest.approx(1.0)
        q = (s.active + 1) % s.n
        st = seat_stats(s, q, K)
        base = projected(s, q, st, PROJECTION.econ)
        richer = replace(st, honor=st.honor + 3)
        assert projected(s, q, richer, PROJECTION.econ) == pytest.approx(base + 3 * HONOR_R)
        # a Construct in play yields over every turn the seat has left, at the policy's rate
        stronger = replace(st, turn_sum=st.turn_sum + 2.0)
        rem = seat_turns_left(s, q)
        assert projected(s, q, stronger, PROJECTION.econ) == pytest.approx(
            base + PROJECTION.econ * rem * 2.0
        )
        s.tokens[q] += 10  # ten more Honor: that seat's chance rises, every other's falls
        after = evaluate_projection(s, K)
        assert after[q] > r[q]
        assert all(after[o] < r[o] for o in range(s.n) if o != q)
    s = mid_game_states(1)[0]
    legal = rules.legal_actions(s)
    res = search(rules.view(s, s.to_move()), legal, FEW, SearchOptions(evaluation="projection"))
    assert res.action in legal and res.iterations == 60


def test_a_finished_game_is_scored_alike_by_every_evaluation() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=3, seed=5))
    K = knowledge(s.T)
    rnd = random.Random(5)
    while not s.over:
        rules.apply(s, rollout_action(s, rules.legal_actions(s), K, rnd, 0.1))
    assert evaluate_projection(s, K) == evaluate(s, K)
