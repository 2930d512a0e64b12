"""Whole-state invariants checked after every step of random games."""

from __future__ import annotations

import marshal
from collections import Counter
from typing import Any

from engine_service import rules
from engine_service.rules.serialize import FORMAT_VERSION, MARSHAL_VERSION, to_primitive
from engine_service.rules.state import COIN_DOWN, KRAKEN_IN_DEEP, PILE_HEAVY, PILE_MYSTIC, State


def card_multiset(s: State) -> Counter[int]:
    """Every physical card, wherever it is (piles and The Deep included)."""
    T = s.T
    count: Counter[int] = Counter()
    for zones in (s.hands, s.decks, s.discards, s.played, s.constructs, s.ongoing, s.treasures, s.under):
        for z in zones:
            count.update(z)
    count.update(s.out)
    count.update(c for c in s.center if c >= 0)
    count.update(s.center_deck)
    count.update(s.void)
    count[T.mystic] += s.piles[PILE_MYSTIC]
    count[T.heavy] += s.piles[PILE_HEAVY]
    count[T.cultist] += 1
    if s.kraken == KRAKEN_IN_DEEP:
        count[T.thukal] += 1
    return +count


def coin_multiset(s: State) -> Counter[int]:
    count: Counter[int] = Counter(c & (COIN_DOWN - 1) for z in s.coins for c in z)
    count.update(c & (COIN_DOWN - 1) for c in s.kraken_coins)
    count.update(s.bag)
    if s.board_coin >= 0:
        count[s.board_coin] += 1
    return count


def _small(v: Any) -> Any:
    if type(v) is list and v and type(v[0]) is int:
        try:
            return bytes(v)
        except (ValueError, TypeError):
            return v
    return v


def packed_by_type(s: State) -> bytes:
    """Format 3 as its docstring defines it, every field looked at: each non-empty list of
    ints in 0..255, at depth one or two, as bytes (serialize packs a fixed list of zones)."""
    prim = to_primitive(s)
    packed = [
        [_small(z) for z in v] if type(v) is list and v and type(v[0]) is list else _small(v)
        for v in prim[2:]
    ]
    return bytes([FORMAT_VERSION]) + marshal.dumps([*prim[:2], *packed], MARSHAL_VERSION)


def check(s: State, cards: Counter[int], coins: Counter[int]) -> None:
    assert card_multiset(s) == cards, "a card appeared or vanished"
    assert coin_multiset(s) == coins, "a coin appeared or vanished"
    initial = s.config.honor_pool
    if s.ending:
        assert sum(s.tokens) >= initial and s.pool == 0
    else:
        assert sum(s.tokens) == initial - s.pool and s.pool > 0
    assert all(0 <= c <= 9 for c in s.crew)
    assert all(-1 <= sp <= 6 for sp in s.ship)
    blob = rules.serialize(s)
    assert rules.deserialize(blob) == s, "serialization round trip changed the state"
    # equal states, equal bytes (a rebuilt history is checked against the stored state)
    assert rules.serialize(rules.deserialize(blob)) == blob, "the round trip changed the bytes"
    assert blob == packed_by_type(s), "serialize's fixed zones missed a list of small ints"
    for q in range(s.n):  # what every seat knows of a hand is in it
        assert s.known[q] == sorted(s.known[q]), "known cards out of order"
        assert not Counter(s.known[q]) - Counter(s.hands[q]), "a card known in a hand is not there"
    for seat in range(s.n):
        v = rules.view(s, seat).state
        for q in range(s.n):
            if q != seat:
                assert v.hands[q] == s.known[q], "a view holds more of another seat's hand than is known"
        assert v.rng == 0
        assert v.center_deck == sorted(v.center_deck)
    spectator = rules.view(s).state
    assert spectator.hands == s.known
