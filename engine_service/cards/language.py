"""The card effect language: one step per string, compiled to small int tuples.

A card's effect is a list of steps such as ``"runes 2"`` or ``"treasures>=3: honor 2"``.
Each step compiles to an *op*: a tuple whose first item is an op code from this module,
followed by int arguments. The rules interpreter (``engine_service.rules.effects``) runs
them. Grammar::

    step   := [cond ":"] op
    cond   := "treasures>=N" | "plunder" | "kraken" | "in_deep"
    op     := "runes N" | "power N" | "crew N" | "honor N" | "draw N"
            | "raid [N]"              Raid N times (default 1)
            | "move [N]"              you may move your ship one space, N times
            | "pull"                  each enemy ship moves one space towards The Kraken
            | "banish ZONES"          you may banish one card from ZONES
            | "each_banish ZONES"     each player, from you in turn order, may banish one card
            | "coin [N]"              take N Cursed Treasure coins from the Treasure Bag
            | "ghost N"               The Ghost Pirate moves N spaces clockwise
            | "acquire_free FILTER*"  you may acquire a matching center-row card for 0
            | "defeat_free FILTER*"   you may defeat a matching center-row Monster for 0
            | "destroy_opponents"     each opponent destroys one of their Constructs
            | "crew_void"             this turn you may spend Crew to defeat Monsters in The Void
            | "skipper"               banish a card of yours, then acquire one worth up to 1 more Honor
            | "choose STEP | STEP"    choose one of the steps (no nesting)
    ZONES  := "hand" | "discard" | "hand/discard" | "center"
    FILTER := "faction=F" | "type=T" | "cost<=N"
"""

from __future__ import annotations

from typing import Any, TypeAlias

Op: TypeAlias = tuple[Any, ...]
"""A compiled step: (op code, int args...). ``choose`` and conditions nest ops as args."""

# Card types
HERO, CONSTRUCT, MONSTER, TREASURE = 0, 1, 2, 3
TYPE_NAMES = ("hero", "construct", "monster", "treasure")

# Factions (NONE for starting cards, always-available cards, Monsters, Treasure)
NONE, ENLIGHTENED, LIFEBOUND, MECHANA, VOID = 0, 1, 2, 3, 4
FACTION_NAMES = ("none", "enlightened", "lifebound", "mechana", "void")

# Resources (also the icons of Cursed Treasure coins)
RUNES, POWER, CREW, HONOR, DRAW, MOVE = 0, 1, 2, 3, 4, 5
RESOURCE_NAMES = ("runes", "power", "crew", "honor", "draw", "move")

# Zone masks for banish
Z_HAND, Z_DISCARD, Z_CENTER = 1, 2, 4
ZONE_MASKS = {"hand": Z_HAND, "discard": Z_DISCARD, "hand/discard": Z_HAND | Z_DISCARD, "center": Z_CENTER}

# Op codes
(
    OP_GAIN,  # (OP_GAIN, resource, n); draw and move are resources too
    OP_RAID,  # (OP_RAID, n)
    OP_PULL,  # (OP_PULL,)
    OP_BANISH,  # (OP_BANISH, zone mask)
    OP_EACH_BANISH,  # (OP_EACH_BANISH, zone mask)
    OP_COIN,  # (OP_COIN, n)
    OP_GHOST,  # (OP_GHOST, n)
    OP_ACQUIRE_FREE,  # (OP_ACQUIRE_FREE, faction or -1, type or -1, max cost or -1)
    OP_DEFEAT_FREE,  # (OP_DEFEAT_FREE, -1, -1, max cost or -1)
    OP_DESTROY_OPPONENTS,  # (OP_DESTROY_OPPONENTS,)
    OP_CREW_VOID,  # (OP_CREW_VOID,)
    OP_SKIPPER,  # (OP_SKIPPER,)
    OP_CHOOSE,  # (OP_CHOOSE, *options) each option an Op
    OP_IF,  # (OP_IF, cond, cond arg, op)
) = range(14)

# Conditions
COND_TREASURES, COND_PLUNDER, COND_KRAKEN, COND_IN_DEEP = 0, 1, 2, 3

# Trigger events for Construct / Ongoing abilities
(
    WHEN_ACTIVATED,  # a once-per-turn ability the owner uses when they choose
    WHEN_PLAY_HERO,
    WHEN_PLAY_CONSTRUCT,
    WHEN_GAIN_TREASURE,
    WHEN_ACQUIRE,
    WHEN_DEFEAT,
    WHEN_TURN_START,
) = range(7)
WHEN_NAMES = (
    "activated",
    "play_hero",
    "play_construct",
    "gain_treasure",
    "acquire",
    "defeat",
    "turn_start",
)


class EffectSyntaxError(ValueError):
    """A step that does not parse; the loader adds file and card."""


