"""What a first game in the terminal relies on, on views of real rules states: numbers that
stay with their actions, what a hint says a move buys, "How to play" for the game's sets,
seats and rounds named as the table names them."""

from __future__ import annotations

import re

from rich.console import Console

from clients.sdk.types import LegalAction
from clients.terminal import why
from clients.terminal.events import named
from clients.terminal.how_to_play import how_to_play
from clients.terminal.keys import ActionKeys
from clients.terminal.render import Layout, header, round_of
from engine_service import rules
from engine_service.rules import actions as A
from tests.clients.views import catalog, view_of

CAT = catalog()


def _main_phase(seed: int = 5) -> rules.State:
    """A 2-player Skulls & Sails game at the first player's main phase (ship placed)."""
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=seed))
    rules.apply(s, A.encode(A.PLACE_SHIP, 0))
    return s


def _by_description(numbered: list[tuple[int, LegalAction]]) -> dict[str, int]:
    return {a.description: k for k, a in numbered}


def test_an_action_keeps_its_number_while_it_stays_legal() -> None:
    s = _main_phase()
    me = s.to_move()
    keys = ActionKeys()
    first = _by_description(keys.number(view_of(s, me)))
    apprentice = first["Play Apprentice"]
    rules.apply(s, A.encode(A.PLAY, CAT.find("apprentice").id))  # type: ignore[union-attr]
    second = keys.number(view_of(s, me))
    again = _by_description(second)
    # still legal (more Apprentices in hand): the same number; so is every other survivor
    assert again["Play Apprentice"] == apprentice
    for desc, k in first.items():
        if desc in again:
            assert again[desc] == k, desc
    # numbers are listed in order, each once
    assert [k for k, _ in second] == sorted({k for k, _ in second})


def test_a_number_is_never_reused_within_a_turn() -> None:
    s = _main_phase()
    me = s.to_move()
    keys = ActionKeys()
    used: dict[int, str] = {}
    for _ in range(60):  # play the whole turn: plays, then buys, never ending it
        numbered = keys.number(view_of(s, me))
        for k, a in numbered:
            assert used.setdefault(k, a.description) == a.description, (k, a.description)
        choices = [a for _, a in numbered if a.kind != "end_turn"]
        if not choices or s.decision is not None:
            break
        rules.apply(s, choices[0].id)
    assert len(used) > 4


def test_a_choice_is_numbered_from_one_and_the_turn_comes_back_as_it_was() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=5))
    me = s.to_move()
    keys = ActionKeys()
    place = keys.number(view_of(s, me))  # placing the ship is a choice: 1..7
    assert [k for k, _ in place] == list(range(1, 8))
    rules.apply(s, A.encode(A.PLACE_SHIP, 0))
    main = keys.number(view_of(s, me))
    assert [k for k, _ in main] == list(range(1, len(main) + 1))
    for _ in range(8):  # a few cards played: numbers beyond the first ones are taken
        plays = [a for a in rules.legal_actions(s) if A.kind_of(a) == A.PLAY]
        if not plays:
            break
        rules.apply(s, plays[0])
        keys.number(view_of(s, me))
    # the other seat's turn (place its ship, end), then this seat's next turn: from 1 again
    rules.apply(s, A.encode(A.END_TURN))
    rules.apply(s, A.encode(A.PLACE_SHIP, 3))
    rules.apply(s, A.encode(A.END_TURN))
    assert s.to_move() == me and s.decision is None
    again = keys.number(view_of(s, me))
    assert [k for k, _ in again] == list(range(1, len(again) + 1))


def test_the_prompt_lists_the_numbers_there_are() -> None:
    keys = ActionKeys()
    fake = [(1, None), (2, None), (3, None), (5, None), (7, None), (8, None)]
    assert keys.describe(fake) == "1-3, 5, 7, 8"  # type: ignore[arg-type]
    assert keys.describe([(1, None)]) == "1"  # type: ignore[list-item]


