"""Full states consistent with a view, for the search: ``rules.determinize``, made cheaper.

``rules.determinize`` shuffles every hidden zone completely. A search looks only a turn or two
ahead, so of the center deck (100 to 200 cards) it only ever reads the top few: here only the
top ``CENTER_TOP`` cards are dealt at random (a partial Fisher-Yates shuffle: each is a
uniform draw from the whole deck), which is a third of the cost of an iteration's sampling.
Every seat's deck and the opponents' hands are dealt completely, by ``determinize``'s own
``deal_hands`` (the cards known to be in a hand stay there). Like it, this reads only the
view: two states the seat cannot tell apart give the same samples.
"""

from __future__ import annotations

from engine_service import rules
from engine_service.rules import rng as R
from engine_service.rules.state import State
from engine_service.rules.view import deal_hands

CENTER_TOP = 32  # more than a two-turn search turns over (six per refill of the row at most)
MASK = R.MASK
MULT = R.MULT


def shuffle_top(x: int, items: list[int], k: int) -> int:
    """Deal the last ``k`` places of ``items`` (the top of a deck) uniformly from all of them;
    returns the new RNG state. With k >= len(items) - 1 this is a full shuffle."""
    n = len(items)
    stop = max(0, n - 1 - k)
    for i in range(n - 1, stop, -1):
        x ^= x >> 12
        x ^= (x << 25) & MASK
        x ^= x >> 27
        j = (((x * MULT) & MASK) >> 16) % (i + 1)
        items[i], items[j] = items[j], items[i]
    return x


def sample(vw: rules.View, seed: int) -> State:
    s = vw.state.clone()
    x = deal_hands(vw, s, R.seed_state(seed))
    x = shuffle_top(x, s.center_deck, CENTER_TOP)
    s.rng = R.step(x) or 1
    return s


def without_hand_knowledge(vw: rules.View) -> rules.View:
    """The view as if nothing were known of the other seats' hands: their known cards back
    with their decks (``SearchOptions.hand_knowledge`` off, for comparisons)."""
    s = vw.state.clone()
    for q in range(s.n):
        if q != vw.seat:
            s.decks[q] = sorted(s.hands[q] + s.decks[q])
            s.hands[q] = []
        s.known[q] = []
    return rules.View(vw.seat, s, vw.hand_counts)
