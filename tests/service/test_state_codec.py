"""The stored state encoding round-trips every state of a game and still reads rules.serialize."""

from __future__ import annotations

import random

import pytest

from engine_service import rules
from engine_service.server import state_codec


def test_round_trip_along_a_game() -> None:
    s = rules.new_game(rules.GameConfig(sets="both", players=3, seed=5))
    rng = random.Random(2)
    for _ in range(400):
        if s.over:
            break
        rules.apply(s, rng.choice(rules.legal_actions(s)))
        back = state_codec.decode(state_codec.encode(s))
        assert back == s and rules.legal_actions(back) == rules.legal_actions(s)
        assert state_codec.decode(rules.serialize(s)) == s


def test_corrupt_bytes_are_refused() -> None:
    data = state_codec.encode(rules.new_game(rules.GameConfig()))
    with pytest.raises(rules.SerializationError):
        state_codec.decode(data[:20])
    with pytest.raises(rules.SerializationError):
        state_codec.decode(b"")
