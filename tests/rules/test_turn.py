"""The turn: playing cards, Runes/Power anywhere, Crew only at the ship, moving, ending."""

from __future__ import annotations

from engine_service import rules
from engine_service.rules import actions as A
from engine_service.rules.scenario import scenario
from engine_service.rules.state import DEEP, NEIGHBORS
from tests.rules.helpers import act, cid, end_turn, legal, play


def test_playing_heroes_gives_resources_and_they_stay_in_front_until_end_of_turn() -> None:
    s = scenario(hand=["apprentice", "militia", "buccaneer"], crew=[0, 1])
    play(s, "apprentice")
    play(s, "militia")
    play(s, "buccaneer")
    assert (s.runes, s.power, s.crew[0]) == (2, 1, 1)
    assert sorted(s.played[0]) == sorted([cid(s, "apprentice"), cid(s, "militia"), cid(s, "buccaneer")])
    assert s.hands[0] == []


def test_runes_acquire_and_power_defeat_on_any_space() -> None:
    s = scenario(center={3: "wave_walkers", 5: "gullet_eel"}, ships=[0, 0], runes=2, power=2)
    assert legal(s, A.ACQUIRE, 3) and legal(s, A.DEFEAT, 5)
    act(s, A.ACQUIRE, 3)
    assert cid(s, "wave_walkers") in s.discards[0] and s.runes == 0
    act(s, A.DEFEAT, 5)
    assert s.tokens[0] == 2 and s.power == 0 and cid(s, "gullet_eel") in s.void


def test_crew_acquires_only_on_the_ships_space_spending_the_cost() -> None:
    s = scenario(center={2: "wave_walkers", 3: "tidecaller_adept"}, ships=[2, 0], crew=[3, 0])
    assert legal(s, A.ACQUIRE_CREW, 2)
    assert not legal(s, A.ACQUIRE_CREW, 3)  # not the ship's space
    act(s, A.ACQUIRE_CREW, 2)
    assert s.crew[0] == 1  # Wave Walkers costs 2
    assert cid(s, "wave_walkers") in s.discards[0]


def test_crew_defeats_only_a_monster_costing_at_most_the_crew() -> None:
    s = scenario(center={1: "diamondbeaks"}, ships=[1, 0], crew=[3, 0])
    assert not legal(s, A.DEFEAT_CREW, 1)  # costs 4
    s.crew[0] = 4
    act(s, A.DEFEAT_CREW, 1)
    assert s.crew[0] == 0 and s.tokens[0] == 3


def test_crew_is_capped_at_nine() -> None:
    s = scenario(hand=["fleet_reinforcements"], crew=[8, 0])
    play(s, "fleet_reinforcements")
    assert s.crew[0] == 9


def test_the_deep_is_adjacent_to_both_ends_of_the_center_row() -> None:
    assert set(NEIGHBORS[DEEP]) == {0, 5}
    assert set(NEIGHBORS[0]) == {DEEP, 1} and set(NEIGHBORS[5]) == {4, DEEP}


def test_one_normal_move_per_turn_to_an_adjacent_space() -> None:
    s = scenario(ships=[0, 3])
    assert legal(s, A.MOVE, 1) and legal(s, A.MOVE, DEEP) and not legal(s, A.MOVE, 2)
    act(s, A.MOVE, 1)
    assert s.ship[0] == 1 and not legal(s, A.MOVE, 2)


def test_card_moves_come_before_or_after_the_normal_move() -> None:
    s = scenario(hand=["wave_walkers", "hurricane_shaman"], ships=[0, 3])
    play(s, "wave_walkers")  # card move first
    act(s, A.MOVE_SHIP, 1)
    act(s, A.MOVE, 2)  # then the normal move
    play(s, "hurricane_shaman")  # and another card move after it
    act(s, A.MOVE_SHIP, 3)
    assert s.ship[0] == 3


def test_card_moves_are_optional() -> None:
    s = scenario(hand=["wave_walkers"], ships=[4, 0])
    play(s, "wave_walkers")
    act(s, A.SKIP)
    assert s.ship[0] == 4 and s.decision is None


def test_first_turn_places_the_ship_anywhere_and_has_no_normal_move() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=4))
    p = s.first
    act(s, A.PLACE_SHIP, DEEP)
    assert s.ship[p] == DEEP and s.decision is None
    assert not any(a >> 16 == A.MOVE for a in rules.legal_actions(s))
    act(s, A.END_TURN)
    q = s.to_move()
    assert q != p and s.decision is not None and s.decision[0] == A.D_PLACE


def test_end_of_turn_discards_hand_and_played_heroes_draws_five_and_loses_runes_and_power() -> None:
    s = scenario(
        hand=["apprentice", "militia", "apprentice"],
        deck=["mystic"] * 6,
        discard=[],
        constructs=["hakua"],
    )
    play(s, "apprentice")
    play(s, "militia")
    end_turn(s)
    assert len(s.hands[0]) == 5 and len(s.decks[0]) == 1
    assert sorted(s.discards[0]) == sorted([cid(s, "apprentice")] * 2 + [cid(s, "militia")])
    assert s.constructs[0] == [cid(s, "hakua")]  # Constructs stay in play
    assert (s.runes, s.power) == (0, 0) and s.active == 1


def test_always_available_cards_acquire_and_cultist_defeats_repeatedly() -> None:
    s = scenario(runes=5, power=4)
    act(s, A.ACQUIRE, A.T_MYSTIC)
    act(s, A.ACQUIRE, A.T_HEAVY)
    assert s.piles == [19, 19] and s.runes == 0
    act(s, A.DEFEAT, A.T_CULTIST)
    act(s, A.DEFEAT, A.T_CULTIST)
    assert s.tokens[0] == 2 and s.power == 0


def test_an_empty_always_available_pile_cannot_be_acquired() -> None:
    s = scenario(runes=9)
    s.piles[0] = 0
    assert not legal(s, A.ACQUIRE, A.T_MYSTIC) and legal(s, A.ACQUIRE, A.T_HEAVY)
