"""``ascension.choose_move``: the Celery task around :func:`ai_workers.runner.play_move`.

- A transient engine error (UNAVAILABLE, DEADLINE_EXCEEDED) is retried a bounded number of
  times with backoff; a stale move or a lost race is dropped by ``play_move`` itself; any
  other error fails the task (counted), and the engine's sweeper re-dispatches the move later.
- One bot name holds at most its share of this node's slots while it decides
  (``ai_workers/slots.py``): a move of a bot at its cap (``runner.BotBusy``) is sent back to
  the queue with a short delay (``deferred``), so moves of other bots find a free slot.
- Dead letters: a task whose pool process died or that hit its hard time limit is not
  delivered again (it is acknowledged): the main worker process counts it
  (``ascension_worker_dead_letters_total``), logs it at WARNING and sends the move once more
  as *fallback-only* (the bot is not asked). A fallback-only move that dies too is dropped:
  the engine plays its own fallback after ``ENGINE_AI_MAX_DISPATCHES`` dispatches. A message
  the broker delivers again is dead-lettered the same way when it arrives, and plays the
  fallback, only if a worker had started it and never finished (``ai_workers/handoff.py``):
  the moves a worker hands back when it shuts down cleanly (a restart) are played as usual.
- Every message this worker publishes (retries, deferrals, fallback-only moves) carries a
  ``kwargsrepr`` without the seat token.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from celery import signals
from celery.exceptions import TimeLimitExceeded, WorkerLostError

from ai_workers import handoff, metrics, runner
from ai_workers.celery_app import app
from ai_workers.config import QUEUE, TASK_NAME
from ai_workers.engine_client import TransientEngineError

log = logging.getLogger("ascension.worker.tasks")
_cfg = app.conf.worker_config
DEFER_SECONDS = 1.0  # a capped bot's move comes back after 1-2 s
DEFERRED = runner.DEFERRED
WORKER_LOST, TIME_LIMIT, REDELIVERED = metrics.DEAD_LETTER_REASONS
# A start mark outlives the broker's redelivery of its message and the task's time limit.
starts = handoff.Starts(app, _cfg.visibility_timeout + _cfg.time_limit + 60)


def bot_name(payload: dict[str, Any]) -> str:
    bot = payload.get("bot")
    return str(bot.get("name", "")) if isinstance(bot, dict) else ""


def publish(payload: dict[str, Any], task_id: str, countdown: float = 0.0) -> None:
    choose_move.apply_async(
        kwargs=payload,
        task_id=task_id,
        queue=QUEUE,
        countdown=countdown or None,
        argsrepr="()",
        kwargsrepr=runner.describe(payload),
    )


def dead_letter(payload: dict[str, Any], task_id: str, reason: str) -> bool:
    """Count and log a move that must not be delivered again; returns whether its
    fallback-only move should be played (not when the fallback itself was lost)."""
    metrics.dead_letters.labels(reason).inc()
    bot = bot_name(payload)
    again = not payload.get("fallback_only")
    log.warning(
        "move %s of game %s seat %s v%s (bot %r) dead-lettered (%s): not delivered again; %s",
        task_id,
        payload.get("game_id"),
        payload.get("seat"),
        payload.get("version"),
        bot,
        reason,
        "the fallback move plays instead"
        if again
        else "it was already the fallback: the engine plays its own after its re-dispatches",
    )
    if bot and reason != REDELIVERED:
        runner.bot_records().misbehaved(bot, f"{runner.DEAD_LETTER}: {reason}")
    return again


@app.task(  # type: ignore[untyped-decorator]
    bind=True,
    name=TASK_NAME,
    acks_late=True,
    reject_on_worker_lost=False,
    ignore_result=True,
    autoretry_for=(TransientEngineError,),
    max_retries=_cfg.max_retries,
    retry_backoff=1,
    retry_backoff_max=10,
    retry_jitter=True,
    soft_time_limit=_cfg.soft_time_limit,
    time_limit=_cfg.time_limit,
)
def choose_move(self: Any, **payload: Any) -> str:
    request = self.request
    redelivered = bool((request.delivery_info or {}).get("redelivered"))
    if redelivered and not payload.get("fallback_only"):
        if starts.started(request.id) is False:
            log.info("move %s of game %s v%s delivered again without having started (handed "
                     "back by a worker that stopped): played as usual", request.id,
                     payload.get("game_id"), payload.get("version"))  # fmt: skip
        else:  # started and never finished (its worker died), or the broker cannot say
            dead_letter(payload, request.id, REDELIVERED)
            payload = {**payload, "fallback_only": True}
    try:
        with starts.running(request.id):
            return runner.play_move(**payload)
    except runner.BotBusy as busy:
        log.info("%s: move of game %s v%s deferred", busy, payload.get("game_id"),
                 payload.get("version"))  # fmt: skip
        publish(payload, request.id, DEFER_SECONDS * (1 + random.random()))
        metrics.outcomes.labels(DEFERRED).inc()
        return DEFERRED


@signals.worker_process_init.connect  # type: ignore[untyped-decorator]
def _pool_process_started(**_: Any) -> None:
    """A SIGTERM to the whole process group stops the worker warm, its moves finished."""
    handoff.take_sigterm_from_the_worker_only()


@signals.before_task_publish.connect  # type: ignore[untyped-decorator]
def _redact_headers(
    sender: Any = None, body: Any = None, headers: dict[str, Any] | None = None, **_: Any
) -> None:
    """Celery's own re-sends (autoretry) rebuild ``kwargsrepr`` from the kwargs: mask it."""
    if sender != TASK_NAME or headers is None:
        return
    kwargs = body[1] if isinstance(body, tuple | list) and len(body) > 1 else {}
    headers["argsrepr"] = "()"
    headers["kwargsrepr"] = runner.describe(kwargs if isinstance(kwargs, dict) else {})


@signals.task_retry.connect  # type: ignore[untyped-decorator]
def _count_retry(sender: Any = None, **_: Any) -> None:
    if getattr(sender, "name", None) == TASK_NAME:
        metrics.task_retries.inc()


@signals.task_failure.connect  # type: ignore[untyped-decorator]
def _on_failure(
    sender: Any = None,
    task_id: str | None = None,
    exception: BaseException | None = None,
    kwargs: dict[str, Any] | None = None,
    **_: Any,
) -> None:
    if getattr(sender, "name", None) != TASK_NAME:
        return
    metrics.task_failures.inc()
    if isinstance(exception, WorkerLostError | TimeLimitExceeded):
        # In the main worker process: the pool process is gone, the message acknowledged.
        reason = TIME_LIMIT if isinstance(exception, TimeLimitExceeded) else WORKER_LOST
        payload = dict(kwargs or {})
        if dead_letter(payload, task_id or "", reason):
            try:
                publish({**payload, "fallback_only": True}, f"{task_id}:fallback")
            except Exception:
                log.exception("could not send the fallback move of %s", task_id)
