"""Raid, its prevention, Treasure cards in the center row, and Thukal, The Kraken."""

from __future__ import annotations

from engine_service import rules
from engine_service.rules import actions as A
from engine_service.rules.scenario import scenario
from engine_service.rules.state import COIN_ITEM, DEEP, KRAKEN_IN_DEEP
from tests.rules.helpers import act, cid, legal, play


def raid(victim: int, item: int) -> int:
    return A.raid_arg(victim, item)


def test_raid_takes_a_treasure_of_your_choice_from_a_ship_on_the_same_space() -> None:
    s = scenario(sets="both", hand=["talons_of_amaruk"], ships=[3, 3], treasures={1: ["gold"]}, coins={1: [7]})
    play(s, "talons_of_amaruk")
    assert s.decision is not None and s.decision[0] == A.D_RAID
    assert legal(s, A.RAID_TAKE, raid(1, cid(s, "gold"))) and legal(s, A.RAID_TAKE, raid(1, COIN_ITEM + 7))
    act(s, A.RAID_TAKE, raid(1, COIN_ITEM + 7))
    assert s.coins[0] == [7] and s.coins[1] == [] and s.treasures[1] == [cid(s, "gold")]


def test_raid_needs_the_same_space() -> None:
    s = scenario(hand=["talons_of_amaruk"], ships=[3, 4], treasures={1: ["gold"]})
    play(s, "talons_of_amaruk")
    assert s.decision is None and s.treasures[1] == [cid(s, "gold")]


def test_raid_twice_takes_two_treasures() -> None:
    s = scenario(hand=["drowned_reaver"], ships=[2, 2], treasures={1: ["gold", "gold", "gold"]})
    play(s, "drowned_reaver")
    act(s, A.RAID_TAKE, raid(1, cid(s, "gold")))
    act(s, A.RAID_TAKE, raid(1, cid(s, "gold")))
    assert len(s.treasures[0]) == 2 and len(s.treasures[1]) == 1


def test_prevention_answers_only_the_first_raid_attempt_and_the_card_stays_in_hand() -> None:
    s = scenario(
        hand=["drowned_reaver"], ships=[2, 2], treasures={1: ["gold", "gold"]},
        hands={1: ["fleet_reinforcements", "hais_waveblade"]},
    )
    play(s, "drowned_reaver")
    act(s, A.RAID_TAKE, raid(1, cid(s, "gold")))
    assert s.to_move() == 1 and s.decision is not None and s.decision[0] == A.D_PREVENT
    act(s, A.PREVENT_RAID, cid(s, "fleet_reinforcements"))
    assert len(s.treasures[1]) == 2 and cid(s, "fleet_reinforcements") in s.hands[1]
    assert s.to_move() == 0  # second Raid: cannot be prevented, no question asked
    act(s, A.RAID_TAKE, raid(1, cid(s, "gold")))
    assert s.to_move() == 0 and len(s.treasures[0]) == 1


def test_the_victim_may_let_the_raid_happen() -> None:
    s = scenario(sets="both", hand=["scubot"], ships=[2, 2], coins={1: [3 | 64]}, hands={1: ["fleet_reinforcements"]})
    play(s, "scubot")
    act(s, A.RAID_TAKE, raid(1, COIN_ITEM + (3 | 64)))
    assert s.to_move() == 1
    act(s, A.SKIP)
    assert s.coins[0] == [3 | 64] and s.coins[1] == []  # the coin keeps its face (down)


def test_a_victim_owning_a_prevention_card_is_asked_even_without_one_in_hand() -> None:
    # Being asked must not tell the table whether the card is in hand (docs/rules-notes.md):
    # with it in the deck only, the one answer is to let the Raid happen.
    s = scenario(hand=["talons_of_amaruk"], ships=[2, 2], treasures={1: ["gold"]},
                 hands={1: ["militia"]}, decks={1: ["fleet_reinforcements"]})  # fmt: skip
    play(s, "talons_of_amaruk")
    act(s, A.RAID_TAKE, raid(1, cid(s, "gold")))
    assert s.to_move() == 1 and s.decision is not None and s.decision[0] == A.D_PREVENT
    assert rules.legal_actions(s) == [A.encode(A.SKIP)]
    events = act(s, A.SKIP)
    assert ("raided", 0, 1, cid(s, "gold")) in events and s.treasures[0] == [cid(s, "gold")]


def test_no_question_when_the_table_knows_the_victim_cannot_prevent() -> None:
    # no prevention card among hand and deck (here: in the discard pile)...
    s = scenario(hand=["talons_of_amaruk"], ships=[2, 2], treasures={1: ["gold"]},
                 hands={1: ["militia"]}, decks={1: ["apprentice"]}, discards={1: ["fleet_reinforcements"]})  # fmt: skip
    play(s, "talons_of_amaruk")
    act(s, A.RAID_TAKE, raid(1, cid(s, "gold")))
    assert s.to_move() == 0 and s.treasures[0] == [cid(s, "gold")]
    # ...or an empty hand
    s = scenario(hand=["talons_of_amaruk"], ships=[2, 2], treasures={1: ["gold"]},
                 hands={1: []}, decks={1: ["fleet_reinforcements"]})  # fmt: skip
    play(s, "talons_of_amaruk")
    act(s, A.RAID_TAKE, raid(1, cid(s, "gold")))
    assert s.to_move() == 0 and s.treasures[0] == [cid(s, "gold")]


