"""What one seat may know (``view``), and full states consistent with it (``determinize``).

A view is a state with the hidden parts replaced by what perfect memory of the public
events gives: a seat's own hand; each other seat's hand and deck together as one sorted
multiset (every card entering or leaving them is public, only which is where is not); every
deck, the center deck and the Treasure Bag as sorted multisets, never in order; and no RNG.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass

from engine_service.rules import rng as R
from engine_service.rules.errors import SerializationError
from engine_service.rules.serialize import from_primitive, to_primitive
from engine_service.rules.state import State
from engine_service.rules.tables import Tables

SPECTATOR = -1
VIEW_FORMAT = 2


@dataclass(slots=True)
class View:
    seat: int  # SPECTATOR for a spectator
    state: State  # redacted: see the module docstring
    hand_counts: list[int]

    def serialize(self) -> bytes:
        blob = json.dumps([self.seat, self.hand_counts, to_primitive(self.state)], separators=(",", ":"))
        return bytes([VIEW_FORMAT]) + zlib.compress(blob.encode(), 1)

    @staticmethod
    def deserialize(data: bytes, tables: Tables | None = None) -> View:
        if not data or data[0] != VIEW_FORMAT:
            raise SerializationError("not a serialized view")
        try:
            seat, counts, raw = json.loads(zlib.decompress(data[1:]))
        except (zlib.error, ValueError) as e:
            raise SerializationError(f"corrupt view bytes: {e}") from None
        return View(seat, from_primitive(raw, tables), counts)


def view(s: State, seat: int = SPECTATOR) -> View:
    v = s.clone()
    v.rng = 0
    for q in range(s.n):
        if q == seat:
            v.decks[q].sort()
        else:
            v.decks[q] = sorted(v.hands[q] + v.decks[q])
            v.hands[q] = []
    v.center_deck.sort()
    v.bag.sort()
    return View(seat, v, [len(h) for h in s.hands])


def determinize(vw: View, seed: int) -> State:
    """A full state consistent with the view: hidden cards dealt at random (seeded)."""
    s = vw.state.clone()
    x = R.seed_state(seed)
    for q in range(s.n):
        pool = s.decks[q]
        x = R.shuffle(x, pool)
        if q != vw.seat:
            k = vw.hand_counts[q]
            s.hands[q] = pool[:k]
            s.decks[q] = pool[k:]
    x = R.shuffle(x, s.center_deck)
    s.rng = R.step(x) or 1
    return s
