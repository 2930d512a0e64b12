"""Decoded states of recently used games, by commit id.

A commit id names one state for good (a new commit writes a new id; a store that lost versions
and was played on again gives them new ids), so a decoded state kept under its commit id never
goes stale: a hit only saves decoding the bytes the store answered with. Which version is
current is always the store's answer (through ``CachingStore``), never this cache's.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from engine_service import rules


class StateCache:
    """Also each kept state's legal actions, once asked for: a submit checks its action against
    them, and its answer lists those of the state it made, which the next submit plays on."""

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        # game id -> [commit id, state, its legal actions or None until asked for]
        self._items: OrderedDict[str, list[Any]] = OrderedDict()

    def get(self, game_id: str, commit_id: str) -> rules.State | None:
        """The decoded state (shared: clone it before changing it), or None."""
        hit = self._items.get(game_id)
        if hit is None or hit[0] != commit_id:
            return None
        self._items.move_to_end(game_id)
        state: rules.State = hit[1]
        return state

    def put(self, game_id: str, commit_id: str, state: rules.State) -> None:
        """Keep ``state`` (which the caller must not change afterwards) as that commit's."""
        self._items[game_id] = [commit_id, state, None]
        self._items.move_to_end(game_id)
        if len(self._items) > self._size:
            self._items.popitem(last=False)

    def legal_actions(self, game_id: str, commit_id: str, state: rules.State) -> list[int]:
        """``rules.legal_actions(state)`` (shared: not to be changed), kept with the state when
        it is the one kept for that commit."""
        hit = self._items.get(game_id)
        if hit is None or hit[0] != commit_id or hit[1] is not state:
            return rules.legal_actions(state)
        if hit[2] is None:
            hit[2] = rules.legal_actions(state)
        legal: list[int] = hit[2]
        return legal

    def forget(self, game_id: str) -> None:
        self._items.pop(game_id, None)
