"""``expert``: a scripted player that plays the way strong players describe the game.

It shares the heuristic's sense of what cards are worth (``policy.Ctx``) and adds what the
heuristic lacks:

- **Spending as a whole.** The Runes, Power and Crew of a turn are spent on the best *set* of
  purchases and kills (a small knapsack over the center row, the always-available cards, the
  Cultist and Thukal), not one greedy pick at a time: 6 Runes buy two 3-cost Heroes worth
  more than one 5-cost card, and a Crew-paid card at the ship's space frees Runes for others.
- **Deck thinning.** Early, Apprentices and Militia go whenever a banish is offered, and the
  Heroes that banish are worth more; late, nothing is banished that costs Honor.
- **The race for Constructs.** A Construct bought early pays every turn that is left, so its
  worth is its per-turn value times the turns it will be in play; late, only its Honor counts.
- **Crew and the ship.** The ship goes where the turn's Crew buys the most (a card at its space
  it can afford, the Cursed Treasure coin, an Anchor), never onto The Ghost Pirate or into
  The Deep with Thukal there and Treasure to lose; Crew is kept for a card worth it.
- **Raid timing.** A Raid card is held until the ship shares a space with the richest ship it
  can reach this turn (the normal move first), and The Kraken's Raid waits for a victim.
- **The Kraken and the Ghost.** Thukal is a target of the plan like any Monster (9 Honor, the
  Treasure under it and a Raid every turn); the Ghost Lantern moves The Ghost Pirate only when
  it lands on another ship and not on ours.
- **The last round.** Once the Honor pool is empty and this is the seat's last turn, only Honor
  counts.

Choices asked mid-turn (how to answer a "choose one", what to banish, which Treasure to take or
give) are judged by the same plan: the option that lets the turn's spending reach the most.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ai_workers.bots.evaluation import ECON_W
from ai_workers.bots.knowledge import COIN_R, HONOR_R, Knowledge, knowledge
from ai_workers.bots.policy import Ctx, best_action, score
from ai_workers.bots.settings import BotSettings
from engine_service import rules
from engine_service.cards import language as L
from engine_service.rules import actions as A
from engine_service.rules.effects import MAX_CREW
from engine_service.rules.state import DEEP, KRAKEN_IN_DEEP, SPACES, State

E_PLAN_CAP = 24  # Runes or Power considered by the knapsack (more is never all spent)


@dataclass(frozen=True, slots=True)
class ExpertParams:
    """Switches and weights (ablations in benchmarks: ``expert:plan=0``)."""

    plan: bool = True  # spend as a whole (knapsack) instead of greedily
    raids: bool = True  # hold Raid cards until a victim is in reach
    ghost: bool = True  # move The Ghost Pirate only onto others
    choices: bool = True  # answer "choose one" by what the plan can buy
    endgame: bool = True  # the last turn counts only Honor
    position: bool = True  # end the turn where next turn's Crew buys most
    crew_r: float = 1.4  # one Crew: it keeps from turn to turn (the heuristic: 0.7)
    construct_w: float = 2.0  # weight of a Construct's per-turn value (x ECON_W)
    thin: float = 1.0  # weight of thinning starting cards out


def _ops_have(ops: tuple[L.Op, ...], code: int) -> bool:
    for o in ops:
        if o[0] == code:
            return True
        if o[0] == L.OP_CHOOSE and _ops_have(tuple(o[1:]), code):
            return True
        if o[0] == L.OP_IF and _ops_have((o[3],), code):
            return True
    return False


@dataclass(frozen=True, slots=True)
class Facts:
    """What the expert needs to know of each card, computed once per catalog."""

    raids: tuple[bool, ...]  # playing it (or its Unite) may Raid
    ghost_uses: frozenset[int]  # USE keys (card * 8 + index) that move The Ghost Pirate
    raid_uses: frozenset[int]  # USE keys that Raid (The Kraken's)
    thins: tuple[bool, ...]  # playing it may banish a card of yours


_FACTS: dict[int, Facts] = {}


def facts(K: Knowledge) -> Facts:
    T = K.T
    f = _FACTS.get(id(T))
    if f is not None:
        return f
    n = len(T.type)
    raids = tuple(_ops_have(T.play[c] + T.unite[c], L.OP_RAID) for c in range(n))
    thins = tuple(
        _ops_have(T.play[c] + T.echo[c], L.OP_BANISH) or _ops_have(T.play[c], L.OP_SKIPPER)
        for c in range(n)
    )
    ghost, raid = set(), set()
    for c in range(n):
        for i, ops in T.activated[c]:
            if _ops_have(ops, L.OP_GHOST):
                ghost.add(c * 8 + i)
            if _ops_have(ops, L.OP_RAID):
                raid.add(c * 8 + i)
    f = _FACTS[id(T)] = Facts(raids, frozenset(ghost), frozenset(raid), thins)
    return f


class Expert(Ctx):
    """Scoring of one seat's options, with the turn's spending planned as a whole."""

    __slots__ = ("F", "P", "last_turn")

    def __init__(self, s: State, p: int, K: Knowledge, params: ExpertParams) -> None:
        super().__init__(s, p, K)
        self.F = facts(K)
        self.P = params
        # the seat's last turn: the pool is empty and no turn of its own comes after this one
        self.last_turn = params.endgame and s.ending and s.active == p

    # ---- what cards are worth -------------------------------------------------------------

    def card_gain(self, c: int) -> float:
        K = self.K
        v = HONOR_R * K.honor[c]
        if self.last_turn:
            return v
        if K.is_construct[c]:
            turns = max(0.0, self.rem - self.size / 10)
            return v + self.P.construct_w * ECON_W * K.turn[c] * turns
        draws = self.rem * 5.0 / (self.size + 1)
        gain = K.play[c] - self.avg
        if self.F.thins[c]:
            gain += 0.5 * self.P.thin * min(1.0, self.starting_left() / 4)
        return v + ECON_W * draws * gain

    def starting_left(self) -> int:
        s, p, st = self.s, self.p, self.K.is_starting
        return sum(st[c] for z in (s.hands[p], s.decks[p], s.discards[p], s.played[p]) for c in z)

    def banish_value(self, c: int, from_hand: bool, skipper: bool) -> float:
        if self.last_turn:
            return -HONOR_R * self.K.honor[c] + (3.0 if skipper else 0.0)
        v = super().banish_value(c, from_hand, skipper)
        if self.K.is_starting[c]:
            v += self.P.thin * 0.5
        return v

    # ---- the plan: the best set of purchases and kills for the turn ------------------------

    def plan(self, runes: int, power: int, crew: int) -> tuple[float, list[int]]:
        """(value, actions in the order to take them) of the best spending of these
        resources on what is on the board now."""
        s, K, T = self.s, self.K, self.K.T
        ship = s.ship[self.p]
        rune_items: list[tuple[float, int, int]] = []  # (value, cost, action)
        power_items: list[tuple[float, int, int]] = []
        for sp in range(6):
            c = s.center[sp]
            if c < 0:
                continue
            cost = T.cost[c]
            if K.is_monster[c]:
                if cost <= power:
                    power_items.append((self.target_value(sp, True), cost, A.DEFEAT << 16 | sp))
            elif cost <= runes:
                rune_items.append((self.target_value(sp, False), cost, A.ACQUIRE << 16 | sp))
        if s.kraken == KRAKEN_IN_DEEP and T.cost[T.thukal] <= power:
            power_items.append(
                (self.target_value(DEEP, True), T.cost[T.thukal], A.DEFEAT << 16 | DEEP)
            )
        repeat_r: list[tuple[float, int, int, int]] = []  # (value, cost, action, how many)
        for target, pile in ((A.T_MYSTIC, 0), (A.T_HEAVY, 1)):
            c = T.mystic if target == A.T_MYSTIC else T.heavy
            if s.piles[pile] and T.cost[c] <= runes:
                repeat_r.append(
                    (self.card_gain(c), T.cost[c], A.ACQUIRE << 16 | target, s.piles[pile])
                )
        repeat_p = []
        if T.cost[T.cultist] <= power:
            repeat_p.append(
                (self.K.reward[T.cultist], T.cost[T.cultist], A.DEFEAT << 16 | A.T_CULTIST, 99)
            )
        best_v, best = self._spend(rune_items, repeat_r, runes)
        pv, pa = self._spend(power_items, repeat_p, power)
        best_v += pv
        best = best + pa
        # the card at the ship's space paid with Crew instead, the rest as before
        target = (
            ship if 0 <= ship < 6 else (DEEP if ship == DEEP and s.kraken == KRAKEN_IN_DEEP else -1)
        )
        if target >= 0:
            c = s.center[target] if target < 6 else T.thukal
            if c >= 0 and T.cost[c] <= crew:
                monster = K.is_monster[c]
                v = self.target_value(target, monster) - self.P.crew_r * T.cost[c]
                act = (A.DEFEAT_CREW if monster else A.ACQUIRE_CREW) << 16 | target
                if v > 0:
                    keep_r = [it for it in rune_items if it[2] & 0xFFFF != target]
                    keep_p = [it for it in power_items if it[2] & 0xFFFF != target]
                    rv, ra = self._spend(keep_r, repeat_r, runes)
                    pv2, pa2 = self._spend(keep_p, repeat_p, power)
                    if v + rv + pv2 > best_v:
                        best_v, best = v + rv + pv2, [act, *ra, *pa2]
        return best_v, best

    @staticmethod
    def _spend(
        once: list[tuple[float, int, int]], repeat: list[tuple[float, int, int, int]], budget: int
    ) -> tuple[float, list[int]]:
        """Knapsack: the most value within the budget, from items taken once or repeatedly;
        the actions come most valuable first."""
        budget = min(budget, E_PLAN_CAP)
        items: list[tuple[float, int, int]] = [it for it in once if it[0] > 0]
        for v, cost, act, k in repeat:
            if v > 0 and cost > 0:
                items.extend([(v, cost, act)] * min(k, budget // cost))
        if not items or budget <= 0:
            return 0.0, []
        best = [0.0] * (budget + 1)
        take: list[list[int]] = [[] for _ in range(budget + 1)]
        for i, (v, cost, _) in enumerate(items):
            for b in range(budget, cost - 1, -1):
                cand = best[b - cost] + v
                if cand > best[b] + 1e-9:
                    best[b] = cand
                    take[b] = [*take[b - cost], i]
        chosen = sorted((items[i] for i in take[budget]), key=lambda it: -it[0])
        return best[budget], [it[2] for it in chosen]

    # ---- the ship ----------------------------------------------------------------------------

    def raid_gain(self, sp: int) -> float:
        """What Raiding a ship on space sp could take (the best item of the richest ship)."""
        s = self.s
        best = 0.0
        for q in range(s.n):
            if q != self.p and s.ship[q] == sp:
                items = [self.item_value(i) for i in s.treasures[q]]
                items += [COIN_R] * len(s.coins[q])
                if items:
                    best = max(best, max(items))
        return best

    def raids_in_hand(self) -> int:
        s, F = self.s, self.F
        k = sum(F.raids[c] for c in s.hands[self.p])
        k += sum(1 for key in self.ready_uses() if key in F.raid_uses)
        return k

    def ready_uses(self) -> list[int]:
        s, T, p = self.s, self.K.T, self.p
        out = []
        for zone in (s.constructs[p], s.ongoing[p]):
            for c in zone:
                for i, _ops in T.activated[c]:
                    if c * 8 + i not in s.used:
                        out.append(c * 8 + i)
        return out

    def where_value(self, sp: int) -> float:
        """Having the ship on sp for the rest of this turn: what Crew buys there, the coin,
        an Anchor, a Raid held for it; minus The Ghost Pirate and Thukal's tribute."""
        s, p = self.s, self.p
        v = self.space_value(sp)
        if self.P.raids and self.raids_in_hand():
            v += self.raid_gain(sp)
        if sp == DEEP and s.kraken == KRAKEN_IN_DEEP and sp != s.ship[p]:
            items = [self.item_value(i) for i in s.treasures[p]] + [COIN_R] * len(s.coins[p])
            if items:
                v -= min(items)
        return v

    def next_turn_value(self, sp: int) -> float:
        """Ending the turn on sp: what its Crew may buy there next turn (if the card is still
        there: each other seat takes it with some chance), the coin on it, minus The Ghost
        Pirate's bite and Thukal's tribute at the end of this turn."""
        s, K, T, p = self.s, self.K, self.K.T, self.p
        if self.last_turn:
            return 0.0
        crew = s.crew[p]
        stays = 0.7 ** (s.n - 1)
        v = 0.0
        if sp < 6:
            c = s.center[sp]
            if c >= 0 and T.cost[c] <= crew + 1:
                gain = K.reward[c] if K.is_monster[c] else self.card_gain(c)
                v += stays * max(0.0, gain + K.anchor[c] - self.P.crew_r * T.cost[c])
                if s.board_coin >= 0 and s.board_coin // 6 == sp:
                    v += stays * COIN_R
        elif s.kraken == KRAKEN_IN_DEEP:
            items = [self.item_value(i) for i in s.treasures[p]] + [COIN_R] * len(s.coins[p])
            if items:
                v -= min(items)
            if crew >= T.cost[T.thukal]:
                v += stays * (K.reward[T.thukal] - self.P.crew_r * T.cost[T.thukal])
        if s.ghost == sp and crew > 0:
            v -= self.P.crew_r
        return v

    # ---- choosing ----------------------------------------------------------------------------

    def choose(self, legal: list[int]) -> int:
        s = self.s
        d = s.decision
        if d is None:
            return self.main(legal)
        kind = d[0]
        if kind == A.D_CHOOSE and self.P.choices:
            return self.choose_option(legal, d)
        if kind in (A.D_MOVE, A.D_PLACE):
            return max(legal, key=lambda a: self.move_score(a))
        return max(legal, key=lambda a: score(self, a))

    def move_score(self, a: int) -> float:
        kind, sp = a >> 16, a & 0xFFFF
        here = self.s.ship[self.p]
        if kind == A.SKIP:
            return 0.0
        gain = self.where_value(sp) - (self.where_value(here) if here >= 0 else 0.0)
        if self.P.position:
            nxt = self.next_turn_value(here) if here >= 0 else 0.0
            gain += 0.5 * (self.next_turn_value(sp) - nxt)
        return gain - 0.3

    def choose_option(self, legal: list[int], d: tuple[Any, ...]) -> int:
        """The option after which the turn's plan is worth most."""
        s, p = self.s, self.p
        best_a, best_v = legal[0], float("-inf")
        for a in legal:
            op = d[3][(a & 0xFFFF) + 1]
            r, pw, cr, extra = s.runes, s.power, s.crew[p], 0.0
            if op[0] == L.OP_GAIN and op[1] in (L.RUNES, L.POWER, L.CREW):
                if op[1] == L.RUNES:
                    r += op[2]
                elif op[1] == L.POWER:
                    pw += op[2]
                else:
                    cr = min(MAX_CREW, cr + op[2])
                    extra = self.P.crew_r * (cr - s.crew[p]) * 0.5  # Crew keeps for later turns
            else:
                extra = score(self, a)
            v = self.plan(r, pw, cr)[0] + extra
            if v > best_v:
                best_a, best_v = a, v
        return best_a

    def main(self, legal: list[int]) -> int:
        s, p, F, P = self.s, self.p, self.F, self.P
        plays = [a for a in legal if a >> 16 == A.PLAY]
        uses = [a for a in legal if a >> 16 == A.USE]
        moves = [a for a in legal if a >> 16 == A.MOVE]
        here = s.ship[p]
        # Raid timing: with a Raid to make and no victim here, sail to the richest one first
        if P.raids and moves and self.raids_in_hand() and self.raid_gain(here) == 0:
            best = max(moves, key=lambda a: self.raid_gain(a & 0xFFFF))
            if self.raid_gain(best & 0xFFFF) > 0:
                return best
        for a in uses:
            key = a & 0xFFFF
            if P.ghost and key in F.ghost_uses:
                continue
            if P.raids and key in F.raid_uses and self.raid_gain(here) == 0:
                continue
            return a
        if plays:
            hold = P.raids and self.raid_gain(here) == 0 and bool(moves)
            ready = [a for a in plays if not (hold and F.raids[a & 0xFFFF])]
            if ready:
                return best_action(s, ready, self.K)
        flips = [a for a in legal if a >> 16 == A.FLIP_COINS]
        if flips:
            return flips[0]
        if P.ghost:
            for a in uses:
                if (a & 0xFFFF) in F.ghost_uses and self.ghost_helps():
                    return a
        if moves:
            best = max(moves, key=lambda a: self.where_value(a & 0xFFFF))
            if self.where_value(best & 0xFFFF) - self.where_value(here) > 0.3:
                return best
        if plays:  # Raid cards held for a move that did not come
            return best_action(s, plays, self.K)
        if P.raids:
            for a in uses:
                if (a & 0xFFFF) in F.raid_uses:
                    return a
        spend = [a for a in legal if a >> 16 in SPEND_KINDS]
        if spend:
            if P.plan:
                _, acts = self.plan(s.runes, s.power, s.crew[p])
                for a in acts:
                    if a in legal:
                        return a
                # nothing in the plan is worth doing: free extras (Naka's Void kills) or end
                extra = [a for a in spend if a >> 16 == A.DEFEAT_VOID and score(self, a) > 0]
                if extra:
                    return max(extra, key=lambda a: score(self, a))
            else:
                a = max(spend, key=lambda a: score(self, a))
                if score(self, a) > 0:
                    return a
        if P.position and moves:  # nothing left to spend: sail to where next turn is better
            best = max(moves, key=lambda a: self.next_turn_value(a & 0xFFFF))
            if self.next_turn_value(best & 0xFFFF) - self.next_turn_value(here) > 0.3:
                return best
        return A.END_TURN << 16 if (A.END_TURN << 16) in legal else best_action(s, legal, self.K)

    def ghost_helps(self) -> bool:
        s = self.s
        if s.ghost < 0:
            return False
        to = (s.ghost + 1) % SPACES
        if s.ship[self.p] == to:
            return False
        return any(s.ship[q] == to and s.crew[q] > 0 for q in range(s.n) if q != self.p)


SPEND_KINDS = (A.ACQUIRE, A.ACQUIRE_CREW, A.DEFEAT, A.DEFEAT_CREW, A.DEFEAT_VOID)


class ExpertBot:
    """The scripted expert; ``ExpertBot(plan=0, ...)`` switches parts off (benchmarks)."""

    def __init__(self, **raw: Any) -> None:
        known = {f.name: f.type for f in fields(ExpertParams)}
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise ValueError(f"unknown expert option(s) {unknown}; known: {sorted(known)}")
        vals: dict[str, Any] = {}
        for k, v in raw.items():
            default = getattr(ExpertParams(), k)
            if isinstance(default, bool):
                vals[k] = v if isinstance(v, bool) else str(v).lower() in ("1", "true", "yes")
            else:
                vals[k] = float(v)
        self.params = ExpertParams(**vals)

    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        if len(legal) == 1:
            return legal[0]
        s = view.state
        return Expert(s, s.to_move(), knowledge(s.T), self.params).choose(legal)
