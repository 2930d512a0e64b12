"""The center row, The Void, reshuffles, banishing and destroying."""

from __future__ import annotations

from engine_service.rules import actions as A
from engine_service.rules.scenario import scenario
from engine_service.rules.state import PILE_MYSTIC
from tests.rules.helpers import act, cid, end_turn, legal, play


def test_a_leaving_card_is_replaced_at_once_from_the_center_deck() -> None:
    s = scenario(center={2: "wave_walkers"}, center_deck=["gullet_eel", "storm_petrel"], runes=2)
    act(s, A.ACQUIRE, 2)
    assert s.center[2] == cid(s, "storm_petrel")  # top of the center deck = end of the list
    assert s.center_deck == [cid(s, "gullet_eel")]


def test_a_monsters_reward_resolves_after_its_replacement() -> None:
    # Brine Hag's reward lets you banish a center-row card: its replacement is already there.
    s = scenario(center={1: "brine_hag"}, center_deck=["gullet_eel", "moonstalkers"], power=5)
    s.center_deck = [cid(s, "gullet_eel"), cid(s, "wave_walkers")]
    act(s, A.DEFEAT, 1)
    assert s.center[1] == cid(s, "wave_walkers")
    assert s.decision is not None and s.decision[0] == A.D_BANISH
    assert legal(s, A.BANISH_CENTER, 1)
    act(s, A.BANISH_CENTER, 1)
    assert cid(s, "wave_walkers") in s.void and s.center[1] == cid(s, "gullet_eel")


def test_the_void_is_reshuffled_into_an_empty_center_deck() -> None:
    s = scenario(center={0: "wave_walkers"}, center_deck=[], runes=2)
    s.void = [cid(s, "gullet_eel"), cid(s, "storm_petrel")]
    act(s, A.ACQUIRE, 0)
    assert s.center[0] in (cid(s, "gullet_eel"), cid(s, "storm_petrel"))
    assert len(s.center_deck) == 1 and s.void == []


def test_a_defeated_monster_goes_to_the_void_before_its_space_is_replaced() -> None:
    # "After defeating a Monster, place it in the Void and replace it in the center row": with
    # an empty center deck, the Void reshuffled for the replacement holds that Monster.
    s = scenario(center={1: "gullet_eel"}, center_deck=[], power=2)
    s.void = [cid(s, "storm_petrel")]
    act(s, A.DEFEAT, 1)
    assert sorted([s.center[1], *s.center_deck]) == sorted([cid(s, "gullet_eel"), cid(s, "storm_petrel")])
    assert s.void == []
    # alone in The Void, it comes straight back
    s = scenario(center={1: "gullet_eel"}, center_deck=[], power=2)
    s.void = []
    act(s, A.DEFEAT, 1)
    assert s.center[1] == cid(s, "gullet_eel") and s.center_deck == [] and s.void == []


def test_a_banished_card_goes_to_the_void_before_its_space_is_replaced() -> None:
    # The banish path, the same order: Brine Hag's reward banishes Gullet Eel while the center
    # deck is empty; The Void reshuffled for the replacement holds both Monsters.
    s = scenario(center={1: "gullet_eel", 2: "brine_hag"}, center_deck=["wave_walkers"], power=5)
    s.void = []
    act(s, A.DEFEAT, 2)
    assert s.center[2] == cid(s, "wave_walkers") and s.center_deck == []
    act(s, A.BANISH_CENTER, 1)
    assert sorted([s.center[1], *s.center_deck]) == sorted([cid(s, "gullet_eel"), cid(s, "brine_hag")])
    assert s.void == []


def test_an_acquired_card_never_passes_through_the_void() -> None:
    s = scenario(center={0: "wave_walkers"}, center_deck=[], runes=2)
    s.void = []
    act(s, A.ACQUIRE, 0)
    assert s.discards[0][-1] == cid(s, "wave_walkers") and s.center[0] == -1


def test_mid_turn_reshuffle_does_not_take_heroes_played_this_turn() -> None:
    s = scenario(hand=["apprentice", "sunken_oracle"], deck=[], discard=["militia"])
    play(s, "apprentice")
    play(s, "sunken_oracle")  # draws a card with an empty deck: the discard is reshuffled
    assert s.hands[0] == [cid(s, "militia")]
    assert cid(s, "apprentice") in s.played[0] and s.decks[0] == []


