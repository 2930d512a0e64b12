"""What one seat may know (``view``), and full states consistent with it (``determinize``).

A view is a state with the hidden parts replaced by what perfect memory of the public
events gives: a seat's own hand; of each other seat's hand, the cards every seat knows to be
there (``State.known``: revealed and returned, or the hand as it was when its deck ran out),
and the rest of that hand and its deck together as one sorted multiset (every card entering
or leaving them is public, only which is where is not); every deck, the center deck and the
Treasure Bag as sorted multisets, never in order; and no RNG. ``determinize`` deals the
hidden cards again, the known ones staying where they are known to be.
"""

from __future__ import annotations

import json
import marshal
import zlib
from dataclasses import dataclass

from engine_service.rules import rng as R
from engine_service.rules.errors import SerializationError
from engine_service.rules.serialize import (
    MARSHAL_VERSION,
    from_primitive,
    primitive_index,
    to_primitive,
)
from engine_service.rules.state import State
from engine_service.rules.tables import Tables

SPECTATOR = -1
# Format 3 (written): the CRC-32 of the rest (4 bytes, big-endian), then marshal of [seat, hand
# counts, state primitive]: about 5x faster to write than format 2 (zlib-compressed JSON, still
# read), and the service sends a view with every answer; only our Python bots read views.
# Marshal version 2, as states (serialize.MARSHAL_VERSION): equal views, equal bytes. The
# checksum refuses damaged bytes, as zlib's did, instead of reading them as other cards.
VIEW_FORMAT = 3
_JSON_VIEW_FORMAT = 2


@dataclass(slots=True)
class View:
    seat: int  # SPECTATOR for a spectator
    state: State  # redacted: see the module docstring
    hand_counts: list[int]

    def serialize(self) -> bytes:
        blob = marshal.dumps(
            [self.seat, self.hand_counts, to_primitive(self.state)], MARSHAL_VERSION
        )
        return bytes([VIEW_FORMAT]) + zlib.crc32(blob).to_bytes(4, "big") + blob

    @staticmethod
    def deserialize(data: bytes, tables: Tables | None = None) -> View:
        fmt = data[0] if data else None
        try:
            if fmt == VIEW_FORMAT:
                blob = data[5:]
                if len(data) < 5 or zlib.crc32(blob) != int.from_bytes(data[1:5], "big"):
                    raise SerializationError("corrupt view bytes: checksum mismatch")
                loaded = marshal.loads(blob)
            elif fmt == _JSON_VIEW_FORMAT:
                loaded = json.loads(zlib.decompress(data[1:]))
            else:
                raise SerializationError("not a serialized view")
            seat, counts, raw = loaded
        except (zlib.error, ValueError, EOFError, TypeError) as e:
            raise SerializationError(f"corrupt view bytes: {e}") from None
        if not (type(seat) is int and isinstance(counts, list) and isinstance(raw, list)):
            raise SerializationError("corrupt view bytes: not a view")
        try:
            state = from_primitive(raw, tables)
        except SerializationError:
            raise
        except Exception as e:  # well-formed bytes that are no state (e.g. unknown sets)
            raise SerializationError(f"corrupt view bytes: {e}") from None
        return View(seat, state, counts)


def _unknown(hand: list[int], deck: list[int], known: list[int]) -> list[int]:
    """Another seat's hand and deck but the cards known to be in the hand, sorted."""
    rest = hand + deck
    for c in known:
        rest.remove(c)
    rest.sort()
    return rest


def view(s: State, seat: int = SPECTATOR) -> View:
    v = s.clone()
    v.rng = 0
    for q in range(s.n):
        if q == seat:
            v.decks[q].sort()
        else:
            v.decks[q] = _unknown(v.hands[q], v.decks[q], s.known[q])
            v.hands[q] = s.known[q][:]
    v.center_deck.sort()
    v.bag.sort()
    return View(seat, v, [len(h) for h in s.hands])


_RNG, _HANDS, _DECKS, _CENTER_DECK, _BAG = (
    primitive_index(k) for k in ("rng", "hands", "decks", "center_deck", "bag")
)


# The center deck sorted and marshalled, by its cards in deck order: some 200 cards, whose
# sorting was a third of view_bytes and their marshalling (170 instructions an int) a third
# again, while the deck changes only when a card is drawn from it (a few times a turn) and
# every answer carries a view. Keyed by content, so any state may share an entry.
_sorted_decks: dict[tuple[int, ...], bytes] = {}
_SORTED_DECKS_KEPT = 1024


def _sorted_center_deck(deck: list[int]) -> bytes:
    """``marshal.dumps(sorted(deck), MARSHAL_VERSION)``."""
    key = tuple(deck)
    found = _sorted_decks.get(key)
    if found is None:
        if len(_sorted_decks) >= _SORTED_DECKS_KEPT:
            _sorted_decks.clear()  # (one step: safe beside threads that read)
        found = _sorted_decks[key] = marshal.dumps(sorted(deck), MARSHAL_VERSION)
    return found


def view_bytes(s: State, seat: int = SPECTATOR) -> bytes:
    """``view(s, seat).serialize()``, without building the view's state (the service sends a
    view with every answer): ``s``'s primitive form with the hidden parts replaced."""
    p = to_primitive(s)  # the state's own lists, read only
    hands, decks, known = s.hands, s.decks, s.known
    p[_RNG] = 0
    p[_HANDS] = [hands[q] if q == seat else known[q] for q in range(s.n)]
    p[_DECKS] = [
        sorted(decks[q]) if q == seat else _unknown(hands[q], decks[q], known[q])
        for q in range(s.n)
    ]
    p[_BAG] = sorted(s.bag)
    # Marshal (version 2, no references) writes a list as "[", its length (4 bytes, little
    # endian) and its items one after the other: the center deck's bytes are put in place.
    blob = b"".join((
        b"[\x03\x00\x00\x00",
        marshal.dumps([seat, [len(h) for h in hands]], MARSHAL_VERSION)[5:],
        b"[", len(p).to_bytes(4, "little"),
        marshal.dumps(p[:_CENTER_DECK], MARSHAL_VERSION)[5:],
        _sorted_center_deck(s.center_deck),
        marshal.dumps(p[_CENTER_DECK + 1 :], MARSHAL_VERSION)[5:],
    ))  # fmt: skip
    return bytes([VIEW_FORMAT]) + zlib.crc32(blob).to_bytes(4, "big") + blob


def deal_hands(vw: View, s: State, x: int) -> int:
    """Deal ``s`` (a clone of the view's state) the hidden cards of every seat's hand and deck
    at random: each other seat's hand is the cards known to be in it and the rest from its
    unknown cards; returns the new RNG state."""
    for q in range(s.n):
        pool = s.decks[q]
        x = R.shuffle(x, pool)
        if q != vw.seat:
            k = vw.hand_counts[q] - len(s.hands[q])
            s.hands[q] = s.hands[q] + pool[:k]
            s.decks[q] = pool[k:]
    return x


def determinize(vw: View, seed: int) -> State:
    """A full state consistent with the view: hidden cards dealt at random (seeded)."""
    s = vw.state.clone()
    x = deal_hands(vw, s, R.seed_state(seed))
    x = R.shuffle(x, s.center_deck)
    s.rng = R.step(x) or 1
    return s
