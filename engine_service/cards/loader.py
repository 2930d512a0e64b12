"""Load and validate the card files into a :class:`Catalog`.

Every error names the file, the card and the field at fault, so a person editing the data
can fix it without reading code. Card ids are positions in the catalog: the files are read
in a fixed order (core, then each set), so ids are stable for a given data version; the
catalog's ``fingerprint`` changes whenever the data does.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine_service.cards import language as L

DATA_DIR = Path(__file__).parent / "data"
SET_FILES = ("core.toml", "skulls_and_sails.toml", "curse_of_the_golden_isles.toml")

CARD_FIELDS = {
    "key", "name", "type", "faction", "cost", "honor", "copies", "origin", "text", "starting",
    "always", "play", "unite", "echo", "anchor", "fate", "reward", "ongoing", "prevent_raid",
    "ability", "grants_anchor", "end_honor", "special", "note",
}  # fmt: skip
SET_FIELDS = {"key", "name", "starting", "kraken", "coins", "coin_colors", "coin_icons"}
END_HONOR_KINDS = ("treasures", "constructs", "coins")
SPECIALS = ("thukal",)


class CardDataError(ValueError):
    """A card file that is malformed: the message names the file, card and field."""

    def __init__(self, file: str, card: str | None, fieldname: str | None, problem: str) -> None:
        where = file + (f", card {card!r}" if card else "") + (f", field {fieldname!r}" if fieldname else "")
        super().__init__(f"{where}: {problem}")
        self.file, self.card, self.field, self.problem = file, card, fieldname, problem


@dataclass(frozen=True, slots=True)
class Ability:
    """A Construct's or Ongoing card's ability: activated (once per turn) or triggered."""

    when: tuple[tuple[int, int], ...]  # ((event, faction filter or -1), ...)
    once: bool
    ops: tuple[L.Op, ...]
    text: str = ""


@dataclass(frozen=True, slots=True)
class CardDef:
    id: int
    key: str
    name: str
    set: str
    type: int
    faction: int
    cost: int
    honor: int
    copies: int
    origin: str
    text: str
    starting: bool = False
    always: bool = False
    play: tuple[L.Op, ...] = ()
    unite: tuple[L.Op, ...] = ()
    echo: tuple[L.Op, ...] = ()
    anchor: tuple[L.Op, ...] = ()
    fate: tuple[L.Op, ...] = ()
    reward: tuple[L.Op, ...] = ()
    ongoing: bool = False
    prevent_raid: bool = False
    abilities: tuple[Ability, ...] = ()
    grants_anchor: tuple[L.Op, ...] = ()
    end_honor: tuple[int, int] | None = None  # (kind index in END_HONOR_KINDS, per item)
    special: str = ""
    note: str = ""


@dataclass(frozen=True, slots=True)
class SetDef:
    key: str
    name: str
    starting: tuple[tuple[str, int], ...]
    kraken: bool
    coins: bool
    coin_colors: tuple[str, ...] = ()
    coin_icons: tuple[str, ...] = ()
    center: tuple[int, ...] = ()  # card ids of the center deck, one entry per copy


@dataclass(slots=True)
class Catalog:
    cards: list[CardDef]
    sets: dict[str, SetDef]
    fingerprint: str
    by_key: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_key = {c.key: c.id for c in self.cards}

    def id(self, key: str) -> int:
        return self.by_key[key]

    def __getitem__(self, card_id: int) -> CardDef:
        return self.cards[card_id]

    def __len__(self) -> int:
        return len(self.cards)


def _steps(file: str, card: str, fieldname: str, raw: Any) -> tuple[L.Op, ...]:
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise CardDataError(file, card, fieldname, "must be a list of effect strings")
    try:
        return L.parse_steps(raw)
    except L.EffectSyntaxError as e:
        raise CardDataError(file, card, fieldname, str(e)) from None


def _typed(file: str, card: str | None, raw: dict[str, Any], name: str, kind: type, default: Any) -> Any:
    value = raw.get(name, default)
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise CardDataError(file, card, name, f"must be an integer, got {value!r}")
    if kind is not int and not isinstance(value, kind):
        raise CardDataError(file, card, name, f"must be a {kind.__name__}, got {value!r}")
    return value


def _card(file: str, set_key: str, card_id: int, raw: dict[str, Any]) -> CardDef:
    key = raw.get("key")
    if not isinstance(key, str) or not key.isidentifier():
        raise CardDataError(file, str(key) if key else None, "key", "each card needs a key (a lowercase identifier)")
    unknown = set(raw) - CARD_FIELDS
    if unknown:
        raise CardDataError(file, key, sorted(unknown)[0], f"unknown field (allowed: {', '.join(sorted(CARD_FIELDS))})")
    t = _typed(file, key, raw, "type", str, None) if "type" in raw else None
    if t not in L.TYPE_NAMES:
        raise CardDataError(file, key, "type", f"must be one of {L.TYPE_NAMES}, got {t!r}")
    faction = _typed(file, key, raw, "faction", str, "none")
    if faction not in L.FACTION_NAMES:
        raise CardDataError(file, key, "faction", f"must be one of {L.FACTION_NAMES}, got {faction!r}")
    origin = _typed(file, key, raw, "origin", str, "")
    if origin not in ("rulebook", "designed"):
        raise CardDataError(file, key, "origin", "must be 'rulebook' (named in a rulebook) or 'designed' (ours)")
    for name in ("name", "text"):
        if not isinstance(raw.get(name), str) or not raw[name]:
            raise CardDataError(file, key, name, "is required and must be a non-empty string")
    cost = _typed(file, key, raw, "cost", int, 0)
    honor = _typed(file, key, raw, "honor", int, 0)
    starting = _typed(file, key, raw, "starting", bool, False)
    copies = _typed(file, key, raw, "copies", int, 0 if starting else 1)
    for name, value in (("cost", cost), ("honor", honor), ("copies", copies)):
        if not 0 <= value <= 99:
            raise CardDataError(file, key, name, f"must be between 0 and 99, got {value}")
    abilities = []
    raw_abilities = raw.get("ability", [])
    if not isinstance(raw_abilities, list):
        raise CardDataError(file, key, "ability", "must be an array of tables ([[card.ability]])")
    for ab in raw_abilities:
        if not isinstance(ab, dict) or set(ab) - {"when", "once", "does", "text"}:
            raise CardDataError(file, key, "ability", "each ability has only 'when', 'once', 'does', 'text'")
        try:
            when = L.parse_when(_typed(file, key, ab, "when", str, "activated"))
        except L.EffectSyntaxError as e:
            raise CardDataError(file, key, "ability.when", str(e)) from None
        once = _typed(file, key, ab, "once", bool, when[0][0] == L.WHEN_ACTIVATED)
        if when[0][0] == L.WHEN_ACTIVATED and not once:
            raise CardDataError(file, key, "ability.once", "activated abilities are once per turn")
        ops = _steps(file, key, "ability.does", ab.get("does"))
        abilities.append(Ability(when, once, ops, _typed(file, key, ab, "text", str, "")))
    end_honor = None
    if "end_honor" in raw:
        words = _typed(file, key, raw, "end_honor", str, "").split()
        if len(words) != 2 or words[0] not in END_HONOR_KINDS or not words[1].isdigit():
            raise CardDataError(file, key, "end_honor", f"must be '<{'|'.join(END_HONOR_KINDS)}> N'")
        end_honor = (END_HONOR_KINDS.index(words[0]), int(words[1]))
    special = _typed(file, key, raw, "special", str, "")
    if special and special not in SPECIALS:
        raise CardDataError(file, key, "special", f"must be one of {SPECIALS}")
    card = CardDef(
        id=card_id,
        key=key,
        name=raw["name"],
        set=set_key,
        type=L.TYPE_NAMES.index(t),
        faction=L.FACTION_NAMES.index(faction),
        cost=cost,
        honor=honor,
        copies=copies,
        origin=origin,
        text=raw["text"],
        starting=starting,
        always=_typed(file, key, raw, "always", bool, False),
        play=_steps(file, key, "play", raw.get("play", [])),
        unite=_steps(file, key, "unite", raw.get("unite", [])),
        echo=_steps(file, key, "echo", raw.get("echo", [])),
        anchor=_steps(file, key, "anchor", raw.get("anchor", [])),
        fate=_steps(file, key, "fate", raw.get("fate", [])),
        reward=_steps(file, key, "reward", raw.get("reward", [])),
        ongoing=_typed(file, key, raw, "ongoing", bool, False),
        prevent_raid=_typed(file, key, raw, "prevent_raid", bool, False),
        abilities=tuple(abilities),
        grants_anchor=_steps(file, key, "grants_anchor", raw.get("grants_anchor", [])),
        end_honor=end_honor,
        special=special,
        note=_typed(file, key, raw, "note", str, ""),
    )
    _check_shape(file, card)
    return card


def _check_shape(file: str, c: CardDef) -> None:
    """Fields that make no sense for the card's type are errors, not silently ignored."""
    if c.type == L.MONSTER and (c.play or c.unite or c.echo):
        raise CardDataError(file, c.key, "play", "Monsters are defeated, not played: use 'reward'")
    if c.type in (L.HERO, L.CONSTRUCT) and c.reward:
        raise CardDataError(file, c.key, "reward", "only Monsters have a reward")
    if c.type == L.HERO and c.abilities and not c.ongoing:
        raise CardDataError(file, c.key, "ability", "only Constructs and Ongoing cards have abilities")
    if c.type == L.TREASURE and (c.play or c.cost):
        raise CardDataError(file, c.key, "type", "Treasure cards have no cost and are not played")
    if (c.unite or c.echo) and c.faction == L.NONE:
        raise CardDataError(file, c.key, "faction", "Unite and Echo need a faction to match")


