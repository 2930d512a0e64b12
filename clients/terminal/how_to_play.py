"""The short "How to play" shown by the clients (``?`` in the terminal, the web page's button):
one text, ``clients/how_to_play.md``, written for this engine from the rulebooks.

A section whose heading names one set, "(Skulls & Sails)" or "(Curse of the Golden Isles)",
is shown only for games with that set.
"""

from __future__ import annotations

import re
from importlib import resources

SET_OF_SECTION = {"(Skulls & Sails)": "ss", "(Curse of the Golden Isles)": "cotgi"}


def text() -> str:
    return resources.files("clients").joinpath("how_to_play.md").read_text(encoding="utf-8")


def how_to_play(sets: str = "both") -> str:
    """The Markdown for a game of ``sets`` ("ss", "cotgi" or "both")."""
    parts = re.split(r"(?m)^(?=## )", text())
    kept = []
    for part in parts:
        heading = part.splitlines()[0] if part else ""
        only = next((s for tag, s in SET_OF_SECTION.items() if heading.endswith(tag)), None)
        if only is None or sets in (only, "both"):
            kept.append(part)
    return "".join(kept).strip() + "\n"
