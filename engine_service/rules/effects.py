"""The effect interpreter and the rules that move cards, ships, coins and Honor.

Pending work lives on ``state.stack`` as ``(op, seat, source card)`` entries, the next one
at the end. :func:`run` executes entries until one needs a player's choice: that handler
stores the choice in ``state.decision`` and returns True, and the answer (``engine``)
pushes whatever follows and calls :func:`run` again. Nothing decides silently for a player:
a choice with a single legal answer that the rules force (a Treasure to give Thukal) is the
only thing resolved without asking.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine_service.cards import language as L
from engine_service.rules import actions as A
from engine_service.rules import rng as R
from engine_service.rules.state import (
    COIN_ITEM,
    DEEP,
    F_CREW_VOID,
    F_FIRST_TURN,
    F_PLUNDER,
    KRAKEN_IN_DEEP,
    PILE_HEAVY,
    PILE_MYSTIC,
    SPACES,
    State,
)

Event = tuple[Any, ...]
Entry = tuple[Any, ...]  # (op, seat, src)

# Internal ops, continuing the language's op codes
(I_MOVE_ONE, I_RAID_ONE, I_TRIBUTE, I_CLEANUP, I_TURN_START, I_PLACE, I_DESTROY_ONE, I_FREE, I_PREVENT) = range(
    14, 23
)
MOVE_ONE: L.Op = (I_MOVE_ONE,)
RAID_ONE: L.Op = (I_RAID_ONE,)
TRIBUTE: L.Op = (I_TRIBUTE,)
CLEANUP: L.Op = (I_CLEANUP,)
TURN_START: L.Op = (I_TURN_START,)
PLACE: L.Op = (I_PLACE,)
DESTROY_ONE: L.Op = (I_DESTROY_ONE,)

HAND_SIZE = 5
MAX_CREW = 9


# ---- small rules -------------------------------------------------------------------------


def gain_honor(s: State, p: int, n: int, ev: list[Event]) -> None:
    """Honor tokens come from the pool; past its end they are still earned (and tracked)."""
    s.tokens[p] += n
    if s.pool > 0:
        s.pool = max(0, s.pool - n)
        if s.pool == 0:
            s.ending = True
            ev.append(("pool_empty", p))
    ev.append(("honor", p, n))


def gain_crew(s: State, p: int, n: int) -> None:
    s.crew[p] = min(MAX_CREW, s.crew[p] + n)


def draw(s: State, p: int, n: int, ev: list[Event]) -> None:
    """Draw n cards; an empty deck is replenished from the discard pile (never from the
    Heroes played this turn, which sit in ``played``, not in the discard pile). Every seat
    knows a hand and deck together (each card entering or leaving them is public), so with
    the deck empty the hand is known: it stays known (``known``) once the reshuffled cards,
    which no one has seen, join it."""
    hand, deck = s.hands[p], s.decks[p]
    for _ in range(n):
        if not deck:
            disc = s.discards[p]
            if not disc:
                break
            deck.extend(disc)
            disc.clear()
            s.rng = R.shuffle(s.rng, deck)
            s.known[p] = sorted(hand)
            ev.append(("reshuffle", p))
        hand.append(deck.pop())
    ev.append(("draw", p, n))


def leave_hand(s: State, p: int, c: int) -> None:
    """A card leaves p's hand (played, banished): a known copy of it is no longer known to be
    there, since no one can tell which copy left."""
    s.hands[p].remove(c)
    known = s.known[p]
    if known and c in known:
        known.remove(c)


def reveal_in_hand(s: State, p: int, c: int) -> None:
    """p reveals c from its hand and keeps it (Raid prevention): every seat knows a copy is
    there. (Revealing a copy already known shows no second one.)"""
    known = s.known[p]
    if c not in known:
        known.append(c)
        known.sort()


def refill(s: State, sp: int, fates: list[int], ev: list[Event]) -> None:
    """Fill an empty center-row space from the center deck. Treasure cards flipped go under
    the next non-Treasure card; an empty center deck is replenished from The Void."""
    T = s.T
    while True:
        if not s.center_deck:
            if not s.void:
                s.center[sp] = -1
                return
            s.center_deck = s.void
            s.void = []
            s.rng = R.shuffle(s.rng, s.center_deck)
            ev.append(("void_reshuffled",))
        c = s.center_deck.pop()
        if T.type[c] == L.TREASURE:
            s.under[sp].append(c)
            continue
        s.center[sp] = c
        ev.append(("enter_center", sp, c))
        if T.fate[c]:
            fates.append(c)
        return


def ghost_arrives(s: State, ev: list[Event]) -> None:
    g = s.ghost
    for q in range(s.n):
        if s.ship[q] == g:
            ghost_hits(s, q, ev)


def ghost_hits(s: State, q: int, ev: list[Event]) -> None:
    """The Ghost Pirate reduces a ship's Crew by one, at most once per ship per turn."""
    bit = 1 << q
    if s.ghost_hit & bit:
        return
    s.ghost_hit |= bit
    if s.crew[q] > 0:
        s.crew[q] -= 1
    ev.append(("ghost_hit", q))


