"""Setup, legal actions and applying an action: the turn structure of both pirate sets."""

from __future__ import annotations

from typing import Any

from engine_service.cards import language as L
from engine_service.rules import actions as A
from engine_service.rules import effects as E
from engine_service.rules import rng as R
from engine_service.rules.config import GameConfig
from engine_service.rules.errors import IllegalActionError, MalformedActionError
from engine_service.rules.state import (
    CENTER_SPACES,
    COIN_DOWN,
    DEEP,
    F_CREW_VOID,
    F_FIRST_TURN,
    F_RAID_ATTEMPTED,
    KRAKEN_ABSENT,
    KRAKEN_IN_DEEP,
    NEIGHBORS,
    PILE_HEAVY,
    PILE_MYSTIC,
    SPACES,
    State,
)
from engine_service.rules.tables import Tables, default_tables

Event = E.Event
enc = A.encode


def new_game(config: GameConfig, tables: Tables | None = None) -> State:
    """The state before the first player's first choice (placing their ship)."""
    T = tables or default_tables()
    cat = T.catalog
    n = config.players
    s = State.__new__(State)
    s.T, s.config, s.n = T, config, n
    x = R.seed_state(config.seed)
    # Curse of the Golden Isles' starting deck (with the Navigator) is used whenever that set
    # is in the game: see docs/rules-notes.md.
    start_set = cat.sets["cotgi" if config.has_cotgi else "ss"]
    starting = [cat.id(k) for k, count in start_set.starting for _ in range(count)]
    s.hands, s.decks = [], []
    s.known = [[] for _ in range(n)]
    for _ in range(n):
        deck = starting[:]
        x = R.shuffle(x, deck)
        s.hands.append(deck[-5:][::-1])
        s.decks.append(deck[:-5])
    x, s.first = R.below(x, n)
    s.discards = [[] for _ in range(n)]
    s.played = [[] for _ in range(n)]
    s.constructs = [[] for _ in range(n)]
    s.ongoing = [[] for _ in range(n)]
    s.treasures = [[] for _ in range(n)]
    s.coins = [[] for _ in range(n)]
    s.out = []
    s.crew = [min((seat - s.first) % n, 3) for seat in range(n)]
    s.ship = [-1] * n
    s.tokens = [0] * n
    s.pool = config.honor_pool
    s.ending = False
    s.center_deck = [c for key in config.set_keys for c in cat.sets[key].center]
    x = R.shuffle(x, s.center_deck)
    s.rng = x
    s.void = []
    s.center = [-1] * CENTER_SPACES
    s.under = [[] for _ in range(SPACES)]
    s.piles = [cat[T.mystic].copies, cat[T.heavy].copies]
    s.kraken = KRAKEN_IN_DEEP if config.has_ss else KRAKEN_ABSENT
    s.kraken_coins = []
    s.ghost = -1
    s.board_coin = -1
    s.bag = list(range(36)) if config.has_cotgi else []
    setup_events: list[Event] = []
    for sp in range(CENTER_SPACES):
        E.refill(s, sp, [], setup_events)  # Fate does not trigger while setting up
    if config.has_cotgi:
        E.place_coin(s, setup_events)  # before The Ghost Pirate is on the board
        s.ghost = DEEP
    s.turn, s.active, s.over = 1, s.first, False
    s.runes = s.power = 0
    s.moved, s.flags, s.ghost_hit, s.unite_done = False, F_FIRST_TURN, 0, 0
    s.used = []
    s.stack = [(E.TURN_START, s.first, -1), (E.PLACE, s.first, -1)]
    s.decision = None
    E.run(s, setup_events)
    return s


# ---- legal actions -----------------------------------------------------------------------


def legal_actions(s: State) -> list[int]:
    """Every legal action of the seat that must act now (``s.to_move()``)."""
    if s.over:
        return []
    d = s.decision
    if d is None:
        return _main_actions(s)
    return _DECISION_ACTIONS[d[0]](s, d)


