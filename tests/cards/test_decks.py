"""The shipped card data: deck counts, starting decks, coins, origins and the rulebooks' facts."""

from __future__ import annotations

from collections import Counter

import pytest

from engine_service import rules
from engine_service.cards import language as L
from engine_service.cards.loader import CardDef, Catalog, default_catalog

CAT: Catalog = default_catalog()


def card(key: str) -> CardDef:
    return CAT[CAT.id(key)]


def test_skulls_and_sails_center_deck_has_118_cards() -> None:
    assert len(CAT.sets["ss"].center) == 118


def test_curse_of_the_golden_isles_center_deck_has_99_cards() -> None:
    assert len(CAT.sets["cotgi"].center) == 99


@pytest.mark.parametrize("set_key", ["ss", "cotgi"])
def test_the_center_deck_is_every_card_of_the_set_times_its_copies(set_key: str) -> None:
    cards = [c for c in CAT.cards if c.set == set_key and not (c.starting or c.always or c.special)]
    assert Counter(CAT.sets[set_key].center) == Counter({c.id: c.copies for c in cards})
    assert all(c.copies >= 1 for c in cards)


@pytest.mark.parametrize("set_key", ["ss", "cotgi"])
def test_the_center_deck_is_a_mix_of_every_kind(set_key: str) -> None:
    kinds = Counter(L.TYPE_NAMES[CAT[c].type] for c in CAT.sets[set_key].center)
    assert kinds["hero"] > kinds["construct"] > 0 and kinds["monster"] > 0
    factions = Counter(L.FACTION_NAMES[CAT[c].faction] for c in CAT.sets[set_key].center)
    for f in ("enlightened", "lifebound", "mechana", "void"):
        assert factions[f] >= 10, (f, factions)


def test_starting_decks() -> None:
    assert dict(CAT.sets["ss"].starting) == {"apprentice": 7, "militia": 2, "buccaneer": 1}
    assert dict(CAT.sets["cotgi"].starting) == {
        "apprentice": 6,
        "militia": 2,
        "buccaneer": 1,
        "navigator": 1,
    }
    for key in ("apprentice", "militia", "buccaneer", "navigator"):
        assert card(key).starting and card(key).origin == "rulebook"


def test_always_available_cards() -> None:
    assert card("mystic").always and card("mystic").copies == 20
    assert card("heavy_infantry").always and card("heavy_infantry").copies == 20
    assert card("cultist").always and card("cultist").copies == 1
    assert card("thukal").special == "thukal" and card("thukal").set == "ss"
    s = rules.new_game(rules.GameConfig(sets="ss", seed=1))
    assert s.piles == [20, 20]


def test_cursed_treasure_coins_are_six_colors_of_six_icons() -> None:
    cotgi = CAT.sets["cotgi"]
    assert cotgi.coins and len(cotgi.coin_colors) == 6 and len(set(cotgi.coin_colors)) == 6
    assert sorted(cotgi.coin_icons) == sorted(L.RESOURCE_NAMES)
    s = rules.new_game(rules.GameConfig(sets="cotgi", seed=1))
    assert len(s.bag) + (s.board_coin >= 0) == 36
    everything = sorted([*s.bag, s.board_coin])
    assert everything == list(range(36))  # one coin of each icon in each color


def test_every_card_says_where_it_comes_from() -> None:
    assert {c.origin for c in CAT.cards} == {"rulebook", "designed"}
    for c in CAT.cards:
        assert c.text and c.name


@pytest.mark.parametrize("set_key", ["ss", "cotgi"])
def test_designed_cards_stay_in_ascension_ranges(set_key: str) -> None:
    for c in CAT.cards:
        if c.set != set_key or c.origin != "designed":
            continue
        if c.type in (L.HERO, L.CONSTRUCT):
            assert 1 <= c.cost <= 8 and c.faction != L.NONE, c.key
            assert abs(c.honor - c.cost / 2) <= 1.5, c.key
        elif c.type == L.MONSTER:
            assert 1 <= c.cost <= 8, c.key
            honor = sum(op[2] for op in c.reward if op[0] == L.OP_GAIN and op[1] == L.HONOR)
            assert honor <= c.cost + 1, c.key
        else:
            assert c.cost == 0 and not c.play, c.key
        assert 1 <= c.copies <= 4, c.key


