"""Final Honor: cards in every zone, Honor tokens, Treasure, coins and end-of-game texts."""

from __future__ import annotations

from engine_service.cards import language as L
from engine_service.rules.state import State

COIN_HONOR = 2
_END_TREASURES, _END_CONSTRUCTS, _END_COINS = 0, 1, 2


def card_honor(s: State, seat: int) -> int:
    h = s.T.honor
    zones = (s.hands, s.decks, s.discards, s.played, s.constructs, s.ongoing, s.treasures)
    return sum(h[c] for z in zones for c in z[seat] if s.T.type[c] != L.MONSTER)


def end_text_honor(s: State, seat: int) -> int:
    T = s.T
    total = 0
    for zone in (s.constructs[seat], s.ongoing[seat], s.hands[seat], s.decks[seat], s.discards[seat]):
        for c in zone:
            rule = T.end_honor[c]
            if rule is None:
                continue
            kind, per = rule
            if kind == _END_TREASURES:
                total += per * s.treasure_count(seat)
            elif kind == _END_CONSTRUCTS:
                total += per * len(s.constructs[seat])
            else:
                total += per * len(s.coins[seat])
    return total


def score_breakdown(s: State, seat: int) -> dict[str, int]:
    T = s.T
    treasure = sum(T.honor[c] for c in s.treasures[seat])
    parts = {
        "cards": card_honor(s, seat) - treasure,
        "tokens": s.tokens[seat],
        "treasure": treasure,
        "coins": COIN_HONOR * len(s.coins[seat]),
        "card_text": end_text_honor(s, seat),
    }
    parts["total"] = sum(parts.values())
    return parts


def scores(s: State) -> list[int]:
    return [score_breakdown(s, seat)["total"] for seat in range(s.n)]


def winner(s: State) -> int:
    """Most Honor wins; ties go to the seat that started later in the turn order."""
    totals = scores(s)
    return max(range(s.n), key=lambda q: (totals[q], (q - s.first) % s.n))
