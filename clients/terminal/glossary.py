"""The words of the cards explained (``clients/glossary.json``, which the web page reads too):
keywords, factions, places and resources, and the questions asked before a risky move.

``find("unite")`` answers the terminal's ``? unite``; ``terms_in(text)`` finds the terms of a
card's text as the web page does (a longer term wins over one it contains: "The Void" over
"Void").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

KINDS = ("keyword", "faction", "card type", "place", "resource", "piece")


@dataclass(frozen=True, slots=True)
class Term:
    kind: str
    words: tuple[str, ...]  # as card texts write it; the first is its name
    text: str

    @property
    def name(self) -> str:
        return self.words[0]


@cache
def _data() -> dict[str, Any]:
    raw = resources.files("clients").joinpath("glossary.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(raw)
    return data


@cache
def terms() -> tuple[Term, ...]:
    return tuple(Term(t["kind"], tuple(t["words"]), t["text"]) for t in _data()["terms"])


def confirm(key: str, **values: object) -> str:
    """A question (or part of one) asked before a move, with its blanks filled."""
    template: str = _data()["confirm"][key]
    return template.format(**values)


def find(query: str) -> list[Term]:
    """The terms a player means by ``query``: any word of a term, whatever its case
    ("void" finds the faction and The Void); else those whose name starts with it."""
    q = " ".join(query.lower().split())
    if not q:
        return []
    exact = [
        t
        for t in terms()
        if any(w.lower() == q or w.lower().removeprefix("the ") == q for w in t.words)
    ]
    if exact:
        return exact
    return [t for t in terms() if any(w.lower().startswith(q) for w in t.words)]


@cache
def _pattern() -> re.Pattern[str]:
    words = sorted({w for t in terms() for w in t.words}, key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + r")\b")


def term_of(word: str) -> Term:
    """The term a word of a card's text (as written there) belongs to."""
    return next(t for t in terms() if word in t.words)


def terms_in(text: str) -> list[Term]:
    """The terms of a card's text, each once, in the order they first appear."""
    seen: dict[str, Term] = {}
    for m in _pattern().finditer(text):
        t = term_of(m.group(1))
        seen.setdefault(t.name, t)
    return list(seen.values())


SET_TAGS = {"(Skulls & Sails)": "ss", "(Curse of the Golden Isles)": "cotgi"}


def in_game(term: Term, sets: str) -> bool:
    """Whether a term belongs to a game of ``sets``: a term whose text names one set only
    to games with that set."""
    named = [s for tag, s in SET_TAGS.items() if tag in term.text]
    return len(named) != 1 or sets in (named[0], "both")


def listing(sets: str = "both") -> str:
    """Every term's name by kind (those of a game of ``sets``), for ``?``: one line a kind."""
    lines = []
    for kind in KINDS:
        names = [t.name for t in terms() if t.kind == kind and in_game(t, sets)]
        if names:
            label = {"faction": "factions", "card type": "card types", "piece": "on the board"}
            lines.append(f"  {label.get(kind, kind + 's') + ':':14} {', '.join(names)}")
    return "\n".join(lines)