def _load_set(file: str, raw: dict[str, Any], first_id: int) -> tuple[SetDef, list[CardDef]]:
    meta = raw.get("set")
    if not isinstance(meta, dict):
        raise CardDataError(file, None, "set", "missing [set] table")
    unknown = set(meta) - SET_FIELDS
    if unknown:
        raise CardDataError(file, None, f"set.{sorted(unknown)[0]}", "unknown field")
    set_key = _typed(file, None, meta, "key", str, "")
    extra = set(raw) - {"set", "card"}
    if extra:
        raise CardDataError(file, None, sorted(extra)[0], "unknown top-level table (expected [set] and [[card]])")
    raw_cards = raw.get("card", [])
    if not isinstance(raw_cards, list):
        raise CardDataError(file, None, "card", "must be an array of tables ([[card]])")
    cards = [_card(file, set_key, first_id + i, rc) for i, rc in enumerate(raw_cards)]
    starting = meta.get("starting", {})
    if not isinstance(starting, dict):
        raise CardDataError(file, None, "set.starting", "must be a table of card key = count")
    colors = tuple(_typed(file, None, meta, "coin_colors", list, []))
    icons = tuple(_typed(file, None, meta, "coin_icons", list, []))
    for icon in icons:
        if icon not in L.RESOURCE_NAMES:
            raise CardDataError(file, None, "set.coin_icons", f"unknown icon {icon!r}; expected {L.RESOURCE_NAMES}")
    coins = _typed(file, None, meta, "coins", bool, False)
    if coins and (len(colors) != 6 or len(icons) * len(colors) != 36):
        raise CardDataError(file, None, "set.coin_colors", "36 coins: 6 colors (one per center-row space) x 6 icons")
    setdef = SetDef(
        key=set_key,
        name=_typed(file, None, meta, "name", str, set_key),
        starting=tuple((k, int(v)) for k, v in starting.items()),
        kraken=_typed(file, None, meta, "kraken", bool, False),
        coins=coins,
        coin_colors=colors,
        coin_icons=icons,
    )
    return setdef, cards