def test_treasure_cards_go_under_the_next_non_treasure_and_come_with_it() -> None:
    s = scenario(center={2: "wave_walkers"}, center_deck=["gullet_eel", "gold", "gold"], runes=2)
    act(s, A.ACQUIRE, 2)
    assert s.center[2] == cid(s, "gullet_eel") and s.under[2] == [cid(s, "gold")] * 2
    s.power = 2
    act(s, A.DEFEAT, 2)
    assert s.treasures[0] == [cid(s, "gold")] * 2 and s.under[2] == []


def test_thukal_takes_a_treasure_from_a_ship_moving_into_the_deep() -> None:
    s = scenario(ships=[0, 3], treasures={0: ["gold"]})
    act(s, A.MOVE, DEEP)
    assert s.treasures[0] == [] and s.under[DEEP] == [cid(s, "gold")]


def test_thukal_lets_the_owner_choose_which_treasure() -> None:
    s = scenario(sets="both", ships=[0, 3], treasures={0: ["gold"]}, coins={0: [5]})
    act(s, A.MOVE, DEEP)
    assert s.decision is not None and s.decision[0] == A.D_TRIBUTE and s.to_move() == 0
    act(s, A.GIVE_TREASURE, COIN_ITEM + 5)
    assert s.kraken_coins == [5] and s.treasures[0] == [cid(s, "gold")]


def test_thukal_takes_a_treasure_from_a_ship_ending_its_turn_in_the_deep() -> None:
    s = scenario(ships=[DEEP, 3], treasures={0: ["gold", "gold"]}, deck=["apprentice"] * 10)
    act(s, A.END_TURN)
    assert len(s.treasures[0]) == 1 and s.under[DEEP] == [cid(s, "gold")]


def test_defeating_thukal_with_power_gives_its_treasure_and_makes_you_the_kraken() -> None:
    s = scenario(sets="both", ships=[2, 3], power=9)
    s.under[DEEP] = [cid(s, "gold")]
    s.kraken_coins = [9]
    act(s, A.DEFEAT, DEEP)
    assert s.kraken == 0 and s.tokens[0] == 9
    assert s.treasures[0] == [cid(s, "gold")] and s.coins[0] == [9]
    assert cid(s, "thukal") in s.ongoing[0] and not legal(s, A.DEFEAT, DEEP)


def test_defeating_thukal_with_crew_needs_the_ship_in_the_deep() -> None:
    s = scenario(ships=[5, 3], crew=[9, 0])
    assert not legal(s, A.DEFEAT_CREW, DEEP)
    s.ship[0] = DEEP
    act(s, A.DEFEAT_CREW, DEEP)
    assert s.crew[0] == 0 and s.kraken == 0


def test_the_kraken_may_raid_once_per_turn() -> None:
    s = scenario(ships=[2, 2], treasures={1: ["gold", "gold"]}, power=9)
    s.ship[0] = 2
    act(s, A.DEFEAT, DEEP)
    key = cid(s, "thukal") * 8
    act(s, A.USE, key)
    act(s, A.RAID_TAKE, raid(1, cid(s, "gold")))
    assert len(s.treasures[0]) == 1 and not legal(s, A.USE, key)


def test_pull_moves_enemy_ships_towards_thukal_in_the_deep() -> None:
    s = scenario(players=3, hand=["call_of_the_deep"], ships=[2, 1, 5], treasures={2: ["gold"]})
    play(s, "call_of_the_deep")
    assert s.ship == [2, 0, DEEP]  # 1 -> 0; 5 -> The Deep, where Thukal takes a Treasure
    assert s.treasures[2] == [] and s.under[DEEP] == [cid(s, "gold")]


def test_ships_already_at_the_kraken_do_not_move_and_are_not_raided() -> None:
    s = scenario(hand=["call_of_the_deep"], ships=[2, DEEP], treasures={1: ["gold"]})
    play(s, "call_of_the_deep")
    assert s.ship[1] == DEEP and s.treasures[1] == [cid(s, "gold")]


def test_pull_moves_ships_towards_the_player_who_is_the_kraken() -> None:
    s = scenario(players=3, hand=["call_of_the_deep"], ships=[2, 4, 5])
    s.kraken = 1  # seat 1 defeated Thukal: "The Kraken" is seat 1's ship
    s.ongoing[1] = [cid(s, "thukal")]
    play(s, "call_of_the_deep")
    assert s.ship == [2, 4, 4]  # seat 1 stays, seat 2 moves towards it
    assert s.kraken != KRAKEN_IN_DEEP
