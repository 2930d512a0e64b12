"""Game end: the round is finished once the pool is empty; final Honor; ties."""

from __future__ import annotations

from engine_service import rules
from engine_service.rules import actions as A
from engine_service.rules.scenario import scenario
from engine_service.rules.state import COIN_DOWN
from tests.rules.helpers import act


def test_the_round_is_finished_after_the_last_honor_token() -> None:
    s = scenario(players=3, first=1, active=1, power=2, deck=["apprentice"] * 10)
    s.pool = 1
    act(s, A.DEFEAT, A.T_CULTIST)
    assert s.pool == 0 and s.ending and not s.over
    act(s, A.END_TURN)  # seat 1 -> seat 2 still plays
    assert not s.over and s.active == 2
    s.power = 2
    act(s, A.DEFEAT, A.T_CULTIST)  # Honor past the pool is still earned
    assert s.tokens[2] == 1 and s.pool == 0
    act(s, A.END_TURN)  # seat 2 -> seat 0, the last seat of the round
    assert not s.over and s.active == 0
    act(s, A.END_TURN)
    assert s.over and s.to_move() == -1 and rules.legal_actions(s) == []


def test_every_seat_plays_the_same_number_of_turns() -> None:
    for seed in range(8):
        s = rules.new_game(rules.GameConfig(sets="both", players=3, seed=seed))
        turns = [0, 0, 0]
        while not s.over:
            acts = rules.legal_actions(s)
            if s.decision is None and len(acts) > 1:
                turns_before = s.turn
                rules.apply(s, acts[1])
                assert s.turn == turns_before
            else:
                p = s.active
                turn = s.turn
                rules.apply(s, acts[0])
                if s.turn != turn or s.over:
                    turns[p] += 1
        assert len(set(turns)) == 1, turns


def test_final_honor_counts_cards_everywhere_tokens_treasure_coins_and_card_text() -> None:
    s = scenario(
        sets="both",
        hand=["wave_walkers"],  # 1
        deck=["sunken_oracle"],  # 2
        discard=["hakua"],  # 2
        constructs=["crystals_of_command"],  # 1, and 1 per Treasure at the end
        treasures={0: ["gold", "gold"]},  # 2
        coins={0: [3, 7 | COIN_DOWN]},  # 4
    )
    s.tokens[0] = 10
    s.ongoing[0] = [s.T.catalog.id("barnacle_colossus")]  # a Monster: no card Honor
    b = rules.score_breakdown(s, 0)
    assert b == {"cards": 6, "tokens": 10, "treasure": 2, "coins": 4, "card_text": 4, "total": 26}


def test_ties_go_to_the_seat_that_started_later() -> None:
    s = scenario(players=3, first=1, hand=[], deck=[], discard=[])
    for q in range(3):
        s.hands[q], s.decks[q], s.discards[q] = [], [], []
    s.tokens = [5, 5, 4]
    # turn order 1, 2, 0: seat 0 started last among the tied seats 0 and 1
    assert rules.winner(s) == 0
    s.tokens = [4, 5, 5]
    assert rules.winner(s) == 2
