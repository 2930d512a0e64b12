"""How good a position is for each seat: a win probability fitted to self-play.

Each seat gets a linear score of its Honor so far, the average play value of the Heroes in its
deck, the per-turn value of its Constructs and Ongoing cards in play and of the Constructs still
in its deck, its Crew and its deck size, with weights
that move linearly from the start of the game (Honor pool full) to its end (pool empty). A
seat's reward is the logistic of its lead over the strongest other seat, plus a small bonus
when it is the next to play: a probability of winning in [0, 1]. A finished game is scored by
who won (and a little by the margin).

The weights are a logistic regression of the winner on these features, measured at the end of
every turn of ~3,000 heuristic self-play games (``python -m ai_workers.bots.fit_eval``):
Honor weighs twice as much at the end as at the start, deck quality and Constructs the other
way round.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources

from ai_workers.bots.knowledge import CREW_R, HONOR_R, Knowledge
from engine_service.rules.scoring import end_text_honor, winner
from engine_service.rules.state import State

ECON_W = 0.6  # the policy: future resources, discounted (waste, diminishing use)
TOKENS_PER_TURN = 2.0  # Honor tokens a seat takes from the pool per turn, on average


@dataclass(slots=True)
class SeatStats:
    play_sum: float  # sum of play values of the Heroes in the seat's deck (all zones cycling)
    size: int  # Heroes in that deck
    turn_sum: float  # per-turn value of Constructs and Ongoing cards in play
    honor: int  # Honor so far (cards, tokens, Treasure, coins, end-of-game texts)
    pending: float = 0.0  # per-turn value of Constructs still in hand, deck or discard pile

    @property
    def avg_play(self) -> float:
        return self.play_sum / self.size if self.size else 0.0


def seat_stats(s: State, q: int, K: Knowledge) -> SeatStats:
    play, hon, mon, end, con = K.play, K.honor, K.is_monster, K.has_end, K.is_construct
    play_sum = pending = 0.0
    honor = s.tokens[q]
    size = 0
    ends = False
    for zone in (s.hands[q], s.decks[q], s.discards[q], s.played[q]):
        for c in zone:
            honor += hon[c]
            ends = ends or end[c]
            if con[c]:  # played once, then it stays in play: not part of the cycling deck
                pending += K.turn[c]
            else:
                play_sum += play[c]
                size += 1
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
    return SeatStats(play_sum, size, turn_sum, honor, pending)


def deck_play(s: State, q: int, K: Knowledge) -> tuple[float, int]:
    """``seat_stats``' ``play_sum`` and ``size`` alone (the same sums, in the same order): what
    the policy needs, without the Honor and Constructs it does not."""
    play, con = K.play, K.is_construct
    play_sum = 0.0
    size = 0
    for zone in (s.hands[q], s.decks[q], s.discards[q], s.played[q]):
        for c in zone:
            if not con[c]:
                play_sum += play[c]
                size += 1
    return play_sum, size


def turns_left(s: State) -> list[float]:
    """Expected turns each seat still plays (after the current one has ended)."""
    return [seat_turns_left(s, q) for q in range(s.n)]


def seat_turns_left(s: State, q: int) -> float:
    """Expected turns seat ``q`` still plays (after the current one has ended)."""
    if s.over:
        return 0.0
    n = s.n
    if s.ending:
        last = (s.first - 1) % n
        k = (last - s.active) % n  # seats active .. active+k still play this round
        return 1.0 if (q - s.active) % n <= k else 0.0
    return s.pool / (n * TOKENS_PER_TURN) + 0.5


@dataclass(frozen=True, slots=True)
class Weights:
    """Logits per unit of each feature's difference; ``*_start`` at a full Honor pool,
    ``*_end`` at an empty one (linear in between)."""

    honor_start: float = 0.0785
    honor_end: float = 0.2435
    avg_play_start: float = 2.6646
    avg_play_end: float = 1.882
    turn_start: float = 0.8648
    turn_end: float = 0.1076
    pending_start: float = 0.5679
    pending_end: float = -0.1447
    crew: float = 0.1541
    size: float = -0.0409
    next_to_play: float = 0.4027
    hand: float = 0.0  # per unit of play value in the hand of the seat to play next
    # The value model's terms (0 in the older sets): Honor in the last round (the pool empty),
    # the seat to play next late in the game, and the seat that plays last in each round (it
    # gets the last turn and wins ties), at the start and, added, at the end.
    honor_final: float = 0.0
    next_to_play_end: float = 0.0
    last_seat: float = 0.0
    last_seat_end: float = 0.0


WEIGHTS = Weights()
# Fitted to 800 games of ISMCTS self-play at 200 iterations per decision, with the hand of the
# seat to play next as a feature (``fit_eval --bot ismcts@200it --games 800 --seed 100000``).
ISMCTS_WEIGHTS = Weights(
    honor_start=0.1045, honor_end=0.2711, avg_play_start=2.1586, avg_play_end=1.6368,
    turn_start=0.7538, turn_end=0.1283, pending_start=0.4507, pending_end=-0.0496,
    crew=0.1933, size=-0.0689, next_to_play=-0.0127, hand=0.0613,
)  # fmt: skip


def _load_value_model() -> Weights:
    """The value model's weights: plain data beside this file, written by ``fit_value``."""
    raw = json.loads(resources.files("ai_workers.bots").joinpath(VALUE_MODEL_FILE).read_text())
    known = set(Weights.__dataclass_fields__)
    return Weights(**{k: float(v) for k, v in raw["weights"].items() if k in known})


