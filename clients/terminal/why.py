"""Why a move: what it buys, in a few words, and the Honor it adds to your score at once.

For the hints: the search rates each move by a chance to win; this says what the move is
(the card it takes and what that card does, where a move sails and what is there) and the
Honor it adds now: a card's printed Honor (it counts at the end, wherever the card is), the
Honor a reward or a played card gives unconditionally, and the Treasure under a card. Read
from the card catalog and the board only (the terminal client never imports the rules core).
"""

from __future__ import annotations

import re

from clients.sdk.types import CardInfo, Catalog, GameView, LegalAction

SPACES = 6  # center-row spaces 0..5; 6 is The Deep
DEEP = 6
T_MYSTIC, T_HEAVY, T_CULTIST = 7, 8, 9
PILE_KEYS = {T_MYSTIC: "mystic", T_HEAVY: "heavy_infantry", T_CULTIST: "cultist"}
TEXT_WORDS = 12  # a card's text is cut to this many words
REWARD = re.compile(r"Reward:\s*(.*)", re.S)


def short(text: str, words: int = TEXT_WORDS) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


def target_card(view: GameView, catalog: Catalog, target: int) -> CardInfo | None:
    """The card at a target: a center-row space, The Deep (Thukal) or an always-there pile."""
    if target in PILE_KEYS:
        return catalog.find(PILE_KEYS[target])
    if target == DEEP:
        return catalog.find("thukal")
    cs = next((c for c in view.board.center if c.space == target), None)
    return catalog[cs.card] if cs is not None and cs.card >= 0 else None


def _treasure_under(view: GameView, target: int) -> int:
    if target == DEEP:
        return len(view.board.kraken.treasures_under) + len(view.board.kraken.coins)
    cs = next((c for c in view.board.center if c.space == target), None)
    return len(cs.treasures_under) if cs is not None else 0


def _card_gain(card: CardInfo) -> str:
    if card.type == "monster":
        m = REWARD.search(card.text)
        return short(m.group(1) if m else card.text)
    kind = {"hero": "a Hero", "construct": "a Construct (stays in play)"}.get(card.type, card.type)
    return f"{kind}, {card.honor} Honor in your deck: {short(card.text)}"


def what_it_buys(view: GameView, catalog: Catalog, action: LegalAction) -> str:
    """A few words on what the action gets you (empty when the description says it all)."""
    kind, arg = action.kind, action.id & 0xFFFF
    me = next((s for s in view.board.seats if s.seat == view.seat), None)
    if kind in ("acquire", "acquire_crew", "defeat", "defeat_crew", "take_free"):
        card = target_card(view, catalog, arg)
        if card is None:
            return ""
        out = _card_gain(card)
        under = _treasure_under(view, arg)
        if under:
            out += f"; +{under} Treasure under it"
        if (
            view.board.HasField("board_coin")
            and view.board.board_coin_space == arg
            and me is not None
            and me.ship_space == arg
        ):
            out += "; the Cursed Treasure coin here"
        return out
    if kind == "play":
        return short(catalog[arg].text)
    if kind in ("move", "move_ship", "place_ship"):
        return _at_space(view, catalog, arg, me.crew if me is not None else 0)
    if kind == "end_turn":
        return "your hand and played Heroes go to your discard pile, you draw 5 new cards; unspent Runes and Power are lost"
    return ""


def _at_space(view: GameView, catalog: Catalog, space: int, crew: int) -> str:
    b = view.board
    notes: list[str] = []
    card = target_card(view, catalog, space)
    if space == DEEP:
        if b.kraken.in_game and b.kraken.in_deep:
            notes.append("Thukal takes a Treasure from ships that come or stay here")
    elif card is not None:
        notes.append(f"{card.name} (cost {card.cost}) is there")
        if card.cost <= crew:
            notes.append(f"your {crew} Crew can take it")
    under = _treasure_under(view, space) if space != DEEP else 0
    if under:
        notes.append(f"{under} Treasure under it")
    if b.HasField("board_coin") and b.board_coin_space == space:
        notes.append("the Cursed Treasure coin is there")
    if b.ghost_pirate_space == space and view.sets != "ss":
        notes.append("The Ghost Pirate is there: -1 Crew")
    return "; ".join(notes)


GAIN_HONOR = re.compile(r"^Gain (?:[^.]*? and )?(\d+) Honor\b")


def _unconditional_honor(text: str) -> int:
    """The Honor of a text's first sentence when it is plainly gained ("Gain 3 Honor.",
    "Gain 2 Runes and 1 Honor."), else 0 (conditions and counts are left to the reader)."""
    first = text.strip().split(". ")[0]
    if any(w in first for w in (" if ", " for each", " per ", " may ")):
        return 0
    m = GAIN_HONOR.match(first)
    return int(m.group(1)) if m else 0


def honor_now(view: GameView, catalog: Catalog, action: LegalAction) -> int:
    """The Honor this action adds to the seat's score at once, as far as the cards say."""
    kind, arg = action.kind, action.id & 0xFFFF
    if kind == "play":
        return _unconditional_honor(catalog[arg].text)
    if kind not in ("acquire", "acquire_crew", "defeat", "defeat_crew", "take_free"):
        return 0
    card = target_card(view, catalog, arg)
    if card is None:
        return 0
    if card.type == "monster":
        m = REWARD.search(card.text)
        gained = _unconditional_honor(m.group(1)) if m else 0
    else:
        gained = card.honor
    if arg == DEEP:
        under = list(view.board.kraken.treasures_under)
    else:
        cs = next((c for c in view.board.center if c.space == arg), None)
        under = list(cs.treasures_under) if cs is not None else []
    return gained + sum(catalog[t].honor for t in under if t >= 0)
