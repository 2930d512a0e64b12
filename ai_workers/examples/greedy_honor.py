"""A minimal plugin bot: the whole interface is one method.

Registered in pyproject.toml as::

    [project.entry-points."ascension.bots"]
    greedy-honor = "ai_workers.examples.greedy_honor:GreedyHonorBot"

It prefers to defeat the Monster or acquire the card worth the most Honor, then plays a card,
and otherwise takes the first legal action. It only reads ``view`` (what its seat may know).
"""

from __future__ import annotations

from ai_workers.bots import BotSettings
from engine_service import rules
from engine_service.rules import actions as A


class GreedyHonorBot:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        s = view.state
        T = s.T

        def honor(a: int) -> int:
            kind, target = rules.kind_of(a), rules.arg_of(a)
            if kind not in (A.ACQUIRE, A.DEFEAT) or not 0 <= target < len(s.center):
                return -1
            card = s.center[target]
            return T.honor[card] + (T.cost[card] if kind == A.DEFEAT else 0) if card >= 0 else -1

        best = max(legal, key=honor)
        if honor(best) >= 0:
            return best
        plays = [a for a in legal if rules.kind_of(a) == A.PLAY]
        return plays[0] if plays else legal[0]
