"""A state to compact bytes and back: a format byte, then the state's primitive form.

Format 3 (written) is ``marshal`` (version 2: equal states, equal bytes) of ints, strings
and lists, with every list of ints in 0..255 (the zones: cards are small ints) written as
``bytes``, at depth one or two: a third of the size of format 2, which spends five bytes on
each int, and no slower (a game's state is what Redis keeps of it, and is written on every
submit). No state holds ``bytes`` otherwise, so reading turns every ``bytes`` back into a
list. Format 2 (the same without ``bytes``) and format 1 (zlib-compressed JSON, written by
earlier versions) are still read. These bytes are for our own store; views handed to bots use
``View.serialize`` (its own format byte, see ``view.py``). The catalog fingerprint travels
with the state, so bytes written under other card data are refused with a clear error
instead of being read as different cards.
"""

from __future__ import annotations

import json
import marshal
import operator
import zlib
from typing import Any

from engine_service.rules.config import GameConfig
from engine_service.rules.errors import SerializationError
from engine_service.rules.state import FIELDS, State
from engine_service.rules.tables import Tables, default_tables

FORMAT_VERSION = 3
# Marshal version 2 (read by every Python 3): later ones flag each object that something else
# also references, and write a repeated one as a reference back, so the bytes depended on how
# the state was built: equal states, played or read back, differed about one time in a hundred.
MARSHAL_VERSION = 2
_MARSHAL_FORMAT = 2
_JSON_FORMAT = 1
_FIELDS = tuple(k for k in FIELDS if k not in ("T", "config"))
_VALUES = operator.attrgetter(*_FIELDS)  # every field in one C call (written on every submit)


def _tuples(x: Any) -> Any:
    return tuple(_tuples(i) for i in x) if isinstance(x, list) else x


def primitive_index(field: str) -> int:
    """Where ``to_primitive`` puts the state's field ``field``."""
    return 2 + _FIELDS.index(field)


_KNOWN = _FIELDS.index("known")


def to_primitive(s: State) -> list[Any]:
    c = s.config
    return [s.T.catalog.fingerprint, [c.sets, c.players, c.seed], *_VALUES(s)]


def from_primitive(data: list[Any], tables: Tables | None = None) -> State:
    T = tables or default_tables()
    try:
        fingerprint, (sets, players, seed), *values = data
    except (TypeError, ValueError) as e:
        raise SerializationError(f"not a serialized state: {e}") from None
    if fingerprint != T.catalog.fingerprint:
        raise SerializationError(
            f"state was written with card data {fingerprint!r}, this engine has {T.catalog.fingerprint!r}"
        )
    if len(values) == len(_FIELDS) - 1 and isinstance(players, int):
        # written before states kept ``known``: nothing known about any hand (the knowledge
        # comes back as decks run out and Raids are prevented)
        values.insert(_KNOWN, [[] for _ in range(players)])
    if len(values) != len(_FIELDS):
        raise SerializationError(f"expected {len(_FIELDS)} fields, got {len(values)}")
    s = State.__new__(State)
    s.T = T
    s.config = GameConfig(sets=sets, players=players, seed=seed)
    for k, v in zip(_FIELDS, values, strict=True):
        setattr(s, k, v)
    s.stack = [_tuples(e) for e in s.stack]
    s.decision = _tuples(s.decision)
    return s


# The state's zones, where ``_packed`` writes lists of ints in 0..255 as bytes: one list per
# field, or one per seat (and per board space: ``under``). Which fields they are is fixed, so
# the packing needs no look at every field's type (the look cost three times the rest of
# serialize, which runs on every submit); tests/rules check that no other field is a list of
# ints and that the bytes are what the look gave. Cards and coins are small ints (the card
# zones); the other zones may hold -1 (an empty space, a ship not yet placed) or larger ints
# (ability ids in ``used``, Honor tokens).
_CARD_ZONES = tuple(
    primitive_index(f) for f in ("bag", "center_deck", "kraken_coins", "out", "piles", "void")
)
_OTHER_ZONES = tuple(primitive_index(f) for f in ("center", "crew", "ship", "tokens", "used"))
_SEAT_ZONES = tuple(
    primitive_index(f)
    for f in (
        *("coins", "constructs", "decks", "discards", "hands", "known", "ongoing", "played"),
        *("treasures", "under"),
    )
)
_ZONES = _CARD_ZONES + _OTHER_ZONES


def _small(zone: list[int]) -> bytearray | list[int]:
    try:
        return bytearray(zone)
    except (ValueError, TypeError):  # an int outside 0..255: the zone stays a list
        return zone


def _packed(p: list[Any]) -> list[Any]:
    """The primitive form ``p`` (changed in place) with each non-empty zone of ints in 0..255
    as bytes; a zone holding a larger int (ability ids in ``used``, Honor tokens) stays a list.
    (As bytearrays, which marshal writes as bytes and which are made in half the time; and
    the card zones without a call each: the calls were most of serialize.)"""
    try:
        for i in _CARD_ZONES:
            if p[i]:
                p[i] = bytearray(p[i])
        for i in _SEAT_ZONES:  # (a new list: the state's own list of zones stays as it is)
            p[i] = [bytearray(z) if z else z for z in p[i]]
    except (ValueError, TypeError):  # (no card id above 255 yet: zone by zone, then)
        for i in _CARD_ZONES:
            if p[i] and type(p[i]) is list:
                p[i] = _small(p[i])
        for i in _SEAT_ZONES:
            p[i] = [_small(z) if z and type(z) is list else z for z in p[i]]
    for i in _OTHER_ZONES:
        if p[i]:
            p[i] = _small(p[i])
    return p


def _unpacked(v: Any) -> Any:
    if type(v) is bytes:
        return list(v)
    if type(v) is list and v and type(v[0]) is not int:  # (a list of zones, one per seat)
        return [list(z) if type(z) is bytes else z for z in v]
    return v


def serialize(s: State) -> bytes:
    return bytes([FORMAT_VERSION]) + marshal.dumps(_packed(to_primitive(s)), MARSHAL_VERSION)


def deserialize(data: bytes, tables: Tables | None = None) -> State:
    fmt = data[0] if data else None
    try:
        if fmt == FORMAT_VERSION:
            raw = marshal.loads(data[1:])
            if isinstance(raw, list):
                raw = [*raw[:2], *(_unpacked(v) for v in raw[2:])]
        elif fmt == _MARSHAL_FORMAT:
            raw = marshal.loads(data[1:])
        elif fmt == _JSON_FORMAT:
            raw = json.loads(zlib.decompress(data[1:]))
        else:
            raise SerializationError(f"unknown state format {data[:1]!r} (this engine reads 1 to 3)")
    except (zlib.error, ValueError, EOFError, TypeError) as e:
        raise SerializationError(f"corrupt state bytes: {e}") from None
    if not isinstance(raw, list):
        raise SerializationError("corrupt state bytes: not a state")
    return from_primitive(raw, tables)
