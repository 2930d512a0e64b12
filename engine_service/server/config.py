"""The server's settings: environment variables, each mirrored by a flag of ``serve``.

Any variable may instead be given as ``<NAME>_FILE``: the path of a file holding the value
(secrets mounted as files: Redis and broker URLs with passwords, operator keys, AI token keys).
docs/configuration.md documents this table; keep the two together.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from engine_service import config_checks
from engine_service.server import tokens
from engine_service.server.analysis import AnalysisSettings
from engine_service.server.auth import (
    MIN_KEY_CHARS,
    SEEDS_ANYONE,
    SEEDS_OPERATOR,
    Access,
    parse_keys,
)
from engine_service.server.bots import MAX_TIME_MS
from engine_service.server.callers import DEFAULT_HEADER, Callers, parse_networks
from engine_service.server.limits import CallLimits, per_minute, per_second
from engine_service.server.review import ReviewSettings
from engine_service.server.tokens import AiCredentials
from engine_service.tls_files import DEFAULT_RELOAD_SECONDS


def boolean(raw: str) -> bool:
    v = raw.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(raw)


boolean.__name__ = "boolean (true/false)"


@dataclass(frozen=True, slots=True)
class Option:
    env: str
    attr: str
    kind: Callable[[str], Any]
    default: Any
    help: str
    secret: bool = False  # never printed; prefer <NAME>_FILE


OPTIONS: tuple[Option, ...] = (
    Option("REDIS_URL", "redis_url", str, "", "Redis URL (redis+sentinel://: a primary Sentinel names); unset = games kept in process"),
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
        "ENGINE_REDIS_CLIENT",
        "redis_client",
        str,
        "hand",
        "the store's Redis client: hand (its own connection layer) or redis-py",
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
    Option(
        "ENGINE_STORE_PROBE_SECONDS",
        "store_probe_seconds",
        float,
        10.0,
        "how often each server process PINGs the store (the gauge ascension_store_up)",
    ),
    Option(
        "ENGINE_HOST",
        "host",
        str,
        "127.0.0.1",
        "address the gRPC and metrics ports bind to (0.0.0.0: every interface)",
    ),
    Option(
        "ENGINE_EVENT_LOOP",
        "event_loop",
        str,
        "auto",
        "auto (uvloop when installed), uvloop or asyncio",
    ),
    Option(
        "ENGINE_PROCESSES",
        "processes",
        int,
        1,
        "server processes sharing the gRPC port (SO_REUSEPORT); more than 1 needs REDIS_URL",
    ),
    Option("ENGINE_GRPC_PORT", "grpc_port", int, 50051, "gRPC port (0 = any free port)"),
    Option(
        "ENGINE_METRICS_PORT", "metrics_port", int, 9100, "Prometheus metrics port (0 disables)"
    ),
    Option(
        "CELERY_BROKER_URL",
        "celery_broker_url",
        str,
        "",
        "Celery broker for AI moves (default REDIS_URL, unless ENGINE_REDIS_MODE=cluster)",
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
        8,
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
        "ENGINE_WATCH_REBUILDS_PER_MINUTE",
        "watch_rebuilds_per_minute",
        int,
        60,
        "WatchGame histories older than the store's window rebuilt per minute for one client "
        "address (0 = no limit)",
    ),
    Option(
        "ENGINE_MAX_PENDING_CALLS",
        "max_pending_calls",
        int,
        20000,
        "calls arrived and not yet started; past it gRPC cancels new ones",
    ),
    Option(
        "ENGINE_LOCAL_AI_TARGET",
        "local_ai_target",
        str,
        "ai_workers.runner:play_move",
        "embedded AI",
    ),
    Option("ENGINE_LOCAL_AI_PROCESSES", "local_ai_processes", int, 1, "embedded AI processes"),
    Option("ENGINE_LOCAL_ANALYSIS_PROCESSES", "local_analysis_processes", int, 1, "embedded processes for hints and review searches"),
    Option(
        "ENGINE_AI_SWEEP_SECONDS", "ai_sweep_seconds", float, 30.0, "AI sweeper period (0 disables)"
    ),
    Option(
        "ENGINE_CLOCK_SWEEP_SECONDS",
        "clock_sweep_seconds",
        float,
        0.5,
        "how often the clocks are checked (a timed-out seat is played for within this)",
    ),
    Option(
        "ENGINE_AI_STALL_SECONDS",
        "ai_stall_seconds",
        float,
        60.0,
        "re-dispatch AI moves older than this",
    ),
    Option(
        "ENGINE_AI_MAX_DISPATCHES",
        "ai_max_dispatches",
        int,
        3,
        "after this many unanswered dispatches the engine plays the first legal action (0 = never)",
    ),
    Option(
        "ENGINE_REDIS_TIMEOUT_SECONDS", "redis_timeout_seconds", float, 5.0, "Redis socket timeout"
    ),
    Option("LOG_LEVEL", "log_level", str, "INFO", "DEBUG, INFO, WARNING, ERROR"),
    # -- security (docs/security.md) --
    Option("ENGINE_TLS_CERT_FILE", "tls_cert_file", str, "", "PEM certificate (chain) of the gRPC port; unset = plaintext"),
    Option("ENGINE_TLS_KEY_FILE", "tls_key_file", str, "", "PEM private key of ENGINE_TLS_CERT_FILE"),
    Option("ENGINE_TLS_CLIENT_CA_FILE", "tls_client_ca_file", str, "", "PEM CA bundle: clients must present a certificate it signed (mTLS)"),
    Option("ENGINE_TLS_RELOAD_SECONDS", "tls_reload_seconds", float, DEFAULT_RELOAD_SECONDS, "how often the TLS files are checked for renewed ones (0 = read once, at start)"),
    Option("ENGINE_OPERATOR_KEYS", "operator_keys", str, "", "operator keys (comma or newline separated); unset = open server", secret=True),
    Option("ENGINE_PUBLIC_CREATE", "public_create", boolean, False, "with operator keys: CreateGame needs none"),
    Option("ENGINE_CALLER_SEEDS", "caller_seeds", str, SEEDS_OPERATOR, "who may choose the seed of a game with a human seat: operator or anyone"),
    Option("ENGINE_LIMIT_CREATE_PER_MINUTE", "limit_create_per_minute", int, 0, "CreateGame calls per minute per peer (0 = no limit)"),
    Option("ENGINE_LIMIT_SUBMIT_PER_SECOND", "limit_submit_per_second", int, 0, "SubmitAction calls per second per peer (0 = no limit)"),
    Option("ENGINE_MAX_LIVE_GAMES", "max_live_games", int, 10000, "games not over the store may hold (0 = no cap)"),
    Option("ENGINE_TRUSTED_PROXIES", "trusted_proxies", str, "", "proxies (comma-separated CIDRs) whose client address header the per-caller limits key on; unset = the peer address"),
    Option("ENGINE_CLIENT_ADDRESS_HEADER", "client_address_header", str, DEFAULT_HEADER, "the header the trusted proxies set (the right-most address not a trusted proxy is the caller's)"),
    Option("ENGINE_GATEWAY_KEYS", "gateway_keys", str, "", "keys of the browser gateways (comma or newline separated): a call with one counts as the client address it names", secret=True),
    Option("ENGINE_AI_TOKEN_KEYS", "ai_token_keys", str, "", "HMAC keys of AI move credentials (first signs); unset = one per process", secret=True),
    Option("ENGINE_AI_CREDENTIAL_TTL_SECONDS", "ai_credential_ttl_seconds", float, 900.0, "lifetime of an AI move credential"),
    Option("ENGINE_ANALYSIS_MAX_BUDGET_MS", "analysis_max_budget_ms", int, 2000, "cap of an AnalyzePosition search's time (0 = no hints)"),
    Option("ENGINE_ANALYSIS_PER_MINUTE", "analysis_per_minute", int, 6, "AnalyzePosition calls per minute per seat (0 = no limit)"),
    Option("ENGINE_ANALYSIS_MAX_IN_FLIGHT", "analysis_max_in_flight", int, 32, "analyses one server process waits for at once (0 = no cap)"),
    Option("ENGINE_ANALYSIS_MAX_ITERATIONS", "analysis_max_iterations", int, 0, "search iterations of an analysis (0 = the time budget alone)"),
    Option("ENGINE_ANALYSIS_GRACE_SECONDS", "analysis_grace_seconds", float, 5.0, "waited beyond an analysis's budget for the workers' answer"),
    Option("ENGINE_REFUSAL_PAUSE_SECONDS", "refusal_pause_seconds", float, 1.0, "how long a hint or review refused by the caller's own limits waits for its answer"),
    # -- game reviews (ReviewGame; docs/bots.md, "Game review") --
    Option("ENGINE_REVIEW_MAX_BUDGET_MS", "review_max_budget_ms", int, 1000, "cap of a ReviewGame search's time per decision (0 = no reviews)"),
    Option("ENGINE_REVIEW_BUDGET_MS", "review_budget_ms", int, 250, "search time per decision of a ReviewGame that asks for none"),
    Option("ENGINE_REVIEW_PER_CALLER", "review_per_caller", int, 1, "reviews in flight per caller: a seat, an admin token, an operator key (0 = no limit)"),
    Option("ENGINE_REVIEW_PER_MINUTE", "review_per_minute", int, 10, "ReviewGame starts per minute per caller (0 = no limit)"),
    Option("ENGINE_REVIEW_MAX_TOTAL_MS", "review_max_total_ms", int, 600000, "search time the reviews in flight on one server process may still need (0 = no cap)"),
    Option("ENGINE_REVIEW_PARALLEL", "review_parallel", int, 2, "decisions of one review searched at once"),
    Option("ENGINE_PRACTICE_PER_MINUTE", "practice_per_minute", int, 6, "PracticeFromHere calls per minute per peer (0 = no limit)"),
    Option("REDIS_USERNAME", "redis_username", str, "", "Redis ACL user (if REDIS_URL names none)"),
    Option("REDIS_PASSWORD", "redis_password", str, "", "Redis password (if REDIS_URL has none)", secret=True),
    Option("REDIS_TLS_CA_FILE", "redis_tls_ca_file", str, "", "PEM CA bundle to check a rediss:// server against"),
    Option("REDIS_TLS_CERT_FILE", "redis_tls_cert_file", str, "", "PEM client certificate for rediss://"),
    Option("REDIS_TLS_KEY_FILE", "redis_tls_key_file", str, "", "PEM key of REDIS_TLS_CERT_FILE"),
)


@dataclass(frozen=True, slots=True)
class Settings:
    redis_url: str = field(default="", repr=False)  # may hold a password
    redis_mode: str = "standalone"
    redis_wait_replicas: int = 0
    redis_wait_timeout_ms: int = 1000
    redis_retry_seconds: float = 5.0
    redis_client: str = "hand"
    store_startup_seconds: float = 0.0
    store_probe_seconds: float = 10.0
    host: str = "127.0.0.1"
    event_loop: str = "auto"
    processes: int = 1
    grpc_port: int = 50051
    metrics_port: int = 9100
    celery_broker_url: str = field(default="", repr=False)
    ai_dispatch: str = "auto"
    advertise_address: str = ""
    game_ttl_seconds: int = 86400
    idle_game_ttl_seconds: int = 604800
    shutdown_grace_seconds: float = 20.0
    shutdown_drain_seconds: float = 2.0
    max_message_bytes: int = 4194304
    stream_maxlen: int = 8
    watch_max_streams: int = 20000
    watch_max_streams_per_peer: int = 1000
    watch_rebuilds_per_minute: int = 60
    max_pending_calls: int = 20000
    local_ai_target: str = "ai_workers.runner:play_move"
    local_ai_processes: int = 1
    local_analysis_processes: int = 1
    ai_sweep_seconds: float = 30.0
    clock_sweep_seconds: float = 0.5
    ai_stall_seconds: float = 60.0
    ai_max_dispatches: int = 3
    redis_timeout_seconds: float = 5.0
    log_level: str = "INFO"
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_client_ca_file: str = ""
    tls_reload_seconds: float = DEFAULT_RELOAD_SECONDS
    operator_keys: str = field(default="", repr=False)
    public_create: bool = False
    caller_seeds: str = SEEDS_OPERATOR
    limit_create_per_minute: int = 0
    limit_submit_per_second: int = 0
    max_live_games: int = 10000
    trusted_proxies: str = ""
    client_address_header: str = DEFAULT_HEADER
    gateway_keys: str = field(default="", repr=False)
    ai_token_keys: str = field(default="", repr=False)
    ai_credential_ttl_seconds: float = 900.0
    analysis_max_budget_ms: int = 2000
    analysis_per_minute: int = 6
    analysis_max_in_flight: int = 32
    analysis_max_iterations: int = 0
    analysis_grace_seconds: float = 5.0
    refusal_pause_seconds: float = 1.0
    review_max_budget_ms: int = 1000
    review_budget_ms: int = 250
    review_per_caller: int = 1
    review_per_minute: int = 10
    practice_per_minute: int = 6
    review_max_total_ms: int = 600000
    review_parallel: int = 2
    redis_username: str = ""
    redis_password: str = field(default="", repr=False)
    redis_tls_ca_file: str = ""
    redis_tls_cert_file: str = ""
    redis_tls_key_file: str = ""

    @property
    def store_url(self) -> str:
        """REDIS_URL with REDIS_USERNAME/REDIS_PASSWORD and the REDIS_TLS_* files added (as
        redis-py's URL options, which the store passes through). Holds secrets: never log it."""
        return redis_url_with(
            self.redis_url,
            self.redis_username,
            self.redis_password,
            self.redis_tls_ca_file,
            self.redis_tls_cert_file,
            self.redis_tls_key_file,
        )

    @property
    def broker_url(self) -> str:
        """CELERY_BROKER_URL, else the games' Redis when it is a single one (a Redis Cluster
        cannot hold a Celery queue: its keys would be spread over slots)."""
        if self.celery_broker_url:
            return self.celery_broker_url
        return self.store_url if self.redis_mode != "cluster" else ""

    def access(self) -> Access:
        return Access.of(parse_keys(self.operator_keys), self.public_create, self.caller_seeds)

    def ai_credentials(self) -> AiCredentials:
        """Signed with ENGINE_AI_TOKEN_KEYS, else with a key of this process only."""
        keys = parse_keys(self.ai_token_keys)
        ttl = self.ai_credential_ttl_seconds
        return AiCredentials(keys, ttl) if keys else AiCredentials.generate(ttl)

    def callers(self) -> Callers:
        """Who a call counts as for the per-caller limits."""
        return Callers(
            parse_networks(self.trusted_proxies),
            self.client_address_header,
            parse_keys(self.gateway_keys),
        )

    def call_limits(self) -> CallLimits:
        return CallLimits(
            create=per_minute(
                "ENGINE_LIMIT_CREATE_PER_MINUTE", "CreateGame", self.limit_create_per_minute
            ),
            submit=per_second(
                "ENGINE_LIMIT_SUBMIT_PER_SECOND", "SubmitAction", self.limit_submit_per_second
            ),
            max_live_games=self.max_live_games,
            practice=per_minute(
                "ENGINE_PRACTICE_PER_MINUTE", "PracticeFromHere", self.practice_per_minute
            ),
        )

    def analysis_settings(self) -> AnalysisSettings:
        return AnalysisSettings(
            max_budget_ms=self.analysis_max_budget_ms,
            per_minute=self.analysis_per_minute,
            max_in_flight=self.analysis_max_in_flight,
            max_iterations=self.analysis_max_iterations,
            grace_seconds=self.analysis_grace_seconds,
            refusal_pause=self.refusal_pause_seconds,
        )

    def review_settings(self) -> ReviewSettings:
        return ReviewSettings(
            max_budget_ms=self.review_max_budget_ms,
            budget_ms=self.review_budget_ms,
            per_caller=self.review_per_caller,
            per_minute=self.review_per_minute,
            max_total_ms=self.review_max_total_ms,
            parallel=self.review_parallel,
            refusal_pause=self.refusal_pause_seconds,
        )

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
        if self.redis_client not in ("hand", "redis-py"):
            problems.append("ENGINE_REDIS_CLIENT must be hand or redis-py")
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
            ("ENGINE_WATCH_REBUILDS_PER_MINUTE", self.watch_rebuilds_per_minute),
            ("ENGINE_MAX_PENDING_CALLS", self.max_pending_calls),
            ("ENGINE_REDIS_WAIT_TIMEOUT_MS", self.redis_wait_timeout_ms),
            ("ENGINE_MAX_MESSAGE_BYTES", self.max_message_bytes),
            ("ENGINE_STREAM_MAXLEN", self.stream_maxlen),
            ("ENGINE_LOCAL_AI_PROCESSES", self.local_ai_processes),
            ("ENGINE_LOCAL_ANALYSIS_PROCESSES", self.local_analysis_processes),
            ("ENGINE_PROCESSES", self.processes),
        ):
            if value < 1:
                problems.append(f"{name} must be at least 1")
        if self.event_loop not in ("auto", "uvloop", "asyncio"):
            problems.append("ENGINE_EVENT_LOOP must be auto, uvloop or asyncio")
        if self.event_loop == "uvloop" and importlib.util.find_spec("uvloop") is None:
            problems.append("ENGINE_EVENT_LOOP=uvloop: uvloop is not installed")
        if self.processes > 1 and not self.redis_url:
            problems.append(
                "ENGINE_PROCESSES > 1 needs REDIS_URL: games kept in process (no REDIS_URL) "
                "cannot be shared between server processes"
            )
        for name, fvalue in (
            ("ENGINE_SHUTDOWN_GRACE_SECONDS", self.shutdown_grace_seconds),
            ("ENGINE_SHUTDOWN_DRAIN_SECONDS", self.shutdown_drain_seconds),
            ("ENGINE_AI_SWEEP_SECONDS", self.ai_sweep_seconds),
            ("ENGINE_CLOCK_SWEEP_SECONDS", self.clock_sweep_seconds),
            ("ENGINE_AI_STALL_SECONDS", self.ai_stall_seconds),
            ("ENGINE_REDIS_TIMEOUT_SECONDS", self.redis_timeout_seconds),
            ("ENGINE_REDIS_RETRY_SECONDS", self.redis_retry_seconds),
            ("ENGINE_STORE_STARTUP_SECONDS", self.store_startup_seconds),
            ("ENGINE_TLS_RELOAD_SECONDS", self.tls_reload_seconds),
            ("ENGINE_REDIS_WAIT_REPLICAS", float(self.redis_wait_replicas)),
        ):
            if fvalue < 0:
                problems.append(f"{name} must not be negative")
        if not self.store_probe_seconds > 0:
            problems.append("ENGINE_STORE_PROBE_SECONDS must be more than 0")
        if self.ai_max_dispatches < 0:
            problems.append("ENGINE_AI_MAX_DISPATCHES must be 0 (never) or more")
        if ":" not in self.local_ai_target:
            problems.append("ENGINE_LOCAL_AI_TARGET must be 'module:function'")
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            problems.append("LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL")
        problems.extend(self._security_problems())
        if not problems:  # then what files, URLs and addresses hold (config_checks.py)
            problems.extend(self._resource_problems())
        if problems:
            raise ValueError("; ".join(problems))

    def _resource_problems(self) -> list[str]:
        """What files, URLs and addresses hold, and limits its values alone do not show."""
        out: list[str] = []
        env_of = {o.attr: o.env for o in OPTIONS}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                out.append(f"{env_of[f.name]} must be a finite number")
        grpc_int_max = config_checks.GRPC_INT_MAX
        if self.max_message_bytes > grpc_int_max:
            out.append(f"ENGINE_MAX_MESSAGE_BYTES must be at most {grpc_int_max}")
        if self.max_pending_calls > grpc_int_max // 2:
            out.append(f"ENGINE_MAX_PENDING_CALLS must be at most {grpc_int_max // 2}")
        if self.metrics_port and self.metrics_port == self.grpc_port:
            out.append("ENGINE_METRICS_PORT and ENGINE_GRPC_PORT must differ")
        checks = [
            config_checks.host_problem(self.host),
            config_checks.advertise_problem(self.advertise_address)
            if self.advertise_address
            else None,
            config_checks.redis_url_problem(self.redis_url, self.redis_mode)
            if self.redis_url
            else None,
            config_checks.broker_url_problem(self.celery_broker_url)
            if self.celery_broker_url
            else None,
            config_checks.local_target_problem(self.local_ai_target)
            if self.dispatch_mode == "local"
            else None,
        ]
        for prefix, cert, key in (
            ("ENGINE_TLS", self.tls_cert_file, self.tls_key_file),
            ("REDIS_TLS", self.redis_tls_cert_file, self.redis_tls_key_file),
        ):
            if cert and key:
                checks.append(
                    config_checks.key_pair_problem(f"{prefix}_CERT_FILE", cert, f"{prefix}_KEY_FILE", key)
                )
        for name, path in (
            ("ENGINE_TLS_CLIENT_CA_FILE", self.tls_client_ca_file),
            ("REDIS_TLS_CA_FILE", self.redis_tls_ca_file),
        ):
            if path:
                checks.append(config_checks.certificates_problem(name, path))
        return out + [c for c in checks if c]

    def _security_problems(self) -> list[str]:
        problems = []
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            problems.append("ENGINE_TLS_CERT_FILE and ENGINE_TLS_KEY_FILE go together")
        if self.tls_client_ca_file and not self.tls_cert_file:
            problems.append("ENGINE_TLS_CLIENT_CA_FILE (mTLS) needs ENGINE_TLS_CERT_FILE")
        for name, path in (
            ("ENGINE_TLS_CERT_FILE", self.tls_cert_file),
            ("ENGINE_TLS_KEY_FILE", self.tls_key_file),
            ("ENGINE_TLS_CLIENT_CA_FILE", self.tls_client_ca_file),
            ("REDIS_TLS_CA_FILE", self.redis_tls_ca_file),
            ("REDIS_TLS_CERT_FILE", self.redis_tls_cert_file),
            ("REDIS_TLS_KEY_FILE", self.redis_tls_key_file),
        ):
            if path and not Path(path).is_file():
                problems.append(f"{name}: no file {path!r}")
        if bool(self.redis_tls_cert_file) != bool(self.redis_tls_key_file):
            problems.append("REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE go together")
        tls_files = self.redis_tls_ca_file or self.redis_tls_cert_file
        if tls_files and not self.redis_url.startswith(("rediss://", "rediss+sentinel://")):
            problems.append("REDIS_TLS_* files need a rediss:// (or rediss+sentinel://) REDIS_URL")
        if (self.redis_password or self.redis_username) and not self.redis_url:
            problems.append("REDIS_USERNAME/REDIS_PASSWORD need REDIS_URL")
        for name, keys, least in (
            ("ENGINE_OPERATOR_KEYS", parse_keys(self.operator_keys), MIN_KEY_CHARS),
            ("ENGINE_AI_TOKEN_KEYS", parse_keys(self.ai_token_keys), tokens.MIN_KEY_CHARS),
            ("ENGINE_GATEWAY_KEYS", parse_keys(self.gateway_keys), MIN_KEY_CHARS),
        ):
            if any(len(k) < least for k in keys):
                problems.append(f"{name}: every key needs at least {least} characters")
        if self.caller_seeds not in (SEEDS_OPERATOR, SEEDS_ANYONE):
            problems.append("ENGINE_CALLER_SEEDS must be operator or anyone")
        try:
            parse_networks(self.trusted_proxies)
        except ValueError as e:
            problems.append(f"ENGINE_TRUSTED_PROXIES: {e}")
        header = self.client_address_header.strip()
        if not re.fullmatch(r"[A-Za-z0-9-]+", header) or header.lower().endswith("-bin"):
            problems.append(
                "ENGINE_CLIENT_ADDRESS_HEADER must be a header name (letters, digits, '-'; "
                f"not a binary '-bin' header), got {self.client_address_header!r}"
            )
        for name, value in (
            ("ENGINE_LIMIT_CREATE_PER_MINUTE", self.limit_create_per_minute),
            ("ENGINE_LIMIT_SUBMIT_PER_SECOND", self.limit_submit_per_second),
            ("ENGINE_MAX_LIVE_GAMES", self.max_live_games),
        ):
            if value < 0:
                problems.append(f"{name} must not be negative")
        if self.ai_credential_ttl_seconds < 1:
            problems.append("ENGINE_AI_CREDENTIAL_TTL_SECONDS must be at least 1")
        if not 0 <= self.analysis_max_budget_ms <= MAX_TIME_MS:
            problems.append(f"ENGINE_ANALYSIS_MAX_BUDGET_MS must be 0 (no hints) to {MAX_TIME_MS}")
        for name, value in (
            ("ENGINE_ANALYSIS_PER_MINUTE", self.analysis_per_minute),
            ("ENGINE_ANALYSIS_MAX_IN_FLIGHT", self.analysis_max_in_flight),
            ("ENGINE_ANALYSIS_MAX_ITERATIONS", self.analysis_max_iterations),
        ):
            if value < 0:
                problems.append(f"{name} must not be negative")
        if not 0 < self.analysis_grace_seconds <= 600:
            problems.append("ENGINE_ANALYSIS_GRACE_SECONDS must be above 0 and at most 600")
        if not 0 <= self.refusal_pause_seconds <= 10:
            problems.append("ENGINE_REFUSAL_PAUSE_SECONDS must be 0 to 10")
        problems.extend(self._review_problems())
        return problems

    def _review_problems(self) -> list[str]:
        problems = []
        if not 0 <= self.review_max_budget_ms <= MAX_TIME_MS:
            problems.append(f"ENGINE_REVIEW_MAX_BUDGET_MS must be 0 (no reviews) to {MAX_TIME_MS}")
        if not 1 <= self.review_budget_ms <= MAX_TIME_MS:
            problems.append(f"ENGINE_REVIEW_BUDGET_MS must be 1 to {MAX_TIME_MS}")
        for name, value in (
            ("ENGINE_REVIEW_PER_CALLER", self.review_per_caller),
            ("ENGINE_REVIEW_PER_MINUTE", self.review_per_minute),
            ("ENGINE_REVIEW_MAX_TOTAL_MS", self.review_max_total_ms),
            ("ENGINE_PRACTICE_PER_MINUTE", self.practice_per_minute),
        ):
            if value < 0:
                problems.append(f"{name} must not be negative")
        if not 1 <= self.review_parallel <= 64:
            problems.append("ENGINE_REVIEW_PARALLEL must be 1 to 64")
        return problems


