"""The game state: plain data (cards are ints into the catalog, zones are lists).

Cloning copies lists, never deep-copies objects: it is the inner loop of the AI's search.
Copies of a card are indistinguishable, so a zone is a list of card ids and "every physical
card in exactly one zone" means the multiset of all zones is constant.
"""

from __future__ import annotations

from typing import Any

from engine_service.rules.config import GameConfig
from engine_service.rules.tables import Tables

# The board: spaces 0..5 face the six center-row cards, 6 is The Deep; they form a ring, so
# The Deep is adjacent to both ends of the center row.
CENTER_SPACES = 6
DEEP = 6
SPACES = 7
NEIGHBORS = tuple(((s - 1) % SPACES, (s + 1) % SPACES) for s in range(SPACES))

# Kraken location (state.kraken): in The Deep, not in this game, or the seat that defeated it.
KRAKEN_IN_DEEP = -1
KRAKEN_ABSENT = -2

# Always-available piles (state.piles)
PILE_MYSTIC, PILE_HEAVY = 0, 1

# Per-turn flags (state.flags)
F_CREW_VOID = 1  # Naka: Crew may defeat Monsters in The Void this turn
F_RAID_ATTEMPTED = 2  # the first Raid attempt of this turn has happened
F_PLUNDER = 4  # a Monster in the center row was defeated this turn
F_FIRST_TURN = 8  # the active seat is on its first turn (ship placement, no normal move)

# Cursed Treasure coins: code = color * 6 + icon; a coin held face down has COIN_DOWN set.
COIN_DOWN = 64
COIN_ITEM = 1024  # a treasure item id >= COIN_ITEM is a coin (item - COIN_ITEM), else a card id


# The state's fields (its __slots__), named here too: code compiled by mypyc (setup.py) reads
# no __slots__ through the class.
FIELDS = (
    "T",
    "active",
    "bag",
    "board_coin",
    "center",
    "center_deck",
    "coins",
    "config",
    "constructs",
    "crew",
    "decision",
    "decks",
    "discards",
    "ending",
    "first",
    "flags",
    "ghost",
    "ghost_hit",
    "hands",
    "known",
    "kraken",
    "kraken_coins",
    "moved",
    "n",
    "ongoing",
    "out",
    "over",
    "piles",
    "played",
    "pool",
    "power",
    "rng",
    "runes",
    "ship",
    "stack",
    "tokens",
    "treasures",
    "turn",
    "under",
    "unite_done",
    "used",
    "void",
)  # fmt: skip


class State:
    """One game. Mutated in place by ``rules.apply``; use :meth:`clone` to branch."""

    __slots__ = FIELDS

    T: Tables
    config: GameConfig
    n: int
    rng: int
    turn: int  # turns started so far (1 on the first player's first turn)
    active: int  # whose turn it is
    first: int  # the seat that started the game
    over: bool
    hands: list[list[int]]
    # Cards every seat knows to be in each hand (sorted): a card revealed there and returned
    # (Raid prevention), or the whole hand when its deck ran out and the discard pile was
    # shuffled in. A known card stays known until a copy of it leaves that hand (played,
    # banished, end of turn): copies are indistinguishable, so which one left is not known.
    known: list[list[int]]
    decks: list[list[int]]  # top of deck = end of list
    discards: list[list[int]]
    played: list[list[int]]  # Heroes played this turn (only the active seat's is non-empty)
    constructs: list[list[int]]
    ongoing: list[list[int]]  # Ongoing cards and The Kraken in front of their owner
    treasures: list[list[int]]  # Treasure cards (Gold...) in front of each seat
    coins: list[list[int]]  # Cursed Treasure coins in front of each seat
    out: list[int]  # starting cards banished: set aside outside the game
    crew: list[int]
    ship: list[int]  # space of each ship, -1 before its first placement
    tokens: list[int]  # Honor tokens earned
    pool: int  # Honor tokens left in the pool
    ending: bool  # the pool ran out: the game ends when this round ends
    center: list[int]  # card on each center-row space, -1 if empty
    under: list[list[int]]  # Treasure cards under each space's card; index DEEP = under Thukal
    center_deck: list[int]
    void: list[int]
    piles: list[int]  # Mystics and Heavy Infantry left
    kraken: int
    kraken_coins: list[int]  # coins taken by Thukal, on top of its card
    bag: list[int]  # coins in the Treasure Bag (drawn at random: order is not information)
    board_coin: int  # the coin on the board, -1 if none
    ghost: int  # space of The Ghost Pirate, -1 if not in this game
    runes: int
    power: int
    moved: bool  # the once-per-turn normal move is used
    flags: int
    ghost_hit: int  # bitmask of seats whose Crew the Ghost reduced this turn
    used: list[int]  # once-per-turn abilities used this turn: card id * 8 + ability index
    unite_done: int  # bitmask over ``played`` indices whose Unite has resolved
    stack: list[tuple[Any, ...]]  # pending effect steps, next at the end
    decision: tuple[Any, ...] | None  # the open choice, or None: the active seat's main phase

    def clone(self) -> State:
        s = State.__new__(State)
        s.T = self.T
        s.config = self.config
        s.n = self.n
        s.rng = self.rng
        s.turn = self.turn
        s.active = self.active
        s.first = self.first
        s.over = self.over
        s.hands = [z[:] for z in self.hands]
        s.known = [z[:] for z in self.known]
        s.decks = [z[:] for z in self.decks]
        s.discards = [z[:] for z in self.discards]
        s.played = [z[:] for z in self.played]
        s.constructs = [z[:] for z in self.constructs]
        s.ongoing = [z[:] for z in self.ongoing]
        s.treasures = [z[:] for z in self.treasures]
        s.coins = [z[:] for z in self.coins]
        s.out = self.out[:]
        s.crew = self.crew[:]
        s.ship = self.ship[:]
        s.tokens = self.tokens[:]
        s.pool = self.pool
        s.ending = self.ending
        s.center = self.center[:]
        s.under = [z[:] for z in self.under]
        s.center_deck = self.center_deck[:]
        s.void = self.void[:]
        s.piles = self.piles[:]
        s.kraken = self.kraken
        s.kraken_coins = self.kraken_coins[:]
        s.bag = self.bag[:]
        s.board_coin = self.board_coin
        s.ghost = self.ghost
        s.runes = self.runes
        s.power = self.power
        s.moved = self.moved
        s.flags = self.flags
        s.ghost_hit = self.ghost_hit
        s.used = self.used[:]
        s.unite_done = self.unite_done
        s.stack = self.stack[:]
        s.decision = self.decision
        return s

    def to_move(self) -> int:
        """The seat that must act now (-1 once the game is over)."""
        if self.over:
            return -1
        d = self.decision
        return self.active if d is None else d[1]

    def treasure_count(self, seat: int) -> int:
        return len(self.treasures[seat]) + len(self.coins[seat])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, State):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in FIELDS if k != "T") and (
            self.T.catalog.fingerprint == other.T.catalog.fingerprint
        )

    __hash__ = None  # type: ignore[assignment]
