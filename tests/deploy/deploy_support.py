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

import yaml  # type: ignore[import-untyped, unused-ignore]

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
    # labels each metric carries (besides the target labels job and instance)
    metric_labels: dict[str, frozenset[str]]
    # documented defaults of the environment variables
    env_defaults: dict[str, str]

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
    metric_labels={
        "ascension_grpc_requests_total": frozenset({"method", "code"}),
        "ascension_grpc_request_seconds_bucket": frozenset({"method", "le"}),
        "ascension_actions_applied_total": frozenset({"kind"}),
        "ascension_store_seconds_bucket": frozenset({"op", "le"}),
        "ascension_worker_moves_total": frozenset({"bot"}),
        "ascension_worker_decision_seconds_bucket": frozenset({"bot", "le"}),
        "ascension_worker_queue_wait_seconds_bucket": frozenset({"le"}),
    },
    env_defaults={
        "ENGINE_GRPC_PORT": "50051",
        "ENGINE_METRICS_PORT": "9100",
        "ENGINE_GAME_TTL_SECONDS": "86400",
        "ENGINE_SHUTDOWN_GRACE_SECONDS": "20",
        "ENGINE_MAX_MESSAGE_BYTES": "4194304",
        "LOG_LEVEL": "INFO",
        "ENGINE_ADDRESS": "localhost:50051",
        "WORKER_METRICS_PORT": "9101",
    },
)

TARGET_LABELS = frozenset({"job", "instance"})


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


@dataclass(frozen=True)
class PromQLFacts:
    metrics: frozenset[str]
    labels: frozenset[str]  # label names used by matchers, by/without, on/ignoring
    functions: tuple[str, ...]
    quantiles: tuple[
        tuple[float, frozenset[str]], ...
    ]  # histogram_quantile(q, agg by (labels) ...)


def promql_facts(expr: str) -> PromQLFacts:
    """Parse a PromQL expression (raises ValueError when it is not valid PromQL)."""
    import promql_parser

    tree = promql_parser.parse(expr)
    metrics: set[str] = set()
    labels: set[str] = set()
    functions: list[str] = []
    quantiles: list[tuple[float, frozenset[str]]] = []

    def visit(node: Any) -> bool:
        if isinstance(node, promql_parser.VectorSelector):
            name = node.name
            for matcher in node.matchers.matchers:
                if matcher.name == "__name__":
                    name = matcher.value
                else:
                    labels.add(matcher.name)
            assert name, f"a selector without a metric name in {expr!r}"
            metrics.add(name)
        elif isinstance(node, promql_parser.AggregateExpr) and node.modifier is not None:
            labels.update(node.modifier.labels)
        elif isinstance(node, promql_parser.BinaryExpr) and node.modifier is not None:
            if node.modifier.matching is not None:
                labels.update(node.modifier.matching.labels)
            labels.update(node.modifier.group_labels or [])
        elif isinstance(node, promql_parser.Call):
            functions.append(node.func.name)
            if node.func.name == "histogram_quantile":
                quantile, inner = node.args
                grouping: frozenset[str] = frozenset()
                if isinstance(inner, promql_parser.AggregateExpr) and inner.modifier is not None:
                    grouping = frozenset(inner.modifier.labels)
                quantiles.append((float(quantile.val), grouping))
        return True

    promql_parser.walk(tree, visit)
    return PromQLFacts(frozenset(metrics), frozenset(labels), tuple(functions), tuple(quantiles))


def check_promql(expr: str, where: str) -> PromQLFacts:
    """Assert an expression is valid PromQL over contract metrics and their labels only."""
    try:
        facts = promql_facts(expr)
    except ValueError as error:
        raise AssertionError(f"{where}: not valid PromQL: {error}\n{expr}") from error
    assert facts.metrics, f"{where}: references no metric"
    unknown = facts.metrics - CONTRACT.metrics
    assert not unknown, f"{where}: metrics outside the contract: {sorted(unknown)}"
    known_labels = set(TARGET_LABELS)
    for metric in facts.metrics:
        known_labels |= CONTRACT.metric_labels.get(metric, frozenset())
    assert facts.labels <= known_labels, (
        f"{where}: labels {sorted(facts.labels - known_labels)} are not labels of {sorted(facts.metrics)}"
    )
    for quantile, grouping in facts.quantiles:
        assert 0 < quantile < 1, f"{where}: quantile {quantile}"
        assert "le" in grouping, f"{where}: histogram_quantile must aggregate `by (le, ...)`"
    return facts
