"""Small helpers for rules tests: act by kind name, look cards up by key."""

from __future__ import annotations

from engine_service import rules
from engine_service.rules import actions as A
from engine_service.rules.state import State


def cid(s: State, key: str) -> int:
    return s.T.catalog.id(key)


def act(s: State, kind: int, arg: int = 0) -> list[tuple[object, ...]]:
    """Apply an action through the checked path (it must be legal)."""
    return rules.apply(s, A.encode(kind, arg))


def legal(s: State, kind: int, arg: int = 0) -> bool:
    return A.encode(kind, arg) in rules.legal_actions(s)


def kinds(s: State) -> set[int]:
    return {a >> 16 for a in rules.legal_actions(s)}


def play(s: State, key: str) -> list[tuple[object, ...]]:
    return act(s, A.PLAY, cid(s, key))


def end_turn(s: State) -> None:
    act(s, A.END_TURN)
    # answer a new turn's placement, if any, by staying on space 0
    if s.decision is not None and s.decision[0] == A.D_PLACE:
        act(s, A.PLACE_SHIP, 0)
