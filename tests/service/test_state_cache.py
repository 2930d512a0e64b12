"""The replica's cache of decoded states (server/state_cache.py): a state is kept under its
commit id, and so are its legal actions once asked for, which a submit checks its action
against and its answer lists."""

from __future__ import annotations

import random

from engine_service import rules
from engine_service.server.state_cache import StateCache


def _states(n: int) -> list[rules.State]:
    s = rules.new_game(rules.GameConfig(sets="both", players=3, seed=11))
    rng = random.Random(11)
    out = []
    for _ in range(n):
        rules.apply(s, rng.choice(rules.legal_actions(s)))
        out.append(s.clone())
    return out


def test_legal_actions_are_kept_with_the_state_of_that_commit() -> None:
    a, b = _states(40)[-2:]
    assert rules.legal_actions(a) != rules.legal_actions(b)
    cache = StateCache()
    cache.put("g", "c1", a)
    first = cache.legal_actions("g", "c1", a)
    assert first == rules.legal_actions(a)
    assert cache.legal_actions("g", "c1", a) is first  # kept, not made again
    # another commit, or another state object, is never answered with what was kept
    assert cache.legal_actions("g", "c2", b) == rules.legal_actions(b)
    assert cache.legal_actions("g", "c1", b) == rules.legal_actions(b)
    cache.put("g", "c2", b)  # the game moved on: its new state's own
    assert cache.get("g", "c1") is None
    assert cache.legal_actions("g", "c2", b) == rules.legal_actions(b)
    assert cache.legal_actions("g", "c1", a) == rules.legal_actions(a)


def test_the_cache_keeps_its_size() -> None:
    states = _states(5)
    cache = StateCache(size=3)
    for i, s in enumerate(states):
        cache.put(f"g{i}", "c", s)
        cache.legal_actions(f"g{i}", "c", s)
    kept = [cache.get(f"g{i}", "c") is not None for i in range(5)]
    assert kept == [False, False, True, True, True]
