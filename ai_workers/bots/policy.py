"""The greedy policy: a score for each legal action, from what the deciding seat can see.

Used as the ``heuristic`` bot (take the best-scoring action) and inside ISMCTS (to order
expansions and to play rollouts). It reads only the deciding seat's own hand, its own
resources and the public board, so it is the same on a view and on a determinized state.

Order of a turn: play every card (draw cards first, Constructs next), use abilities and
flip coin pairs, move the ship where Crew, Anchor or a coin pay off, then spend: the
purchase or kill worth most first, Runes and Power before Crew; end the turn when nothing
left is worth doing. Answers to choices pick what is worth most (banish starting cards,
raid the richest Treasure, always prevent a Raid, give Thukal the least).
"""

from __future__ import annotations

import random

from ai_workers.bots.evaluation import ECON_W, deck_play, seat_turns_left
from ai_workers.bots.knowledge import COIN_R, CREW_R, HONOR_R, Knowledge, op_value
from engine_service.rules import actions as A
from engine_service.rules.state import COIN_ITEM, DEEP, KRAKEN_IN_DEEP, State

P_PLAY, P_USE, P_FLIP, P_MOVE = 1000.0, 900.0, 800.0, 500.0
MOVE_MIN_GAIN = 0.3


class Ctx:
    """What scoring needs about the deciding seat; its deck statistics are computed on first
    use (playing cards and ending the turn do not need them)."""

    __slots__ = ("K", "_avg", "_here", "_rem", "_size", "p", "s")

    def __init__(self, s: State, p: int, K: Knowledge) -> None:
        self.s, self.p, self.K = s, p, K
        self._avg = -1.0
        self._size = 0
        self._rem = 0.0
        self._here: float | None = None

    def _load(self) -> None:
        play_sum, size = deck_play(self.s, self.p, self.K)
        self._avg = play_sum / size if size else 0.0
        self._size = size
        self._rem = seat_turns_left(self.s, self.p)

    @property
    def here(self) -> float:
        """``space_value`` of the space the seat's ship is on (every move compares with it)."""
        if self._here is None:
            self._here = self.space_value(self.s.ship[self.p])
        return self._here

    @property
    def avg(self) -> float:
        if self._avg < 0:
            self._load()
        return self._avg

    @property
    def size(self) -> int:
        if self._avg < 0:
            self._load()
        return self._size

    @property
    def rem(self) -> float:
        if self._avg < 0:
            self._load()
        return self._rem

    def card_gain(self, c: int) -> float:
        """Value of adding Hero or Construct c to the seat's cards."""
        if self._avg < 0:
            self._load()
        K = self.K
        v = HONOR_R * K.honor[c]
        if K.is_construct[c]:
            return v + ECON_W * K.turn[c] * max(0.0, self._rem - self._size / 10)
        return v + ECON_W * self._rem * 5.0 * (K.play[c] - self._avg) / (self._size + 1)

    def item_value(self, item: int) -> float:
        if item >= COIN_ITEM:
            return COIN_R
        return HONOR_R * self.K.honor[item]

    def extras(self, sp: int, c: int) -> float:
        """Treasure under the space, the coin on it and the card's Anchor, if ship is there."""
        s = self.s
        v = 0.0
        for t in s.under[sp]:
            v += HONOR_R * self.K.honor[t]
        if s.ship[self.p] == sp:
            if s.board_coin >= 0 and s.board_coin // 6 == sp:
                v += COIN_R
            v += self.K.anchor[c]
        return v

    def target_value(self, target: int, defeat: bool) -> float:
        """Value of acquiring or defeating a target (space or always-available pile)."""
        s, K, T = self.s, self.K, self.K.T
        if target == A.T_MYSTIC:
            return self.card_gain(T.mystic)
        if target == A.T_HEAVY:
            return self.card_gain(T.heavy)
        if target == A.T_CULTIST:
            return K.reward[T.cultist]
        if target == DEEP:
            v = K.reward[T.thukal]
            for t in s.under[DEEP]:
                v += HONOR_R * K.honor[t]
            return v + COIN_R * len(s.kraken_coins)
        c = s.center[target]
        base = K.reward[c] if defeat else self.card_gain(c)
        return base + self.extras(target, c)

    def space_value(self, sp: int) -> float:
        """What having the ship on space sp is worth this turn."""
        s, K, T, p = self.s, self.K, self.K.T, self.p
        crew = s.crew[p]
        v = 0.0
        if sp == DEEP:
            if s.kraken == KRAKEN_IN_DEEP:
                if T.cost[T.thukal] <= crew + s.power:
                    v += K.reward[T.thukal] - CREW_R * max(0, T.cost[T.thukal] - s.power)
                items = [self.item_value(i) for i in s.treasures[p]]
                items += [COIN_R] * len(s.coins[p])
                if items:
                    v -= min(items)
        else:
            c = s.center[sp]
            if c >= 0:
                cost = T.cost[c]
                monster = K.is_monster[c]
                affordable = cost <= crew or cost <= (s.power if monster else s.runes)
                if cost <= crew:
                    gain = K.reward[c] if monster else self.card_gain(c)
                    v += max(0.0, gain - CREW_R * cost)
                if affordable:
                    if s.board_coin >= 0 and s.board_coin // 6 == sp:
                        v += COIN_R
                    v += K.anchor[c]
        if s.ghost == sp and crew > 0:
            v -= CREW_R
        return v

    def banish_value(self, c: int, from_hand: bool, skipper: bool) -> float:
        K = self.K
        v = ECON_W * self.rem * 5.0 * (self.avg - K.play[c]) / max(1, self.size - 1)
        v -= HONOR_R * K.honor[c]
        if K.is_starting[c]:
            v += 1.0
        if from_hand:
            v -= K.play[c]
        if skipper:
            v += 2.0 + HONOR_R * (K.honor[c] + 1)
        return v