# action kinds shifted into place once (the listing below runs at every step of a search)
_END_TURN, _PLAY, _USE = A.END_TURN << 16, A.PLAY << 16, A.USE << 16
_DEFEAT, _DEFEAT_CREW = A.DEFEAT << 16, A.DEFEAT_CREW << 16
_ACQUIRE, _ACQUIRE_CREW = A.ACQUIRE << 16, A.ACQUIRE_CREW << 16


def _main_actions(s: State) -> list[int]:
    T = s.T
    p = s.active
    out = [_END_TURN]
    hand = s.hands[p]
    if hand:
        for c in dict.fromkeys(hand):
            out.append(_PLAY | c)
    used = s.used
    for zone in (s.constructs[p], s.ongoing[p]):
        if not zone:
            continue
        for c in dict.fromkeys(zone):
            for i, _ops in T.activated[c]:
                key = c * 8 + i
                if used.count(key) < E.owned_copies(s, p, c):
                    out.append(_USE | key)
    runes, power, crew, ship = s.runes, s.power, s.crew[p], s.ship[p]
    types, costs, monster = T.type, T.cost, L.MONSTER
    for sp, c in enumerate(s.center):  # CENTER_SPACES entries
        if c < 0:
            continue
        cost = costs[c]
        if types[c] == monster:
            if cost <= power:
                out.append(_DEFEAT | sp)
            if ship == sp and cost <= crew:
                out.append(_DEFEAT_CREW | sp)
        else:
            if cost <= runes:
                out.append(_ACQUIRE | sp)
            if ship == sp and cost <= crew:
                out.append(_ACQUIRE_CREW | sp)
    if s.piles[PILE_MYSTIC] and costs[T.mystic] <= runes:
        out.append(_ACQUIRE | A.T_MYSTIC)
    if s.piles[PILE_HEAVY] and costs[T.heavy] <= runes:
        out.append(_ACQUIRE | A.T_HEAVY)
    if costs[T.cultist] <= power:
        out.append(_DEFEAT | A.T_CULTIST)
    if s.kraken == KRAKEN_IN_DEEP:
        cost = costs[T.thukal]
        if cost <= power:
            out.append(_DEFEAT | DEEP)
        if ship == DEEP and cost <= crew:
            out.append(_DEFEAT_CREW | DEEP)
    if s.flags & F_CREW_VOID:
        for c in dict.fromkeys(s.void):
            if types[c] == monster and costs[c] <= crew:
                out.append(A.DEFEAT_VOID << 16 | c)
    if not s.moved and ship >= 0 and not s.flags & F_FIRST_TURN:
        for nb in NEIGHBORS[ship]:
            out.append(A.MOVE << 16 | nb)
    coins = s.coins[p]
    if len(coins) >= 2:
        icons = [c % 6 for c in coins if not c & COIN_DOWN]
        for icon in sorted(set(icons)):
            if icons.count(icon) >= 2:
                out.append(A.FLIP_COINS << 16 | icon)
    return out


def _place_actions(s: State, d: tuple[Any, ...]) -> list[int]:
    return [A.PLACE_SHIP << 16 | sp for sp in range(SPACES)]


def _move_actions(s: State, d: tuple[Any, ...]) -> list[int]:
    return [A.MOVE_SHIP << 16 | nb for nb in NEIGHBORS[s.ship[d[1]]]] + [enc(A.SKIP)]


def _banish_actions(s: State, d: tuple[Any, ...]) -> list[int]:
    q, zones = d[1], d[3]
    out: list[int] = []
    if zones & L.Z_HAND:
        out.extend(A.BANISH_HAND << 16 | c for c in dict.fromkeys(s.hands[q]))
    if zones & L.Z_DISCARD:
        out.extend(A.BANISH_DISCARD << 16 | c for c in dict.fromkeys(s.discards[q]))
    if zones & L.Z_CENTER:
        out.extend(A.BANISH_CENTER << 16 | sp for sp in range(CENTER_SPACES) if s.center[sp] >= 0)
    out.append(enc(A.SKIP))
    return out


