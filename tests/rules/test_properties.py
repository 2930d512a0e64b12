"""Random legal play in every configuration, checking invariants at every step."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine_service import rules
from tests.rules.invariants import card_multiset, check, coin_multiset

CONFIGS = st.sampled_from(
    [("ss", 2), ("ss", 3), ("ss", 4), ("cotgi", 2), ("cotgi", 4), ("cotgi", 6), ("both", 2), ("both", 3), ("both", 5)]
)


def random_game(sets: str, players: int, seed: int, rnd: random.Random, max_actions: int = 3000) -> list[int]:
    """Play to the end (checking invariants each step); return the actions played."""
    s = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=seed))
    cards, coins = card_multiset(s), coin_multiset(s)
    check(s, cards, coins)
    played: list[int] = []
    while not s.over and len(played) < max_actions:
        acts = rules.legal_actions(s)
        assert acts, "a live game always has a legal action"
        assert len(set(acts)) == len(acts), "legal actions are distinct"
        # End the turn only sometimes, so games go long enough to exercise the rules
        a = rnd.choice(acts[1:]) if len(acts) > 1 and s.decision is None and rnd.random() < 0.9 else rnd.choice(acts)
        rules.apply(s, a)
        played.append(a)
        check(s, cards, coins)
    assert s.over, "random games end"
    return played


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=CONFIGS, seed=st.integers(0, 2**31), choice_seed=st.integers(0, 2**31))
def test_random_play_keeps_every_invariant(config: tuple[str, int], seed: int, choice_seed: int) -> None:
    random_game(config[0], config[1], seed, random.Random(choice_seed))


@settings(max_examples=6, deadline=None)
@given(config=CONFIGS, seed=st.integers(0, 2**31))
def test_same_seed_and_actions_give_the_same_game_bit_for_bit(config: tuple[str, int], seed: int) -> None:
    sets, players = config
    a = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=seed))
    b = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=seed))
    rnd = random.Random(seed)
    while not a.over:
        acts = rules.legal_actions(a)
        act = rnd.choice(acts[1:]) if len(acts) > 1 and a.decision is None else rnd.choice(acts)
        ea, eb = rules.apply(a, act), rules.apply(b, act)
        assert ea == eb
    assert rules.serialize(a) == rules.serialize(b)
