"""What the bots know about cards: static values computed once per card catalog.

Values are in *resource units* (R): one Rune or one Power is 1 R, one Honor is worth
``HONOR_R`` R. A hero's ``play`` value is what one play of it yields; a Construct's ``turn``
value is what it yields each turn it is in play; a Monster's ``reward`` value is what
defeating it yields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine_service.cards import language as L
from engine_service.rules.effects import I_FREE
from engine_service.rules.tables import Tables

HONOR_R = 2.0  # 1 Honor ~ 2 Runes or Power over a game
CREW_R = 0.7  # Crew keeps between turns but only buys at the ship's space
COIN_R = 2 * HONOR_R + 1.0  # 2 Honor at the end, plus the pair bonus it may give
RESOURCE_R = (1.0, 1.0, CREW_R, HONOR_R, 1.4, 0.3)  # runes, power, crew, honor, draw, move
TRIGGER_RATE = 0.5  # how often a triggered ability fires, per turn


def op_value(op: tuple[Any, ...]) -> float:
    """Static value of one compiled effect step, in R (a step holds ints, and a choice's or a
    condition's steps: tuples)."""
    code = op[0]
    if code == L.OP_GAIN:
        return float(RESOURCE_R[op[1]] * op[2])
    if code == L.OP_RAID:
        return float(0.6 * op[1])
    if code == L.OP_PULL:
        return 0.2
    if code == L.OP_BANISH:
        return 0.3 if op[1] == L.Z_CENTER else 0.9
    if code == L.OP_EACH_BANISH:
        return 0.3
    if code == L.OP_COIN:
        return float(COIN_R * op[1])
    if code == L.OP_GHOST:
        return 0.1
    if code == L.OP_ACQUIRE_FREE:
        return 3.0
    if code == L.OP_DEFEAT_FREE:
        return 2.5
    if code == L.OP_DESTROY_OPPONENTS:
        return 1.0
    if code == L.OP_CREW_VOID:
        return 0.5
    if code == L.OP_SKIPPER:
        return 2.0
    if code == L.OP_CHOOSE:
        return max(op_value(o) for o in op[1:])
    if code == L.OP_IF:
        return 0.4 * op_value(op[3])
    if code == I_FREE:
        return 2.5
    return 0.0


def ops_value(ops: tuple[tuple[int, ...], ...]) -> float:
    return sum(op_value(o) for o in ops)


@dataclass(frozen=True, slots=True)
class Knowledge:
    T: Tables
    play: tuple[float, ...]  # per play of a Hero (incl. half of Unite and Echo)
    turn: tuple[float, ...]  # per turn in play (Constructs, Ongoing cards)
    reward: tuple[float, ...]  # defeating a Monster
    anchor: tuple[float, ...]  # acquiring with your ship at its space
    honor: tuple[int, ...]
    is_construct: tuple[bool, ...]
    is_monster: tuple[bool, ...]
    is_starting: tuple[bool, ...]
    has_end: tuple[bool, ...]  # scores an end-of-game text (Crystals of Command...)
    play_rank: tuple[float, ...]  # order of play: draw first, then Constructs, choices last


def _play_rank(T: Tables, c: int) -> float:
    ops = T.play[c]
    if any(o[0] == L.OP_GAIN and o[1] == L.DRAW for o in ops):
        return 3.0  # see more cards before anything else
    if any(o[0] in _LATE_OPS or (o[0] == L.OP_GAIN and o[1] == L.MOVE) for o in ops):
        return 0.0  # choices (and moves) are best made knowing the whole hand's resources
    return 2.0 if T.type[c] == L.CONSTRUCT else 1.0


_LATE_OPS = (L.OP_CHOOSE, L.OP_BANISH, L.OP_SKIPPER, L.OP_ACQUIRE_FREE, L.OP_RAID)


def _build(T: Tables) -> Knowledge:
    n = len(T.type)
    play, turn, reward = [0.0] * n, [0.0] * n, [0.0] * n
    for c in range(n):
        play[c] = ops_value(T.play[c]) + 0.5 * ops_value(T.unite[c]) + 0.5 * ops_value(T.echo[c])
        t = sum(ops_value(ops) for _, ops in T.activated[c])
        t += TRIGGER_RATE * sum(ops_value(tr[4]) for tr in T.triggers[c])
        t += 0.5 * ops_value(T.grants_anchor[c])
        turn[c] = t
        reward[c] = ops_value(T.reward[c])
        if T.ongoing[c] and T.type[c] == L.MONSTER:
            reward[c] += 6.0 * turn[c]  # an Ongoing Monster keeps giving, ~6 turns
    reward[T.thukal] += 0.6 * 6  # The Kraken's Raid, each turn
    return Knowledge(
        T=T,
        play=tuple(play),
        turn=tuple(turn),
        reward=tuple(reward),
        anchor=tuple(ops_value(T.anchor[c]) for c in range(n)),
        honor=T.honor,
        is_construct=tuple(t == L.CONSTRUCT for t in T.type),
        is_monster=tuple(t == L.MONSTER for t in T.type),
        is_starting=T.starting,
        has_end=tuple(e is not None for e in T.end_honor),
        play_rank=tuple(_play_rank(T, c) for c in range(n)),
    )


_CACHE: dict[int, Knowledge] = {}


def knowledge(T: Tables) -> Knowledge:
    k = _CACHE.get(id(T))
    if k is None or k.T is not T:
        k = _CACHE[id(T)] = _build(T)
    return k
