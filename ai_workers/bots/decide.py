"""Run a bot on one decision, never letting it stop the game.

A bot that cannot be loaded, raises, or answers an action that is not legal is logged, and a
legal fallback move is played instead: the heuristic policy's choice on the same view (or,
should even that fail, the first legal action, which is ending the turn or declining when
those are allowed).

:func:`decide` runs the bot in this process: the bot host does (``ai_workers/supervisor.py``,
which runs it under the seat's deadline for a worker), and the benchmarks do, through
:func:`ask` on the built-in bots' instances of their own. A bot's traceback is logged once per
kind of failure (its exception type and the line that raised it) and bot process; the same
failure again is counted: three in a row quarantine the bot, and the line that says so gives
the count and the latest reason (``supervisor.record_outcome``); a bot asked again after its
quarantine that fails the same way gets one line summing up the repeats, at most every
``REPEAT_LOG_SECONDS``.
"""

from __future__ import annotations

import contextlib
import logging
import operator
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ai_workers.bots.base import Bot
from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import best_action
from ai_workers.bots.registry import load_bot
from ai_workers.bots.settings import BotSettings
from engine_service import rules

log = logging.getLogger("ascension.worker.decide")

# Why a fallback move was played instead of the bot's (the `reason` label of
# ascension_worker_fallback_moves_total; the supervisor adds its own: deadline, ...).
BOT_RAISED = "bot_raised"
ILLEGAL_ACTION = "illegal_action"
NO_RULES_VIEW = "no_rules_view"
LOAD_FAILED = "load_failed"
REPEAT_LOG_SECONDS = 60.0
MAX_REASON = 200  # SubmitActionRequest.fallback_reason: at most 200 printable characters


@dataclass(frozen=True, slots=True)
class Decision:
    action: int
    bot: str  # the bot asked
    seconds: float  # time spent deciding (the fallback included)
    fallback: str = ""  # why the fallback move was played (a reason above), "" for the bot's own
    iterations: int = 0  # search iterations, when the bot reports them
    search_seconds: float = 0.0
    detail: str = ""  # more on the fallback, safe to show every player (never the bot's message)

    @property
    def fallback_text(self) -> str:
        """The fallback's reason as the engine stores it with the game: ``reason: detail``,
        on one line of at most ``MAX_REASON`` characters (what the engine accepts)."""
        if not self.fallback:
            return ""
        text = f"{self.fallback}: {self.detail}" if self.detail else self.fallback
        return "".join(c if c.isprintable() else " " for c in text)[:MAX_REASON]


class _Repeats:
    """Which failures of which bots this process has logged with their traceback, and how
    many times each came again since its last line."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._seen: dict[tuple[str, str, str], list[float]] = {}  # -> [count, last line at]

    def log(self, bot: str, e: BaseException, what: str) -> None:
        """Log that ``bot`` ``what`` (e.g. "raised on seat 1") with ``e``'s traceback, or
        count it when the same failure was logged before."""
        frames = traceback.extract_tb(e.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
        key = (bot, type(e).__name__, where)
        seen = self._seen.get(key)
        now = self._clock()
        if seen is None:
            self._seen[key] = [0, now]
            log.error(
                "bot %r %s; playing a fallback move (the same failure again is counted, not "
                "logged in full)",
                bot,
                what,
                exc_info=e,
            )
            return
        seen[0] += 1
        if now - seen[1] >= REPEAT_LOG_SECONDS:
            log.error(
                "bot %r raised %s at %s again, %d time(s) in the last %.0fs (traceback above); "
                "playing fallback moves",
                bot,
                type(e).__name__,
                where,
                seen[0],
                now - seen[1],
            )
            seen[0], seen[1] = 0, now


_repeats = _Repeats()


def log_failure(bot: str, e: BaseException, what: str) -> None:
    """Log that ``bot`` ``what`` ("raised on seat 1", "failed to load") with the traceback of
    ``e`` the first time, counted and summed up the next times."""
    _repeats.log(bot, e, what)


def fallback_action(view: rules.View | None, legal: list[int]) -> int:
    if view is not None:
        try:
            a = best_action(view.state, legal, knowledge(view.state.T))
            if a in legal:
                return a
        except Exception:
            log.exception("the fallback policy failed too; playing the first legal action")
    return legal[0]


def ask(
    bot: Bot, view: rules.View, legal: list[int], settings: BotSettings
) -> tuple[int, str, str]:
    """(action, fallback reason, detail): the bot's answer, or a legal fallback move when it
    raised or answered something that is not one of ``legal`` (logged)."""
    try:
        action: Any = bot.choose(view, list(legal), settings)
    except Exception as e:
        log_failure(settings.name, e, f"raised on seat {view.seat}")
        return fallback_action(view, legal), BOT_RAISED, type(e).__name__
    if not isinstance(action, bool):
        with contextlib.suppress(TypeError):
            action = operator.index(action)  # an int, or int-like (a NumPy integer)
    if isinstance(action, bool) or not isinstance(action, int) or action not in legal:
        log.error(
            "bot %r answered %r, not a legal action of seat %s; playing a fallback move",
            settings.name,
            action,
            view.seat,
        )
        return fallback_action(view, legal), ILLEGAL_ACTION, ""
    return action, "", ""


def decide(
    view: rules.View | None,
    legal: list[int],
    settings: BotSettings,
    load: Callable[[str], Bot] = load_bot,
) -> Decision:
    """The bot's move, or a legal fallback (``legal`` must not be empty); ``load`` gives the
    bot of ``settings.name``."""
    if not legal:
        raise ValueError("no legal action to choose from")
    start = time.perf_counter()
    if view is None:
        return Decision(legal[0], settings.name, time.perf_counter() - start, NO_RULES_VIEW)
    try:
        bot = load(settings.name)
    except Exception as e:
        log_failure(settings.name, e, "failed to load")
        detail = f"{type(e).__name__}: {e}"[:200]
        action = fallback_action(view, legal)
        return Decision(action, settings.name, time.perf_counter() - start, LOAD_FAILED,
                        detail=detail)  # fmt: skip
    action, why, detail = ask(bot, view, legal, settings)
    iterations, search_seconds = 0, 0.0
    if not why:
        last = getattr(bot, "last", None)
        iterations = int(getattr(last, "iterations", 0) or 0)
        search_seconds = float(getattr(last, "seconds", 0.0) or 0.0)
    seconds = time.perf_counter() - start
    return Decision(action, settings.name, seconds, why, iterations, search_seconds, detail)
