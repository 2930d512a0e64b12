"""Hand-set positions for tests, examples and benchmarks: set zones directly by card key.

    s = scenario(sets="ss", hand=["talons_of_amaruk"], ships=[2, 2], treasures={1: ["gold"]})

starts a normal game, then puts the active seat (0) in its main phase on a later turn with
the zones given. Zones not named keep what setup dealt. Such states need not keep the
card-conservation invariant of real games (cards can be conjured), so use them for unit tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from engine_service.rules.config import GameConfig
from engine_service.rules.engine import new_game
from engine_service.rules.state import State


def ids(s: State, keys: Iterable[str]) -> list[int]:
    by_key = s.T.catalog.by_key
    return [by_key[k] for k in keys]


def scenario(
    sets: str = "ss",
    players: int = 2,
    seed: int = 1,
    *,
    active: int = 0,
    first: int = 0,
    hand: Iterable[str] | None = None,
    deck: Iterable[str] | None = None,
    discard: Iterable[str] | None = None,
    constructs: Iterable[str] | None = None,
    hands: Mapping[int, Iterable[str]] | None = None,
    decks: Mapping[int, Iterable[str]] | None = None,
    discards: Mapping[int, Iterable[str]] | None = None,
    center: Mapping[int, str] | None = None,
    center_deck: Iterable[str] | None = None,
    under: Mapping[int, Iterable[str]] | None = None,
    ships: list[int] | None = None,
    crew: list[int] | None = None,
    treasures: Mapping[int, Iterable[str]] | None = None,
    coins: Mapping[int, list[int]] | None = None,
    runes: int = 0,
    power: int = 0,
    board_coin: int | None = None,
    ghost: int | None = None,
    turn: int = 5,
) -> State:
    s = new_game(GameConfig(sets=sets, players=players, seed=seed))
    s.first, s.active, s.turn = first, active, turn
    s.stack.clear()
    s.decision = None
    s.flags = 0
    s.ship = list(ships) if ships is not None else [0] * players
    if crew is not None:
        s.crew = list(crew)
    s.runes, s.power = runes, power

    def put(zone: list[list[int]], seat: int, keys: Iterable[str] | None) -> None:
        if keys is not None:
            zone[seat] = ids(s, keys)

    put(s.hands, active, hand)
    put(s.decks, active, deck)
    put(s.discards, active, discard)
    put(s.constructs, active, constructs)
    for zone, given in ((s.hands, hands), (s.decks, decks), (s.discards, discards), (s.treasures, treasures)):
        for seat, keys in (given or {}).items():
            put(zone, seat, keys)
    for sp, key in (center or {}).items():
        s.center[sp] = ids(s, [key])[0]
    for sp, keys in (under or {}).items():
        s.under[sp] = ids(s, keys)
    if center_deck is not None:
        s.center_deck = ids(s, center_deck)
    # coins keep their conservation: whatever is placed is taken out of the Treasure Bag
    if board_coin is not None:
        if s.board_coin >= 0:
            s.bag.append(s.board_coin)
        s.board_coin = board_coin
    for seat, cs in (coins or {}).items():
        s.coins[seat] = list(cs)
    placed = [c & 63 for cs in s.coins for c in cs] + ([s.board_coin] if s.board_coin >= 0 else [])
    s.bag = [c for c in s.bag if c not in placed]
    if ghost is not None:
        s.ghost = ghost
    return s
