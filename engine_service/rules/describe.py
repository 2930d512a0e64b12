"""Readable text for actions and events, in the rulebooks' words (for clients and logs)."""

from __future__ import annotations

from typing import Any

from engine_service.cards import language as L
from engine_service.rules import actions as A
from engine_service.rules.engine import target_cost
from engine_service.rules.state import COIN_DOWN, COIN_ITEM, DEEP, State

COLORS = ("red", "orange", "yellow", "green", "blue", "purple")


def space_name(sp: int) -> str:
    return "The Deep" if sp == DEEP else f"space {sp + 1}"


def coin_name(coin: int) -> str:
    face = " (face down)" if coin & COIN_DOWN else ""
    c = coin & (COIN_DOWN - 1)
    return f"{COLORS[c // 6]} {L.RESOURCE_NAMES[c % 6]} coin{face}"


def item_name(s: State, item: int) -> str:
    return coin_name(item - COIN_ITEM) if item >= COIN_ITEM else s.T.names[item]


def target_name(s: State, target: int) -> str:
    T = s.T
    if target == A.T_MYSTIC:
        return "Mystic"
    if target == A.T_HEAVY:
        return "Heavy Infantry"
    if target == A.T_CULTIST:
        return "Cultist"
    if target == DEEP:
        return "Thukal, The Kraken"
    c = s.center[target]
    return f"{T.names[c] if c >= 0 else 'nothing'} ({space_name(target)})"


def describe_action(s: State, action: int) -> str:
    T = s.T
    kind, arg = action >> 16, action & 0xFFFF
    names = T.names
    if kind == A.END_TURN:
        return "End your turn"
    if kind == A.PLAY:
        return f"Play {names[arg]}"
    if kind == A.USE:
        c, i = divmod(arg, 8)
        ab = T.catalog[c].abilities[i]
        return f"Use {names[c]}: {ab.text or ' '.join(_op_text(op) for op in ab.ops)}"
    if kind == A.ACQUIRE:
        return f"Acquire {target_name(s, arg)} for {target_cost(s, arg)} Runes"
    if kind == A.ACQUIRE_CREW:
        return f"Acquire {target_name(s, arg)} for {target_cost(s, arg)} Crew"
    if kind == A.DEFEAT:
        return f"Defeat {target_name(s, arg)} with {target_cost(s, arg)} Power"
    if kind == A.DEFEAT_CREW:
        return f"Defeat {target_name(s, arg)} with {target_cost(s, arg)} Crew"
    if kind == A.DEFEAT_VOID:
        return f"Defeat {names[arg]} in The Void with {T.cost[arg]} Crew"
    if kind in (A.MOVE, A.MOVE_SHIP):
        return f"Move your ship to {space_name(arg)}"
    if kind == A.PLACE_SHIP:
        return f"Place your ship on {space_name(arg)}"
    if kind == A.FLIP_COINS:
        return f"Turn two {L.RESOURCE_NAMES[arg]} coins face down to gain 2 {L.RESOURCE_NAMES[arg]}"
    if kind == A.SKIP:
        return "Decline" if s.decision is None or s.decision[0] != A.D_PREVENT else "Let the Raid happen"
    if kind == A.BANISH_HAND:
        return f"Banish {names[arg]} from your hand"
    if kind == A.BANISH_DISCARD:
        return f"Banish {names[arg]} from your discard pile"
    if kind == A.BANISH_CENTER:
        return f"Banish {target_name(s, arg)} from the center row"
    if kind == A.RAID_TAKE:
        victim, item = divmod(arg, 4096)
        return f"Raid seat {victim + 1}: take {item_name(s, item)}"
    if kind == A.PREVENT_RAID:
        return f"Reveal {names[arg]} to prevent the Raid"
    if kind == A.GIVE_TREASURE:
        return f"Put {item_name(s, arg)} under Thukal"
    if kind == A.TAKE_FREE:
        verb = "Defeat" if s.decision is not None and s.decision[-1] == A.FREE_DEFEAT else "Acquire"
        return f"{verb} {target_name(s, arg)} for free"
    if kind == A.CHOOSE:
        d = s.decision
        if d is not None and d[0] == A.D_CHOOSE:
            return f"Choose: {_op_text(d[3][arg + 1])}"
        return f"Choose option {arg + 1}"
    if kind == A.DESTROY:
        return f"Destroy your {names[arg]}"
    return f"Action {action}"