def load_catalog(files: Iterable[Path] | None = None) -> Catalog:
    """Read the card files (default: the shipped ones) and validate them as a whole."""
    paths = list(files) if files is not None else [DATA_DIR / f for f in SET_FILES]
    digest = hashlib.sha256()
    cards: list[CardDef] = []
    sets: dict[str, SetDef] = {}
    for path in paths:
        blob = path.read_bytes()
        digest.update(blob)
        try:
            raw = tomllib.loads(blob.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise CardDataError(path.name, None, None, f"not valid TOML: {e}") from None
        setdef, new = _load_set(path.name, raw, len(cards))
        if setdef.key in sets:
            raise CardDataError(path.name, None, "set.key", f"duplicate set key {setdef.key!r}")
        seen = {c.key for c in cards}
        for c in new:
            if c.key in seen:
                raise CardDataError(path.name, c.key, "key", "duplicate card key")
            seen.add(c.key)
        cards.extend(new)
        center = tuple(
            c.id for c in new if not (c.starting or c.always or c.special) for _ in range(c.copies)
        )
        sets[setdef.key] = SetDef(**{**_asdict(setdef), "center": center})
    keys = {c.key for c in cards}
    for s in sets.values():
        for k, _n in s.starting:
            if k not in keys:
                raise CardDataError(f"{s.key} set", None, "set.starting", f"unknown card {k!r}")
    return Catalog(cards, sets, digest.hexdigest()[:16])


def _asdict(s: SetDef) -> dict[str, Any]:
    return {f: getattr(s, f) for f in s.__slots__}


_DEFAULT: Catalog | None = None


def default_catalog() -> Catalog:
    """The shipped card data, loaded once per process."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = load_catalog()
    return _DEFAULT
