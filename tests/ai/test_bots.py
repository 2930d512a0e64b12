"""The built-in bots on real positions: legal answers, and the heuristic is no random player."""

from __future__ import annotations

import time

import pytest

from ai_workers.bots import BotSettings, load_bot
from ai_workers.bots.ismcts import search
from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import forced_action
from engine_service import rules
from tests.ai.positions import mid_game_states

BOTS = {
    "random": BotSettings(name="random", seed=1),
    "heuristic": BotSettings(name="heuristic"),
    "ismcts": BotSettings(name="ismcts", iterations=40, seed=1),
    "greedy-honor": BotSettings(name="greedy-honor"),
}


def play(names: list[str], seed: int, sets: str = "both") -> rules.State:
    s = rules.new_game(rules.GameConfig(sets=sets, players=len(names), seed=seed))
    while not s.over:
        p = s.to_move()
        legal = rules.legal_actions(s)
        a = load_bot(names[p]).choose(rules.view(s, p), legal, BOTS[names[p]])
        assert a in legal, (names[p], a, legal)
        rules.apply(s, a)
    return s


@pytest.mark.parametrize("name", sorted(BOTS))
def test_every_bot_answers_legal_actions_on_mid_game_positions(name: str) -> None:
    bot = load_bot(name)
    for s in mid_game_states(6):
        p = s.to_move()
        legal = rules.legal_actions(s)
        assert bot.choose(rules.view(s, p), legal, BOTS[name]) in legal


@pytest.mark.parametrize("sets", ["ss", "cotgi"])
def test_heuristic_beats_random(sets: str) -> None:
    wins = 0
    for seed in range(3):
        for seat in (0, 1):
            names = ["random", "random"]
            names[seat] = "heuristic"
            wins += rules.winner(play(names, seed, sets)) == seat
    assert wins == 6


def test_plugin_and_ismcts_finish_a_three_player_game() -> None:
    s = play(["greedy-honor", "ismcts", "heuristic"], seed=5, sets="both")
    assert s.over


def test_a_single_legal_action_takes_no_search() -> None:
    s = mid_game_states(1)[0]
    v = rules.view(s, s.to_move())
    settings = BotSettings(name="ismcts", time_ms=5_000)
    t0 = time.perf_counter()
    r = search(v, rules.legal_actions(s)[:1], settings)
    assert r.iterations == 0 and r.action == rules.legal_actions(s)[0]
    assert time.perf_counter() - t0 < 0.5


def test_playing_cards_takes_no_search() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=3))
    K = knowledge(s.T)
    while forced_action(s, rules.legal_actions(s), K) is None:
        rules.apply(s, rules.legal_actions(s)[-1])
    r = search(rules.view(s, s.to_move()), rules.legal_actions(s), BotSettings(time_ms=5_000))
    assert r.iterations == 0 and rules.kind_of(r.action) == rules.KIND_IDS["play"]


def test_search_respects_its_budgets() -> None:
    s = mid_game_states(1)[0]
    v, legal = rules.view(s, s.to_move()), rules.legal_actions(s)
    r = search(v, legal, BotSettings(iterations=25))
    assert r.iterations == 25 and sum(r.visits.values()) == 25
    t0 = time.perf_counter()
    r = search(v, legal, BotSettings(time_ms=80))
    spent = time.perf_counter() - t0
    assert 0.08 <= spent < 0.5 and r.iterations > 10
    assert r.action == max(legal, key=lambda a: (r.visits.get(a, 0), r.values.get(a, 0.0)))
