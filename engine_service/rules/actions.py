"""Actions are ints: ``kind << 16 | arg``. An id means the same thing in every state.

Copies of a card are interchangeable, so "play a Mystic" is one action however many Mystics
are in hand. Targets on the board are spaces (0..5 center row, 6 The Deep) or the
always-available piles below.
"""

from __future__ import annotations

# Main phase (the active seat)
END_TURN = 1  # arg 0
PLAY = 2  # arg: card id in hand
USE = 3  # arg: card id * 8 + ability index (an activated ability of a Construct / Ongoing card)
ACQUIRE = 4  # arg: target, paying Runes
ACQUIRE_CREW = 5  # arg: space, paying Crew
DEFEAT = 6  # arg: target, paying Power
DEFEAT_CREW = 7  # arg: space, paying Crew
DEFEAT_VOID = 8  # arg: card id of a Monster in The Void, paying Crew (Naka, Blackblade)
MOVE = 9  # arg: space; the once-per-turn normal move
FLIP_COINS = 10  # arg: icon; turn two face-up coins with that icon face down
PLACE_SHIP = 11  # arg: space; the first turn's placement
# Answers to a pending choice
MOVE_SHIP = 12  # arg: space; a card's move
SKIP = 13  # arg 0: decline an optional choice ("you may")
BANISH_HAND = 14  # arg: card id
BANISH_DISCARD = 15  # arg: card id
BANISH_CENTER = 16  # arg: space
RAID_TAKE = 17  # arg: victim seat * 4096 + treasure item
PREVENT_RAID = 18  # arg: card id revealed from hand
GIVE_TREASURE = 19  # arg: treasure item put under Thukal
TAKE_FREE = 20  # arg: target acquired or defeated for free
CHOOSE = 21  # arg: option index
DESTROY = 22  # arg: card id of one of your Constructs

KIND_NAMES = {
    END_TURN: "end_turn", PLAY: "play", USE: "use", ACQUIRE: "acquire", ACQUIRE_CREW: "acquire_crew",
    DEFEAT: "defeat", DEFEAT_CREW: "defeat_crew", DEFEAT_VOID: "defeat_void", MOVE: "move",
    FLIP_COINS: "flip_coins", PLACE_SHIP: "place_ship", MOVE_SHIP: "move_ship", SKIP: "skip",
    BANISH_HAND: "banish_hand", BANISH_DISCARD: "banish_discard", BANISH_CENTER: "banish_center",
    RAID_TAKE: "raid_take", PREVENT_RAID: "prevent_raid", GIVE_TREASURE: "give_treasure",
    TAKE_FREE: "take_free", CHOOSE: "choose", DESTROY: "destroy",
}  # fmt: skip
KIND_IDS = {v: k for k, v in KIND_NAMES.items()}

# Targets beyond the seven spaces
T_MYSTIC = 7
T_HEAVY = 8
T_CULTIST = 9

# Pending-choice kinds: state.decision = (kind, deciding seat, source card id or -1, *data)
D_PLACE = 1  # (D_PLACE, seat, -1)
D_MOVE = 2  # (D_MOVE, seat, src)
D_BANISH = 3  # (D_BANISH, seat, src, zone mask, purpose)
D_RAID = 4  # (D_RAID, seat, src)
D_PREVENT = 5  # (D_PREVENT, victim, src, raider, item)
D_TRIBUTE = 6  # (D_TRIBUTE, seat, thukal)
D_FREE = 7  # (D_FREE, seat, src, faction, type, max cost, max honor, mode)
D_CHOOSE = 8  # (D_CHOOSE, seat, src, choose op)
D_DESTROY = 9  # (D_DESTROY, seat, src)
DECISION_NAMES = {
    D_PLACE: "place_ship", D_MOVE: "move_ship", D_BANISH: "banish", D_RAID: "raid",
    D_PREVENT: "prevent_raid", D_TRIBUTE: "tribute", D_FREE: "take_free", D_CHOOSE: "choose",
    D_DESTROY: "destroy",
}  # fmt: skip

# D_BANISH purposes and D_FREE modes
BANISH_PLAIN, BANISH_SKIPPER = 0, 1
FREE_ACQUIRE, FREE_DEFEAT, FREE_SKIPPER = 0, 1, 2


def encode(kind: int, arg: int = 0) -> int:
    return kind << 16 | arg


def kind_of(action: int) -> int:
    return action >> 16


def arg_of(action: int) -> int:
    return action & 0xFFFF


def raid_arg(victim: int, item: int) -> int:
    return victim * 4096 + item
