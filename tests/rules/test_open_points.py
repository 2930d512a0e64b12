"""Points the rulebooks leave open, each read as docs/rules-notes.md says ("Open points")."""

from __future__ import annotations

import pytest

from engine_service import rules
from engine_service.cards import language as L
from engine_service.rules import actions as A
from engine_service.rules.scenario import scenario
from engine_service.rules.state import DEEP, PILE_HEAVY, PILE_MYSTIC
from tests.rules.helpers import act, cid, kinds, legal, play


def test_the_ghost_moving_two_spaces_moves_onto_the_space_it_passes() -> None:
    """Wailing Mists' Fate moves the Ghost from space 5 through The Deep to space 0: the ship
    in The Deep loses 1 Crew as the one on space 0 does; the ship it never reaches keeps its."""
    s = scenario(
        sets="cotgi", players=3, center={1: "jade_serpent"}, center_deck=["wailing_mists"],
        power=2, ghost=5, ships=[0, DEEP, 1], crew=[2, 2, 2], board_coin=3 * 6 + L.RUNES,
    )  # fmt: skip
    events = act(s, A.DEFEAT, 1)
    assert s.ghost == 0 and s.crew == [1, 1, 2]
    assert [e for e in events if e[0] in ("ghost_moved", "ghost_hit")] == [
        ("ghost_moved", DEEP), ("ghost_hit", 1), ("ghost_moved", 0), ("ghost_hit", 0),
    ]  # fmt: skip


@pytest.mark.parametrize(("sets", "players"), [("ss", 2), ("cotgi", 6), ("both", 2), ("both", 6)])
def test_one_mystic_pile_and_one_heavy_infantry_pile_of_twenty_whatever_the_sets(sets: str, players: int) -> None:
    s = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=3))
    assert s.piles[PILE_MYSTIC] == s.piles[PILE_HEAVY] == 20


def test_relentless_skippers_acquire_is_not_optional_once_a_card_is_banished() -> None:
    s = scenario(sets="both", hand=["relentless_skipper", "apprentice"], center={1: "wave_walkers"})
    play(s, "relentless_skipper")
    assert legal(s, A.SKIP)  # the banish is a "may"
    act(s, A.BANISH_HAND, cid(s, "apprentice"))
    assert s.decision is not None and s.decision[0] == A.D_FREE
    assert A.SKIP not in kinds(s) and legal(s, A.TAKE_FREE, 1)  # "If you do, acquire"


def test_relentless_skipper_with_nothing_to_acquire_only_banishes() -> None:
    s = scenario(sets="both", hand=["relentless_skipper", "apprentice"])
    s.center = [cid(s, "sunken_oracle")] * 6  # worth 2 Honor: more than 0 + 1
    s.piles = [0, 0]
    play(s, "relentless_skipper")
    act(s, A.BANISH_HAND, cid(s, "apprentice"))
    assert s.decision is None and cid(s, "apprentice") in s.out


def test_no_coin_pair_while_a_choice_is_pending_on_your_turn() -> None:
    """The Navigator's move is asked when it is played ("any choices required by the card
    must be made at that time"); coins pair only between such choices."""
    s = scenario(sets="cotgi", hand=["navigator"], coins={0: [L.RUNES, 6 + L.RUNES]})
    assert legal(s, A.FLIP_COINS, L.RUNES)
    play(s, "navigator")
    assert s.decision is not None and s.decision[0] == A.D_MOVE
    assert not legal(s, A.FLIP_COINS, L.RUNES)
    act(s, A.SKIP)
    act(s, A.FLIP_COINS, L.RUNES)
    assert s.runes == 1 + 2


@pytest.mark.parametrize("sets", ["cotgi", "both"])
def test_curse_of_the_golden_isles_seats_two_to_six_players(sets: str) -> None:
    for players in range(2, 7):
        s = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=4))
        assert s.pool == 30 * players
    with pytest.raises(rules.ConfigError):
        rules.GameConfig(sets=sets, players=7)
    with pytest.raises(rules.ConfigError):
        rules.GameConfig(sets="ss", players=5)


def test_the_kraken_holders_raid_can_be_prevented() -> None:
    s = scenario(ships=[2, 2], treasures={1: ["gold"]}, power=9, hands={1: ["fleet_reinforcements"]})
    act(s, A.DEFEAT, DEEP)
    act(s, A.USE, cid(s, "thukal") * 8)
    act(s, A.RAID_TAKE, A.raid_arg(1, cid(s, "gold")))
    assert s.to_move() == 1 and legal(s, A.PREVENT_RAID, cid(s, "fleet_reinforcements"))
    act(s, A.PREVENT_RAID, cid(s, "fleet_reinforcements"))
    assert s.treasures == [[], [cid(s, "gold")]]
