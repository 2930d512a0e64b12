"""A test bench for card effects: a real game with the board cleared to known cards.

    b = Bench("ss")                  # seat b.me to act, main phase, ship on space 0
    b.hand("talons_of_amaruk")
    b.ships(me=2, enemy=2); b.treasures(b.enemy, "gold")
    with b.expect(runes=2, treasures=1, e_treasures=-1):
        b.play("talons_of_amaruk")
        b.answer("raid_take")

Everything goes through ``rules.apply`` with legal action ids, so a card's effect is checked
the way a player would get it. ``expect`` compares a snapshot before and after: the named
counts must change by the given amounts, positions (``ship``, ``e_ship``, ``ghost``) must end
where given, and the resources not named (Runes, Power, Crew, Honor, Treasure, coins, the
ships, on both sides) must not change at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from engine_service import rules
from engine_service.rules import actions as A
from engine_service.rules.state import COIN_ITEM, KRAKEN_IN_DEEP, State

# Counts compared as deltas; positions compared as absolute values.
COUNTS = (
    "runes", "power", "crew", "honor", "hand", "deck", "discard", "treasures", "coins",
    "constructs", "ongoing", "void", "out", "e_crew", "e_honor", "e_treasures", "e_coins",
    "e_hand", "e_discard", "e_constructs",
)  # fmt: skip
POSITIONS = ("ship", "e_ship", "ghost")
ALWAYS_CHECKED = (
    "runes", "power", "crew", "honor", "treasures", "coins", "e_crew", "e_honor",
    "e_treasures", "e_coins", "ship", "e_ship", "ghost",
)  # fmt: skip


class Bench:
    def __init__(self, sets: str = "ss", players: int = 2, seed: int = 5) -> None:
        s = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=seed))
        assert s.decision is not None and s.decision[0] == A.D_PLACE
        place = [a for a in rules.legal_actions(s) if A.kind_of(a) == A.PLACE_SHIP]
        rules.apply(s, place[0])
        assert s.decision is None, s.decision
        self.s: State = s
        self.me: int = s.active
        self.enemy: int = (s.active + 1) % players
        T = s.T
        filler = self.cid("gullet_eel" if s.config.has_ss else "jade_serpent")
        self.filler = filler
        apprentice = self.cid("apprentice")
        for q in range(players):
            s.hands[q] = []
            s.discards[q] = []
            s.decks[q] = [apprentice] * 10
            s.constructs[q] = []
            s.ongoing[q] = []
            s.treasures[q] = []
            s.coins[q] = []
            s.played[q] = []
            s.crew[q] = 0
            s.ship[q] = 0 if q == self.me else 4
        s.center = [filler] * 6
        s.under = [[] for _ in s.under]
        s.center_deck = [filler] * 10
        s.void = []
        s.board_coin = -1
        if s.ghost >= 0:
            s.ghost = 3
        if s.config.has_ss:
            s.kraken = KRAKEN_IN_DEEP
        s.runes = s.power = 0
        s.flags = 0
        s.moved = False
        s.used = []
        s.unite_done = 0
        s.stack = []
        assert T.catalog is not None

    # ---- setting up -----------------------------------------------------------------------

    def cid(self, key: str) -> int:
        return self.s.T.catalog.id(key)

    def hand(self, *keys: str) -> None:
        self.s.hands[self.me] = [self.cid(k) for k in keys]

    def discard(self, *keys: str) -> None:
        self.s.discards[self.me] = [self.cid(k) for k in keys]

    def enemy_hand(self, *keys: str) -> None:
        self.s.hands[self.enemy] = [self.cid(k) for k in keys]

    def center(self, sp: int, key: str) -> None:
        self.s.center[sp] = self.cid(key)

    def under(self, sp: int, *keys: str) -> None:
        self.s.under[sp] = [self.cid(k) for k in keys]

    def on_top(self, key: str) -> None:
        """Put a card on top of the center deck (the next to be flipped)."""
        self.s.center_deck.append(self.cid(key))

    def ships(self, me: int | None = None, enemy: int | None = None) -> None:
        if me is not None:
            self.s.ship[self.me] = me
        if enemy is not None:
            self.s.ship[self.enemy] = enemy

    def treasures(self, seat: int, *keys: str) -> None:
        self.s.treasures[seat] = [self.cid(k) for k in keys]

    def coins(self, seat: int, *codes: int) -> None:
        self.s.coins[seat] = list(codes)

    def in_play(self, seat: int, *keys: str) -> None:
        self.s.constructs[seat] = [self.cid(k) for k in keys]

    # ---- acting (always through legal actions) ---------------------------------------------

    def act(self, kind: str, arg: int | str | None = None) -> list[tuple[Any, ...]]:
        """Apply an action of this kind; ``arg`` may be a card key; with no ``arg`` the
        first legal action of that kind is taken."""
        k = rules.KIND_IDS[kind]
        legal = rules.legal_actions(self.s)
        if arg is None:
            mine = [a for a in legal if A.kind_of(a) == k]
            assert mine, f"no legal {kind}: decision {self.s.decision}, legal {legal}"
            action = mine[0]
        else:
            action = A.encode(k, self.cid(arg) if isinstance(arg, str) else arg)
            assert action in legal, f"{kind} {arg} not legal: decision {self.s.decision}"
        return rules.apply(self.s, action)

    answer = act

    def legal(self, kind: str, arg: int | str = 0) -> bool:
        a = A.encode(rules.KIND_IDS[kind], self.cid(arg) if isinstance(arg, str) else arg)
        return a in rules.legal_actions(self.s)

    def play(self, key: str) -> None:
        self.act("play", key)

    def use(self, key: str, ability: int = 0) -> None:
        self.act("use", self.cid(key) * 8 + ability)

    def can_use(self, key: str, ability: int = 0) -> bool:
        return self.legal("use", self.cid(key) * 8 + ability)

    def deciding(self) -> str | None:
        d = self.s.decision
        return None if d is None else A.DECISION_NAMES[d[0]]

    def decider(self) -> int:
        """The seat that must answer the pending choice."""
        d = self.s.decision
        assert d is not None, "no choice is pending"
        return int(d[1])

    def defeat_monster(self, key: str, sp: int = 2) -> None:
        """Put a Monster on a center space, give exactly its cost in Power, defeat it."""
        self.center(sp, key)
        self.s.power += self.s.T.cost[self.cid(key)]
        self.act("defeat", sp)

    def end_round(self) -> None:
        """End this turn and the enemy's (2 players): back to the start of my turn."""
        self.act("end_turn")
        while self.s.active != self.me:
            assert self.s.decision is None
            self.act("end_turn")

    # ---- checking ------------------------------------------------------------------------

    def snap(self) -> dict[str, int]:
        s, p, e = self.s, self.me, self.enemy
        return {
            "runes": s.runes, "power": s.power, "crew": s.crew[p], "honor": s.tokens[p],
            "hand": len(s.hands[p]), "deck": len(s.decks[p]), "discard": len(s.discards[p]),
            "treasures": len(s.treasures[p]), "coins": len(s.coins[p]),
            "constructs": len(s.constructs[p]), "ongoing": len(s.ongoing[p]), "void": len(s.void),
            "out": len(s.out), "e_crew": s.crew[e], "e_honor": s.tokens[e],
            "e_treasures": len(s.treasures[e]), "e_coins": len(s.coins[e]),
            "e_hand": len(s.hands[e]), "e_discard": len(s.discards[e]),
            "e_constructs": len(s.constructs[e]),
            "ship": s.ship[p], "e_ship": s.ship[e], "ghost": s.ghost,
        }  # fmt: skip

    @contextmanager
    def expect(self, **want: int) -> Iterator[None]:
        """``pending=True`` allows a choice to be left open at the end."""
        pending = bool(want.pop("pending", False))
        unknown = set(want) - set(COUNTS) - set(POSITIONS)
        assert not unknown, f"unknown observables {unknown}"
        before = self.snap()
        yield
        after = self.snap()
        if not pending:
            assert self.s.decision is None, f"a choice is still pending: {self.s.decision}"
        wrong = {}
        for k in set(ALWAYS_CHECKED) | set(want):
            if k in POSITIONS:
                target = want.get(k, before[k])
                if after[k] != target:
                    wrong[k] = f"ended at {after[k]}, expected {target} (was {before[k]})"
            else:
                delta = after[k] - before[k]
                if delta != want.get(k, 0):
                    wrong[k] = f"changed by {delta}, expected {want.get(k, 0)}"
        assert not wrong, f"unexpected result: {wrong}"


def coin(color: int, icon: int) -> int:
    """A Cursed Treasure coin code: color (the space it lives on) * 6 + icon."""
    return color * 6 + icon


def raid_item_coin(code: int) -> int:
    return COIN_ITEM + code
