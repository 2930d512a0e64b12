"""Shared constants and helpers of the deployment tests (deploy/: Dockerfile, compose, Helm, Prometheus, Grafana).

The contract every deployment artefact is checked against is read from the code, so it cannot
drift: the engine's settings from engine_service.server.config, the worker's from
ai_workers.config, the metric names and labels from engine_service.server.metrics and
ai_workers.metrics. Only the sub-commands a deployment may call are listed here (and checked
against the console scripts' own argument parsers).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped, unused-ignore]
from prometheus_client.metrics import MetricWrapperBase

import ai_workers.config as worker_config
import ai_workers.metrics as worker_metrics
from engine_service.server import config as engine_config
from engine_service.server.errors import Code
from engine_service.server.metrics import Metrics

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
CHART_DIR = DEPLOY / "helm" / "ascension-engine"
KUBE_VERSION = "1.30.0"

# gRPC status codes of a unary call that failed on the server's side (the error-rate and
# availability alerts count these; WatchGame streams are left out): the server broke
# (INTERNAL, UNAVAILABLE, DATA_LOSS), an analysis found no worker (DEADLINE_EXCEEDED), or the
# caller gave up (CANCELLED: mostly its deadline passing while the engine was slow).
# Everything else is the caller's outcome: illegal moves, lost races, unknown games, refusals
# by limits or credentials.
SERVER_SIDE_CODES = frozenset(
    {"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "DEADLINE_EXCEEDED", "CANCELLED"}
)


@dataclass(frozen=True)
class MetricFamily:
    """One metric as registered in the code."""

    name: str  # the family name (a counter's without `_total`)
    type: str  # counter, gauge or histogram
    labels: frozenset[str]
    component: str  # engine or worker

    @property
    def samples(self) -> dict[str, frozenset[str]]:
        """The series names Prometheus scrapes from it, with their labels. (`_created`
        samples are left out: the worker's multiprocess collector does not export them.)"""
        if self.type == "counter":
            return {f"{self.name}_total": self.labels}
        if self.type == "histogram":
            return {
                f"{self.name}_bucket": self.labels | {"le"},
                f"{self.name}_sum": self.labels,
                f"{self.name}_count": self.labels,
            }
        assert self.type == "gauge", f"{self.name}: unexpected metric type {self.type}"
        return {self.name: self.labels}

    @property
    def documented_name(self) -> str:
        """How the guide names it: counters with `_total`, histograms by family."""
        return f"{self.name}_total" if self.type == "counter" else self.name


def _families(holder: Any, component: str) -> Iterator[MetricFamily]:
    for metric in vars(holder).values():
        if isinstance(metric, MetricWrapperBase):
            (description,) = metric.describe()
            # prometheus_client has no public accessor for a metric's label names.
            labels = frozenset(metric._labelnames)
            yield MetricFamily(description.name, description.type, labels, component)


class _RecordingEnv(dict[str, str]):
    """An empty environment that remembers which variables were asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.asked.add(key)
        return super().__contains__(key)


def _worker_env() -> tuple[frozenset[str], dict[str, str]]:
    """The variables ai_workers.config.load reads, and the defaults that do not depend on
    the machine."""
    env = _RecordingEnv()
    cfg = worker_config.load(env)
    defaults = {
        "CELERY_BROKER_URL": cfg.broker_url,
        "ENGINE_ADDRESS": cfg.engine_address,
        "WORKER_METRICS_PORT": str(cfg.metrics_port),
        "LOG_LEVEL": cfg.log_level,
        "WORKER_NODE_NAME": cfg.node_name,
        "WORKER_SOFT_TIME_LIMIT": str(cfg.soft_time_limit),
        "WORKER_TIME_LIMIT": str(cfg.time_limit),
        "WORKER_VISIBILITY_TIMEOUT": str(cfg.visibility_timeout),
        "WORKER_MAX_RETRIES": str(cfg.max_retries),
        "WORKER_DECISION_GRACE_SECONDS": _format_default(cfg.decision_grace),
        "WORKER_BOT_LOAD_SECONDS": _format_default(cfg.bot_load_seconds),
        "WORKER_SLOTS_PER_BOT": str(cfg.slots_per_bot),
        "WORKER_BOT_QUARANTINE_FAILURES": str(cfg.quarantine_failures),
        "WORKER_BOT_QUARANTINE_SECONDS": _format_default(cfg.quarantine_seconds),
        "WORKER_ANALYSIS_CONCURRENCY": str(cfg.analysis_concurrency),
        "WORKER_ANALYSIS_NICE": str(cfg.analysis_nice),
    }
    machine_dependent = {"WORKER_CONCURRENCY"}  # the number of CPUs
    unset_by_default = {"CELERY_BROKER_URL_FILE"}  # a file holding the broker URL
    assert set(defaults) | machine_dependent | unset_by_default == env.asked, (
        f"ai_workers.config reads {sorted(env.asked)}; update _worker_env's defaults"
    )
    return frozenset(env.asked), defaults


def _format_default(value: Any) -> str:
    """An engine default as the docs and the deployment write it (20.0 -> "20")."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_WORKER_ENV, _WORKER_DEFAULTS = _worker_env()


@dataclass(frozen=True)
class Contract:
    # console script -> sub-commands the deployment may call
    commands: dict[str, frozenset[str]]
    engine_options: tuple[engine_config.Option, ...]
    worker_env: frozenset[str]
    families: tuple[MetricFamily, ...]
    # defaults of the environment variables, as the docs write them
    engine_defaults: dict[str, str]
    worker_defaults: dict[str, str]

    @property
    def engine_env(self) -> frozenset[str]:
        return frozenset(option.env for option in self.engine_options)

    @property
    def metrics(self) -> frozenset[str]:
        """Every series name the engine and the worker export, and the standard series the
        rules and dashboard may read besides (EXTERNAL_SERIES)."""
        own = frozenset(name for family in self.families for name in family.samples)
        return own | frozenset(EXTERNAL_SERIES)

    @property
    def histograms(self) -> frozenset[str]:
        return frozenset(f"{f.name}_bucket" for f in self.families if f.type == "histogram")

    @property
    def metric_labels(self) -> dict[str, frozenset[str]]:
        """Labels each series carries (besides the target labels job, instance, namespace)."""
        own = {name: labels for f in self.families for name, labels in f.samples.items()}
        return {**EXTERNAL_SERIES, **own}

    def family_of(self, series: str) -> MetricFamily:
        found = [f for f in self.families if series in f.samples]
        # A metric both components export (the TLS ones) is one family: same type and labels.
        assert found and len({(f.name, f.type, f.labels) for f in found}) == 1, (series, found)
        return found[0]


# Series the rules and the dashboard read that are not the project's own metrics: the
# scraper's `up`, the process collectors of engine and worker (prometheus_client), the
# worker's pool collector, the Redis exporter's (job ascension-redis: up, memory,
# persistence, replication, the length of the ascension.moves list), and the settings the
# rules record themselves (RECORDED_SERIES).
EXTERNAL_SERIES: dict[str, frozenset[str]] = {
    "up": frozenset(),
    "process_cpu_seconds_total": frozenset(),
    "process_resident_memory_bytes": frozenset(),
    "process_open_fds": frozenset(),
    "process_max_fds": frozenset(),
    "process_start_time_seconds": frozenset(),
    "ascension_worker_pool_cpu_seconds_total": frozenset(),
    "ascension_worker_pool_resident_memory_bytes": frozenset(),
    "ascension_worker_pool_processes": frozenset(),
    "redis_memory_used_bytes": frozenset(),
    "redis_memory_max_bytes": frozenset(),
    "redis_up": frozenset(),
    "redis_rdb_last_bgsave_status": frozenset(),
    "redis_aof_last_write_status": frozenset(),
    "redis_aof_last_bgrewrite_status": frozenset(),
    "redis_master_link_up": frozenset({"master_host", "master_port"}),
    "redis_connected_slaves": frozenset(),
    "redis_instance_info": frozenset({"role"}),
    "redis_master_repl_offset": frozenset(),
    "redis_connected_slave_offset_bytes": frozenset({"slave_ip", "slave_port", "slave_state"}),
    "redis_connected_slave_lag_seconds": frozenset({"slave_ip", "slave_port", "slave_state"}),
    "redis_key_size": frozenset({"db", "key"}),
}
# The settings the group ascension-settings records per namespace (compose's alerts.yaml, or
# the chart's PrometheusRule from its values), with their labels.
RECORDED_SERIES: dict[str, frozenset[str]] = {
    "ascension:slo_objective:ratio": frozenset({"slo"}),
    "ascension:slo_latency_threshold:seconds": frozenset({"le"}),
    "ascension:max_live_games": frozenset(),
    "ascension:redis_replicas_expected": frozenset(),
}
EXTERNAL_SERIES.update(RECORDED_SERIES)

CONTRACT = Contract(
    commands={
        "ascension-engine": frozenset({"serve"}),
        # `ascension-worker sweeper` only says that the sweeper lives in the engine now.
        "ascension-worker": frozenset({"run", "check"}),
        "ascension": frozenset(),
    },
    engine_options=engine_config.OPTIONS,
    worker_env=_WORKER_ENV,
    families=(*_families(Metrics(), "engine"), *_families(worker_metrics, "worker")),
    engine_defaults={
        option.env: _format_default(option.default) for option in engine_config.OPTIONS
    },
    worker_defaults=_WORKER_DEFAULTS,
)


# What compose and the chart set on every engine: the store and the broker, Celery dispatch
# and the address the workers reach it at, the sweeper's timing, the shutdown timing, ports.
DEPLOYED_ENGINE_ENV = frozenset(
    {
        "REDIS_URL",
        "CELERY_BROKER_URL",
        "ENGINE_AI_DISPATCH",
        "ENGINE_ADVERTISE_ADDRESS",
        "ENGINE_AI_SWEEP_SECONDS",
        "ENGINE_AI_STALL_SECONDS",
        "ENGINE_GRPC_PORT",
        "ENGINE_METRICS_PORT",
        "ENGINE_GAME_TTL_SECONDS",
        "ENGINE_STREAM_MAXLEN",
        "ENGINE_MAX_MESSAGE_BYTES",
        "ENGINE_REDIS_TIMEOUT_SECONDS",
        "ENGINE_SHUTDOWN_DRAIN_SECONDS",
        "ENGINE_SHUTDOWN_GRACE_SECONDS",
        # One key for every replica (else a worker's submit to another replica is refused).
        "ENGINE_AI_TOKEN_KEYS",
        # Every interface of the container (the server's own default is loopback only).
        "ENGINE_HOST",
        # Per-peer rate limits, on (the server's default is off).
        "ENGINE_LIMIT_CREATE_PER_MINUTE",
        "ENGINE_LIMIT_SUBMIT_PER_SECOND",
        "LOG_LEVEL",
    }
)
DEPLOYED_WORKER_ENV = frozenset(
    {
        "CELERY_BROKER_URL",
        "ENGINE_ADDRESS",
        "WORKER_METRICS_PORT",
        "WORKER_CONCURRENCY",
        "WORKER_ANALYSIS_CONCURRENCY",
        "LOG_LEVEL",
    }
)
# Engine variables a deployment sets on purpose to something else than the server's default.
DEPLOYMENT_CHOICES = frozenset(
    {
        "REDIS_URL",
        "CELERY_BROKER_URL",
        "ENGINE_AI_DISPATCH",
        "ENGINE_ADVERTISE_ADDRESS",
        "ENGINE_AI_TOKEN_KEYS",
        "ENGINE_HOST",
        "ENGINE_LIMIT_CREATE_PER_MINUTE",
        "ENGINE_LIMIT_SUBMIT_PER_SECOND",
        "ENGINE_OPERATOR_KEYS",
    }
)
# Engine settings the chart passes that the engine in this tree may not know yet (they are
# added with the rate limits' trusted proxies): accepted by the environment checks only while
# engine_service.server.config does not list them.
PENDING_ENGINE_SETTINGS = frozenset(
    {"ENGINE_TRUSTED_PROXIES", "ENGINE_CLIENT_ADDRESS_HEADER"}
) - frozenset(o.env for o in engine_config.OPTIONS)


def settings_named(env: Mapping[str, object], known: frozenset[str]) -> frozenset[str]:
    """The settings an environment gives: NAME_FILE (a file holding NAME's value, such as a
    mounted Secret) gives NAME when NAME is a setting; a NAME_FILE that is a setting of its
    own gives itself too (ENGINE_TLS_CERT_FILE; the worker's CELERY_BROKER_URL_FILE)."""
    named = set()
    for name in env:
        base = name.removesuffix("_FILE")
        if base != name and base in known:
            named.add(base)
        if name in known or base == name or base not in known:
            named.add(name)
    return frozenset(named)


def option(env: str) -> engine_config.Option:
    (found,) = [o for o in engine_config.OPTIONS if o.env == env]
    return found


def engine_settings(env: Mapping[str, str]) -> engine_config.Settings:
    """What the engine makes of an environment (raises ValueError like the server)."""
    return engine_config.load(env)


def worker_settings(env: Mapping[str, str]) -> worker_config.WorkerConfig:
    """What `ascension-worker` makes of an environment (raises ValueError like the worker)."""
    return worker_config.load(env)


def recorded_codes() -> frozenset[str]:
    """Values of the `code` label the engine can record: the codes of its errors plus the
    literals the service assigns (OK, CANCELLED, ...)."""
    service = (REPO / "engine_service" / "server" / "service.py").read_text()
    literals = set(re.findall(r'\bcode = "([A-Z_]+)"', service))
    literals |= set(re.findall(r'return "([A-Z_]+)", ', service))
    assert "OK" in literals, "service.py no longer records OK as expected"
    return frozenset(literals | {code.value for code in Code})


def enqueue_reasons() -> frozenset[str]:
    """Values of the `reason` label of ascension_ai_moves_enqueued_total (the engine exports
    every one at zero from the start)."""
    (family,) = [f for f in Metrics().registry.collect() if f.name == "ascension_ai_moves_enqueued"]
    return frozenset(s.labels["reason"] for s in family.samples if "reason" in s.labels)


def rpc_methods() -> frozenset[str]:
    """Values of the `method` label: the bare RPC names of the Engine service."""
    from engine_service.api.ascension.v1 import engine_pb2

    service = engine_pb2.DESCRIPTOR.services_by_name["Engine"]
    return frozenset(method.name for method in service.methods)


# Added by the scraper: job and instance, and namespace (the Prometheus Operator adds the
# Kubernetes namespace; compose's scrape config sets namespace="ascension").
TARGET_LABELS = frozenset({"job", "instance", "namespace"})


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
    matchers: tuple[tuple[str, str, str], ...] = ()  # (label, operator, value)

    def matched_values(self, label: str) -> frozenset[str]:
        """The label values the matchers on `label` name (regex alternatives split on |)."""
        values: set[str] = set()
        for name, _op, value in self.matchers:
            if name == label:
                values.update(value.split("|"))
        return frozenset(values)


def promql_facts(expr: str) -> PromQLFacts:
    """Parse a PromQL expression (raises ValueError when it is not valid PromQL)."""
    import promql_parser

    tree = promql_parser.parse(expr)
    metrics: set[str] = set()
    labels: set[str] = set()
    functions: list[str] = []
    quantiles: list[tuple[float, frozenset[str]]] = []
    matchers: list[tuple[str, str, str]] = []

    def visit(node: Any) -> bool:
        if isinstance(node, promql_parser.VectorSelector):
            name = node.name
            for matcher in node.matchers.matchers:
                if matcher.name == "__name__":
                    name = matcher.value
                else:
                    labels.add(matcher.name)
                    matchers.append((matcher.name, str(matcher.op), matcher.value))
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
    return PromQLFacts(
        frozenset(metrics),
        frozenset(labels),
        tuple(functions),
        tuple(quantiles),
        tuple(matchers),
    )


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


# ---------------------------------------------------------------------------
# Compose's variable interpolation, as Compose (compose-go) does it
# ---------------------------------------------------------------------------


class MissingVariable(ValueError):
    """${VAR:?message} (or ${VAR?message}) met an unset variable: `docker compose` stops."""


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """``text`` with its ``$VAR`` and ``${...}`` expressions replaced from ``env``: ``:-``/``-``
    (default), ``:?``/``?`` (required: raises MissingVariable), ``:+``/``+`` (alternative),
    nested expressions evaluated only when their branch is taken, ``$$`` for a dollar."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("${", i):
            end = _closing_brace(text, i + 2)
            out.append(_substitute(text[i + 2 : end], env))
            i = end + 1
        elif text[i] == "$" and (m := _NAME.match(text, i + 1)):
            out.append(env.get(m.group(), ""))
            i = m.end()
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _closing_brace(text: str, start: int) -> int:
    depth, j = 1, start
    while j < len(text):
        if text.startswith("${", j):
            depth, j = depth + 1, j + 2
            continue
        if text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise ValueError(f"unclosed ${{ in {text!r}")


def _substitute(body: str, env: Mapping[str, str]) -> str:
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])(.*))?", body, re.S)
    if m is None:
        raise ValueError(f"bad expression ${{{body}}}")
    name, op, arg = m.groups()
    value = env.get(name)
    given = value is not None and (value != "" or not (op or "").startswith(":"))
    if op is None:
        return value or ""
    if op.endswith("-"):
        return value if given and value is not None else interpolate(arg, env)
    if op.endswith("?"):
        if given and value is not None:
            return value
        raise MissingVariable(f"{name}: {interpolate(arg, env)}")
    return interpolate(arg, env) if given else ""
