"""Shared constants and helpers of the deployment tests (deploy/: Dockerfile, compose, Helm, Prometheus, Grafana).

The contract below is the one fixed by the lead for the engine and the worker:
console scripts and their sub-commands, environment variables, metric names.
Every deployment artefact is checked against it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
CHART_DIR = DEPLOY / "helm" / "ascension-engine"
KUBE_VERSION = "1.30.0"


@dataclass(frozen=True)
class Contract:
    # console script -> sub-commands the deployment may call
    commands: dict[str, frozenset[str]]
    engine_env: frozenset[str]
    worker_env: frozenset[str]
    metrics: frozenset[str]
    histograms: frozenset[str]

    @property
    def sweeper_env(self) -> frozenset[str]:
        # The sweeper is `ascension-worker sweeper`; it may need the store as well.
        return self.worker_env | {"REDIS_URL"}


CONTRACT = Contract(
    commands={
        "ascension-engine": frozenset({"serve"}),
        "ascension-worker": frozenset({"run", "check", "sweeper"}),
        "ascension": frozenset(),
    },
    engine_env=frozenset(
        {
            "REDIS_URL",
            "ENGINE_GRPC_PORT",
            "ENGINE_METRICS_PORT",
            "CELERY_BROKER_URL",
            "ENGINE_GAME_TTL_SECONDS",
            "ENGINE_SHUTDOWN_GRACE_SECONDS",
            "ENGINE_MAX_MESSAGE_BYTES",
            "LOG_LEVEL",
        }
    ),
    worker_env=frozenset(
        {
            "CELERY_BROKER_URL",
            "ENGINE_ADDRESS",
            "WORKER_METRICS_PORT",
            "WORKER_CONCURRENCY",
            "LOG_LEVEL",
        }
    ),
    metrics=frozenset(
        {
            # engine
            "ascension_grpc_requests_total",
            "ascension_grpc_request_seconds_bucket",
            "ascension_actions_applied_total",
            "ascension_cas_conflicts_total",
            "ascension_store_seconds_bucket",
            "ascension_games_created_total",
            "ascension_games_finished_total",
            "ascension_games_active",
            "ascension_ai_moves_enqueued_total",
            "ascension_ai_seat_wait_seconds",
            # worker
            "ascension_worker_moves_total",
            "ascension_worker_decision_seconds_bucket",
            "ascension_worker_mcts_iterations_per_second",
            "ascension_worker_task_failures_total",
            "ascension_worker_task_retries_total",
            "ascension_worker_queue_wait_seconds_bucket",
        }
    ),
    histograms=frozenset(
        {
            "ascension_grpc_request_seconds_bucket",
            "ascension_store_seconds_bucket",
            "ascension_worker_decision_seconds_bucket",
            "ascension_worker_queue_wait_seconds_bucket",
        }
    ),
)


def load_yaml_documents(text: str) -> list[dict[str, Any]]:
    """The non-empty documents of a multi-document YAML text."""
    return [doc for doc in yaml.safe_load_all(text) if doc]


def console_scripts() -> dict[str, str]:
    """[project.scripts] of pyproject.toml."""
    with (REPO / "pyproject.toml").open("rb") as handle:
        pyproject = tomllib.load(handle)
    scripts: dict[str, str] = pyproject["project"]["scripts"]
    return scripts


def check_command(argv: list[str], where: str) -> None:
    """Assert an argv runs a console script of pyproject with a contract sub-command.

    `python -c CODE` is accepted too (the image's interpreter), provided CODE compiles.
    """
    scripts = console_scripts()
    assert argv, f"{where}: empty command"
    program = argv[0]
    if program in {"python", "python3"}:
        assert len(argv) >= 3 and argv[1] == "-c", f"{where}: python must run inline code: {argv}"
        compile(argv[2], f"<{where}>", "exec")
        return
    assert program in scripts, (
        f"{where}: {program!r} is not a console script of pyproject.toml (known: {sorted(scripts)})"
    )
    allowed = CONTRACT.commands.get(program, frozenset())
    if allowed:
        assert len(argv) >= 2 and argv[1] in allowed, (
            f"{where}: {program} needs one of the sub-commands {sorted(allowed)}, got {argv[1:]}"
        )
