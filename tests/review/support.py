"""Helpers of the review tests: games played through a real engine by the test itself."""

from __future__ import annotations

import random
from collections.abc import Callable

from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import rollout_action
from clients.sdk import Client, CreatedGame, human
from engine_service import rules

ITERATIONS = 100  # the engines' search iterations per decision: reviews that repeat exactly
Chooser = Callable[[rules.State, list[int], int], int]  # (state, legal, version) -> action


def play(
    client: Client,
    seed: int,
    *,
    sets: str = "ss",
    turns: int = 99,
    choose: dict[int, Chooser] | None = None,
    until: Callable[[rules.State], bool] | None = None,
) -> tuple[CreatedGame, rules.State, list[tuple[int, int]]]:
    """A game of two people, played through the engine (each seat by ``choose[seat]``, else
    the heuristic policy with a little noise) until it ends, ``turns`` have begun or ``until``
    says so (asked at the start of each turn); the game,
    the state as simulated here, and the log of (seat, action)."""
    g = client.create_game([human("A"), human("B")], sets=sets, seed=seed)
    s = rules.new_game(rules.GameConfig(sets=sets, players=2, seed=seed))
    K = knowledge(s.T)
    rnd = random.Random(seed)
    log: list[tuple[int, int]] = []
    turn = 0
    while not s.over and s.turn <= turns:
        if until is not None and s.turn != turn:
            turn = s.turn
            if until(s):
                break
        seat = s.to_move()
        legal = rules.legal_actions(s)
        pick = (choose or {}).get(seat)
        a = (
            pick(s, legal, len(log) + 1)
            if pick is not None
            else rollout_action(s, legal, K, rnd, 0.1)
        )
        client.submit(g.game_id, g.token(seat), a)
        log.append((seat, a))
        rules.apply(s, a)
    return g, s, log


def states_of(seed: int, log: list[tuple[int, int]], sets: str = "ss") -> dict[int, rules.State]:
    """The state at each version of a game (version v: before the v-th action)."""
    s = rules.new_game(rules.GameConfig(sets=sets, players=2, seed=seed))
    out = {}
    for v, (_, a) in enumerate(log, start=1):
        out[v] = s.clone()
        rules.apply(s, a)
    return out