def _int(word: str, step: str) -> int:
    try:
        n = int(word)
    except ValueError:
        raise EffectSyntaxError(f"expected a number, got {word!r} in {step!r}") from None
    if n < 0 or n > 99:
        raise EffectSyntaxError(f"number out of range 0..99 in {step!r}")
    return n


def _filter(words: list[str], step: str) -> tuple[int, int, int]:
    faction = kind = cost = -1
    for w in words:
        key, sep, val = w.partition("=")
        if key == "cost<" and sep and val:
            cost = _int(val, step)
        elif key == "faction" and val in FACTION_NAMES:
            faction = FACTION_NAMES.index(val)
        elif key == "type" and val in TYPE_NAMES:
            kind = TYPE_NAMES.index(val)
        else:
            raise EffectSyntaxError(f"bad filter {w!r} in {step!r}")
    return faction, kind, cost


def parse_op(text: str) -> Op:
    """Compile one op (no condition) from its text."""
    words = text.split()
    if not words:
        raise EffectSyntaxError("empty step")
    head, args = words[0], words[1:]
    if head in RESOURCE_NAMES:
        if len(args) != 1:
            raise EffectSyntaxError(f"{head} takes one number: {text!r}")
        return (OP_GAIN, RESOURCE_NAMES.index(head), _int(args[0], text))
    if head in ("raid", "coin", "move", "ghost"):
        if len(args) > 1:
            raise EffectSyntaxError(f"{head} takes at most one number: {text!r}")
        n = _int(args[0], text) if args else 1
        if head == "move":
            return (OP_GAIN, MOVE, n)
        return ({"raid": OP_RAID, "coin": OP_COIN, "ghost": OP_GHOST}[head], n)
    if head in ("banish", "each_banish"):
        if len(args) != 1 or args[0] not in ZONE_MASKS:
            raise EffectSyntaxError(f"{head} needs one of {sorted(ZONE_MASKS)}: {text!r}")
        if head == "each_banish" and args[0] == "center":
            raise EffectSyntaxError(f"each_banish cannot target the center row: {text!r}")
        return (OP_BANISH if head == "banish" else OP_EACH_BANISH, ZONE_MASKS[args[0]])
    if head in ("acquire_free", "defeat_free"):
        f = _filter(args, text)
        if head == "defeat_free":
            return (OP_DEFEAT_FREE, -1, MONSTER, f[2])
        if f[1] == MONSTER:
            raise EffectSyntaxError(f"acquire_free cannot take Monsters: {text!r}")
        return (OP_ACQUIRE_FREE, *f)
    simple = {
        "pull": OP_PULL,
        "destroy_opponents": OP_DESTROY_OPPONENTS,
        "crew_void": OP_CREW_VOID,
        "skipper": OP_SKIPPER,
    }
    if head in simple:
        if args:
            raise EffectSyntaxError(f"{head} takes no arguments: {text!r}")
        return (simple[head],)
    if head == "choose":
        options = [o.strip() for o in text[len("choose") :].split("|")]
        if len(options) < 2:
            raise EffectSyntaxError(f"choose needs two or more options separated by '|': {text!r}")
        return (OP_CHOOSE, *(parse_op(o) for o in options))
    raise EffectSyntaxError(f"unknown effect {head!r} in {text!r}")


def parse_step(text: str) -> Op:
    """Compile one step, with its optional condition."""
    cond_text, sep, rest = text.partition(":")
    if not sep:
        return parse_op(text)
    cond_text = cond_text.strip()
    op = parse_op(rest.strip())
    if cond_text.startswith("treasures>="):
        return (OP_IF, COND_TREASURES, _int(cond_text[len("treasures>=") :], text), op)
    named = {"plunder": COND_PLUNDER, "kraken": COND_KRAKEN, "in_deep": COND_IN_DEEP}
    if cond_text in named:
        return (OP_IF, named[cond_text], 0, op)
    raise EffectSyntaxError(f"unknown condition {cond_text!r} in {text!r}")


def parse_steps(steps: list[str]) -> tuple[Op, ...]:
    return tuple(parse_step(s) for s in steps)


def parse_when(text: str) -> tuple[tuple[int, int], ...]:
    """``"play_construct:mechana|gain_treasure"`` -> ((event, faction or -1), ...)."""
    out = []
    for alt in text.split("|"):
        name, _, faction = alt.strip().partition(":")
        if name not in WHEN_NAMES:
            raise EffectSyntaxError(f"unknown trigger {name!r}; expected one of {WHEN_NAMES}")
        if faction and faction not in FACTION_NAMES:
            raise EffectSyntaxError(f"unknown faction {faction!r} in trigger {text!r}")
        out.append((WHEN_NAMES.index(name), FACTION_NAMES.index(faction) if faction else -1))
    if any(e == WHEN_ACTIVATED for e, _ in out) and len(out) > 1:
        raise EffectSyntaxError(f"'activated' cannot be combined with triggers: {text!r}")
    return tuple(out)
