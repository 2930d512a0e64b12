"""Decoded states of recently used games, by commit id.

A commit id names one state for good (a new commit writes a new id; a store that lost versions
and was played on again gives them new ids), so a decoded state kept under its commit id never
goes stale: a hit only saves decoding the bytes the store answered with. Which version is
current is always the store's answer (through ``CachingStore``), never this cache's.
"""

from __future__ import annotations

from collections import OrderedDict

from engine_service import rules


class StateCache:
    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._items: OrderedDict[str, tuple[str, rules.State]] = OrderedDict()

    def get(self, game_id: str, commit_id: str) -> rules.State | None:
        """The decoded state (shared: clone it before changing it), or None."""
        hit = self._items.get(game_id)
        if hit is None or hit[0] != commit_id:
            return None
        self._items.move_to_end(game_id)
        return hit[1]

    def put(self, game_id: str, commit_id: str, state: rules.State) -> None:
        """Keep ``state`` (which the caller must not change afterwards) as that commit's."""
        self._items[game_id] = (commit_id, state)
        self._items.move_to_end(game_id)
        if len(self._items) > self._size:
            self._items.popitem(last=False)

    def forget(self, game_id: str) -> None:
        self._items.pop(game_id, None)
