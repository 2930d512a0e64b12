"""Run a bot on one decision, never letting it stop the game.

A bot that cannot be loaded, raises, or answers an action that is not legal is logged, and a
legal fallback move is played instead: the heuristic policy's choice on the same view (or,
should even that fail, the first legal action, which is ending the turn or declining when
those are allowed).

:func:`decide` runs the bot in this process (the bot host does, and the benchmarks);
:func:`supervised_decide` is what a worker does: it asks the process's bot host
(``ai_workers.supervisor``) under the seat's deadline, and plays the fallback itself when the
bot overruns, kills its process or answers nonsense (logged at WARNING, counted by the caller).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import best_action
from ai_workers.bots.registry import load_bot
from ai_workers.bots.settings import BotSettings
from ai_workers.supervisor import BotFailed, BotHost
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


def deadline_seconds(settings: BotSettings, grace: float) -> float:
    """How long a decision may take: the seat's budget plus the grace."""
    return settings.budget_ms / 1000 + grace


def supervised_decide(
    view: rules.View | None,
    rules_view: bytes,
    legal: list[int],
    settings: BotSettings,
    host: BotHost,
    grace: float,
    where: str = "",
) -> Decision:
    """The bot's move, asked of ``host`` within ``deadline_seconds``, or a legal fallback.
    ``where`` names the decision in log lines (game, seat, version)."""
    if not legal:
        raise ValueError("no legal action to choose from")
    start = time.perf_counter()
    if view is None:
        return Decision(fallback_action(None, legal), settings.name, 0.0, "no rules view")
    seconds = deadline_seconds(settings, grace)
    try:
        a = host.choose(settings.to_payload(), rules_view, list(legal), seconds)
    except BotFailed as e:
        log.warning(
            "bot %r %s: %s (deadline %.1fs = budget %.1fs + grace %.1fs); playing a fallback move",
            settings.name,
            where or f"seat {view.seat}",
            e,
            seconds,
            settings.budget_ms / 1000,
            grace,
        )
        return Decision(
            fallback_action(view, legal), settings.name, time.perf_counter() - start, e.reason
        )
    if a.action not in legal:
        log.error(
            "bot %r answered %r, not a legal action of seat %s; playing a fallback move",
            settings.name,
            a.action,
            view.seat,
        )
        return Decision(
            fallback_action(view, legal),
            settings.name,
            time.perf_counter() - start,
            "illegal action",
        )
    return Decision(
        a.action,
        settings.name,
        time.perf_counter() - start,
        a.fallback,
        a.iterations,
        a.search_seconds,
    )
