"""``random``: a uniformly random legal action (seeded by the settings and the position)."""

from __future__ import annotations

import random

from ai_workers.bots.seeding import decision_seed
from ai_workers.bots.settings import BotSettings
from engine_service import rules


class RandomBot:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        return random.Random(decision_seed(view, settings.seed)).choice(legal)