def redis_url_with(
    url: str, username: str, password: str, ca_file: str, cert_file: str, key_file: str
) -> str:
    """``url`` with credentials (where it has none) and TLS files as redis-py URL options."""
    if not url:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if (username or password) and "@" not in netloc:
        user = quote(username, safe="")
        netloc = f"{user}:{quote(password, safe='')}@{netloc}" if password else f"{user}@{netloc}"
    query = parse_qsl(parts.query)
    for name, value in (
        ("ssl_ca_certs", ca_file),
        ("ssl_certfile", cert_file),
        ("ssl_keyfile", key_file),
    ):
        if value and not any(k == name for k, _ in query):
            query.append((name, value))
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query), parts.fragment))


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
            help=f"{opt.help} (env {opt.env} or {opt.env}_FILE"
            + ("" if opt.secret else f", default {opt.default!r}")
            + ")",
        )


def _env_value(env: Mapping[str, str], name: str) -> str:
    """``name``'s value, or the content of the file ``name_FILE`` names."""
    raw = env.get(name, "").strip()
    path = env.get(name + "_FILE", "").strip()
    if raw and path:
        raise ValueError(f"set {name} or {name}_FILE, not both")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as e:
            raise ValueError(f"{name}_FILE: cannot read {path!r}: {e.strerror}") from None
    return raw


def load(env: Mapping[str, str] | None = None, flags: argparse.Namespace | None = None) -> Settings:
    """Flags win over environment variables, which win over the defaults."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for opt in OPTIONS:
        flag = getattr(flags, opt.attr, None) if flags is not None else None
        if flag is not None:
            values[opt.attr] = flag
            continue
        raw = _env_value(env, opt.env)
        if raw:
            try:
                values[opt.attr] = opt.kind(raw)
            except ValueError:
                raise ValueError(f"{opt.env}={raw!r} is not a valid {opt.kind.__name__}") from None
    assert {f.name for f in fields(Settings)} == {o.attr for o in OPTIONS}
    settings = Settings(**values)
    settings.validate()
    return settings