def _raid_actions(s: State, d: tuple[Any, ...]) -> list[int]:
    out: list[int] = []
    for q in E.raid_victims(s, d[1]):
        out.extend(A.RAID_TAKE << 16 | A.raid_arg(q, item) for item in E.treasure_items(s, q))
    out.append(enc(A.SKIP))
    return out


def _prevent_actions(s: State, d: tuple[Any, ...]) -> list[int]:
    prevent = s.T.prevent
    out = [A.PREVENT_RAID << 16 | c for c in dict.fromkeys(s.hands[d[1]]) if prevent[c]]
    out.append(enc(A.SKIP))
    return out


def _tribute_actions(s: State, d: tuple[Any, ...]) -> list[int]:
    return [A.GIVE_TREASURE << 16 | item for item in E.treasure_items(s, d[1])]


def _free_actions(s: State, d: tuple[Any, ...]) -> list[int]:
    out = [A.TAKE_FREE << 16 | t for t in E.free_targets(s, d[3], d[4], d[5], d[6], d[7])]
    if d[7] != A.FREE_SKIPPER:  # Relentless Skipper: "If you do, acquire": no "may" there
        out.append(enc(A.SKIP))
    return out


def _choose_actions(s: State, d: tuple[Any, ...]) -> list[int]:
    return [A.CHOOSE << 16 | i for i in range(len(d[3]) - 1)]


def _destroy_actions(s: State, d: tuple[Any, ...]) -> list[int]:
    return [A.DESTROY << 16 | c for c in dict.fromkeys(s.constructs[d[1]])]


_DECISION_ACTIONS = {
    A.D_PLACE: _place_actions,
    A.D_MOVE: _move_actions,
    A.D_BANISH: _banish_actions,
    A.D_RAID: _raid_actions,
    A.D_PREVENT: _prevent_actions,
    A.D_TRIBUTE: _tribute_actions,
    A.D_FREE: _free_actions,
    A.D_CHOOSE: _choose_actions,
    A.D_DESTROY: _destroy_actions,
}


# ---- applying ----------------------------------------------------------------------------


def apply(s: State, action: int) -> list[Event]:
    """Apply a legal action of ``s.to_move()`` in place and return the events it caused.
    An illegal or malformed action raises and leaves the state exactly as it was."""
    if action not in legal_actions(s):
        raise _illegal(s, action)
    return apply_unchecked(s, action)


def apply_unchecked(s: State, action: int) -> list[Event]:
    """Apply an action known to be in ``legal_actions(s)`` (the AI's search loop)."""
    ev: list[Event] = []
    kind, arg = action >> 16, action & 0xFFFF
    d = s.decision
    if d is None:
        _MAIN[kind](s, arg, ev)
    else:
        s.decision = None
        _ANSWER[kind](s, d, arg, ev)
    E.run(s, ev)
    return ev


def _end_turn(s: State, arg: int, ev: list[Event]) -> None:
    p = s.active
    if s.ghost >= 0 and s.ship[p] == s.ghost:
        E.ghost_hits(s, p, ev)
    s.stack.append((E.CLEANUP, p, -1))
    if s.kraken == KRAKEN_IN_DEEP and s.ship[p] == DEEP:
        s.stack.append((E.TRIBUTE, p, s.T.thukal))


def _play(s: State, c: int, ev: list[Event]) -> None:
    T = s.T
    p = s.active
    E.leave_hand(s, p, c)
    ev.append(("play", p, c))
    faction = T.faction[c]
    seq: list[E.Entry] = [(op, p, c) for op in T.play[c]]
    if T.type[c] == L.CONSTRUCT:
        E.fire(s, p, L.WHEN_PLAY_CONSTRUCT, faction, seq)  # before it is in play: not itself
        s.constructs[p].append(c)
    else:
        played = s.played[p]
        if faction != L.NONE:
            if T.echo[c] and any(T.faction[x] == faction for x in s.discards[p]):
                seq.extend((op, p, c) for op in T.echo[c])
            _unite(s, p, c, faction, seq)
        played.append(c)
        E.fire(s, p, L.WHEN_PLAY_HERO, faction, seq)
    E.push_seq(s, seq)