VALUE_MODEL_FILE = "value_model.json"
VALUE_WEIGHTS = _load_value_model()
# Named weight sets, for searches that compare evaluations (``ismcts:weights=NAME``); "value"
# (the value model, fitted to the search's own self-play) is the search's default.
WEIGHT_SETS: dict[str, Weights] = {
    "heuristic": WEIGHTS,
    "ismcts": ISMCTS_WEIGHTS,
    "value": VALUE_WEIGHTS,
}


def pool_left(s: State) -> float:
    """Fraction of the Honor pool still in it: 1 at the start, 0 once it is empty."""
    if s.ending or s.over:
        return 0.0
    return max(0.0, min(1.0, s.pool / s.config.honor_pool))


def hand_value(s: State, q: int, K: Knowledge) -> float:
    """The play value of the cards in seat ``q``'s hand (what its next turn starts with)."""
    play = K.play
    return sum(play[c] for c in s.hands[q])


def scores_linear(
    s: State, stats: list[SeatStats], K: Knowledge, w: Weights = WEIGHTS
) -> list[float]:
    f = pool_left(s)
    g = 1.0 - f
    wh = w.honor_start * f + w.honor_end * g
    wa = w.avg_play_start * f + w.avg_play_end * g
    wt = w.turn_start * f + w.turn_end * g
    wp = w.pending_start * f + w.pending_end * g
    if s.ending:
        wh += w.honor_final
    last = (s.first - 1) % s.n
    out = []
    for q, st in enumerate(stats):
        u = wh * st.honor + wa * st.avg_play + wt * st.turn_sum + wp * st.pending
        u += w.crew * min(s.crew[q], 9) + w.size * st.size
        if q == s.active:
            u += w.next_to_play + w.next_to_play_end * g
            if w.hand:
                u += w.hand * hand_value(s, q, K)
        if q == last:
            u += w.last_seat + w.last_seat_end * g
        out.append(u)
    return out


def seat_features(s: State, q: int, st: SeatStats, K: Knowledge) -> list[float]:
    """Seat ``q``'s terms of :func:`scores_linear`, one per :data:`VALUE_FIELDS` (what the value
    model is fitted on: ``scores_linear`` is their dot product with the weights)."""
    f = pool_left(s)
    g = 1.0 - f
    active = 1.0 if q == s.active else 0.0
    last = 1.0 if q == (s.first - 1) % s.n else 0.0
    h = float(st.honor)
    return [
        h * f, h * g, h if s.ending else 0.0,
        st.avg_play * f, st.avg_play * g, st.turn_sum * f, st.turn_sum * g,
        st.pending * f, st.pending * g, float(min(s.crew[q], 9)), float(st.size),
        active, active * g, last, last * g, hand_value(s, q, K) * active,
    ]  # fmt: skip


