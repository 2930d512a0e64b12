"""The terminal client answers at once a choice whose only answer is to decline (the victim
of a Raid with no card in hand to prevent it), and says so; a real choice waits for the player.

The table is a rules state behind a small in-process stand-in for the SDK client, whose views
and updates are built by the server's own code (``tests/clients/views.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rich.console import Console

from clients.sdk.types import Catalog
from clients.terminal.play import PlaySession
from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2, game_pb2
from engine_service.rules import actions as A
from engine_service.rules.scenario import scenario
from engine_service.rules.state import State
from tests.clients.views import catalog, events_of, view_of


class NoUpdates:
    """A watch stream with nothing more to tell."""

    closed = True
    last_version = 1 << 30

    def __iter__(self) -> Iterator[game_pb2.GameUpdate]:
        return iter(())

    def __next__(self) -> game_pb2.GameUpdate:
        raise StopIteration

    def cancel(self) -> None:
        pass


class Table:
    """What PlaySession asks of a client, answered from a rules state."""

    def __init__(self, s: State, seat: int) -> None:
        self.s, self.seat = s, seat
        self.submitted: list[int] = []

    def get_view(self, game_id: str, token: str) -> game_pb2.GameView:
        return view_of(self.s, self.seat)

    def catalog(self, fingerprint: str) -> Catalog:
        return catalog()

    def watch(self, game_id: str, after_version: int = 0) -> NoUpdates:
        return NoUpdates()

    def submit(self, game_id: str, token: str, action: int) -> engine_pb2.SubmitActionResponse:
        self.submitted.append(action)
        seat = self.s.to_move()
        events = rules.apply(self.s, action)
        update = game_pb2.GameUpdate(version=2, seat=seat, action=action, events=events_of(self.s, events))
        return engine_pb2.SubmitActionResponse(update=update, view=view_of(self.s, self.seat))


def raided(victim_hand: list[str]) -> State:
    """Seat 0 Raids seat 1 (who owns Fleet Reinforcements) for its Gold."""
    s = scenario(hand=["talons_of_amaruk"], ships=[2, 2], treasures={1: ["gold"]},
                 hands={1: victim_hand}, decks={1: ["fleet_reinforcements", "militia"]})  # fmt: skip
    rules.apply(s, A.encode(A.PLAY, s.T.catalog.id("talons_of_amaruk")))
    rules.apply(s, A.encode(A.RAID_TAKE, A.raid_arg(1, s.T.catalog.id("gold"))))
    assert s.decision is not None and s.decision[0] == A.D_PREVENT and s.to_move() == 1
    return s


def session(table: Table, console: Console) -> PlaySession:
    def no_input(prompt: str) -> str:
        pytest.fail(f"the player was asked: {prompt}")

    return PlaySession(table, console, "g-test", "token", read=no_input, clear=False, about="test")  # type: ignore[arg-type]


def test_a_raid_with_nothing_to_reveal_is_let_happen_at_once_with_a_line() -> None:
    table = Table(raided(["apprentice", "militia"]), seat=1)
    console = Console(record=True, width=100, color_system=None)
    play = session(table, console)
    assert play._auto_answer()
    assert table.submitted == [A.encode(A.SKIP)]
    assert table.s.treasures[0] == [table.s.T.catalog.id("gold")] and table.s.to_move() == 0
    assert "Let the Raid happen: your only choice, answered for you." in console.export_text()


def test_a_raid_the_player_can_prevent_waits_for_the_player() -> None:
    table = Table(raided(["fleet_reinforcements", "militia"]), seat=1)
    play = session(table, Console(record=True, width=100, color_system=None))
    assert not play._auto_answer()
    assert table.submitted == []
    kinds = [a.kind for a in play.view.legal_actions]
    assert kinds == ["prevent_raid", "skip"]