# What the rulebooks say of each card they name: (set, type, faction, cost, Honor, text).
# None where the rulebook does not say; text is the rulebooks' quote where they quote it.
RULEBOOK = {
    "apprentice": ("core", "hero", "none", None, None, None),
    "militia": ("core", "hero", "none", None, None, None),
    "buccaneer": ("core", "hero", "none", None, None, None),
    "mystic": ("core", "hero", "none", None, None, None),
    "heavy_infantry": ("core", "hero", "none", None, None, "Gain 2 Power."),
    "cultist": ("core", "monster", "none", None, None, None),
    "thukal": (
        "ss", "monster", "none", None, None,
        "While Thukal is in The Deep, ships that move onto or end their turn there must put a "
        "Treasure under this. Reward: Gain 9 Honor and place this in front of you. You are The "
        "Kraken. Once per turn, you may Raid.",
    ),
    "gold": ("ss", "treasure", "none", None, 1, "When you acquire this, place it in front of you. Worth 1 Honor."),
    "talons_of_amaruk": ("ss", "hero", "lifebound", 3, None, "Gain 2 Runes and Raid."),
    "hakua": (
        "ss", "construct", "lifebound", None, None,
        "Once per turn, gain 1 Rune. When you play a Lifebound Hero, gain 1 Crew.",
    ),
    "diamondbeaks": ("ss", "monster", "none", 4, None, None),
    "shallownoose": ("ss", "monster", "none", None, None, None),
    "wave_walkers": ("ss", "hero", None, None, None, None),
    "tempest_turbine": ("ss", "construct", None, None, None, None),
    "indomitable_ironheart": ("ss", "hero", None, None, None, None),
    "hurricane_shaman": ("ss", "hero", None, None, None, None),
    "call_of_the_deep": ("ss", "hero", None, None, None, None),
    "spawn_of_thukal": ("ss", "monster", "none", None, None, None),
    "big_red_button": ("ss", "construct", None, None, None, None),
    "naka_blackblade": ("ss", "hero", None, None, None, None),
    "crystals_of_command": ("ss", "construct", None, None, None, None),
    "hais_waveblade": ("ss", "construct", None, None, None, None),
    "fleet_reinforcements": ("ss", "hero", None, None, None, None),
    "navigator": ("cotgi", "hero", "none", None, None, None),
    "scubot": ("cotgi", "hero", "mechana", 3, 2, "Gain 2 Power and Raid."),
    "piratron": (
        "cotgi", "construct", "mechana", 5, 5,
        "Once per turn, when you play a Mechana Construct or gain a Treasure, gain 1 Rune.",
    ),
    "enchanting_selkies": (
        "cotgi", "monster", "none", 5, None,
        "Reward: Gain 5 Honor and take a Cursed Treasure from the Treasure Bag.",
    ),
    "cache_crab": (
        "cotgi", "hero", "lifebound", 3, None,
        "Gain 2 Runes. If you control three or more Treasure, gain 1 Rune.",
    ),
    "abyssal_spear": (
        "cotgi", "construct", None, None, None,
        "Once per turn, gain 2 Power. Once per turn, you may acquire a Void card for 0 Runes.",
    ),
    "moonstalkers": (
        "cotgi", "monster", "none", 4, None,
        "Fate: Each player may banish a card in their hand or discard pile. Reward: Gain 3 Honor "
        "and you may banish a card in your hand or discard pile.",
    ),
    "relentless_skipper": ("cotgi", "hero", None, None, None, None),
}  # fmt: skip

# What the FAQs say a named card does, checked on its compiled effect.
RULEBOOK_EFFECTS = {
    "wave_walkers": "move",
    "tempest_turbine": "move",
    "indomitable_ironheart": "move",
    "hurricane_shaman": "move",
    "navigator": "move",
    "call_of_the_deep": "pull",
    "spawn_of_thukal": "pull",
    "naka_blackblade": "crew_void",
    "relentless_skipper": "skipper",
}


@pytest.mark.parametrize("key", sorted(RULEBOOK))
def test_rulebook_cards_keep_what_the_rulebooks_say(key: str) -> None:
    c = card(key)
    set_key, kind, faction, cost, honor, text = RULEBOOK[key]
    assert c.origin == "rulebook"
    assert c.set == set_key
    assert L.TYPE_NAMES[c.type] == kind
    if faction is not None:
        assert L.FACTION_NAMES[c.faction] == faction
    if cost is not None:
        assert c.cost == cost
    if honor is not None:
        assert c.honor == honor
    if text is not None:
        assert c.text.lower() == text.lower()


def test_rulebook_faq_effects() -> None:
    names = {
        "move": lambda op: op[0] == L.OP_GAIN and op[1] == L.MOVE,
        "pull": lambda op: op[0] == L.OP_PULL,
        "crew_void": lambda op: op[0] == L.OP_CREW_VOID,
        "skipper": lambda op: op[0] == L.OP_SKIPPER,
    }
    for key, what in RULEBOOK_EFFECTS.items():
        c = card(key)
        ops = list(c.play) + list(c.fate) + [op for ab in c.abilities for op in ab.ops]
        assert any(names[what](op) for op in ops), key
    assert card("big_red_button").grants_anchor
    assert card("crystals_of_command").end_honor == (0, 1)  # Honor per Treasure, at the end
    assert card("hais_waveblade").prevent_raid and card("fleet_reinforcements").prevent_raid
    assert "three or more Treasure" in card("shallownoose").text
    assert "three or more Treasure" in card("diamondbeaks").text


def test_only_rulebook_cards_are_marked_rulebook() -> None:
    assert {c.key for c in CAT.cards if c.origin == "rulebook"} == set(RULEBOOK)
