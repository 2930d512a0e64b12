"""Anchor, Fate, Unite, Echo, Ongoing, Plunder and the FAQ's rulings on them."""

from __future__ import annotations

from engine_service import rules
from engine_service.rules import actions as A
from engine_service.rules import effects as E
from engine_service.rules.scenario import scenario
from engine_service.rules.state import DEEP
from tests.rules.helpers import act, cid, end_turn, legal, play


def test_anchor_only_with_the_ship_on_the_cards_space() -> None:
    s = scenario(center={2: "tidecaller_adept", 3: "tidecaller_adept"}, ships=[2, 0], runes=6)
    act(s, A.ACQUIRE, 2)
    assert s.runes == 3 + 2  # paid 3, Anchor: gain 2 Runes
    act(s, A.ACQUIRE, 3)
    assert s.runes == 2  # ship elsewhere: no Anchor


def test_anchor_works_when_paying_with_crew_too() -> None:
    s = scenario(center={2: "corsair_cannon"}, ships=[2, 0], crew=[4, 0])
    act(s, A.ACQUIRE_CREW, 2)
    assert s.crew[0] == 1  # paid 4, Anchor: gain 1 Crew


def test_big_red_button_gives_mechana_constructs_anchor_on_your_turn() -> None:
    s = scenario(constructs=["big_red_button"], center={1: "tempest_turbine", 2: "hakua"}, ships=[1, 0], runes=7)
    act(s, A.ACQUIRE, 1)  # Mechana Construct at the ship: Anchor: gain 2 Crew
    assert s.crew[0] == 2
    s.ship[0] = 2
    act(s, A.ACQUIRE, 2)  # Lifebound Construct: no
    assert s.crew[0] == 2
    # an opponent's Big Red Button gives nothing on your turn
    s2 = scenario(center={1: "tempest_turbine"}, ships=[1, 0], runes=3)
    s2.constructs[1] = [cid(s2, "big_red_button")]
    act(s2, A.ACQUIRE, 1)
    assert s2.crew[0] == 0


def test_fate_each_player_may_banish_in_turn_order_from_the_active_player() -> None:
    s = scenario(
        sets="both", players=3, center={0: "gullet_eel"}, center_deck=["moonstalkers"], power=2,
        hands={1: ["apprentice"], 2: ["militia"]}, discard=["apprentice"],
    )
    act(s, A.DEFEAT, 0)  # Moonstalkers enters the row: Fate
    assert s.center[0] == cid(s, "moonstalkers")
    assert s.decision is not None and s.decision[0] == A.D_BANISH and s.to_move() == 0
    act(s, A.BANISH_DISCARD, cid(s, "apprentice"))
    assert s.to_move() == 1
    act(s, A.SKIP)
    assert s.to_move() == 2
    act(s, A.BANISH_HAND, cid(s, "militia"))
    assert s.decision is None and s.to_move() == 0
    assert sorted(s.out) == sorted([cid(s, "apprentice"), cid(s, "militia")])
    assert s.tokens[0] == 2  # Gullet Eel's reward after the Fate


def test_fate_does_not_trigger_during_setup() -> None:
    with_fate = 0
    for seed in range(60):
        s = rules.new_game(rules.GameConfig(sets="both", players=2, seed=seed))
        with_fate += any(s.T.fate[c] for c in s.center)
        assert s.decision is not None and s.decision[0] == A.D_PLACE
        assert [e[0][0] for e in s.stack] == [E.I_TURN_START]  # no Fate step queued
    assert with_fate > 0  # the check above covered setups with a Fate card in the row


def test_fate_triggers_when_a_card_enters_the_row_in_play() -> None:
    s = scenario(center={0: "gullet_eel"}, center_deck=["spawn_of_thukal"], power=2, ships=[0, 3])
    act(s, A.DEFEAT, 0)  # Spawn of Thukal: Fate: each enemy ship moves one towards the Kraken
    assert s.ship[1] == 4  # 3 -> 4, towards The Deep


def test_fate_of_a_card_filling_a_space_at_the_end_of_a_turn_resolves_for_the_next_seat() -> None:
    # A space left empty (center deck and The Void both empty) is filled at the end of the
    # turn once a card is in The Void; its Fate resolves at the start of the next seat's turn.
    s = scenario(sets="cotgi", center={3: "gilded_lookout"}, center_deck=[], ships=[0, 2], runes=9, ghost=DEEP)
    s.void = []
    act(s, A.ACQUIRE, 3)
    assert s.center[3] == -1
    s.void = [cid(s, "hexed_parrots")]  # Fate: The Ghost Pirate moves one space clockwise
    events = act(s, A.END_TURN)
    assert s.center[3] == cid(s, "hexed_parrots") and s.active == 1 and s.ghost == 0
    kinds = [e[0] for e in events]
    assert kinds.index("enter_center") < kinds.index("turn_start") < kinds.index("ghost_moved")


def test_unite_resolves_once_whichever_hero_came_first() -> None:
    s = scenario(hand=["reefborn_scout", "talons_of_amaruk", "storm_petrel"])
    play(s, "reefborn_scout")
    assert s.tokens[0] == 0
    play(s, "talons_of_amaruk")  # a second Lifebound Hero: Reefborn Scout's Unite
    assert s.tokens[0] == 1
    play(s, "storm_petrel")  # no second Unite for the same card
    assert s.tokens[0] == 1


