"""The card words explained (clients/glossary.json, read by both clients): every keyword of
every card text has an explanation, the terminal finds them as a player types them, and the
end-of-turn question says where what is left goes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from clients.terminal import glossary
from clients.terminal.play import end_turn_question

ROOT = Path(__file__).resolve().parents[2]
CARDS = sorted((ROOT / "engine_service" / "cards" / "data").glob("*.toml"))
# Capitalized words of card texts that are plain English (a sentence's first word), not terms
PLAIN = {
    "At", "Choose", "Draw", "Each", "Gain", "If", "On", "Take", "The", "This", "When", "While",
    "Worth", "You", "Once",
}  # fmt: skip


def card_texts() -> list[tuple[str, str]]:
    out = []
    for path in CARDS:
        for card in tomllib.loads(path.read_text()).get("card", []):
            if card.get("text"):
                out.append((card["name"], card["text"]))
    return out


def card_names() -> set[str]:
    return {w for name, _ in card_texts() for w in re.findall(r"[A-Z][\w']+", name)}


def test_every_keyword_of_every_card_text_is_explained() -> None:
    """A card text's labels ("Unite:", "Fate:") and capitalized game words (Treasure, Void,
    Mechana, The Deep) are each part of a term; what is left is plain English or a card's
    name. A new keyword in the card data without an explanation fails here."""
    names = card_names()
    unexplained: dict[str, str] = {}
    for card, text in card_texts():
        for label in re.findall(r"\b([A-Z][a-z]+):", text):
            if not glossary.find(label):
                unexplained[label + ":"] = card
        rest = glossary._pattern().sub(" ", text)
        for word in re.findall(r"\b[A-Z][a-z]+\b", rest):
            if word not in PLAIN and word not in names:
                unexplained[word] = card
    assert not unexplained, f"card words without an explanation (word: a card): {unexplained}"
    assert len(card_texts()) > 100


@pytest.mark.parametrize(
    "word",
    ["Unite", "Echo", "Plunder", "Banish", "Void", "Ongoing", "Fate", "Anchor", "Raid",
     "Enlightened", "Lifebound", "Mechana", "The Void", "Treasure", "Cursed Treasure"],
)  # fmt: skip
def test_the_rulebooks_keywords_and_the_factions_are_found_as_typed(word: str) -> None:
    for typed in (word, word.lower(), word.upper()):
        found = glossary.find(typed)
        assert found, typed
        assert any(word in t.words for t in found), (typed, [t.name for t in found])


def test_void_is_a_faction_and_a_place() -> None:
    assert {t.kind for t in glossary.find("void")} == {"faction", "place"}
    terms = glossary.terms_in("Once per turn, you may acquire a Void card. Banish it: The Void.")
    assert [t.name for t in terms] == ["Once per turn", "Void", "Banish", "The Void"]


def test_every_term_has_a_text_that_names_it() -> None:
    for t in glossary.terms():
        assert t.kind in glossary.KINDS
        assert t.text.lower().startswith(t.name.lower().removeprefix("the ")[:5]) or (
            t.name.lower() in t.text.lower()
        ), t


def test_ending_a_turn_says_where_what_is_left_goes() -> None:
    q = end_turn_question(plays=3, runes=2, power=0, ability=False)
    assert q.startswith("You can still play 3 cards and spend 2 Runes.")
    assert "the cards left in your hand go to your discard pile" in q
    assert "unspent Runes are lost" in q and "lost at the end" not in q
    assert q.endswith("End your turn anyway?")
    assert end_turn_question(plays=1, runes=0, power=0, ability=False).startswith(
        "You can still play 1 card."
    )
    assert end_turn_question(plays=0, runes=0, power=0, ability=False) == ""


def test_the_web_page_reads_the_same_file() -> None:
    """One source: the page imports clients/glossary.json at build time (no copy of it)."""
    ts = (ROOT / "clients" / "web" / "app" / "src" / "glossary.ts").read_text()
    assert 'from "../../../glossary.json"' in ts
    built = "".join(p.read_text() for p in (ROOT / "clients/web/static/assets").glob("*.js"))
    for t in glossary.terms()[:5]:
        assert t.text.replace('"', '\\\\"') in built or t.text in built, t.name


def test_a_games_list_has_the_words_of_its_sets_only() -> None:
    ss, cotgi, both = (glossary.listing(s) for s in ("ss", "cotgi", "both"))
    assert "Thukal" in ss and "Ghost Pirate" not in ss and "Treasure Bag" not in ss
    assert "Ghost Pirate" in cotgi and "Thukal" not in cotgi
    assert "Thukal" in both and "Ghost Pirate" in both and "Unite" in ss and "Unite" in cotgi
    assert "The Deep" in ss and "The Deep" in cotgi  # (it names both sets)
