"""The rules API: typed errors, unchanged state on error, views, determinize, text."""

from __future__ import annotations

import random
import zlib
from collections import Counter

import pytest

from engine_service import rules
from engine_service.rules import actions as A
from engine_service.rules import rng as R
from engine_service.rules.scenario import scenario
from engine_service.rules.state import State
from tests.rules.helpers import cid
from tests.rules.invariants import card_multiset, check, coin_multiset


def midgame(sets: str = "both", players: int = 3, seed: int = 5, steps: int = 120) -> State:
    s = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=seed))
    rnd = random.Random(seed)
    for _ in range(steps):
        acts = rules.legal_actions(s)
        rules.apply(s, rnd.choice(acts[1:]) if len(acts) > 1 and s.decision is None else rnd.choice(acts))
    return s


def test_an_illegal_action_raises_with_a_reason_and_leaves_the_state_unchanged() -> None:
    s = scenario(center={2: "diamondbeaks"}, power=3, ships=[0, 0])
    before = rules.serialize(s)
    with pytest.raises(rules.IllegalActionError, match=r"not enough Power \(have 3, need 4\)"):
        rules.apply(s, A.encode(A.DEFEAT, 2))
    with pytest.raises(rules.IllegalActionError, match="Crew can only be spent on the card at your ship's space"):
        rules.apply(s, A.encode(A.DEFEAT_CREW, 2))
    with pytest.raises(rules.IllegalActionError, match="not in your hand"):
        rules.apply(s, A.encode(A.PLAY, cid(s, "naka_blackblade")))
    with pytest.raises(rules.IllegalActionError, match="no choice is pending"):
        rules.apply(s, A.encode(A.SKIP))
    assert rules.serialize(s) == before


def test_a_malformed_action_is_a_typed_error() -> None:
    s = scenario()
    with pytest.raises(rules.MalformedActionError):
        rules.apply(s, 99 << 16)
    with pytest.raises(rules.MalformedActionError):
        rules.apply(s, -5)


def test_answering_out_of_turn_names_the_pending_choice() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=1))
    with pytest.raises(rules.IllegalActionError, match="place_ship"):
        rules.apply(s, A.encode(A.PLAY, s.hands[s.first][0]))


def test_invariant_checker_catches_a_lost_card() -> None:
    s = midgame()
    cards, coins = card_multiset(s), coin_multiset(s)
    check(s, cards, coins)
    s.discards[0].append(cid(s, "mystic"))
    with pytest.raises(AssertionError):
        check(s, cards, coins)


def hide_differently(s: State, seat: int, seed: int) -> State:
    """The same game except for what ``seat`` cannot see."""
    t = s.clone()
    x = R.seed_state(seed)
    for q in range(t.n):
        if q == seat:
            x = R.shuffle(x, t.decks[q])
        else:
            pool = t.hands[q] + t.decks[q]  # but the cards known to be in the hand
            for c in t.known[q]:
                pool.remove(c)
            x = R.shuffle(x, pool)
            k = len(t.hands[q]) - len(t.known[q])
            t.hands[q], t.decks[q] = t.known[q] + pool[:k], pool[k:]
    x = R.shuffle(x, t.center_deck)
    x = R.shuffle(x, t.bag)
    t.rng = R.step(x)
    return t


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_view_depends_only_on_what_the_seat_may_know(seed: int) -> None:
    s = midgame(seed=seed)
    for seat in range(s.n):
        other = hide_differently(s, seat, seed + 100)
        assert other.hands != s.hands or other.decks != s.decks  # they really differ
        assert rules.view(s, seat).serialize() == rules.view(other, seat).serialize()


def test_a_view_shows_own_hand_and_of_others_only_counts_and_what_all_know() -> None:
    s = midgame()
    assert s.known[0] or s.known[2]  # (a deck has run out by then)
    v = rules.view(s, 1)
    assert Counter(v.state.hands[1]) == Counter(s.hands[1])
    assert v.hand_counts == [len(h) for h in s.hands]
    assert v.state.hands[0] == s.known[0] and v.state.hands[2] == s.known[2]
    spectator = rules.view(s)
    assert spectator.state.hands == s.known


def test_determinize_gives_a_full_state_consistent_with_the_view() -> None:
    s = midgame()
    for seat in range(s.n):
        v = rules.view(s, seat)
        d = rules.determinize(v, seed=42)
        assert [len(h) for h in d.hands] == [len(h) for h in s.hands]
        assert rules.view(d, seat).serialize() == v.serialize()
        assert card_multiset(d) == card_multiset(s)
        # and it can be played on
        acts = rules.legal_actions(d)
        if d.to_move() == seat:
            assert sorted(acts) == sorted(rules.legal_actions(s))
        rules.apply(d, acts[0])


