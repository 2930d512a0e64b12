"""Run a bot on one decision, never letting it stop the game.

A bot that cannot be loaded, raises, or answers an action that is not legal is logged, and a
legal fallback move is played instead: the heuristic policy's choice on the same view (or,
should even that fail, the first legal action, which is ending the turn or declining when
those are allowed).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import best_action
from ai_workers.bots.registry import load_bot
from ai_workers.bots.settings import BotSettings
from engine_service import rules

log = logging.getLogger("ascension.worker.decide")


@dataclass(frozen=True, slots=True)
class Decision:
    action: int
    bot: str  # the bot asked
    seconds: float  # time spent deciding (the fallback included)
    fallback: str = ""  # why the fallback move was played, "" when the bot's own move was
    iterations: int = 0  # search iterations, when the bot reports them
    search_seconds: float = 0.0


def fallback_action(view: rules.View | None, legal: list[int]) -> int:
    if view is not None:
        try:
            a = best_action(view.state, legal, knowledge(view.state.T))
            if a in legal:
                return a
        except Exception:
            log.exception("the fallback policy failed too; playing the first legal action")
    return legal[0]


def decide(view: rules.View | None, legal: list[int], settings: BotSettings) -> Decision:
    """The bot's move, or a legal fallback (``legal`` must not be empty)."""
    if not legal:
        raise ValueError("no legal action to choose from")
    start = time.perf_counter()
    why = ""
    action = -1
    iterations, search_seconds = 0, 0.0
    if view is None:
        why = "no rules view"
    else:
        try:
            bot = load_bot(settings.name)
            action = bot.choose(view, list(legal), settings)
            last = getattr(bot, "last", None)
            iterations = int(getattr(last, "iterations", 0) or 0)
            search_seconds = float(getattr(last, "seconds", 0.0) or 0.0)
        except Exception as e:
            log.exception(
                "bot %r raised on seat %s; playing a fallback move", settings.name, view.seat
            )
            why = f"raised {type(e).__name__}"
        else:
            if isinstance(action, bool) or not isinstance(action, int) or action not in legal:
                log.error(
                    "bot %r answered %r, not a legal action of seat %s; playing a fallback move",
                    settings.name,
                    action,
                    view.seat,
                )
                why = "illegal action"
    if why:
        action = fallback_action(view, legal)
    return Decision(
        action, settings.name, time.perf_counter() - start, why, iterations, search_seconds
    )
