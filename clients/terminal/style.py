"""Colors and short labels: factions, card types, coins, seats (rich styles, no escape codes)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from rich.text import Text

from clients.sdk.types import CardInfo, Catalog, GameView, SeatInfo

FACTION_STYLE = {
    "enlightened": "bright_cyan",
    "lifebound": "green",
    "mechana": "dark_orange",
    "void": "magenta",
    "none": "default",
}
TYPE_TAG = {"hero": "H", "construct": "C", "monster": "M", "treasure": "T"}
COIN_STYLE = {
    "red": "red",
    "orange": "dark_orange",
    "yellow": "yellow",
    "green": "green",
    "blue": "blue",
    "purple": "magenta",
}
RESOURCE_LABEL = {
    "runes": "Runes",
    "power": "Power",
    "crew": "Crew",
    "honor": "Honor",
    "draw": "Draw",
    "move": "Move",
}
SEAT_STYLES = ("bold bright_green", "bold bright_red", "bold bright_yellow", "bold bright_blue",
               "bold bright_magenta", "bold bright_cyan")  # fmt: skip
GHOST_STYLE = "bold white on grey30"
DEEP = 6


def styled(text: str, style: str) -> Text:
    """A Text whose style is a span, so that text appended later keeps its own style."""
    t = Text()
    t.append(text, style=style)
    return t


def space_label(space: int) -> str:
    return "The Deep" if space == DEEP else f"space {space + 1}"


def seat_style(seat: int) -> str:
    return SEAT_STYLES[seat % len(SEAT_STYLES)] if seat >= 0 else "default"


def seat_name(view: GameView, seat: int, me: int = -1) -> str:
    """ "You", or the seat's display name with its bot and level, e.g. "Seat 2 (ismcts, Hard)"."""
    if seat == me and seat >= 0:
        return "You"
    info: SeatInfo | None = next((s for s in view.seat_info if s.seat == seat), None)
    name = info.name if info is not None and info.name else f"Seat {seat + 1}"
    if info is not None and info.kind == SeatInfo.AI:
        level = info.difficulty.capitalize()
        said = [
            x
            for x in (info.bot_name, level)
            if x and x.lower() not in name.lower()
        ]
        if said:
            name = f"{name} ({', '.join(said)})"
    return name


def seat_text(view: GameView, seat: int, me: int = -1) -> Text:
    return styled(seat_name(view, seat, me), seat_style(seat))


def card_cost(card: CardInfo) -> str:
    """``3R``: 3 Runes to acquire; ``4P``: 4 Power to defeat; "" for starting cards."""
    if card.cost <= 0:
        return ""
    if card.type == "monster":
        return f"{card.cost}P"
    if card.type in ("hero", "construct"):
        return f"{card.cost}R"
    return ""


def card_text(card: CardInfo, *, count: int = 1) -> Text:
    """A card's name in its faction's color (``×n`` for several copies)."""
    t = styled(card.name, FACTION_STYLE.get(card.faction, "default"))
    if card.type == "monster":
        t.stylize("bold")
    if count > 1:
        t.append(f" ×{count}", style="dim")
    return t


def card_list(catalog: Catalog, ids: Iterable[int], *, empty: str = "—") -> Text:
    """Cards grouped by name, in first-seen order: "Apprentice ×3, Militia"."""
    counts = Counter(ids)
    if not counts:
        return styled(empty, "dim")
    out = Text()
    for i, (cid, n) in enumerate(counts.items()):
        if i:
            out.append(", ")
        out.append_text(card_text(catalog[cid], count=n))
    return out


def coin_text(color: str, resource: str, face_down: bool = False) -> Text:
    label = RESOURCE_LABEL.get(resource, resource)
    t = styled("●", COIN_STYLE.get(color, "default"))
    t.append(f" {label}" + (" (down)" if face_down else ""), style=COIN_STYLE.get(color, "default"))
    return t
