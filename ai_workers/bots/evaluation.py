"""How good a position is for each seat: Honor now plus what the deck will still earn.

A seat's value (in resource units, see ``knowledge``) is its Honor so far, plus the turns it
has left times what its deck yields per turn (average play value of its cards times five, the
Constructs and Ongoing cards in play), plus its Crew. The reward of a seat is its value's lead
over the best other seat, squashed to [0, 1]; a finished game is scored by who won.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ai_workers.bots.knowledge import CREW_R, HONOR_R, Knowledge
from engine_service.rules.scoring import end_text_honor, winner
from engine_service.rules.state import State

ECON_W = 0.6  # resources produced in future turns, discounted (waste, diminishing use)
TOKENS_PER_TURN = 2.0  # Honor tokens a seat takes from the pool per turn, on average
SCALE_HONOR = 6.0  # a lead of this many Honor is worth a reward of ~0.73
WIN_WEIGHT = 0.8  # at the end of the game: 0.8 for the win plus 0.2 for the margin


@dataclass(slots=True)
class SeatStats:
    play_sum: float  # sum of play values of the cards in the seat's deck (all zones cycling)
    size: int  # cards in that deck
    turn_sum: float  # per-turn value of Constructs and Ongoing cards in play
    honor: int  # Honor so far (cards, tokens, Treasure, coins, end-of-game texts)

    @property
    def avg_play(self) -> float:
        return self.play_sum / self.size if self.size else 0.0


def seat_stats(s: State, q: int, K: Knowledge) -> SeatStats:
    play, hon, mon, end = K.play, K.honor, K.is_monster, K.has_end
    play_sum = 0.0
    honor = s.tokens[q]
    size = 0
    ends = False
    for zone in (s.hands[q], s.decks[q], s.discards[q], s.played[q]):
        size += len(zone)
        for c in zone:
            play_sum += play[c]
            honor += hon[c]
            ends = ends or end[c]
    turn_sum = 0.0
    for zone in (s.constructs[q], s.ongoing[q]):
        for c in zone:
            turn_sum += K.turn[c]
            if not mon[c]:
                honor += hon[c]
            ends = ends or end[c]
    for c in s.treasures[q]:
        honor += hon[c]
    honor += 2 * len(s.coins[q])
    if ends:
        honor += end_text_honor(s, q)
    return SeatStats(play_sum, size, turn_sum, honor)


def turns_left(s: State) -> list[float]:
    """Expected turns each seat still plays (after the current one has ended)."""
    n = s.n
    if s.over:
        return [0.0] * n
    if s.ending:
        last = (s.first - 1) % n
        k = (last - s.active) % n  # seats active .. active+k still play this round
        return [1.0 if (q - s.active) % n <= k else 0.0 for q in range(n)]
    rounds = s.pool / (n * TOKENS_PER_TURN) + 0.5
    return [rounds] * n


def seat_value(s: State, q: int, st: SeatStats, rem: float) -> float:
    per_turn = 5.0 * st.avg_play + st.turn_sum
    return HONOR_R * st.honor + ECON_W * rem * per_turn + CREW_R * min(s.crew[q], 9)


def _squash(lead_r: float) -> float:
    x = lead_r / (HONOR_R * SCALE_HONOR)
    if x < -30:
        return 0.0
    return 1.0 / (1.0 + math.exp(-x))


def evaluate(s: State, K: Knowledge) -> list[float]:
    """Rewards in [0, 1], one per seat."""
    n = s.n
    rem = turns_left(s)
    stats = [seat_stats(s, q, K) for q in range(n)]
    if s.over:
        vals = [HONOR_R * st.honor for st in stats]
        w = winner(s)
    else:
        vals = [seat_value(s, q, stats[q], rem[q]) for q in range(n)]
        w = -1
    out = []
    for q in range(n):
        best_other = max(vals[o] for o in range(n) if o != q)
        r = _squash(vals[q] - best_other)
        if w >= 0:
            r = WIN_WEIGHT * (q == w) + (1.0 - WIN_WEIGHT) * r
        out.append(r)
    return out