def _unite(s: State, p: int, c: int, faction: int, seq: list[E.Entry]) -> None:
    """Unite resolves once per card, as soon as another Hero of its faction is played this
    turn, whichever of the two came first."""
    T = s.T
    played = s.played[p]
    mates = [i for i, x in enumerate(played) if T.faction[x] == faction]
    if not mates:
        return
    for i in mates:
        x = played[i]
        if T.unite[x] and not s.unite_done >> i & 1:
            s.unite_done |= 1 << i
            seq.extend((op, p, x) for op in T.unite[x])
    if T.unite[c]:
        s.unite_done |= 1 << len(played)
        seq.extend((op, p, c) for op in T.unite[c])


def _use(s: State, key: int, ev: list[Event]) -> None:
    c, i = divmod(key, 8)
    p = s.active
    s.used.append(key)
    ev.append(("use", p, c, i))
    for idx, ops in s.T.activated[c]:
        if idx == i:
            E.push_ops(s, ops, p, c)


def target_cost(s: State, target: int) -> int:
    """What a target costs: a center-row space, The Deep (Thukal) or an always-available card."""
    T = s.T
    if target == A.T_MYSTIC:
        return T.cost[T.mystic]
    if target == A.T_HEAVY:
        return T.cost[T.heavy]
    if target == A.T_CULTIST:
        return T.cost[T.cultist]
    if target == DEEP:
        return T.cost[T.thukal]
    return T.cost[s.center[target]]


def _acquire(s: State, target: int, ev: list[Event]) -> None:
    s.runes -= target_cost(s, target)
    E.acquire(s, s.active, target, ev)


def _acquire_crew(s: State, sp: int, ev: list[Event]) -> None:
    s.crew[s.active] -= target_cost(s, sp)
    E.acquire(s, s.active, sp, ev)


def _defeat(s: State, target: int, ev: list[Event]) -> None:
    s.power -= target_cost(s, target)
    E.defeat(s, s.active, target, ev)


def _defeat_crew(s: State, sp: int, ev: list[Event]) -> None:
    s.crew[s.active] -= target_cost(s, sp)
    E.defeat(s, s.active, sp, ev)


def _defeat_void(s: State, c: int, ev: list[Event]) -> None:
    s.crew[s.active] -= s.T.cost[c]
    E.defeat_in_void(s, s.active, c, ev)


def _move(s: State, sp: int, ev: list[Event]) -> None:
    s.moved = True
    E.arrive(s, s.active, sp, ev)


def _flip_coins(s: State, icon: int, ev: list[Event]) -> None:
    p = s.active
    coins = s.coins[p]
    flipped = 0
    for i, c in enumerate(coins):
        if not c & COIN_DOWN and c % 6 == icon:
            coins[i] = c | COIN_DOWN
            flipped += 1
            if flipped == 2:
                break
    ev.append(("coins_flipped", p, icon))
    s.stack.append(((L.OP_GAIN, icon, 2), p, -1))


_MAIN = {
    A.END_TURN: _end_turn,
    A.PLAY: _play,
    A.USE: _use,
    A.ACQUIRE: _acquire,
    A.ACQUIRE_CREW: _acquire_crew,
    A.DEFEAT: _defeat,
    A.DEFEAT_CREW: _defeat_crew,
    A.DEFEAT_VOID: _defeat_void,
    A.MOVE: _move,
    A.FLIP_COINS: _flip_coins,
}


# ---- answers to pending choices ----------------------------------------------------------


def _place_ship(s: State, d: tuple[Any, ...], sp: int, ev: list[Event]) -> None:
    E.arrive(s, d[1], sp, ev)