def test_view_bytes_round_trip() -> None:
    s = midgame()
    v = rules.view(s, 2)
    back = rules.View.deserialize(v.serialize())
    assert back.seat == 2 and back.hand_counts == v.hand_counts and back.state == v.state


def test_states_written_as_json_by_format_1_are_still_read() -> None:
    import json
    import zlib

    from engine_service.rules.serialize import to_primitive

    s = midgame()
    old = bytes([1]) + zlib.compress(json.dumps(to_primitive(s)).encode())
    assert rules.deserialize(old) == s


def test_states_written_by_format_2_are_still_read() -> None:
    """Format 3 writes the zones as bytes (a third of the size); format 2 did not."""
    import marshal

    from engine_service.rules.serialize import to_primitive

    s = midgame()
    old = bytes([2]) + marshal.dumps(to_primitive(s))
    assert rules.deserialize(old) == s
    new = rules.serialize(s)
    assert new[0] == 3 and len(new) < len(old) / 2 and rules.deserialize(new) == s


@pytest.mark.parametrize("fmt", [2, 3])
def test_states_and_views_written_before_known_hands_are_read_with_nothing_known(fmt: int) -> None:
    """A state stored (or a view sent) without the ``known`` field is read as one in which
    no card is known to be in any hand: what every seat knew then is forgotten, never made up."""
    import marshal

    from engine_service.rules.serialize import _packed, primitive_index, to_primitive
    from engine_service.rules.view import VIEW_FORMAT

    s = midgame()
    assert any(s.known)
    old = _packed(to_primitive(s)) if fmt == 3 else to_primitive(s)
    del old[primitive_index("known")]
    data = bytes([fmt]) + marshal.dumps(old, 2)
    back = rules.deserialize(data)
    assert back.known == [[] for _ in range(s.n)]
    back.known = s.known
    assert back == s
    vw = rules.view(s, 0)
    vw.state.known = [[] for _ in range(s.n)]  # a view as written then: no known cards in it
    for q in range(1, s.n):
        vw.state.decks[q] = sorted(vw.state.hands[q] + vw.state.decks[q])
        vw.state.hands[q] = []
    p = to_primitive(vw.state)
    del p[primitive_index("known")]
    blob = marshal.dumps([0, vw.hand_counts, p], 2)
    read = rules.View.deserialize(bytes([VIEW_FORMAT]) + zlib.crc32(blob).to_bytes(4, "big") + blob)
    assert read.state == vw.state
    assert [len(h) for h in rules.determinize(read, 1).hands] == vw.hand_counts


def test_states_written_with_marshal_back_references_are_still_read() -> None:
    """Format 3 was first written with marshal's own version (4: a repeated object written
    once, then referred to); it is now written with version 2, and both are read."""
    import marshal

    from engine_service.rules.serialize import _packed, primitive_index, to_primitive

    s = midgame()
    s.hands[0], s.decks[1] = [5, 5], [5, 5]
    packed = _packed(to_primitive(s))
    hands, decks = packed[primitive_index("hands")], packed[primitive_index("decks")]
    hands[0] = decks[1]  # one object in two places: written once, then referred to
    old = bytes([3]) + marshal.dumps(packed, 4)
    assert old != rules.serialize(s)
    assert rules.deserialize(old) == s
    assert rules.serialize(rules.deserialize(old)) == rules.serialize(s)


def test_truncated_state_bytes_are_refused() -> None:
    data = rules.serialize(midgame())
    for bad in (data[:20], b"", bytes([2]) + b"\x00" * 5):
        with pytest.raises(rules.SerializationError):
            rules.deserialize(bad)


def test_serialized_state_from_other_card_data_is_refused() -> None:
    s = midgame()
    blob = bytearray(rules.serialize(s))
    with pytest.raises(rules.SerializationError):
        rules.deserialize(bytes([9]) + bytes(blob[1:]))
    with pytest.raises(rules.SerializationError):
        rules.deserialize(bytes(blob[:1]) + b"garbage")


def test_every_legal_action_and_event_has_a_readable_description() -> None:
    s = rules.new_game(rules.GameConfig(sets="both", players=3, seed=9))
    rnd = random.Random(9)
    seen: set[int] = set()
    while not s.over:
        acts = rules.legal_actions(s)
        for a in acts:
            text = rules.describe_action(s, a)
            assert text and not text.startswith("Action "), a
            seen.add(a >> 16)
        events = rules.apply(s, rnd.choice(acts[1:]) if len(acts) > 1 and s.decision is None else rnd.choice(acts))
        for e in events:
            assert rules.describe_event(s, e)
    assert {A.END_TURN, A.PLAY, A.ACQUIRE, A.DEFEAT, A.MOVE, A.PLACE_SHIP} <= seen
