"""The terminal client's drawing, on views of real rules states (no server needed)."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from rich.console import Console

from clients.sdk.types import Catalog
from clients.terminal import render
from clients.terminal.events import EventLog
from engine_service import rules
from engine_service.api.ascension.v1 import game_pb2
from tests.clients.views import catalog, events_of, view_of

CAT = catalog()


def _play(sets: str, players: int, steps: int, seed: int) -> tuple[rules.State, EventLog]:
    s = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=seed))
    rng = random.Random(seed)
    log = EventLog()
    log.add(game_pb2.GameUpdate(version=1, seat=-1))
    version = 1
    for _ in range(steps):
        if s.over:
            break
        seat = s.to_move()
        evs = rules.apply(s, rng.choice(rules.legal_actions(s)))
        version += 1
        log.add(game_pb2.GameUpdate(version=version, seat=seat, events=events_of(s, evs)))
    return s, log


def _draw(view: game_pb2.GameView, log: EventLog, me: int, w: int, h: int) -> str:
    console = Console(width=w, height=h, record=True, color_system=None, force_terminal=False)
    lines = log.lines(view, CAT, me)
    console.print(render.screen(console, view, CAT, me, lines, render.Layout(w, h)))
    return console.export_text()


@pytest.mark.parametrize(
    ("sets", "players", "steps", "seed"),
    [("ss", 2, 0, 1), ("ss", 2, 40, 2), ("cotgi", 4, 120, 3), ("both", 6, 300, 4)],
)
def test_screen_fits_80x24(sets: str, players: int, steps: int, seed: int) -> None:
    s, log = _play(sets, players, steps, seed)
    me = s.to_move()
    view = view_of(s, me)
    text = _draw(view, log, me, 80, 24)
    lines = text.splitlines()
    assert len(lines) <= 23, "the screen plus the prompt line must fit 24 lines:\n" + text
    assert all(len(line) <= 80 for line in lines)
    assert "The Deep" in text and "Honor" in text and "You:" in text
    assert "Hand:" in text
    for n, action in enumerate(view.legal_actions, 1):
        assert f"{n} {action.description[:20]}" in text
    for space in view.board.center:  # every card of the center row, by name
        if space.card >= 0:
            assert CAT[space.card].name[:14] in text


def test_board_shows_ships_ghost_coin_kraken_and_treasure() -> None:
    s, log = _play("both", 3, 0, 5)
    me = 0
    s.ship = [2, 2, 6]
    s.ghost = 4
    s.under[1] = [CAT.find("gold").id]  # type: ignore[union-attr]
    view = view_of(s, me, names=["Ann", "Bo", "Cy"], bots=["", "ismcts", "heuristic"])
    text = _draw(view, log, me, 100, 40)
    keys = {"1", "2", "3", "4", "5", "6", "D"}
    row = {ln.split()[0]: ln for ln in text.splitlines() if ln.split() and ln.split()[0] in keys}
    assert "[YOU]" in row["3"] and "[S2]" in row["3"]
    assert "[S3]" in row["D"] and "Thukal" in row["D"]
    assert "Ghost" in row["5"]
    assert "Gold" in row["2"]
    coin_space = view.board.board_coin_space
    assert coin_space >= 0 and "●" in row[str(coin_space + 1)]
    assert "Bo (ismcts)" in text and "Cy (heuristic)" in text


def test_an_opponents_known_cards_are_shown_with_its_hand_size() -> None:
    s, log = _play("ss", 2, 0, 5)
    waveblade = CAT.find("hais_waveblade").id  # type: ignore[union-attr]
    s.hands[1][0] = waveblade
    s.known[1] = [waveblade]  # as after revealing it to prevent a Raid
    text = _draw(view_of(s, 0), log, 0, 120, 40)
    line = next(ln for ln in text.splitlines() if "known in hand" in ln)
    assert "Seat 2" in line and "Hai's Waveblade" in line.split("known in hand")[1]
    assert "known in hand" not in _draw(view_of(s, 1), log, 1, 120, 40)  # (its own hand shows)


def test_an_ai_seats_fallback_moves_are_shown() -> None:
    s, log = _play("ss", 2, 30, 5)
    view = view_of(s, 0, names=["Ann", "Bo"], bots=["", "mybot"])
    assert "fallback" not in _draw(view, log, 0, 100, 40)
    view.seat_info[1].fallback_moves = 3
    view.seat_info[1].last_fallback_reason = "bot_raised: ValueError"
    assert "3 fallback moves (latest: bot_raised: ValueError)" in _draw(view, log, 0, 100, 40)


def test_wide_screen_shows_card_texts() -> None:
    s, log = _play("ss", 2, 10, 6)
    me = s.to_move()
    view = view_of(s, me)
    text = _draw(view, log, me, 160, 50)
    card = CAT[view.board.center[0].card]
    assert card.text[:30] in text
    assert "Center row" in text and "Honor" in text


def test_final_scores_table_and_winner() -> None:
    s, _ = _play("ss", 2, 100_000, 7)
    assert s.over
    view = view_of(s, 0, names=["Ann", "Bo"], bots=["", "random"])
    console = Console(width=80, record=True, color_system=None)
    console.print(render.scores_table(view, 0))
    console.print(render.result_line(view, 0))
    text = console.export_text()
    totals = rules.scores(s)
    winner = rules.winner(s)
    assert "Final score" in text and "★ winner" in text
    for total in totals:
        assert str(total) in text
    expected = "You win!" if winner == 0 else "Bo (random) wins."
    assert expected in text
    winner_line = next(line for line in text.splitlines() if "★ " in line and "winner" not in line)
    assert ("You" if winner == 0 else "Bo") in winner_line


def test_event_log_summarizes_a_turn() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=8))
    log = EventLog()
    version = 1
    log.add(game_pb2.GameUpdate(version=1, seat=-1))
    seat = s.to_move()
    played: Counter[str] = Counter()
    # Place the ship, play every card, end the turn.
    while s.to_move() == seat and not s.over:
        legal = rules.legal_actions(s)
        plays = [a for a in legal if rules.KIND_NAMES[a >> 16] in ("place_ship", "play")]
        a = plays[0] if plays else legal[0]
        if rules.KIND_NAMES[a >> 16] == "play":
            played[CAT[a & 0xFFFF].name] += 1
        evs = rules.apply(s, a)
        version += 1
        assert log.add(game_pb2.GameUpdate(version=version, seat=seat, events=events_of(s, evs)))
    assert not log.add(game_pb2.GameUpdate(version=version, seat=seat))  # a version is seen once
    view = view_of(s, 1 - seat)
    lines = [line.plain for line in log.lines(view, CAT, 1 - seat)]
    assert len(lines) == 1, lines
    assert lines[0].startswith("T1 Seat ")
    assert "ship to space" in lines[0] and sum(played.values()) == 5
    for name, n in played.items():
        assert (f"{name} ×{n}" if n > 1 else name) in lines[0]
    assert any("Seat" in t for _, t in log.texts)


def test_catalog_lookup() -> None:
    cat = Catalog.of(CAT.cards.values(), "x")
    assert cat.find("Heavy Infantry") is not None
    assert cat.name(-5) == "card #-5" and cat[-5].name == "?"
