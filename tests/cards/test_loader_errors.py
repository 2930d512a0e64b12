"""The loader rejects malformed card files and names the file, card and field at fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine_service.cards.loader import CardDataError, load_catalog

SET = '[set]\nkey = "test"\nname = "Test set"\n'

GOOD_HERO = """
[[card]]
key = "good_hero"
name = "Good Hero"
type = "hero"
faction = "void"
cost = 3
honor = 1
origin = "designed"
text = "Gain 2 Power."
play = ["power 2"]
"""


def card(key: str = "broken", **fields: str) -> str:
    """A card table; fields are TOML values (already quoted); None-valued fields are left out."""
    base = {
        "key": f'"{key}"',
        "name": '"Broken"',
        "type": '"hero"',
        "faction": '"mechana"',
        "cost": "2",
        "honor": "1",
        "origin": '"designed"',
        "text": '"Gain 1 Rune."',
        "play": '["runes 1"]',
    }
    base.update(fields)
    body = "".join(f"{k} = {v}\n" for k, v in base.items() if v != "DROP")
    return "\n[[card]]\n" + body


def load(tmp_path: Path, text: str, name: str = "broken.toml") -> CardDataError:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CardDataError) as info:
        load_catalog([path])
    return info.value


def check(err: CardDataError, file: str, card: str | None, field: str | None) -> None:
    assert (err.file, err.card, err.field) == (file, card, field), str(err)
    assert file in str(err)
    if card:
        assert repr(card) in str(err)
    if field:
        assert repr(field) in str(err)


CARD_ERRORS = [
    # (what is wrong, extra card fields, field reported)
    ("unknown field", {"colour": '"red"'}, "colour"),
    ("cost is not a number", {"cost": '"three"'}, "cost"),
    ("cost is a boolean", {"cost": "true"}, "cost"),
    ("negative Honor", {"honor": "-1"}, "honor"),
    ("copies out of range", {"copies": "100"}, "copies"),
    ("unknown type", {"type": '"spell"'}, "type"),
    ("type missing", {"type": "DROP"}, "type"),
    ("unknown faction", {"faction": '"pirates"'}, "faction"),
    ("origin not rulebook/designed", {"origin": '"homebrew"'}, "origin"),
    ("origin missing", {"origin": "DROP"}, "origin"),
    ("name missing", {"name": "DROP"}, "name"),
    ("empty text", {"text": '""'}, "text"),
    ("effect step with a bad number", {"play": '["runes two"]'}, "play"),
    ("unknown effect", {"play": '["fly 2"]'}, "play"),
    ("effect is not a list", {"play": '"runes 1"'}, "play"),
    ("unknown condition", {"play": '["gold>=3: runes 1"]'}, "play"),
    ("number out of range", {"play": '["power 100"]'}, "play"),
    ("choose with one option", {"play": '["choose runes 1"]'}, "play"),
    ("banish from a bad zone", {"play": '["banish deck"]'}, "play"),
    ("bad free-acquire filter", {"play": '["acquire_free colour=red"]'}, "play"),
    ("each player banishing the center row", {"fate": '["each_banish center"]'}, "fate"),
    ("bad Unite step", {"unite": '["honour 1"]'}, "unite"),
    ("bad Anchor step", {"anchor": '["crew"]'}, "anchor"),
    ("a Hero with a reward", {"reward": '["honor 2"]'}, "reward"),
    ("Unite without a faction", {"faction": '"none"', "unite": '["honor 1"]'}, "faction"),
    ("bad end-of-game Honor", {"type": '"construct"', "end_honor": '"gold 1"'}, "end_honor"),
    ("unknown special", {"special": '"kraken"'}, "special"),
    (
        "abilities not an array of tables",
        {"type": '"construct"', "ability": '"runes 1"'},
        "ability",
    ),
]


@pytest.mark.parametrize(
    ("problem", "fields", "field"), CARD_ERRORS, ids=[c[0] for c in CARD_ERRORS]
)
def test_a_bad_card_field_is_named(
    tmp_path: Path, problem: str, fields: dict[str, str], field: str
) -> None:
    err = load(tmp_path, SET + GOOD_HERO + card(**fields))
    check(err, "broken.toml", "broken", field)


def test_a_monster_that_is_played(tmp_path: Path) -> None:
    text = card(
        type='"monster"',
        faction='"none"',
        cost="3",
        honor="0",
        play='["power 1"]',
        reward='["honor 2"]',
    )
    check(load(tmp_path, SET + text), "broken.toml", "broken", "play")


def test_a_treasure_with_a_cost(tmp_path: Path) -> None:
    text = card(type='"treasure"', faction='"none"', cost="2", play="DROP")
    check(load(tmp_path, SET + text), "broken.toml", "broken", "type")


def test_a_hero_with_an_ability(tmp_path: Path) -> None:
    text = card() + '[[card.ability]]\nwhen = "activated"\ndoes = ["runes 1"]\n'
    check(load(tmp_path, SET + text), "broken.toml", "broken", "ability")


def test_an_unknown_trigger(tmp_path: Path) -> None:
    text = (
        card(type='"construct"', play="DROP")
        + '[[card.ability]]\nwhen = "sunrise"\ndoes = ["runes 1"]\n'
    )
    check(load(tmp_path, SET + text), "broken.toml", "broken", "ability.when")


def test_a_trigger_with_an_unknown_faction(tmp_path: Path) -> None:
    text = (
        card(type='"construct"', play="DROP")
        + '[[card.ability]]\nwhen = "play_hero:pirates"\ndoes = ["runes 1"]\n'
    )
    check(load(tmp_path, SET + text), "broken.toml", "broken", "ability.when")


def test_an_activated_ability_that_is_not_once_per_turn(tmp_path: Path) -> None:
    text = (
        card(type='"construct"', play="DROP")
        + '[[card.ability]]\nwhen = "activated"\nonce = false\ndoes = ["runes 1"]\n'
    )
    check(load(tmp_path, SET + text), "broken.toml", "broken", "ability.once")


def test_a_bad_ability_step(tmp_path: Path) -> None:
    text = (
        card(type='"construct"', play="DROP")
        + '[[card.ability]]\nwhen = "activated"\ndoes = ["runes"]\n'
    )
    check(load(tmp_path, SET + text), "broken.toml", "broken", "ability.does")


def test_an_ability_with_an_unknown_key(tmp_path: Path) -> None:
    text = (
        card(type='"construct"', play="DROP")
        + '[[card.ability]]\nwhen = "activated"\ngives = ["runes 1"]\n'
    )
    check(load(tmp_path, SET + text), "broken.toml", "broken", "ability")


def test_a_duplicate_card_key(tmp_path: Path) -> None:
    check(load(tmp_path, SET + GOOD_HERO + card("good_hero")), "broken.toml", "good_hero", "key")


def test_a_duplicate_card_key_across_files(tmp_path: Path) -> None:
    first = tmp_path / "first.toml"
    first.write_text(SET + GOOD_HERO, encoding="utf-8")
    second = tmp_path / "second.toml"
    second.write_text('[set]\nkey = "other"\n' + card("good_hero"), encoding="utf-8")
    with pytest.raises(CardDataError) as info:
        load_catalog([first, second])
    check(info.value, "second.toml", "good_hero", "key")


def test_a_card_without_a_key(tmp_path: Path) -> None:
    check(
        load(tmp_path, SET + card(key="x").replace('key = "x"\n', "")), "broken.toml", None, "key"
    )


def test_a_key_that_is_not_an_identifier(tmp_path: Path) -> None:
    check(load(tmp_path, SET + card(key="two words")), "broken.toml", "two words", "key")


def test_not_toml_at_all(tmp_path: Path) -> None:
    err = load(tmp_path, SET + "[[card]]\nkey = \n")
    check(err, "broken.toml", None, None)
    assert "not valid TOML" in str(err)


def test_a_duplicate_toml_key_in_a_card(tmp_path: Path) -> None:
    err = load(tmp_path, SET + card() + "cost = 4\n")
    check(err, "broken.toml", None, None)


def test_a_missing_set_table(tmp_path: Path) -> None:
    check(load(tmp_path, GOOD_HERO), "broken.toml", None, "set")


def test_an_unknown_set_field(tmp_path: Path) -> None:
    check(load(tmp_path, SET + 'colour = "red"\n' + GOOD_HERO), "broken.toml", None, "set.colour")


def test_an_unknown_top_level_table(tmp_path: Path) -> None:
    check(load(tmp_path, SET + GOOD_HERO + "[[cards]]\nkey = 1\n"), "broken.toml", None, "cards")


def test_a_coin_mix_that_is_not_36(tmp_path: Path) -> None:
    meta = SET + 'coins = true\ncoin_colors = ["red", "blue"]\ncoin_icons = ["runes", "power"]\n'
    check(load(tmp_path, meta + GOOD_HERO), "broken.toml", None, "set.coin_colors")


def test_an_unknown_coin_icon(tmp_path: Path) -> None:
    meta = SET + 'coin_icons = ["runes", "gold"]\n'
    check(load(tmp_path, meta + GOOD_HERO), "broken.toml", None, "set.coin_icons")


def test_a_starting_deck_with_an_unknown_card(tmp_path: Path) -> None:
    meta = SET + "starting = { deckhand = 7 }\n"
    err = load(tmp_path, meta + GOOD_HERO)
    assert err.field == "set.starting" and "deckhand" in str(err)


def test_a_duplicate_set_key(tmp_path: Path) -> None:
    first = tmp_path / "first.toml"
    first.write_text(SET + GOOD_HERO, encoding="utf-8")
    second = tmp_path / "second.toml"
    second.write_text(SET, encoding="utf-8")
    with pytest.raises(CardDataError) as info:
        load_catalog([first, second])
    check(info.value, "second.toml", None, "set.key")


def test_a_good_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "good.toml"
    path.write_text(SET + GOOD_HERO, encoding="utf-8")
    cat = load_catalog([path])
    assert [c.key for c in cat.cards] == ["good_hero"]
    assert cat.sets["test"].center == (0,)