def test_a_hint_says_what_a_move_buys_and_its_honor_now() -> None:
    s = _main_phase()
    me = s.to_move()
    for _ in range(10):  # play the hand: Runes and Power to spend
        plays = [a for a in rules.legal_actions(s) if A.kind_of(a) == A.PLAY]
        if not plays:
            break
        rules.apply(s, plays[0])
    view = view_of(s, me)
    actions = {a.description: a for a in view.legal_actions}
    mystic = next(a for d, a in actions.items() if d.startswith("Acquire Mystic"))
    assert why.honor_now(view, CAT, mystic) == CAT.find("mystic").honor  # type: ignore[union-attr]
    assert "Honor in your deck" in why.what_it_buys(view, CAT, mystic)
    cultist = next((a for d, a in actions.items() if d.startswith("Defeat Cultist")), None)
    if cultist is not None:
        assert why.honor_now(view, CAT, cultist) == 1  # "Reward: Gain 1 Honor."
    end = next(a for a in view.legal_actions if a.kind == "end_turn")
    assert "unspent Runes and Power are lost" in why.what_it_buys(view, CAT, end)
    assert "go to your discard pile" in why.what_it_buys(view, CAT, end)
    # a cost says it is one ("cost 3"), never a bare "(3)": where to place the ship
    start = view_of(rules.new_game(rules.GameConfig(sets="ss", players=2, seed=5)), 0)
    places = [a for a in start.legal_actions if a.kind == "place_ship"]
    reasons = [why.what_it_buys(start, CAT, m) for m in places]
    assert any(re.search(r"\(cost \d+\) is there", r) for r in reasons), reasons
    assert not any(re.search(r"\(\d+\)", r) for r in reasons), reasons


def test_honor_in_a_card_text_counts_only_when_plain() -> None:
    assert why._unconditional_honor("Gain 3 Honor.") == 3
    assert why._unconditional_honor("Gain 2 Runes and 1 Honor.") == 1
    assert why._unconditional_honor("Gain 4 Honor and 1 Crew.") == 4
    assert why._unconditional_honor("Gain 2 Runes. If you control three, gain 2 Honor.") == 0
    assert why._unconditional_honor("Gain 1 Honor for each Treasure you control.") == 0


def test_how_to_play_shows_the_sections_of_the_games_sets() -> None:
    ss, cotgi, both = how_to_play("ss"), how_to_play("cotgi"), how_to_play("both")
    for text in (ss, cotgi, both):
        for part in ("The goal", "Runes", "Power", "Crew", "The Deep", "Treasure"):
            assert part in text, part
    assert "Thukal" in ss and "Ghost Pirate" not in ss
    assert "Ghost Pirate" in cotgi and "Thukal" not in cotgi
    assert "Thukal" in both and "Ghost Pirate" in both


def test_rounds_and_seat_names_as_the_table_says_them() -> None:
    s = _main_phase()
    first = s.to_move()
    rules.apply(s, A.encode(A.END_TURN))
    second = s.to_move()
    view = view_of(s, second, bots=[None, "ismcts"] if second == 0 else ["ismcts", None])  # type: ignore[list-item]
    # the second player's first turn is in round 1, not "turn 2"
    assert s.turn == 2 and round_of(view, s.turn) == 1
    console = Console(width=100, record=True, color_system=None)
    console.print(header(view, second, Layout()))
    assert console.export_text().startswith("Round 1 · your move")
    me_text = f"Seat {second + 1} took Gold from seat {first + 1}"
    said = named(me_text, view, second)
    assert said.startswith("You took Gold from Seat") and "(ismcts)" in said
    assert named(f"Seat {second + 1}'s Mystic was destroyed", view, second) == (
        "Your Mystic was destroyed"
    )


def test_amounts_are_singular_and_plural() -> None:
    from engine_service.rules.describe import amount

    assert amount(1, "runes") == "1 Rune" and amount(2, "runes") == "2 Runes"
    assert amount(1, "power") == "1 Power" and amount(3, "crew") == "3 Crew"
    assert amount(1, "draw") == "1 card" and amount(2, "move") == "2 moves"
