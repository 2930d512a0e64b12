"""Display names: what a player may call a seat, shown as it is to every other player.

A name shown to others must not be able to disguise itself or what is around it: no format
characters (Unicode category Cf: bidi overrides and isolates such as U+202E, zero-width
spaces and joiners, the BOM, tag characters), no control or line-breaking characters, no
private-use or unassigned code points, and at least one visible character (not only spaces,
combining marks or blank "filler" letters). Anyone may choose any name, so nothing here keeps
two players from choosing names that look alike; it only keeps one name from hiding what it is.
"""

from __future__ import annotations

import unicodedata

MAX_NAME = 64
ALLOWED = (
    f"a display name is at most {MAX_NAME} characters (empty: the default name) of letters, "
    "marks, digits, punctuation, symbols and the space U+0020, with at least one visible "
    "character and no space at either end"
)
# Letters and symbols that render as nothing: the Hangul fillers and the blank Braille pattern
# (Unicode's Default_Ignorable_Code_Point letters, and U+2800, a favourite "invisible name").
_BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_ALLOWED_CATEGORIES = frozenset("LMNPS")
_WHY = {
    "Cc": "a control character",
    "Cf": "a format character (invisible, or reorders the text around it)",
    "Co": "a private-use character",
    "Cn": "an unassigned code point",
    "Cs": "a surrogate",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
    "Zs": "a space other than U+0020",
}


def describe(ch: str) -> str:
    """``U+202E RIGHT-TO-LEFT OVERRIDE``."""
    return f"U+{ord(ch):04X}" + (f" {unicodedata.name(ch)}" if unicodedata.name(ch, "") else "")


def problem(name: str) -> str | None:
    """What is wrong with ``name`` as a display name (the rule, then the fault), or None.
    The empty name is not checked here: it means "the default name"."""
    if len(name) > MAX_NAME:
        return f"{ALLOWED}; got {len(name)} characters"
    for i, ch in enumerate(name):
        category = unicodedata.category(ch)
        if ch != " " and category[0] not in _ALLOWED_CATEGORIES:
            why = _WHY.get(category, f"of category {category}")
            return f"{ALLOWED}; character {i + 1} is {describe(ch)}, {why}"
    if not any(unicodedata.category(ch)[0] in "LNPS" and ch not in _BLANK for ch in name):
        return f"{ALLOWED}; got no visible character"
    if name != name.strip(" "):
        return f"{ALLOWED}; got a space at an end"
    return None
