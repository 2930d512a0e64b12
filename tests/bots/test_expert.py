"""The expert bot: legal play over whole games at every table size, and its parts."""

from __future__ import annotations

import pytest

from ai_workers.bots import BotSettings, load_bot
from ai_workers.bots.expert import Expert, ExpertBot, ExpertParams
from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.registry import available_bots
from engine_service import rules
from engine_service.rules import actions as A
from engine_service.rules.scenario import scenario

SETTINGS = BotSettings(name="expert")


@pytest.mark.parametrize(
    ("players", "sets"), [(2, "ss"), (3, "cotgi"), (4, "both"), (5, "both"), (6, "cotgi")]
)
def test_expert_plays_legal_moves_through_whole_games(players: int, sets: str) -> None:
    names = ["expert", "heuristic", "random", "expert", "heuristic", "expert"][:players]
    bots = {n: load_bot(n) for n in set(names)}
    s = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=11 + players))
    asked = 0
    while not s.over:
        p = s.to_move()
        legal = rules.legal_actions(s)
        a = bots[names[p]].choose(rules.view(s, p), legal, SETTINGS)
        assert a in legal, (names[p], rules.describe_action(s, a))
        asked += names[p] == "expert"
        rules.apply(s, a)
    assert s.over and asked > 20


def test_expert_is_registered() -> None:
    assert "expert" in available_bots()
    assert isinstance(load_bot("expert"), ExpertBot)


def test_options_switch_parts_off_and_unknown_ones_are_refused() -> None:
    assert ExpertBot(plan="0").params == ExpertParams(plan=False)
    assert ExpertBot(crew_r="1.0").params.crew_r == 1.0
    with pytest.raises(ValueError, match="unknown expert option"):
        ExpertBot(greed=1)


def test_spending_is_planned_as_a_whole() -> None:
    """Six Runes: two 3-cost cards worth 3 each beat one 5-cost card worth 5 (greedy's pick);
    an always-available card fills what is left, as often as its pile allows; worthless items are never bought."""
    once = [(5.0, 5, 1), (3.0, 3, 2), (3.0, 3, 3), (-1.0, 1, 4)]
    value, acts = Expert._spend(once, [], 6)
    assert value == 6.0 and sorted(acts) == [2, 3]
    value, acts = Expert._spend(once, [(2.5, 2, 9, 1)], 8)  # one left in its pile
    assert value == 8.5 and sorted(acts) == [2, 3, 9]
    assert Expert._spend(once, [], 0) == (0.0, [])


def test_the_plan_buys_what_the_runes_allow() -> None:
    s = scenario(sets="ss", hand=[], runes=6,
                 center={0: "talons_of_amaruk", 1: "kelp_warden", 2: "mangrove_matron",
                         3: "gullet_eel", 4: "gullet_eel", 5: "gullet_eel"})  # fmt: skip
    value, acts = Expert(s, 0, knowledge(s.T), ExpertParams()).plan(6, 0, 0)
    assert value > 0 and acts
    assert all(rules.kind_of(a) == A.ACQUIRE for a in acts)
    assert sum(rules.engine.target_cost(s, rules.arg_of(a)) for a in acts) <= 6


def test_raid_card_waits_for_a_victim_in_reach() -> None:
    """With Talons of Amaruk in hand and the only Treasure on the next space, the ship sails
    there before the card is played."""
    s = scenario(sets="ss", hand=["talons_of_amaruk", "apprentice"], ships=[2, 3],
                 treasures={1: ["pearl_strand"]})  # fmt: skip
    legal = rules.legal_actions(s)
    a = ExpertBot().choose(rules.view(s, 0), legal, SETTINGS)
    assert a == A.encode(A.MOVE, 3)