def score(ctx: Ctx, a: int) -> float:
    s, K = ctx.s, ctx.K
    kind, arg = a >> 16, a & 0xFFFF
    if kind == A.PLAY:
        return P_PLAY + K.play_rank[arg]
    if kind == A.END_TURN:
        return 0.0
    if kind == A.ACQUIRE or kind == A.DEFEAT:
        return ctx.target_value(arg, kind == A.DEFEAT)
    if kind == A.ACQUIRE_CREW or kind == A.DEFEAT_CREW:
        cost = K.T.cost[K.T.thukal if arg == DEEP else s.center[arg]]
        return ctx.target_value(arg, kind == A.DEFEAT_CREW) - CREW_R * cost
    if kind == A.MOVE:
        gain = ctx.space_value(arg) - ctx.here
        return P_MOVE + gain if gain > MOVE_MIN_GAIN else -1.0
    if kind == A.USE:
        return P_USE
    if kind == A.FLIP_COINS:
        return P_FLIP
    if kind == A.DEFEAT_VOID:
        return K.reward[arg] - CREW_R * K.T.cost[arg]
    if kind == A.SKIP:
        return 0.0
    if kind == A.MOVE_SHIP:
        return ctx.space_value(arg) - ctx.here - MOVE_MIN_GAIN
    if kind == A.PLACE_SHIP:
        return ctx.space_value(arg)
    d = s.decision
    skipper = d is not None and d[0] == A.D_BANISH and d[4] == A.BANISH_SKIPPER
    if kind == A.BANISH_HAND:
        return ctx.banish_value(arg, True, skipper)
    if kind == A.BANISH_DISCARD:
        return ctx.banish_value(arg, False, skipper)
    if kind == A.BANISH_CENTER:
        c = s.center[arg]
        return 0.25 * (K.reward[c] if K.is_monster[c] else ctx.card_gain(c)) - 1.0
    if kind == A.RAID_TAKE:
        return ctx.item_value(arg % 4096)
    if kind == A.PREVENT_RAID:
        return 1.0
    if kind == A.GIVE_TREASURE:
        return -ctx.item_value(arg)
    if kind == A.TAKE_FREE:
        defeat = d is not None and d[0] == A.D_FREE and d[7] == A.FREE_DEFEAT
        return ctx.target_value(arg, defeat)
    if kind == A.CHOOSE:
        if d is not None and d[0] == A.D_CHOOSE:
            return op_value(d[3][arg + 1])
        return 0.0
    if kind == A.DESTROY:
        return -K.turn[arg]
    return 0.0


def best_action(s: State, legal: list[int], K: Knowledge) -> int:
    """The greedy choice (first of equals, so it is deterministic)."""
    if len(legal) == 1:
        return legal[0]
    ctx = Ctx(s, s.to_move(), K)
    best, best_v = legal[0], score(ctx, legal[0])
    for a in legal[1:]:
        v = score(ctx, a)
        if v > best_v:
            best, best_v = a, v
    return best


FORCED_KINDS = (A.PLAY, A.USE, A.FLIP_COINS)


def forced_action(s: State, legal: list[int], K: Knowledge) -> int | None:
    """Playing a card, using a once-per-turn ability and flipping a coin pair only ever add
    to what the seat has (every "may" in them is asked separately), so in the main phase
    they come first, in the policy's order; None when there is none left to do."""
    if s.decision is not None:
        return None
    cands = [a for a in legal if a >> 16 in FORCED_KINDS]
    if not cands:
        return None
    return best_action(s, cands, K) if len(cands) > 1 else cands[0]


def rollout_action(s: State, legal: list[int], K: Knowledge, rnd: random.Random, eps: float) -> int:
    """The greedy choice, or with probability eps a random one other than ending the turn."""
    if len(legal) == 1:
        return legal[0]
    if eps and rnd.random() < eps:
        a = legal[int(rnd.random() * len(legal))]
        if a >> 16 != A.END_TURN:
            return a
    f = forced_action(s, legal, K)  # the same choice as below (forced kinds score highest),
    return f if f is not None else best_action(s, legal, K)  # without looking at the rest
