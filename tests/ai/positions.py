"""Positions from real games, for the bot tests: full states where a seat has a real choice."""

from __future__ import annotations

import random

from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import forced_action, rollout_action
from engine_service import rules


def play_until(sets: str, seed: int, turn: int, eps: float = 0.1) -> rules.State:
    """Heuristic self-play (with some noise) up to the first searchable decision from ``turn``:
    several legal actions and none of them a forced play."""
    s = rules.new_game(rules.GameConfig(sets=sets, players=2, seed=seed))
    K = knowledge(s.T)
    rnd = random.Random(seed)
    while not s.over:
        legal = rules.legal_actions(s)
        if s.turn >= turn and len(legal) > 2 and forced_action(s, legal, K) is None:
            return s
        rules.apply(s, rollout_action(s, legal, K, rnd, eps))
    raise AssertionError(f"game {sets}/{seed} ended before turn {turn}")


def mid_game_states(
    count: int, sets: tuple[str, ...] = ("ss", "cotgi", "both")
) -> list[rules.State]:
    out = []
    for i in range(count):
        out.append(play_until(sets[i % len(sets)], 100 + i, 6 + 3 * (i % 6)))
    return out
