"""The server's settings: environment variables, each mirrored by a flag of ``serve``.

docs/configuration.md documents this table; keep the two together.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class Option:
    env: str
    attr: str
    kind: Callable[[str], Any]
    default: Any
    help: str


OPTIONS: tuple[Option, ...] = (
    Option("REDIS_URL", "redis_url", str, "", "Redis URL; unset = games kept in process"),
    Option(
        "ENGINE_REDIS_MODE",
        "redis_mode",
        str,
        "standalone",
        "standalone, or cluster (REDIS_URL names any node of a Redis Cluster)",
    ),
    Option(
        "ENGINE_REDIS_WAIT_REPLICAS",
        "redis_wait_replicas",
        int,
        0,
        "replicas that must confirm each commit (Redis WAIT) before it is acknowledged",
    ),
    Option(
        "ENGINE_REDIS_WAIT_TIMEOUT_MS",
        "redis_wait_timeout_ms",
        int,
        1000,
        "how long a commit waits for those replicas",
    ),
    Option(
        "ENGINE_REDIS_RETRY_SECONDS",
        "redis_retry_seconds",
        float,
        5.0,
        "how long a call retries a dropped Redis connection before UNAVAILABLE",
    ),
    Option(
        "ENGINE_STORE_STARTUP_SECONDS",
        "store_startup_seconds",
        float,
        0.0,
        "at start, how long to wait for the store (0 = as long as it takes)",
    ),
    Option("ENGINE_HOST", "host", str, "0.0.0.0", "address to bind the gRPC port to"),
    Option("ENGINE_GRPC_PORT", "grpc_port", int, 50051, "gRPC port (0 = any free port)"),
    Option(
        "ENGINE_METRICS_PORT", "metrics_port", int, 9100, "Prometheus metrics port (0 disables)"
    ),
    Option(
        "CELERY_BROKER_URL",
        "celery_broker_url",
        str,
        "",
        "Celery broker for AI moves (default REDIS_URL)",
    ),
    Option("ENGINE_AI_DISPATCH", "ai_dispatch", str, "auto", "auto, celery, local or off"),
    Option(
        "ENGINE_ADVERTISE_ADDRESS",
        "advertise_address",
        str,
        "",
        "engine address given to AI workers",
    ),
    Option(
        "ENGINE_GAME_TTL_SECONDS",
        "game_ttl_seconds",
        int,
        86400,
        "how long a finished game is kept",
    ),
    Option(
        "ENGINE_IDLE_GAME_TTL_SECONDS",
        "idle_game_ttl_seconds",
        int,
        604800,
        "how long an unfinished game is kept after its last move",
    ),
    Option("ENGINE_SHUTDOWN_GRACE_SECONDS", "shutdown_grace_seconds", float, 20.0, "SIGTERM grace"),
    Option("ENGINE_SHUTDOWN_DRAIN_SECONDS", "shutdown_drain_seconds", float, 2.0, "NOT_SERVING before stopping"),
    Option("ENGINE_MAX_MESSAGE_BYTES", "max_message_bytes", int, 4194304, "max gRPC message size"),
    Option(
        "ENGINE_STREAM_MAXLEN",
        "stream_maxlen",
        int,
        16,
        "recent updates (and idempotency keys) kept per live game",
    ),
    Option(
        "ENGINE_WATCH_MAX_STREAMS",
        "watch_max_streams",
        int,
        20000,
        "WatchGame streams one replica serves at once",
    ),
    Option(
        "ENGINE_WATCH_MAX_STREAMS_PER_PEER",
        "watch_max_streams_per_peer",
        int,
        1000,
        "WatchGame streams one client address may hold open on a replica",
    ),
    Option(
        "ENGINE_LOCAL_AI_TARGET",
        "local_ai_target",
        str,
        "ai_workers.runner:play_move",
        "embedded AI",
    ),
    Option("ENGINE_LOCAL_AI_PROCESSES", "local_ai_processes", int, 1, "embedded AI processes"),
    Option(
        "ENGINE_AI_SWEEP_SECONDS", "ai_sweep_seconds", float, 30.0, "AI sweeper period (0 disables)"
    ),
    Option(
        "ENGINE_AI_STALL_SECONDS",
        "ai_stall_seconds",
        float,
        60.0,
        "re-dispatch AI moves older than this",
    ),
    Option(
        "ENGINE_REDIS_TIMEOUT_SECONDS", "redis_timeout_seconds", float, 5.0, "Redis socket timeout"
    ),
    Option("LOG_LEVEL", "log_level", str, "INFO", "DEBUG, INFO, WARNING, ERROR"),
)


@dataclass(frozen=True, slots=True)
class Settings:
    redis_url: str = ""
    redis_mode: str = "standalone"
    redis_wait_replicas: int = 0
    redis_wait_timeout_ms: int = 1000
    redis_retry_seconds: float = 5.0
    store_startup_seconds: float = 0.0
    host: str = "0.0.0.0"
    grpc_port: int = 50051
    metrics_port: int = 9100
    celery_broker_url: str = ""
    ai_dispatch: str = "auto"
    advertise_address: str = ""
    game_ttl_seconds: int = 86400
    idle_game_ttl_seconds: int = 604800
    shutdown_grace_seconds: float = 20.0
    shutdown_drain_seconds: float = 2.0
    max_message_bytes: int = 4194304
    stream_maxlen: int = 16
    watch_max_streams: int = 20000
    watch_max_streams_per_peer: int = 1000
    local_ai_target: str = "ai_workers.runner:play_move"
    local_ai_processes: int = 1
    ai_sweep_seconds: float = 30.0
    ai_stall_seconds: float = 60.0
    redis_timeout_seconds: float = 5.0
    log_level: str = "INFO"

    @property
    def broker_url(self) -> str:
        return self.celery_broker_url or self.redis_url

    @property
    def dispatch_mode(self) -> str:
        """celery, local or off: auto is celery when a broker is known, else local."""
        if self.ai_dispatch != "auto":
            return self.ai_dispatch
        return "celery" if self.broker_url else "local"

    def validate(self) -> None:
        problems = []
        if not 0 <= self.grpc_port <= 65535:
            problems.append("ENGINE_GRPC_PORT must be 0..65535")
        if not 0 <= self.metrics_port <= 65535:
            problems.append("ENGINE_METRICS_PORT must be 0..65535")
        if self.redis_mode not in ("standalone", "cluster"):
            problems.append("ENGINE_REDIS_MODE must be standalone or cluster")
        if self.redis_mode == "cluster" and not self.redis_url:
            problems.append("ENGINE_REDIS_MODE=cluster needs REDIS_URL (any node of the cluster)")
        if self.ai_dispatch not in ("auto", "celery", "local", "off"):
            problems.append("ENGINE_AI_DISPATCH must be auto, celery, local or off")
        if self.dispatch_mode == "celery" and not self.broker_url:
            problems.append("ENGINE_AI_DISPATCH=celery needs CELERY_BROKER_URL or REDIS_URL")
        for name, value in (
            ("ENGINE_GAME_TTL_SECONDS", self.game_ttl_seconds),
            ("ENGINE_IDLE_GAME_TTL_SECONDS", self.idle_game_ttl_seconds),
            ("ENGINE_WATCH_MAX_STREAMS", self.watch_max_streams),
            ("ENGINE_WATCH_MAX_STREAMS_PER_PEER", self.watch_max_streams_per_peer),
            ("ENGINE_REDIS_WAIT_TIMEOUT_MS", self.redis_wait_timeout_ms),
            ("ENGINE_MAX_MESSAGE_BYTES", self.max_message_bytes),
            ("ENGINE_STREAM_MAXLEN", self.stream_maxlen),
            ("ENGINE_LOCAL_AI_PROCESSES", self.local_ai_processes),
        ):
            if value < 1:
                problems.append(f"{name} must be at least 1")
        for name, fvalue in (
            ("ENGINE_SHUTDOWN_GRACE_SECONDS", self.shutdown_grace_seconds),
            ("ENGINE_SHUTDOWN_DRAIN_SECONDS", self.shutdown_drain_seconds),
            ("ENGINE_AI_SWEEP_SECONDS", self.ai_sweep_seconds),
            ("ENGINE_AI_STALL_SECONDS", self.ai_stall_seconds),
            ("ENGINE_REDIS_TIMEOUT_SECONDS", self.redis_timeout_seconds),
            ("ENGINE_REDIS_RETRY_SECONDS", self.redis_retry_seconds),
            ("ENGINE_STORE_STARTUP_SECONDS", self.store_startup_seconds),
            ("ENGINE_REDIS_WAIT_REPLICAS", float(self.redis_wait_replicas)),
        ):
            if fvalue < 0:
                problems.append(f"{name} must not be negative")
        if ":" not in self.local_ai_target:
            problems.append("ENGINE_LOCAL_AI_TARGET must be 'module:function'")
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            problems.append("LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL")
        if problems:
            raise ValueError("; ".join(problems))


def flag_name(opt: Option) -> str:
    return "--" + opt.attr.replace("_", "-")


def add_flags(parser: argparse.ArgumentParser) -> None:
    for opt in OPTIONS:
        parser.add_argument(
            flag_name(opt),
            dest=opt.attr,
            type=opt.kind,
            default=None,
            metavar=opt.env,
            help=f"{opt.help} (env {opt.env}, default {opt.default!r})",
        )


def load(env: Mapping[str, str] | None = None, flags: argparse.Namespace | None = None) -> Settings:
    """Flags win over environment variables, which win over the defaults."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for opt in OPTIONS:
        flag = getattr(flags, opt.attr, None) if flags is not None else None
        if flag is not None:
            values[opt.attr] = flag
            continue
        raw = env.get(opt.env, "").strip()
        if raw:
            try:
                values[opt.attr] = opt.kind(raw)
            except ValueError:
                raise ValueError(f"{opt.env}={raw!r} is not a valid {opt.kind.__name__}") from None
    assert {f.name for f in fields(Settings)} == {o.attr for o in OPTIONS}
    settings = Settings(**values)
    settings.validate()
    return settings
