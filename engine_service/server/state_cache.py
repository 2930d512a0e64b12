"""Decoded states of recently used games, by (game id, version).

A version of a game is written once (compare-and-set), so the state kept for it never goes
stale. Any replica may have written a newer version: a hit saves decoding a state read from
the store, and lets a submit that names this version skip the read (its commit is refused if
the game moved on); this cache never decides which version is current.
"""

from __future__ import annotations

from collections import OrderedDict

from engine_service import rules


class StateCache:
    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._items: OrderedDict[str, tuple[int, rules.State]] = OrderedDict()

    def get(self, game_id: str, version: int) -> rules.State | None:
        """The cached state (shared: clone it before changing it), or None."""
        hit = self._items.get(game_id)
        if hit is None or hit[0] != version:
            return None
        self._items.move_to_end(game_id)
        return hit[1]

    def put(self, game_id: str, version: int, state: rules.State) -> None:
        """Keep ``state`` (which the caller must not change afterwards) as that version's."""
        current = self._items.get(game_id)
        if current is not None and current[0] > version:
            return
        self._items[game_id] = (version, state)
        self._items.move_to_end(game_id)
        if len(self._items) > self._size:
            self._items.popitem(last=False)

    def forget(self, game_id: str) -> None:
        self._items.pop(game_id, None)
