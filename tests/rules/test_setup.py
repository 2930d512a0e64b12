"""Setup of each set: starting decks, Crew by seat, Honor pool, piles, center row, first player."""

from __future__ import annotations

from collections import Counter

import pytest

from engine_service import rules
from engine_service.rules import actions as A
from engine_service.rules.state import DEEP, KRAKEN_ABSENT, KRAKEN_IN_DEEP
from tests.rules.helpers import cid


def starting(s: rules.State, seat: int) -> Counter[str]:
    names = s.T.catalog
    return Counter(names[c].key for c in s.hands[seat] + s.decks[seat])


def test_skulls_and_sails_starting_deck() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=4, seed=3))
    for seat in range(4):
        assert starting(s, seat) == {"apprentice": 7, "militia": 2, "buccaneer": 1}
        assert len(s.hands[seat]) == 5 and len(s.decks[seat]) == 5


@pytest.mark.parametrize("sets", ["cotgi", "both"])
def test_golden_isles_starting_deck_has_the_navigator(sets: str) -> None:
    s = rules.new_game(rules.GameConfig(sets=sets, players=3, seed=3))
    for seat in range(3):
        assert starting(s, seat) == {"apprentice": 6, "militia": 2, "buccaneer": 1, "navigator": 1}


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_starting_crew_by_seat_from_the_first_player(players: int) -> None:
    s = rules.new_game(rules.GameConfig(sets="cotgi", players=players, seed=11))
    by_position = [s.crew[(s.first + i) % players] for i in range(players)]
    assert by_position == [0, 1, 2, 3, 3, 3][:players]


@pytest.mark.parametrize("players", [2, 3, 4])
def test_honor_pool_is_thirty_per_player(players: int) -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=players, seed=1))
    assert s.pool == 30 * players


def test_always_available_piles_and_center_row() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=5))
    assert s.piles == [20, 20]
    assert all(c >= 0 for c in s.center)
    assert all(s.T.catalog[c].type != 3 for c in s.center)  # no Treasure face up in the row
    in_play = len(s.center_deck) + 6 + sum(len(u) for u in s.under)
    assert in_play == len(s.T.catalog.sets["ss"].center)


def test_random_first_player_depends_on_the_seed() -> None:
    firsts = {rules.new_game(rules.GameConfig(sets="ss", players=4, seed=k)).first for k in range(40)}
    assert firsts == {0, 1, 2, 3}


def test_first_decision_is_placing_the_first_players_ship_anywhere() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=5))
    assert s.decision is not None and s.decision[0] == A.D_PLACE and s.to_move() == s.first
    assert rules.legal_actions(s) == [A.encode(A.PLACE_SHIP, sp) for sp in range(7)]


def test_set_specific_pieces() -> None:
    ss = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=1))
    assert ss.kraken == KRAKEN_IN_DEEP and ss.ghost == -1 and ss.board_coin == -1 and not ss.bag
    cg = rules.new_game(rules.GameConfig(sets="cotgi", players=2, seed=1))
    assert cg.kraken == KRAKEN_ABSENT and cg.ghost == DEEP
    assert cg.board_coin >= 0 and len(cg.bag) == 35
    both = rules.new_game(rules.GameConfig(sets="both", players=2, seed=1))
    assert both.kraken == KRAKEN_IN_DEEP and both.ghost == DEEP and both.board_coin >= 0
    ss_center = len(both.T.catalog.sets["ss"].center) + len(both.T.catalog.sets["cotgi"].center)
    assert len(both.center_deck) + 6 + sum(len(u) for u in both.under) == ss_center


@pytest.mark.parametrize(
    ("sets", "players"), [("ss", 5), ("ss", 1), ("cotgi", 7), ("both", 1), ("nope", 2)]
)
def test_unsupported_configurations_are_refused(sets: str, players: int) -> None:
    with pytest.raises(rules.ConfigError):
        rules.GameConfig(sets=sets, players=players)


def test_six_players_with_golden_isles() -> None:
    s = rules.new_game(rules.GameConfig(sets="both", players=6, seed=2))
    assert s.pool == 180 and len(s.hands) == 6


def test_thukal_is_not_in_the_center_deck() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=2))
    assert cid(s, "thukal") not in s.center_deck + s.center
