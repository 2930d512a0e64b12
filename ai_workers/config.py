"""The worker's settings, from environment variables (see docs/operations.md and
docs/reliability.md)."""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from ai_workers.bots.settings import MAX_TIME_MS
from engine_service.config_checks import broker_url_problem

QUEUE = "ascension.moves"
TASK_NAME = "ascension.choose_move"
# Hints and review searches: a queue and Celery processes of their own (ai_workers/cli.py),
# so that an AI move never waits behind one.
ANALYSIS_QUEUE = "ascension.analyses"
ANALYSIS_TASK_NAME = "ascension.analyze_position"
BROKER_SETTINGS = ("CELERY_BROKER_URL", "CELERY_BROKER_URL_FILE")  # either names the broker


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


def _float(env: Mapping[str, str], key: str, default: float) -> float:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{key}={raw!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{key}={raw!r} is not a finite number")
    return value


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
    # Bots are untrusted code with a deadline (ai_workers/supervisor.py):
    decision_grace: float  # a decision ends within the seat's budget + this many seconds
    bot_load_seconds: float  # starting a bot process and loading a bot into it
    slots_per_bot: int  # of this node's slots, one plug-in bot may hold; 0 = all but one
    quarantine_failures: int  # misbehaviours in a row after which a bot is not asked (0 = never)
    quarantine_seconds: float  # how long a misbehaving bot is quarantined / held to one slot
    analysis_concurrency: int = 1  # processes of the analyses node; 0 = no analyses here
    analysis_nice: int = 10  # their CPU priority below the moves' (os.nice)

    @property
    def node(self) -> str:
        """The node name of a worker started by this process (two workers on one host differ
        by their process ids; in containers, by their host names)."""
        return self.node_name.replace("%h", socket.gethostname()).replace("%p", str(os.getpid()))

    @property
    def bot_slots(self) -> int:
        """Slots one plug-in bot name may hold on this node: one is left to the others."""
        if self.slots_per_bot > 0:
            return min(self.slots_per_bot, self.concurrency)
        return max(1, self.concurrency - 1)


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
        decision_grace=_float(env, "WORKER_DECISION_GRACE_SECONDS", 5.0),
        bot_load_seconds=_float(env, "WORKER_BOT_LOAD_SECONDS", 30.0),
        slots_per_bot=_int(env, "WORKER_SLOTS_PER_BOT", 0),
        quarantine_failures=_int(env, "WORKER_BOT_QUARANTINE_FAILURES", 3),
        quarantine_seconds=_float(env, "WORKER_BOT_QUARANTINE_SECONDS", 300.0),
        analysis_concurrency=_int(env, "WORKER_ANALYSIS_CONCURRENCY", 1),
        analysis_nice=_int(env, "WORKER_ANALYSIS_NICE", 10),
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
    if not 0 < cfg.decision_grace <= 60:
        problems.append("WORKER_DECISION_GRACE_SECONDS must be above 0 and at most 60")
    if not 0 < cfg.bot_load_seconds <= 600:
        problems.append("WORKER_BOT_LOAD_SECONDS must be above 0 and at most 600")
    if cfg.slots_per_bot < 0:
        problems.append("WORKER_SLOTS_PER_BOT must be 0 (all slots but one) or more")
    if cfg.quarantine_failures < 0:
        problems.append("WORKER_BOT_QUARANTINE_FAILURES must be 0 (never) or more")
    if cfg.quarantine_seconds < 0:
        problems.append("WORKER_BOT_QUARANTINE_SECONDS must not be negative")
    if cfg.analysis_concurrency < 0:
        problems.append("WORKER_ANALYSIS_CONCURRENCY must be 0 (no analyses on this worker) or more")
    if not 0 <= cfg.analysis_nice <= 19:
        problems.append("WORKER_ANALYSIS_NICE must be 0 to 19")
    bad_broker = broker_url_problem(cfg.broker_url)  # as the engine checks its own
    if bad_broker:
        problems.append(bad_broker)
    if problems:
        raise ValueError("; ".join(problems))
    return cfg
