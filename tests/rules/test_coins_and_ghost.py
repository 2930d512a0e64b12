"""Cursed Treasure coins and The Ghost Pirate (Curse of the Golden Isles)."""

from __future__ import annotations

import pytest

from engine_service import rules
from engine_service.cards import language as L
from engine_service.rules import actions as A
from engine_service.rules.effects import step_towards
from engine_service.rules.scenario import scenario
from engine_service.rules.state import COIN_DOWN, DEEP
from tests.rules.helpers import act, cid, end_turn, legal, play


def coin(color: int, icon: int) -> int:
    return color * 6 + icon


def test_a_coin_is_taken_by_acquiring_the_card_on_its_space_with_your_ship_there() -> None:
    c = coin(2, L.POWER)
    s = scenario(sets="cotgi", center={2: "mirewitch"}, ships=[2, 0], runes=3, board_coin=c, ghost=DEEP)
    bag_before = len(s.bag)
    act(s, A.ACQUIRE, 2)
    assert s.coins[0] == [c]  # face up
    assert s.board_coin >= 0 and s.board_coin != c and len(s.bag) == bag_before - 1
    assert s.ghost == step_towards(DEEP, s.board_coin // 6)  # the Ghost moves one space towards it


def test_no_coin_when_the_ship_is_elsewhere() -> None:
    c = coin(2, L.POWER)
    s = scenario(sets="cotgi", center={2: "mirewitch"}, ships=[3, 0], runes=3, board_coin=c)
    act(s, A.ACQUIRE, 2)
    assert s.coins[0] == [] and s.board_coin == c


def test_defeating_the_card_with_power_also_takes_the_coin() -> None:
    c = coin(4, L.RUNES)
    s = scenario(sets="cotgi", center={4: "jade_serpent"}, ships=[4, 0], power=2, board_coin=c)
    act(s, A.DEFEAT, 4)
    assert s.coins[0] == [c]


def test_two_face_up_coins_with_the_same_icon_flip_for_two_of_that_resource() -> None:
    s = scenario(sets="cotgi", coins={0: [coin(0, L.RUNES), coin(3, L.RUNES), coin(1, L.POWER)]})
    assert legal(s, A.FLIP_COINS, L.RUNES) and not legal(s, A.FLIP_COINS, L.POWER)
    act(s, A.FLIP_COINS, L.RUNES)
    assert s.runes == 2
    assert s.coins[0] == [coin(0, L.RUNES) | COIN_DOWN, coin(3, L.RUNES) | COIN_DOWN, coin(1, L.POWER)]
    assert not legal(s, A.FLIP_COINS, L.RUNES)


@pytest.mark.parametrize(
    ("icon", "check"),
    [
        (L.POWER, lambda s: s.power == 2),
        (L.CREW, lambda s: s.crew[0] == 2),
        (L.HONOR, lambda s: s.tokens[0] == 2),
        (L.DRAW, lambda s: len(s.hands[0]) == 2),
    ],
)
def test_each_coin_icon_is_a_resource(icon: int, check: object) -> None:
    s = scenario(sets="cotgi", hand=[], deck=["apprentice"] * 4, crew=[0, 0], coins={0: [coin(0, icon), coin(1, icon)]})
    act(s, A.FLIP_COINS, icon)
    assert check(s)  # type: ignore[operator]


def test_move_coins_give_two_optional_moves() -> None:
    s = scenario(sets="cotgi", ships=[1, 4], coins={0: [coin(0, L.MOVE), coin(1, L.MOVE)]}, ghost=4)
    act(s, A.FLIP_COINS, L.MOVE)
    act(s, A.MOVE_SHIP, 2)
    act(s, A.MOVE_SHIP, 3)
    assert s.ship[0] == 3


def test_mismatched_coins_cannot_be_paired() -> None:
    s = scenario(sets="cotgi", coins={0: [coin(0, L.RUNES), coin(0, L.POWER)]})
    assert not any(a >> 16 == A.FLIP_COINS for a in rules.legal_actions(s))


def test_coins_are_worth_two_honor_face_up_or_down() -> None:
    s = scenario(sets="cotgi", coins={0: [coin(0, 0), coin(1, 1) | COIN_DOWN]}, hand=[], deck=[], discard=[])
    assert rules.score_breakdown(s, 0)["coins"] == 4


def test_an_empty_bag_gives_nothing() -> None:
    s = scenario(sets="cotgi", center={2: "enchanting_selkies"}, power=5, ships=[0, 0])
    s.bag = []
    act(s, A.DEFEAT, 2)
    assert s.coins[0] == [] and s.tokens[0] == 5
    s2 = scenario(sets="cotgi", center={2: "mirewitch"}, ships=[2, 0], runes=3, board_coin=coin(2, 0))
    s2.bag = []
    act(s2, A.ACQUIRE, 2)
    assert s2.coins[0] == [coin(2, 0)] and s2.board_coin == -1


def test_taking_a_coin_from_the_bag_directly_is_face_up() -> None:
    s = scenario(sets="cotgi", center={2: "enchanting_selkies"}, power=5, ships=[0, 0])
    act(s, A.DEFEAT, 2)
    assert len(s.coins[0]) == 1 and not s.coins[0][0] & COIN_DOWN


def test_ghost_takes_crew_from_a_ship_moving_onto_it_once_per_turn() -> None:
    s = scenario(sets="cotgi", hand=["navigator"], ships=[2, 0], crew=[3, 0], ghost=3)
    act(s, A.MOVE, 3)
    assert s.crew[0] == 2
    play(s, "navigator")
    act(s, A.MOVE_SHIP, 4)
    s.ghost = 4  # even meeting it again this turn costs nothing more
    end_turn(s)
    assert s.crew[0] == 2


def test_ghost_takes_crew_from_a_ship_ending_its_turn_on_its_space() -> None:
    s = scenario(sets="cotgi", ships=[5, 0], crew=[3, 0], ghost=5, deck=["apprentice"] * 10)
    act(s, A.END_TURN)
    assert s.crew[0] == 2


def test_ghost_moving_onto_ships_takes_crew_from_each() -> None:
    s = scenario(sets="cotgi", players=3, center={0: "jade_serpent"}, ships=[0, 1, 1], crew=[0, 2, 3], power=2, ghost=0)
    s.board_coin = coin(0, 0)  # taken now: the next coin pulls the Ghost
    s.bag = [coin(3, 0)]
    act(s, A.DEFEAT, 0)
    assert s.ghost == 1 and s.crew == [0, 1, 2]


def test_wailing_mists_fate_moves_the_ghost_clockwise() -> None:
    s = scenario(sets="cotgi", center={0: "jade_serpent"}, center_deck=["wailing_mists"], power=2, ghost=5, ships=[3, 3])
    act(s, A.DEFEAT, 0)
    assert s.ghost == 0  # 5 -> The Deep -> 0


def test_ghost_takes_the_shortest_way_round() -> None:
    assert step_towards(DEEP, 0) == 0 and step_towards(DEEP, 5) == 5
    assert step_towards(DEEP, 2) == 0  # The Deep, 0, 1, 2 (3 steps) beats The Deep, 5, 4, 3, 2
    assert step_towards(DEEP, 3) == 5  # The Deep, 5, 4, 3 (3 steps) beats 4 steps the other way
    assert step_towards(0, 4) == DEEP and step_towards(4, 4) == 4


def test_thukal_takes_coins_too_and_the_defeater_gets_them() -> None:
    s = scenario(sets="both", ships=[0, 1], coins={0: [coin(1, 1) | COIN_DOWN]}, ghost=3)
    act(s, A.MOVE, DEEP)
    assert s.kraken_coins == [coin(1, 1) | COIN_DOWN]
    s.power = 9
    act(s, A.DEFEAT, DEEP)
    assert s.coins[0] == [coin(1, 1) | COIN_DOWN]


def test_coin_diver_takes_a_coin_only_in_the_deep() -> None:
    s = scenario(sets="cotgi", hand=["coin_diver", "coin_diver"], ships=[DEEP, 0], ghost=3)
    play(s, "coin_diver")
    assert len(s.coins[0]) == 1
    s.ship[0] = 2
    play(s, "coin_diver")
    assert len(s.coins[0]) == 1 and cid(s, "coin_diver") in s.played[0]


def test_the_ghost_already_on_the_new_coins_space_stays_and_takes_no_crew() -> None:
    # "The Ghost Pirate moves one space towards it": already there, it does not move, so it
    # does not move onto the ships on its space.
    s = scenario(sets="cotgi", center={2: "mirewitch"}, ships=[2, 3], crew=[0, 3], runes=3,
                 board_coin=coin(2, L.POWER), ghost=3)  # fmt: skip
    s.bag = [coin(3, L.RUNES)]  # the next coin goes on the Ghost's space
    events = act(s, A.ACQUIRE, 2)
    assert s.board_coin == coin(3, L.RUNES) and s.ghost == 3
    assert s.crew[1] == 3 and not any(e[0] in ("ghost_moved", "ghost_hit") for e in events)