VALUE_FIELDS = (
    "honor_start", "honor_end", "honor_final", "avg_play_start", "avg_play_end",
    "turn_start", "turn_end", "pending_start", "pending_end", "crew", "size",
    "next_to_play", "next_to_play_end", "last_seat", "last_seat_end", "hand",
)  # fmt: skip


def _sigmoid(z: float) -> float:
    if z < -30:
        return 0.0
    if z > 30:
        return 1.0
    return 1.0 / (1.0 + math.exp(-z))


def evaluate(
    s: State, K: Knowledge, softmax: bool = False, w: Weights = VALUE_WEIGHTS
) -> list[float]:
    """Rewards in [0, 1], one per seat: the chance of winning from here.

    Each seat's chance is the logistic of its score's lead over the best other seat's or, with
    ``softmax``, its share exp(u) / sum(exp(u)) (the same with two seats; with more, the
    chances sum to 1 and a seat far behind still prefers to close in on the leader)."""
    n = s.n
    if s.over:  # a finished game is certain
        won = winner(s)
        return [1.0 if q == won else 0.0 for q in range(n)]
    stats = [seat_stats(s, q, K) for q in range(n)]
    u = scores_linear(s, stats, K, w)
    if softmax and n > 2:
        top = max(u)
        e = [math.exp(max(-30.0, x - top)) for x in u]
        z = sum(e)
        return [x / z for x in e]
    return [_sigmoid(u[q] - max(u[o] for o in range(n) if o != q)) for q in range(n)]


@dataclass(frozen=True, slots=True)
class Projection:
    """The ``projection`` evaluation: each seat's Honor at the end of the game, projected.

    A seat's projection is what it holds (Honor, Crew) plus what its deck and Constructs will
    yield over the turns it still plays, in the policy's exchange rates (``HONOR_R`` Runes or
    Power per Honor, ``econ`` for the discount of future resources); its chance of winning is
    the logistic of its lead over the best other seat, at a scale that moves linearly from
    ``scale_start`` (Honor pool full) to ``scale_end`` (empty). Four numbers, fitted to
    heuristic self-play (docs/bots.md); the ``lead`` evaluation's twelve weights move with
    the pool instead."""

    econ: float = 0.6
    scale_start: float = 0.054
    scale_end: float = 0.119
    next_to_play: float = 0.44


PROJECTION = Projection()


def projected(s: State, q: int, st: SeatStats, econ: float) -> float:
    """Seat ``q``'s resources at the end of the game, in Runes: Honor and Crew held, plus its
    deck's plays and its Constructs' yields over its remaining turns (Constructs still in its
    deck once they are drawn: a tenth of the deck per turn, as the policy reckons)."""
    rem = seat_turns_left(s, q)
    future = rem * (5.0 * st.avg_play + st.turn_sum) + st.pending * max(0.0, rem - st.size / 10)
    return HONOR_R * st.honor + CREW_R * min(s.crew[q], 9) + econ * future


def evaluate_projection(s: State, K: Knowledge, p: Projection = PROJECTION) -> list[float]:
    """Rewards in [0, 1], one per seat, from projected Honor (see :class:`Projection`); a
    finished game is scored as :func:`evaluate` scores it."""
    if s.over:
        return evaluate(s, K)
    n = s.n
    f = pool_left(s)
    k = p.scale_start * f + p.scale_end * (1.0 - f)
    u = [k * projected(s, q, seat_stats(s, q, K), p.econ) for q in range(n)]
    u[s.active] += p.next_to_play
    return [_sigmoid(u[q] - max(u[o] for o in range(n) if o != q)) for q in range(n)]