def move_ghost(s: State, to: int, ev: list[Event]) -> None:
    s.ghost = to
    ev.append(("ghost_moved", to))
    ghost_arrives(s, ev)


def step_towards(frm: int, to: int) -> int:
    """One space along the shortest way round the ring (the ring is odd: no ties)."""
    d = (to - frm) % SPACES
    if d == 0:
        return frm
    return (frm + 1) % SPACES if d <= SPACES // 2 else (frm - 1) % SPACES


def draw_from_bag(s: State) -> int:
    """A random coin out of the Treasure Bag (which must not be empty)."""
    bag = s.bag
    s.rng, i = R.below(s.rng, len(bag))
    coin = bag[i]
    bag[i] = bag[-1]  # the bag has no order: swap-remove
    bag.pop()
    return coin


def place_coin(s: State, ev: list[Event]) -> None:
    """Draw a coin from the Treasure Bag onto the space of its color; The Ghost Pirate moves
    one space towards it (already on that space, it stays: it moves onto no ship). An empty
    bag leaves the board without a coin."""
    if not s.bag:
        s.board_coin = -1
        return
    coin = draw_from_bag(s)
    s.board_coin = coin
    ev.append(("coin_placed", coin))
    if s.ghost >= 0 and s.ghost != coin // 6:
        move_ghost(s, step_towards(s.ghost, coin // 6), ev)


def arrive(s: State, q: int, sp: int, ev: list[Event]) -> None:
    """A ship moved (or was placed) onto a space: The Ghost Pirate and Thukal strike."""
    s.ship[q] = sp
    ev.append(("ship", q, sp))
    if sp == s.ghost:
        ghost_hits(s, q, ev)
    if sp == DEEP and s.kraken == KRAKEN_IN_DEEP:
        s.stack.append((TRIBUTE, q, s.T.thukal))


def treasure_items(s: State, q: int) -> list[int]:
    """Distinct Treasures seat q controls, as items (card id, or COIN_ITEM + coin)."""
    items = list(dict.fromkeys(s.treasures[q]))
    items.extend(dict.fromkeys(COIN_ITEM + c for c in s.coins[q]))
    return items


def remove_item(s: State, q: int, item: int) -> None:
    if item >= COIN_ITEM:
        s.coins[q].remove(item - COIN_ITEM)
    else:
        s.treasures[q].remove(item)


def add_item(s: State, p: int, item: int, seq: list[Entry]) -> None:
    if item >= COIN_ITEM:
        s.coins[p].append(item - COIN_ITEM)
    else:
        s.treasures[p].append(item)
    fire(s, p, L.WHEN_GAIN_TREASURE, -1, seq)


def banish_card(s: State, c: int) -> None:
    """Banished cards go to The Void, but starting cards leave the game and always-available
    cards go back to their piles."""
    T = s.T
    if T.starting[c]:
        s.out.append(c)
    elif c == T.mystic:
        s.piles[PILE_MYSTIC] += 1
    elif c == T.heavy:
        s.piles[PILE_HEAVY] += 1
    else:
        s.void.append(c)


def fire(s: State, p: int, event: int, faction: int, seq: list[Entry]) -> None:
    """Queue the triggered abilities of p's Constructs and Ongoing cards for an event.
    Each copy triggers; a once-per-turn ability fires once per copy per turn."""
    if not s.constructs[p] and not s.ongoing[p]:
        return
    triggers = s.T.triggers
    for zone in (s.constructs[p], s.ongoing[p]):
        for c in zone:
            for i, e, f, once, ops in triggers[c]:
                if e != event or (f >= 0 and f != faction):
                    continue
                if once:
                    key = c * 8 + i
                    if s.used.count(key) >= owned_copies(s, p, c):
                        continue
                    s.used.append(key)
                seq.extend((op, p, c) for op in ops)


def owned_copies(s: State, p: int, c: int) -> int:
    return s.constructs[p].count(c) + s.ongoing[p].count(c)


def push_seq(s: State, seq: list[Entry]) -> None:
    """Queue entries so that they run in list order."""
    if seq:
        s.stack.extend(reversed(seq))


def push_ops(s: State, ops: tuple[L.Op, ...], p: int, src: int) -> None:
    st = s.stack
    for i in range(len(ops) - 1, -1, -1):
        st.append((ops[i], p, src))


# ---- acquiring and defeating -------------------------------------------------------------


def leave_center(s: State, sp: int, to: list[int], fates: list[int], ev: list[Event]) -> int:
    """The one way a card leaves the center row (acquired, defeated or banished), in the
    rulebooks' order: the card goes where it goes first (The Void, a discard pile, in front of
    a seat), then its space is replaced at once ("place it in the Void and replace it in the
    center row"), so a Void reshuffled for that replacement holds the card. Fate cards that
    entered are added to ``fates``; Treasure under the space is the caller's business.
    Returns the card that left."""
    c = s.center[sp]
    to.append(c)
    refill(s, sp, fates, ev)
    return c


def _take_from_center(s: State, p: int, sp: int, to: list[int], seq: list[Entry], ev: list[Event]) -> None:
    """p acquired or defeated the card on space sp and it goes to ``to``: p takes the
    Treasure under it (and the coin, if p's ship is there); the space is replaced at once
    (:func:`leave_center`), then a new coin is placed; Fate effects of the new card are
    queued first in ``seq``."""
    under = s.under[sp]
    gained: list[int] = []
    if under:
        gained.extend(under)
        under.clear()
    coin = s.board_coin
    took_coin = coin >= 0 and coin // 6 == sp and s.ship[p] == sp
    fates: list[int] = []
    leave_center(s, sp, to, fates, ev)
    if took_coin:
        s.board_coin = -1
        place_coin(s, ev)
        gained.append(COIN_ITEM + coin)
    for f in fates:
        seq.extend((op, s.active, f) for op in s.T.fate[f])
    for item in gained:
        ev.append(("treasure", p, item))
        add_item(s, p, item, seq)


def _anchor(s: State, p: int, c: int, seq: list[Entry]) -> None:
    T = s.T
    seq.extend((op, p, c) for op in T.anchor[c])
    if T.type[c] == L.CONSTRUCT and T.faction[c] == L.MECHANA:
        for g in s.constructs[p]:
            seq.extend((op, p, g) for op in T.grants_anchor[g])


def acquire(s: State, p: int, target: int, ev: list[Event]) -> None:
    """p acquires a Hero or Construct (payment already made) from a space or a pile."""
    T = s.T
    seq: list[Entry] = []
    if target == A.T_MYSTIC or target == A.T_HEAVY:
        pile = PILE_MYSTIC if target == A.T_MYSTIC else PILE_HEAVY
        c = T.mystic if target == A.T_MYSTIC else T.heavy
        s.piles[pile] -= 1
        s.discards[p].append(c)
    else:
        c = s.center[target]
        anchored = s.ship[p] == target
        _take_from_center(s, p, target, (s.ongoing if T.ongoing[c] else s.discards)[p], seq, ev)
        if anchored:
            _anchor(s, p, c, seq)
    ev.append(("acquire", p, c, target))
    fire(s, p, L.WHEN_ACQUIRE, T.faction[c], seq)
    push_seq(s, seq)


def defeat(s: State, p: int, target: int, ev: list[Event]) -> None:
    """p defeats a Monster (payment already made): the Cultist, Thukal or a center card."""
    T = s.T
    seq: list[Entry] = []
    if target == A.T_CULTIST:
        c = T.cultist
    elif target == DEEP:
        c = T.thukal
        s.kraken = p
        s.ongoing[p].append(c)
        gained = s.under[DEEP][:] + [COIN_ITEM + k for k in s.kraken_coins]
        s.under[DEEP].clear()
        s.kraken_coins.clear()
        for item in gained:
            ev.append(("treasure", p, item))
            add_item(s, p, item, seq)
    else:
        c = s.center[target]
        anchored = s.ship[p] == target
        # an Ongoing Monster stays in front of its defeater; any other goes to The Void
        _take_from_center(s, p, target, s.ongoing[p] if T.ongoing[c] else s.void, seq, ev)
        s.flags |= F_PLUNDER
        if anchored:
            _anchor(s, p, c, seq)
    ev.append(("defeat", p, c, target))
    seq.extend((op, p, c) for op in T.reward[c])
    fire(s, p, L.WHEN_DEFEAT, -1, seq)
    push_seq(s, seq)


def defeat_in_void(s: State, p: int, c: int, ev: list[Event]) -> None:
    """Naka, Blackblade: a Monster in The Void defeated with Crew stays in The Void."""
    seq: list[Entry] = [(op, p, c) for op in s.T.reward[c]]
    ev.append(("defeat", p, c, -1))
    fire(s, p, L.WHEN_DEFEAT, -1, seq)
    push_seq(s, seq)


# ---- choices offered by ops --------------------------------------------------------------


def raid_victims(s: State, p: int) -> list[int]:
    sp = s.ship[p]
    if sp < 0:
        return []
    return [q for q in range(s.n) if q != p and s.ship[q] == sp and (s.treasures[q] or s.coins[q])]


def may_prevent_raid(s: State, q: int) -> bool:
    """Whether seat q is asked if it prevents a first Raid attempt. Decided on what every seat
    knows, never on q's hand alone, so that being asked (or not) reveals nothing: q has cards
    in hand and a prevention card is among its hand and deck together (a multiset every seat
    knows: each card entering or leaving them is public). A seat asked with no prevention card
    in hand has only "let the Raid happen" to answer."""
    if not s.hands[q]:
        return False
    prevent = s.T.prevent
    return any(prevent[c] for c in s.hands[q]) or any(prevent[c] for c in s.decks[q])


def banish_options(s: State, q: int, zones: int) -> bool:
    return bool(
        (zones & L.Z_HAND and s.hands[q])
        or (zones & L.Z_DISCARD and s.discards[q])
        or (zones & L.Z_CENTER and any(c >= 0 for c in s.center))
    )


def free_targets(s: State, faction: int, kind: int, max_cost: int, max_honor: int, mode: int) -> list[int]:
    T = s.T
    out = []
    for sp in range(6):
        c = s.center[sp]
        if c < 0:
            continue
        t = T.type[c]
        if mode == A.FREE_DEFEAT:
            if t != L.MONSTER:
                continue
        elif t == L.MONSTER:
            continue
        if (faction >= 0 and T.faction[c] != faction) or (kind >= 0 and t != kind):
            continue
        if (max_cost >= 0 and T.cost[c] > max_cost) or (mode == A.FREE_SKIPPER and T.honor[c] > max_honor):
            continue
        out.append(sp)
    if mode == A.FREE_SKIPPER:
        if s.piles[PILE_MYSTIC] and T.honor[T.mystic] <= max_honor:
            out.append(A.T_MYSTIC)
        if s.piles[PILE_HEAVY] and T.honor[T.heavy] <= max_honor:
            out.append(A.T_HEAVY)
    return out


# ---- op handlers: return True when they opened a decision ---------------------------------


def _gain(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    res, n = op[1], op[2]
    if res == L.RUNES:
        s.runes += n
    elif res == L.POWER:
        s.power += n
    elif res == L.CREW:
        gain_crew(s, p, n)
    elif res == L.HONOR:
        gain_honor(s, p, n, ev)
        return False
    elif res == L.DRAW:
        draw(s, p, n, ev)
        return False
    else:  # MOVE: one optional move per space
        for _ in range(n):
            s.stack.append((MOVE_ONE, p, src))
        return False
    ev.append(("gain", p, res, n))
    return False


def _raid(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    for _ in range(op[1]):
        s.stack.append((RAID_ONE, p, src))
    return False


def _raid_one(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    if not raid_victims(s, p):
        ev.append(("raid_no_target", p))
        return False
    s.decision = (A.D_RAID, p, src)
    return True


def kraken_space(s: State) -> int:
    """Where "The Kraken" is: The Deep, or the ship of the seat that defeated Thukal."""
    k = s.kraken
    if k == KRAKEN_IN_DEEP:
        return DEEP
    if k >= 0:
        return s.ship[k]
    return -1


def _pull(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    """Each enemy ship moves one space towards The Kraken; ships already there stay put."""
    target = kraken_space(s)
    if target < 0:
        return False
    for i in range(1, s.n):
        q = (p + i) % s.n
        sp = s.ship[q]
        if sp < 0 or sp == target:
            continue
        arrive(s, q, step_towards(sp, target), ev)
    return False


def _banish(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    if not banish_options(s, p, op[1]):
        return False
    s.decision = (A.D_BANISH, p, src, op[1], A.BANISH_PLAIN)
    return True


def _each_banish(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    one = (L.OP_BANISH, op[1])
    for i in range(s.n - 1, -1, -1):
        s.stack.append((one, (p + i) % s.n, src))
    return False


def take_coin_from_bag(s: State, p: int, ev: list[Event], seq: list[Entry]) -> None:
    if not s.bag:
        ev.append(("bag_empty", p))
        return
    coin = draw_from_bag(s)
    ev.append(("treasure", p, COIN_ITEM + coin))
    add_item(s, p, COIN_ITEM + coin, seq)


def _coin(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    seq: list[Entry] = []
    for _ in range(op[1]):
        take_coin_from_bag(s, p, ev, seq)
    push_seq(s, seq)
    return False


def _ghost(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    if s.ghost >= 0:
        for _ in range(op[1]):
            move_ghost(s, (s.ghost + 1) % SPACES, ev)
    return False


def _acquire_free(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    mode = A.FREE_DEFEAT if op[0] == L.OP_DEFEAT_FREE else A.FREE_ACQUIRE
    return _free(s, (I_FREE, op[1], op[2], op[3], 99, mode), p, src, ev)


def _destroy_opponents(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    for i in range(s.n - 1, 0, -1):
        s.stack.append((DESTROY_ONE, (p + i) % s.n, src))
    return False


def _destroy_one(s: State, op: L.Op, q: int, src: int, ev: list[Event]) -> bool:
    cs = s.constructs[q]
    if not cs:
        return False
    if len(set(cs)) == 1:
        destroy(s, q, cs[0], ev)
        return False
    s.decision = (A.D_DESTROY, q, src)
    return True


def destroy(s: State, q: int, c: int, ev: list[Event]) -> None:
    """Destroy: a Construct goes from play to its owner's discard pile."""
    s.constructs[q].remove(c)
    s.discards[q].append(c)
    ev.append(("destroyed", q, c))


def _crew_void(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    s.flags |= F_CREW_VOID
    return False


def _skipper(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    zones = L.Z_HAND | L.Z_DISCARD
    if not banish_options(s, p, zones):
        return False
    s.decision = (A.D_BANISH, p, src, zones, A.BANISH_SKIPPER)
    return True


def _choose(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    s.decision = (A.D_CHOOSE, p, src, op)
    return True


def _if(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    cond, arg = op[1], op[2]
    if cond == L.COND_TREASURES:
        ok = s.treasure_count(p) >= arg
    elif cond == L.COND_PLUNDER:
        ok = bool(s.flags & F_PLUNDER)
    elif cond == L.COND_KRAKEN:
        ok = s.kraken == p
    else:  # COND_IN_DEEP
        ok = s.ship[p] == DEEP
    if ok:
        s.stack.append((op[3], p, src))
    return False


def _move_one(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    if s.ship[p] < 0:
        return False
    s.decision = (A.D_MOVE, p, src)
    return True


def _tribute(s: State, op: L.Op, q: int, src: int, ev: list[Event]) -> bool:
    """Thukal in The Deep takes a Treasure of q's choice from a ship there."""
    if s.kraken != KRAKEN_IN_DEEP or s.ship[q] != DEEP:
        return False
    items = treasure_items(s, q)
    if not items:
        return False
    if len(items) == 1:
        give_to_thukal(s, q, items[0], ev)
        return False
    s.decision = (A.D_TRIBUTE, q, src)
    return True


def give_to_thukal(s: State, q: int, item: int, ev: list[Event]) -> None:
    remove_item(s, q, item)
    if item >= COIN_ITEM:
        s.kraken_coins.append(item - COIN_ITEM)
    else:
        s.under[DEEP].append(item)
    ev.append(("tribute", q, item))


def _cleanup(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    """End of turn: hand and played Heroes to the discard pile, unspent Runes and Power are
    lost, draw five; the game ends after the last seat of the round once the pool is empty."""
    disc = s.discards[p]
    disc.extend(s.hands[p])
    disc.extend(s.played[p])
    s.hands[p].clear()
    s.known[p].clear()
    s.played[p].clear()
    s.runes = s.power = 0
    draw(s, p, HAND_SIZE, ev)
    ev.append(("turn_end", p))
    if s.ending and p == (s.first - 1) % s.n:
        s.over = True
        s.stack.clear()
        ev.append(("game_over",))
        return True
    fates: list[int] = []
    for sp in range(6):
        if s.center[sp] < 0:
            refill(s, sp, fates, ev)
    q = (p + 1) % s.n
    s.active = q
    s.turn += 1
    s.moved = False
    s.flags = F_FIRST_TURN if s.ship[q] < 0 else 0
    s.ghost_hit = 0
    s.used.clear()
    s.unite_done = 0
    ev.append(("turn_start", q, s.turn))
    s.stack.append((TURN_START, q, -1))
    for f in reversed(fates):
        push_ops(s, s.T.fate[f], q, f)
    if s.ship[q] < 0:
        s.stack.append((PLACE, q, -1))
    return False


def _turn_start(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    seq: list[Entry] = []
    fire(s, p, L.WHEN_TURN_START, -1, seq)
    push_seq(s, seq)
    return False


def _place(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    s.decision = (A.D_PLACE, p, -1)
    return True


def _free(s: State, op: L.Op, p: int, src: int, ev: list[Event]) -> bool:
    """(I_FREE, faction, type, max cost, max honor, mode): offer a free acquire/defeat."""
    if not free_targets(s, op[1], op[2], op[3], op[4], op[5]):
        return False
    s.decision = (A.D_FREE, p, src, *op[1:])
    return True


def _prevent(s: State, op: L.Op, victim: int, src: int, ev: list[Event]) -> bool:
    """(I_PREVENT, raider, item): the victim may reveal a card to prevent the Raid."""
    s.decision = (A.D_PREVENT, victim, src, op[1], op[2])
    return True


Handler = Callable[[State, L.Op, int, int, list[Event]], bool]
HANDLERS: list[Handler] = [
    _gain,  # OP_GAIN
    _raid,  # OP_RAID
    _pull,  # OP_PULL
    _banish,  # OP_BANISH
    _each_banish,  # OP_EACH_BANISH
    _coin,  # OP_COIN
    _ghost,  # OP_GHOST
    _acquire_free,  # OP_ACQUIRE_FREE
    _acquire_free,  # OP_DEFEAT_FREE
    _destroy_opponents,  # OP_DESTROY_OPPONENTS
    _crew_void,  # OP_CREW_VOID
    _skipper,  # OP_SKIPPER
    _choose,  # OP_CHOOSE
    _if,  # OP_IF
    _move_one,  # I_MOVE_ONE
    _raid_one,  # I_RAID_ONE
    _tribute,  # I_TRIBUTE
    _cleanup,  # I_CLEANUP
    _turn_start,  # I_TURN_START
    _place,  # I_PLACE
    _destroy_one,  # I_DESTROY_ONE
    _free,  # I_FREE
    _prevent,  # I_PREVENT
]


def run(s: State, ev: list[Event]) -> None:
    """Execute queued steps until a player must choose or nothing is left."""
    st = s.stack
    handlers = HANDLERS
    s.decision = None
    while st:
        op, p, src = st.pop()
        if handlers[op[0]](s, op, p, src, ev):
            if s.over:
                s.decision = None
            return
    s.decision = None

