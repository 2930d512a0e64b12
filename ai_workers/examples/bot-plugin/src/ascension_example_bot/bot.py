"""``monster-hunter``: defeats the center row's Monster worth the most Honor whenever it can,
and otherwise plays as the built-in ``heuristic`` bot does.

A bot is a class constructed without arguments with one method, ``choose``: it gets what its
seat may know (``view``), the legal action ids and the seat's settings, and answers one of
the ids. One instance serves every game of a worker process, one decision at a time.
"""

from __future__ import annotations

from ai_workers.bots import Bot, BotSettings, load_bot
from engine_service import rules

DEFEAT = rules.KIND_IDS["defeat"]


class MonsterHunterBot:
    def __init__(self) -> None:
        self.heuristic: Bot = load_bot("heuristic")  # a built-in bot to fall back on

    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        s = view.state  # what this seat may know: the board, its hand, counts of the rest

        def honor(action: int) -> int:
            """The printed Honor of the center-row card an action defeats, else -1."""
            space = rules.arg_of(action)
            if rules.kind_of(action) != DEFEAT or not 0 <= space < len(s.center):
                return -1
            card = s.center[space]  # a card id (-1: an empty space)
            return s.T.honor[card] if card >= 0 else -1

        best = max(legal, key=honor)
        if honor(best) >= 0:
            return best
        return self.heuristic.choose(view, legal, settings)