def _move_ship(s: State, d: tuple[Any, ...], sp: int, ev: list[Event]) -> None:
    E.arrive(s, d[1], sp, ev)


def _skip(s: State, d: tuple[Any, ...], arg: int, ev: list[Event]) -> None:
    if d[0] == A.D_PREVENT:  # the victim lets the Raid happen
        _transfer(s, d[3], d[1], d[4], ev)
    else:
        ev.append(("skip", d[1], d[0]))


def _banished(s: State, d: tuple[Any, ...], c: int, ev: list[Event]) -> None:
    """Relentless Skipper: having banished c, acquire a card worth up to 1 more Honor."""
    if d[4] == A.BANISH_SKIPPER:
        op = (E.I_FREE, -1, -1, -1, s.T.honor[c] + 1, A.FREE_SKIPPER)
        s.stack.append((op, d[1], d[2]))


def _banish_hand(s: State, d: tuple[Any, ...], c: int, ev: list[Event]) -> None:
    E.leave_hand(s, d[1], c)
    E.banish_card(s, c)
    ev.append(("banish", d[1], c, "hand"))
    _banished(s, d, c, ev)


def _banish_discard(s: State, d: tuple[Any, ...], c: int, ev: list[Event]) -> None:
    s.discards[d[1]].remove(c)
    E.banish_card(s, c)
    ev.append(("banish", d[1], c, "discard"))
    _banished(s, d, c, ev)


def _banish_center(s: State, d: tuple[Any, ...], sp: int, ev: list[Event]) -> None:
    """The card goes to The Void and is replaced at once; Treasure under it and the coin on
    its space stay on the space (see docs/rules-notes.md)."""
    ev.append(("banish", d[1], s.center[sp], "center"))
    fates: list[int] = []
    E.leave_center(s, sp, s.void, fates, ev)
    for f in reversed(fates):
        E.push_ops(s, s.T.fate[f], s.active, f)


def _raid_take(s: State, d: tuple[Any, ...], arg: int, ev: list[Event]) -> None:
    """A Raid attempt; only the first attempt of each turn can be prevented."""
    p = d[1]
    victim, item = divmod(arg, 4096)
    first = not s.flags & F_RAID_ATTEMPTED
    s.flags |= F_RAID_ATTEMPTED
    ev.append(("raid", p, victim, item))
    if first and E.may_prevent_raid(s, victim):
        s.stack.append(((E.I_PREVENT, p, item), victim, d[2]))
        return
    _transfer(s, p, victim, item, ev)


def _transfer(s: State, raider: int, victim: int, item: int, ev: list[Event]) -> None:
    E.remove_item(s, victim, item)
    seq: list[E.Entry] = []
    E.add_item(s, raider, item, seq)
    ev.append(("raided", raider, victim, item))
    E.push_seq(s, seq)


def _prevent(s: State, d: tuple[Any, ...], c: int, ev: list[Event]) -> None:
    """The victim reveals c and returns it to its hand (S&S FAQ): every seat knows it is there."""
    E.reveal_in_hand(s, d[1], c)
    ev.append(("raid_prevented", d[1], c))


def _give(s: State, d: tuple[Any, ...], item: int, ev: list[Event]) -> None:
    E.give_to_thukal(s, d[1], item, ev)


def _take_free(s: State, d: tuple[Any, ...], target: int, ev: list[Event]) -> None:
    if d[7] == A.FREE_DEFEAT:
        E.defeat(s, d[1], target, ev)
    else:
        E.acquire(s, d[1], target, ev)


def _choose(s: State, d: tuple[Any, ...], i: int, ev: list[Event]) -> None:
    s.stack.append((d[3][i + 1], d[1], d[2]))


def _destroy(s: State, d: tuple[Any, ...], c: int, ev: list[Event]) -> None:
    E.destroy(s, d[1], c, ev)


