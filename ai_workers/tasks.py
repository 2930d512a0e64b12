"""``ascension.choose_move``: the Celery task around :func:`ai_workers.runner.play_move`.

A transient engine error (UNAVAILABLE, DEADLINE_EXCEEDED) is retried a bounded number of
times with backoff; a stale move or a lost race is dropped by ``play_move`` itself; any other
error fails the task (counted), and the engine's sweeper re-dispatches the move later.
"""

from __future__ import annotations

from typing import Any

from celery import signals

from ai_workers import metrics
from ai_workers.celery_app import app
from ai_workers.config import TASK_NAME
from ai_workers.engine_client import TransientEngineError
from ai_workers.runner import play_move

_cfg = app.conf.worker_config


@app.task(  # type: ignore[untyped-decorator]
    name=TASK_NAME,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    autoretry_for=(TransientEngineError,),
    max_retries=_cfg.max_retries,
    retry_backoff=1,
    retry_backoff_max=10,
    retry_jitter=True,
    soft_time_limit=_cfg.soft_time_limit,
    time_limit=_cfg.time_limit,
)
def choose_move(**payload: Any) -> str:
    return play_move(**payload)


@signals.task_retry.connect  # type: ignore[untyped-decorator]
def _count_retry(sender: Any = None, **_: Any) -> None:
    if getattr(sender, "name", None) == TASK_NAME:
        metrics.task_retries.inc()


@signals.task_failure.connect  # type: ignore[untyped-decorator]
def _count_failure(sender: Any = None, **_: Any) -> None:
    if getattr(sender, "name", None) == TASK_NAME:
        metrics.task_failures.inc()
