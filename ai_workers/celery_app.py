"""The Celery app of the AI workers: one queue of move requests, CPU-bound tasks.

Tasks are acknowledged after they ran (``acks_late``; a worker lost mid-task puts the task
back), one task is reserved at a time per process (prefetch 1), results are not stored. The
broker is ``CELERY_BROKER_URL`` (Redis by default; any Celery broker works).
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from ai_workers import config


def make_app(cfg: config.WorkerConfig | None = None) -> Any:
    cfg = cfg or config.load()
    app = Celery("ascension-worker", broker=cfg.broker_url, set_as_current=True)
    app.conf.update(
        task_default_queue=config.QUEUE,
        task_routes={config.TASK_NAME: {"queue": config.QUEUE}},
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        task_soft_time_limit=cfg.soft_time_limit,
        task_time_limit=cfg.time_limit,
        worker_prefetch_multiplier=1,
        worker_concurrency=cfg.concurrency,
        worker_pool="prefork",
        worker_hijack_root_logger=True,
        worker_send_task_events=False,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": cfg.visibility_timeout},
    )
    app.conf.worker_config = cfg
    return app


app = make_app()
import ai_workers.tasks  # noqa: E402,F401  (registers the task on ``app``)
