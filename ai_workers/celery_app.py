"""The Celery app of the AI workers: a queue of move requests (``ascension.moves``) and one of
analyses (``ascension.analyses``: hints and review searches), CPU-bound tasks.

Tasks are acknowledged after they ran (``acks_late``), one task is reserved at a time per
process (prefetch 1), results are not stored. A task whose pool process died or hit its hard
time limit is acknowledged, not delivered again (``reject_on_worker_lost`` off): it is
dead-lettered by ``ai_workers.tasks`` and its move is sent once more as a fallback-only move.
The broker is ``CELERY_BROKER_URL`` (Redis by default; any Celery broker works).

Seat tokens travel in the message body only: task headers carry a redacted ``kwargsrepr`` and
the worker's log handlers mask any ``token`` value that reaches a log line (Celery's pool logs
message bodies at DEBUG).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from celery import Celery, signals

from ai_workers import broker, config
from engine_service import redis_urls

TASK_MODULES = ["ai_workers.tasks", "ai_workers.analysis_task"]  # choose_move, analyze_position
# "token": "...", 'token': '...', token=..., token: "..." (protobuf text), admin_token alike.
_TOKEN = re.compile(r"""(\b(?:admin_)?token\\?["']?\s*[:=]\s*\\?["']?)([^"'\\\s,}]+)""")


def redact(text: str) -> str:
    return _TOKEN.sub(r"\1<redacted>", text)


class RedactTokens(logging.Filter):
    """Masks token values in a record's formatted message (and traceback text)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def install_redaction(logger: logging.Logger) -> None:
    for handler in logger.handlers:
        if not any(isinstance(f, RedactTokens) for f in handler.filters):
            handler.addFilter(RedactTokens())


@signals.after_setup_logger.connect  # type: ignore[untyped-decorator]
@signals.after_setup_task_logger.connect  # type: ignore[untyped-decorator]
@signals.celeryd_after_setup.connect  # type: ignore[untyped-decorator]
def _redact_worker_logs(logger: Any = None, **_: Any) -> None:
    """On the handlers Celery sets up, and on the root logger's once the worker is set up
    (with LOG_FORMAT=json our own logging replaces Celery's and after_setup_logger is not
    sent)."""
    if isinstance(logger, logging.Logger):
        install_redaction(logger)
    install_redaction(logging.getLogger())


def make_app(cfg: config.WorkerConfig | None = None) -> Any:
    cfg = cfg or config.load()
    # The task modules import ``app`` from here; a worker imports them as it starts (include).
    kombu_url, broker_conf = redis_urls.celery_broker(cfg.broker_url)  # (redis+sentinel://)
    app = Celery("ascension-worker", broker=kombu_url, set_as_current=True, include=TASK_MODULES)
    app.conf.update(broker_conf)
    if redis_urls.is_sentinel(cfg.broker_url):
        app.conf.broker_transport = broker.NAME  # (kombu's, repaired for failovers)
    app.conf.update(
        task_default_queue=config.QUEUE,
        task_routes={
            config.TASK_NAME: {"queue": config.QUEUE},
            config.ANALYSIS_TASK_NAME: {"queue": config.ANALYSIS_QUEUE},
        },
        task_acks_late=True,
        task_reject_on_worker_lost=False,
        task_acks_on_failure_or_timeout=True,
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
        broker_transport_options={
            **broker_conf.get("broker_transport_options", {}),
            "visibility_timeout": cfg.visibility_timeout,
        },
    )
    app.conf.worker_config = cfg
    return app


app = make_app()
