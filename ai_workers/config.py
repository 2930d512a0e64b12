"""The worker's settings, from environment variables (see docs/bots.md)."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from ai_workers.bots.settings import MAX_TIME_MS

QUEUE = "ascension.moves"
TASK_NAME = "ascension.choose_move"


def _int(env: Mapping[str, str], key: str, default: int) -> int:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{key}={raw!r} is not an integer") from None


def _secret(env: Mapping[str, str], key: str) -> str:
    """``key``'s value, or the content of the file ``key_FILE`` names (a mounted secret: the
    broker URL carries the broker's password)."""
    raw = env.get(key, "").strip()
    path = env.get(key + "_FILE", "").strip()
    if raw and path:
        raise ValueError(f"set {key} or {key}_FILE, not both")
    if path:
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError as e:
            raise ValueError(f"{key}_FILE: cannot read {path!r}: {e.strerror}") from None
    return raw


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    broker_url: str
    engine_address: str
    metrics_port: int
    concurrency: int
    log_level: str
    node_name: str  # Celery node name; "%h" is the host name, "%p" the worker's process id
    soft_time_limit: int  # seconds: above the longest search budget allowed (MAX_TIME_MS)
    time_limit: int
    visibility_timeout: int  # Redis broker: an unacknowledged task is redelivered after this
    max_retries: int

    @property
    def node(self) -> str:
        """The node name of a worker started by this process (two workers on one host differ
        by their process ids; in containers, by their host names)."""
        return self.node_name.replace("%h", socket.gethostname()).replace("%p", str(os.getpid()))


def load(env: Mapping[str, str] | None = None) -> WorkerConfig:
    env = os.environ if env is None else env
    soft = _int(env, "WORKER_SOFT_TIME_LIMIT", MAX_TIME_MS // 1000 + 15)
    hard = _int(env, "WORKER_TIME_LIMIT", soft + 15)
    cfg = WorkerConfig(
        broker_url=_secret(env, "CELERY_BROKER_URL") or "redis://localhost:6379/0",
        engine_address=env.get("ENGINE_ADDRESS", "").strip() or "localhost:50051",
        metrics_port=_int(env, "WORKER_METRICS_PORT", 9101),
        concurrency=_int(env, "WORKER_CONCURRENCY", os.cpu_count() or 1),
        log_level=(env.get("LOG_LEVEL", "").strip() or "INFO").upper(),
        node_name=env.get("WORKER_NODE_NAME", "").strip() or "ascension-%p@%h",
        soft_time_limit=soft,
        time_limit=hard,
        visibility_timeout=_int(env, "WORKER_VISIBILITY_TIMEOUT", hard + 30),
        max_retries=_int(env, "WORKER_MAX_RETRIES", 3),
    )
    problems = []
    if not 0 <= cfg.metrics_port <= 65535:
        problems.append("WORKER_METRICS_PORT must be 0..65535 (0 disables)")
    if cfg.concurrency < 1:
        problems.append("WORKER_CONCURRENCY must be at least 1")
    if cfg.log_level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        problems.append("LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL")
    if not MAX_TIME_MS / 1000 < cfg.soft_time_limit < cfg.time_limit:
        problems.append(
            f"need {MAX_TIME_MS // 1000} (the longest search) < WORKER_SOFT_TIME_LIMIT"
            " < WORKER_TIME_LIMIT"
        )
    if cfg.visibility_timeout <= cfg.time_limit:
        problems.append("WORKER_VISIBILITY_TIMEOUT must be above WORKER_TIME_LIMIT")
    if not 0 <= cfg.max_retries <= 20:
        problems.append("WORKER_MAX_RETRIES must be 0..20")
    if problems:
        raise ValueError("; ".join(problems))
    return cfg