_ANSWER = {
    A.PLACE_SHIP: _place_ship,
    A.MOVE_SHIP: _move_ship,
    A.SKIP: _skip,
    A.BANISH_HAND: _banish_hand,
    A.BANISH_DISCARD: _banish_discard,
    A.BANISH_CENTER: _banish_center,
    A.RAID_TAKE: _raid_take,
    A.PREVENT_RAID: _prevent,
    A.GIVE_TREASURE: _give,
    A.TAKE_FREE: _take_free,
    A.CHOOSE: _choose,
    A.DESTROY: _destroy,
}


# ---- why an action is illegal ------------------------------------------------------------


def _illegal(s: State, action: int) -> Exception:
    if not isinstance(action, int) or action < 0 or (action >> 16) not in A.KIND_NAMES:
        return MalformedActionError(f"action {action!r} does not decode to any action kind")
    if s.over:
        return IllegalActionError("the game is over")
    kind = action >> 16
    name = A.KIND_NAMES[kind]
    d = s.decision
    if d is not None and kind in _MAIN and kind != A.END_TURN:
        return IllegalActionError(
            f"{name} is not an answer to the pending choice ({A.DECISION_NAMES[d[0]]}) of seat {d[1]}"
        )
    if d is None and kind in _ANSWER:
        return IllegalActionError(f"{name} answers a choice, but no choice is pending")
    return IllegalActionError(f"{name} {action & 0xFFFF} is not legal now: {_reason(s, action)}")


def _reason(s: State, action: int) -> str:
    T = s.T
    kind, arg = action >> 16, action & 0xFFFF
    p = s.to_move()
    if kind == A.PLAY:
        return "that card is not in your hand"
    if kind in (A.ACQUIRE, A.DEFEAT, A.ACQUIRE_CREW, A.DEFEAT_CREW):
        if arg in (A.T_MYSTIC, A.T_HEAVY) and kind == A.ACQUIRE:
            pile = PILE_MYSTIC if arg == A.T_MYSTIC else PILE_HEAVY
            if not s.piles[pile]:
                return "that pile is empty"
            return f"not enough Runes (have {s.runes}, need {target_cost(s, arg)})"
        if arg == A.T_CULTIST and kind == A.DEFEAT:
            return f"not enough Power (have {s.power}, need {T.cost[T.cultist]})"
        if arg > DEEP:
            return "no such target"
        if arg == DEEP:
            if s.kraken != KRAKEN_IN_DEEP or kind in (A.ACQUIRE, A.ACQUIRE_CREW):
                return "Thukal, The Kraken is not in The Deep to be defeated"
            c = T.thukal
        else:
            c = s.center[arg]
            if c < 0:
                return "that space is empty"
        monster = T.type[c] == L.MONSTER
        if monster != (kind in (A.DEFEAT, A.DEFEAT_CREW)):
            return f"{T.names[c]} is {'a Monster: defeat it' if monster else 'not a Monster: acquire it'}"
        if kind in (A.ACQUIRE_CREW, A.DEFEAT_CREW):
            if s.ship[p] != arg:
                return "Crew can only be spent on the card at your ship's space"
            return f"not enough Crew (have {s.crew[p]}, need {T.cost[c]})"
        res, have = ("Runes", s.runes) if kind == A.ACQUIRE else ("Power", s.power)
        return f"not enough {res} (have {have}, need {T.cost[c]})"
    if kind == A.MOVE:
        if s.flags & F_FIRST_TURN:
            return "no normal move on your first turn (you placed your ship)"
        if s.moved:
            return "you already moved your ship this turn"
        return f"space {arg} is not adjacent to your ship's space {s.ship[p]}"
    if kind == A.USE:
        return "you have no such ability ready (once per turn, on a card you control)"
    if kind == A.FLIP_COINS:
        return "you need two face-up coins with that icon"
    if kind == A.DEFEAT_VOID:
        return "you can only defeat Monsters in The Void with Crew after playing Naka, Blackblade"
    return "not among the legal answers to the pending choice"