def _op_text(op: L.Op) -> str:
    if op[0] == L.OP_GAIN:
        res = L.RESOURCE_NAMES[op[1]]
        if res == "draw":
            return f"draw {op[2]}"
        if res == "move":
            return f"move {op[2]}"
        return f"gain {op[2]} {res.capitalize()}"
    return {L.OP_RAID: "Raid", L.OP_COIN: "take a coin"}.get(op[0], "effect")


def describe_event(s: State, e: tuple[Any, ...]) -> str:
    """One event as a sentence; seats are shown 1-based."""
    names = s.T.names
    k = e[0]
    who = f"Seat {e[1] + 1}" if len(e) > 1 and isinstance(e[1], int) else ""
    if k == "play":
        return f"{who} played {names[e[2]]}"
    if k == "use":
        return f"{who} used {names[e[2]]}"
    if k == "acquire":
        return f"{who} acquired {names[e[2]]}"
    if k == "defeat":
        return f"{who} defeated {names[e[2]]}" + (" in The Void" if e[3] == -1 else "")
    if k == "honor":
        return f"{who} gained {e[2]} Honor"
    if k == "gain":
        return f"{who} gained {e[3]} {L.RESOURCE_NAMES[e[2]].capitalize()}"
    if k == "draw":
        return f"{who} drew {e[2]} card{'s' if e[2] != 1 else ''}"
    if k == "ship":
        return f"{who}'s ship is now on {space_name(e[2])}"
    if k == "treasure":
        return f"{who} took {item_name(s, e[2])}"
    if k == "raid":
        return f"{who} Raids seat {e[2] + 1} for {item_name(s, e[3])}"
    if k == "raided":
        return f"{who} took {item_name(s, e[3])} from seat {e[2] + 1}"
    if k == "raid_prevented":
        return f"{who} revealed {names[e[2]]} from their hand, prevented the Raid and kept the card"
    if k == "tribute":
        return f"{who} put {item_name(s, e[2])} under Thukal"
    if k == "banish":
        return f"{who} banished {names[e[2]]} from {'the center row' if e[3] == 'center' else 'their ' + e[3]}"
    if k == "ghost_hit":
        return f"The Ghost Pirate took 1 Crew from seat {e[1] + 1}"
    if k == "ghost_moved":
        return f"The Ghost Pirate moved to {space_name(e[1])}"
    if k == "coin_placed":
        return f"A {coin_name(e[1])} was placed on {space_name(e[1] // 6)}"
    if k == "enter_center":
        return f"{names[e[2]]} entered the center row at {space_name(e[1])}"
    if k == "destroyed":
        return f"{who}'s {names[e[2]]} was destroyed"
    if k == "turn_start":
        return f"Turn {e[2]}: seat {e[1] + 1} to play"
    if k == "turn_end":
        return f"{who} ended their turn"
    if k == "pool_empty":
        return "The Honor pool is empty: the game ends at the end of this round"
    if k == "game_over":
        return "The game is over"
    if k == "raid_no_target":
        return f"{who} had no enemy ship with Treasure to Raid"
    if k == "reshuffle":
        return f"{who} shuffled their discard pile into their deck"
    if k == "skip":
        return f"{who} declined ({A.DECISION_NAMES.get(e[2], 'a choice')})"
    if k == "void_reshuffled":
        return "The Void was shuffled into the center deck"
    if k == "bag_empty":
        return f"The Treasure Bag is empty: {who} took no coin"
    if k == "coins_flipped":
        return f"{who} turned two {L.RESOURCE_NAMES[e[2]]} coins face down"
    raise ValueError(f"unknown event {k!r}")