def test_banish_starting_cards_leave_the_game_always_available_go_back_others_to_the_void() -> None:
    s = scenario(hand=["void_corsair", "apprentice"], discard=["mystic", "gullet_eel"])
    play(s, "void_corsair")
    act(s, A.BANISH_HAND, cid(s, "apprentice"))
    assert s.out == [cid(s, "apprentice")]
    s2 = scenario(hand=["void_corsair"], discard=["mystic"])
    s2.piles[PILE_MYSTIC] = 10
    play(s2, "void_corsair")
    act(s2, A.BANISH_DISCARD, cid(s2, "mystic"))
    assert s2.piles[PILE_MYSTIC] == 11 and cid(s2, "mystic") not in s2.void
    s3 = scenario(hand=["void_corsair"], discard=["wave_walkers"])
    play(s3, "void_corsair")
    act(s3, A.BANISH_DISCARD, cid(s3, "wave_walkers"))
    assert s3.void[-1] == cid(s3, "wave_walkers")


def test_banish_is_optional_and_cannot_take_a_card_already_played() -> None:
    s = scenario(hand=["void_corsair"], discard=[])
    play(s, "void_corsair")
    assert s.decision is None  # nothing left in hand or discard: no choice offered
    s = scenario(hand=["void_corsair", "apprentice"], discard=[])
    play(s, "void_corsair")
    assert not legal(s, A.BANISH_HAND, cid(s, "void_corsair"))
    act(s, A.SKIP)
    assert s.hands[0] == [cid(s, "apprentice")]


def test_banish_from_center_row_replaces_and_leaves_treasure_on_the_space() -> None:
    s = scenario(
        hand=[], center={4: "gullet_eel", 1: "brine_hag"}, under={4: ["gold"]},
        center_deck=["wave_walkers", "storm_petrel"], power=5,
    )
    act(s, A.DEFEAT, 1)  # Brine Hag: banish a card in the center row
    act(s, A.BANISH_CENTER, 4)
    assert cid(s, "gullet_eel") in s.void
    assert s.center[4] == cid(s, "wave_walkers") and s.under[4] == [cid(s, "gold")]


def test_destroy_puts_an_opponents_construct_into_their_discard_pile() -> None:
    s = scenario(center={2: "rustclaw_marauders"}, power=6)
    s.constructs[1] = [cid(s, "hakua"), cid(s, "tempest_turbine")]
    act(s, A.DEFEAT, 2)
    assert s.to_move() == 1 and s.decision is not None and s.decision[0] == A.D_DESTROY
    act(s, A.DESTROY, cid(s, "hakua"))
    assert s.constructs[1] == [cid(s, "tempest_turbine")] and cid(s, "hakua") in s.discards[1]
    assert s.to_move() == 0


def test_construct_abilities_are_once_per_turn_per_copy_and_refresh() -> None:
    s = scenario(constructs=["hakua", "hakua"], hand=[], deck=["apprentice"] * 10)
    key = cid(s, "hakua") * 8
    act(s, A.USE, key)
    act(s, A.USE, key)
    assert s.runes == 2 and not legal(s, A.USE, key)
    end_turn(s)
    end_turn(s)  # seat 1's turn, back to seat 0
    assert s.active == 0 and legal(s, A.USE, key)


def test_playing_a_construct_keeps_it_in_play() -> None:
    s = scenario(hand=["tempest_turbine"], deck=["apprentice"] * 10)
    play(s, "tempest_turbine")
    end_turn(s)
    assert s.constructs[0] == [cid(s, "tempest_turbine")]


def test_a_construct_trigger_on_playing_a_faction_hero() -> None:
    s = scenario(constructs=["hakua"], hand=["talons_of_amaruk", "wave_walkers"], crew=[0, 0])
    play(s, "talons_of_amaruk")  # Lifebound: Hakua gives 1 Crew
    assert s.crew[0] == 1
    play(s, "wave_walkers")  # Enlightened: nothing
    act(s, A.SKIP)
    assert s.crew[0] == 1