def test_unite_needs_the_same_faction() -> None:
    s = scenario(hand=["reefborn_scout", "wave_walkers"])
    play(s, "wave_walkers")
    act(s, A.SKIP)
    play(s, "reefborn_scout")
    assert s.tokens[0] == 0


def test_echo_needs_a_card_of_the_same_faction_in_the_discard_pile() -> None:
    s = scenario(hand=["storm_petrel"], discard=["talons_of_amaruk"])
    play(s, "storm_petrel")
    assert s.crew[0] == 2
    s = scenario(hand=["storm_petrel"], discard=["wave_walkers"])
    play(s, "storm_petrel")
    assert s.crew[0] == 0


def test_ongoing_cards_stay_in_front_of_you_and_keep_working() -> None:
    s = scenario(center={3: "barnacle_colossus"}, power=3, crew=[0, 0], deck=["apprentice"] * 10)
    act(s, A.DEFEAT, 3)
    assert s.ongoing[0] == [cid(s, "barnacle_colossus")] and cid(s, "barnacle_colossus") not in s.void
    end_turn(s)
    end_turn(s)
    assert s.active == 0 and s.crew[0] == 1  # at the start of your turn, gain 1 Crew


def test_plunder_after_defeating_a_center_row_monster_but_not_thukal() -> None:
    s = scenario(hand=["void_corsair"], center={2: "gullet_eel"}, power=2, discard=[])
    act(s, A.DEFEAT, 2)
    play(s, "void_corsair")
    assert s.tokens[0] == 2 + 1
    s = scenario(hand=["void_corsair"], power=9, discard=[])
    act(s, A.DEFEAT, DEEP)  # Thukal is not in the center row
    play(s, "void_corsair")
    assert s.tokens[0] == 9


def test_treasure_is_taken_before_the_monster_reward_resolves() -> None:
    s = scenario(center={2: "diamondbeaks"}, under={2: ["gold", "gold"]}, treasures={0: ["gold"]}, power=4)
    act(s, A.DEFEAT, 2)
    assert len(s.treasures[0]) == 3 and s.tokens[0] == 3 + 2


def test_naka_lets_only_crew_defeat_monsters_in_the_void() -> None:
    s = scenario(hand=["naka_blackblade"], crew=[4, 0], power=9)
    s.void = [cid(s, "diamondbeaks")]
    assert not legal(s, A.DEFEAT_VOID, cid(s, "diamondbeaks"))
    play(s, "naka_blackblade")
    assert legal(s, A.DEFEAT_VOID, cid(s, "diamondbeaks"))
    act(s, A.DEFEAT_VOID, cid(s, "diamondbeaks"))
    assert s.crew[0] == 0 and s.tokens[0] == 3 and s.power == 11  # Power untouched
    assert s.void == [cid(s, "diamondbeaks")]


def test_choose_one_of_two_effects() -> None:
    s = scenario(hand=["gearwright_mate"])
    play(s, "gearwright_mate")
    assert s.decision is not None and s.decision[0] == A.D_CHOOSE
    act(s, A.CHOOSE, 1)
    assert (s.runes, s.crew[0]) == (0, 2)


def test_relentless_skipper_trades_a_banished_card_for_one_worth_up_to_one_more_honor() -> None:
    s = scenario(sets="both", hand=["relentless_skipper", "apprentice"], center={1: "wave_walkers", 2: "sunken_oracle"})
    play(s, "relentless_skipper")
    act(s, A.BANISH_HAND, cid(s, "apprentice"))  # worth 0: may take a card worth up to 1
    assert legal(s, A.TAKE_FREE, 1) and legal(s, A.TAKE_FREE, A.T_MYSTIC)
    assert not legal(s, A.TAKE_FREE, 2)  # Sunken Oracle is worth 2
    act(s, A.TAKE_FREE, A.T_HEAVY)
    assert s.discards[0] == [cid(s, "heavy_infantry")] and s.runes == 0


def test_abyssal_spear_acquires_a_void_card_for_free_once_per_turn() -> None:
    s = scenario(sets="cotgi", constructs=["abyssal_spear"], center={0: "mirewitch", 1: "scubot"})
    key = cid(s, "abyssal_spear") * 8 + 1
    act(s, A.USE, key)
    assert legal(s, A.TAKE_FREE, 0) and not legal(s, A.TAKE_FREE, 1)
    act(s, A.TAKE_FREE, 0)
    assert cid(s, "mirewitch") in s.discards[0] and not legal(s, A.USE, key)


def test_piratron_once_per_turn_on_a_mechana_construct_or_a_treasure() -> None:
    s = scenario(sets="both", constructs=["piratron"], hand=["tempest_turbine", "corsair_cannon"])
    play(s, "tempest_turbine")
    assert s.runes == 1
    play(s, "corsair_cannon")
    assert s.runes == 1  # once per turn
    s = scenario(sets="both", hand=["piratron"])
    play(s, "piratron")
    assert s.runes == 0  # not triggered by itself entering play
