"""Menu numbers that stay put: an action keeps its number while it stays legal.

Numbering actions by their place in the list would shift them after every move: typing 3
twice to buy two cards could move your ship the second time. Here a number belongs to an
action (its id and description: "Acquire Mystic (Mystic) for 3 Runes") for the whole of a
turn's main phase: played again, acquired again, it keeps its number; a new action gets a
number never used this turn, so a number typed twice never lands on something else. A choice
to answer (which card to banish, where to place your ship...) is numbered from 1 for as long
as it is asked; back in the main phase, the turn's numbers are as they were.
"""

from __future__ import annotations

from collections.abc import Sequence

from clients.sdk.types import GameView, LegalAction

Context = tuple[object, ...]


class ActionKeys:
    """The numbers of the legal actions of successive views of one seat."""

    def __init__(self) -> None:
        self._context: Context | None = None
        self._main: dict[tuple[int, str], int] = {}  # this turn's main phase
        self._main_turn = -1
        self._choice: dict[tuple[int, str], int] = {}  # the choice being answered
        self._choice_context: Context | None = None

    def number(self, view: GameView) -> list[tuple[int, LegalAction]]:
        """The view's legal actions with their numbers, in number order."""
        actions = list(view.legal_actions)
        b = view.board
        if b.HasField("decision"):
            d = b.decision
            context: Context = ("choice", b.turn, d.kind, d.seat, d.source_card)
            if context != self._choice_context:
                self._choice_context, self._choice = context, {}
            table = self._choice
        else:
            self._choice_context = None
            if b.turn != self._main_turn:
                self._main_turn, self._main = b.turn, {}
            table = self._main
        return _assign(table, actions)

    def describe(self, numbered: Sequence[tuple[int, LegalAction]]) -> str:
        """The numbers as a prompt shows them: "1-4", "1-3, 5, 7", "1"."""
        keys = sorted(k for k, _ in numbered)
        runs: list[list[int]] = []
        for k in keys:
            if runs and k == runs[-1][-1] + 1:
                runs[-1].append(k)
            else:
                runs.append([k])
        return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def _assign(
    table: dict[tuple[int, str], int], actions: list[LegalAction]
) -> list[tuple[int, LegalAction]]:
    out = []
    for a in actions:
        key = (a.id, a.description)
        if key not in table:
            table[key] = max(table.values(), default=0) + 1
        out.append((table[key], a))
    out.sort(key=lambda p: p[0])
    return out
