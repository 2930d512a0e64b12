"""``GameView.rules_view`` bytes (``rules.View.serialize``, format 3: marshal): exact round trip,
equal views give equal bytes however the state was made, format 2 (JSON) still read, anything
else refused with SerializationError."""

from __future__ import annotations

import json
import marshal
import random
import zlib

import pytest

from engine_service import rules
from engine_service.rules.serialize import to_primitive
from engine_service.rules.view import view_bytes


def _positions() -> list[rules.State]:
    out = []
    for seed, players, steps in ((1, 2, 0), (2, 3, 80), (3, 4, 200), (4, 2, 400)):
        s = rules.new_game(rules.GameConfig(sets="both", players=players, seed=seed))
        rng = random.Random(seed)
        for _ in range(steps):
            if s.over:
                break
            rules.apply(s, rng.choice(rules.legal_actions(s)))
        out.append(s)
    return out


def test_round_trip_is_exact_for_every_seat() -> None:
    for s in _positions():
        for seat in (rules.SPECTATOR, *range(s.n)):
            v = rules.view(s, seat)
            data = v.serialize()
            assert data[0] == 3
            back = rules.View.deserialize(data)
            assert (back.seat, back.hand_counts, back.state) == (v.seat, v.hand_counts, v.state)
            assert back.serialize() == data


def test_equal_views_give_equal_bytes() -> None:
    """States read back from the store (strings interned by marshal, objects shared) give the
    same view bytes as the state they were written from."""
    for s in _positions():
        stored = rules.deserialize(rules.serialize(s))
        for seat in (rules.SPECTATOR, *range(s.n)):
            assert rules.view(stored, seat).serialize() == rules.view(s, seat).serialize()


def test_view_bytes_are_the_views_bytes() -> None:
    """The service's clone-free ``view_bytes`` writes what ``view(...).serialize()`` does, and
    leaves the state as it was."""
    for s in _positions():
        for state in (s, rules.deserialize(rules.serialize(s))):
            before = state.clone()
            for seat in (rules.SPECTATOR, *range(state.n)):
                assert view_bytes(state, seat) == rules.view(state, seat).serialize()
            assert state == before


def test_json_views_of_format_2_are_still_read() -> None:
    s = _positions()[2]
    v = rules.view(s, 1)
    blob = json.dumps([v.seat, v.hand_counts, to_primitive(v.state)], separators=(",", ":"))
    back = rules.View.deserialize(bytes([2]) + zlib.compress(blob.encode(), 1))
    assert (back.seat, back.hand_counts, back.state) == (1, v.hand_counts, v.state)


def test_garbage_is_refused() -> None:
    good = rules.view(_positions()[1], 0).serialize()
    bad = [
        b"",
        b"\x03",
        b"\x09" + good[1:],
        good[:1] + b"garbage",
        good[: len(good) // 2],
        b"\x02not zlib",
    ]
    for value in ([1, 2], ["x", [1], [1]], [0, [1, 1], ["fingerprint", ["ss", 2, 1]]]):
        blob = marshal.dumps(value, 2)  # well-formed, with a right checksum, but no view
        bad.append(b"\x03" + zlib.crc32(blob).to_bytes(4, "big") + blob)
    rng = random.Random(7)
    for _ in range(300):  # damaged in transit or at rest: the checksum refuses it
        b = bytearray(good)
        for i in rng.sample(range(1, len(b)), rng.randint(1, 8)):
            b[i] ^= rng.randrange(1, 256)
        bad.append(bytes(b))
    for data in bad:
        with pytest.raises(rules.SerializationError):
            rules.View.deserialize(data)


def test_view_bytes_follow_the_center_deck_they_were_given() -> None:
    """view_bytes keeps sorted center decks by content: a deck of the same length with other
    cards gives its own view, the same cards in another order the same view, and the state's
    deck is left as it was."""
    s = _positions()[2]
    first = view_bytes(s, 0)
    deck = s.center_deck[:]
    other = s.clone()
    other.center_deck[0] = next(c for c in set(deck) if c != deck[0])  # another card, same length
    assert view_bytes(other, 0) == rules.view(other, 0).serialize() != first
    other.center_deck = deck[::-1]  # the same cards: the same (sorted) view
    assert view_bytes(other, 0) == first
    assert s.center_deck == deck
