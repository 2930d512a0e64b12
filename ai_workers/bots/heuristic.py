"""``heuristic``: a sensible greedy player (see ``policy`` for what it values)."""

from __future__ import annotations

from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import best_action
from ai_workers.bots.settings import BotSettings
from engine_service import rules


class HeuristicBot:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        return best_action(view.state, legal, knowledge(view.state.T))
