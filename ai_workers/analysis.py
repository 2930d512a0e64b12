"""Hints for a seat (``AnalyzePosition``): one ISMCTS search on that seat's view, every legal
action with the visits it got and the seat's win probability after it, best first.

The engine sends the seat's rules view (``rules.View``: its own hand, the public board, every
hidden zone only as a multiset) and its legal actions; nothing else is read, so two positions
the seat cannot tell apart get the same analysis for the same seed and iteration count.
:func:`analyse_payload` is what the engine's local process pool runs (its return value is
the answer); the Celery task ``ascension.analyze_position`` (``ai_workers/analysis_task.py``)
runs it on a worker and hands the answer back with ``SubmitAnalysis``.
"""

from __future__ import annotations

import base64
import logging
import time
from typing import Any

from ai_workers.bots.evaluation import pool_left
from ai_workers.bots.ismcts import analyse
from ai_workers.bots.settings import BotSettings
from ai_workers.chances import scaled_error, shown
from engine_service import rules

log = logging.getLogger("ascension.worker.analysis")
BOT = "ismcts"


def analyse_view(
    view: rules.View,
    legal: list[int],
    budget_ms: int,
    iterations: int = 0,
    seed: int = 0,
    raw: bool = False,
) -> dict[str, Any]:
    """``{"candidates": [[action, visits, win_probability, [each seat's win probability],
    standard error], ...], "iterations", "seconds"}``, best first. The chances are the ones
    players are shown (:func:`ai_workers.chances.shown`); ``raw``: the search's own."""
    settings = BotSettings(name=BOT, iterations=iterations, time_ms=budget_ms, seed=seed)
    start = time.perf_counter()
    cands = analyse(view, list(legal), settings)
    s, seat = view.state, view.seat
    taken = 1.0 - pool_left(s)
    rows = []
    for c in cands:
        p, seats, se = c.win_probability, list(c.seat_win_probabilities), c.standard_error
        if not raw:
            # (an action the search did not try has no seat chances: the others share the rest)
            each = seats or [p if q == seat else (1.0 - p) / (s.n - 1) for q in range(s.n)]
            scaled = shown(each, s.first, taken)
            p_shown = scaled[seat]
            se, p = scaled_error(se, p, p_shown, taken), p_shown
            seats = scaled if seats else []
        rows.append([c.action, c.visits, p, seats, se])
    return {
        "candidates": rows,
        # every iteration starts with one of the seat's root actions
        "iterations": sum(c.visits for c in cands),
        "seconds": time.perf_counter() - start,
    }


def analyse_payload(
    view: str,
    legal: list[int],
    budget_ms: int,
    iterations: int = 0,
    seed: int = 0,
    expires_at: float = 0.0,
    **_: Any,
) -> dict[str, Any]:
    """The analysis a payload asks for (``view`` is the seat's rules view, base64). An
    expired request (the engine stopped waiting) is answered with an error, unsearched."""
    if expires_at and time.time() > expires_at:
        return {"candidates": [], "iterations": 0, "error": "expired before it started"}
    return analyse_view(
        rules.View.deserialize(base64.b64decode(view)),
        [int(a) for a in legal],
        int(budget_ms),
        int(iterations),
        int(seed),
    )
