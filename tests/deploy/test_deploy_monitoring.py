"""Prometheus alert rules and scrape config, Grafana provisioning and dashboard.

Every PromQL expression is parsed with a real PromQL parser (promql-parser) and
may only use the metric names, and the labels of those metrics, that the engine
and the worker register (read from their metrics modules), with label values
they record.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from ai_workers import metrics as worker_metrics
from ai_workers import runner
from ai_workers.bots.registry import BUILTINS
from tests.deploy.deploy_support import (
    CONTRACT,
    DEPLOY,
    EXTERNAL_SERIES,
    RECORDED_SERIES,
    SERVER_SIDE_CODES,
    TARGET_LABELS,
    PromQLFacts,
    check_promql,
    enqueue_reasons,
    promql_facts,
    recorded_codes,
    rpc_methods,
)

ALERTS = DEPLOY / "prometheus" / "alerts.yaml"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "ascension-engine.json"
DATASOURCES = DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yaml"
DASHBOARD_PROVIDERS = DEPLOY / "grafana" / "provisioning" / "dashboards" / "ascension.yaml"
DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")

# What the operators must be warned about, and the metric that tells it.
TOPICS = {
    "gRPC error rate": "ascension_grpc_requests_total",
    "gRPC latency p99": "ascension_grpc_request_seconds_bucket",
    "compare-and-set conflicts": "ascension_cas_conflicts_total",
    "AI queue wait": "ascension_worker_queue_wait_seconds_bucket",
    "AI decision time": "ascension_worker_decision_seconds_bucket",
    "stalled games": "ascension_ai_seat_wait_seconds",
    "AI moves not consumed": "ascension_worker_move_outcomes_total",
    "engine or workers down": "up",
    "Redis memory against maxmemory": "redis_memory_max_bytes",
    "Redis down": "redis_up",
    "Redis unreachable from the engines": "ascension_store_up",
    "Redis replication lag": "redis_connected_slave_lag_seconds",
    "Redis snapshots failing": "redis_rdb_last_bgsave_status",
    "Redis AOF writes failing": "redis_aof_last_write_status",
    "Redis replication link": "redis_master_link_up",
    "AI queue length": "redis_key_size",
    "live games near the cap": "ascension:max_live_games",
    "service level objectives": "ascension:slo_objective:ratio",
    "TLS certificates near their end": "ascension_tls_certificate_expiry_timestamp_seconds",
}
ALERTS_TEST = DEPLOY / "prometheus" / "alerts_test.yaml"


def recorded_label_values() -> dict[str, frozenset[str]]:
    """The values the code records for the labels the rules and their tests match on."""
    return {
        "method": rpc_methods(),
        "code": recorded_codes(),
        "reason": enqueue_reasons() | frozenset(worker_metrics.DEAD_LETTER_REASONS),
        "outcome": frozenset(
            {runner.PLAYED, runner.STALE, runner.LOST_RACE, runner.REPLAYED, runner.GONE}
        ),
        "bot": frozenset(BUILTINS),
    }


def check_label_values(facts: PromQLFacts, where: str) -> None:
    known = recorded_label_values()
    for label, values in known.items():
        unknown = facts.matched_values(label) - values
        assert not unknown, f"{where}: {label} values {sorted(unknown)} are never recorded"


def alert_rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(ALERTS.read_text())
    return [rule for group in document["groups"] for rule in group["rules"] if "alert" in rule]


def recording_rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(ALERTS.read_text())
    return [rule for group in document["groups"] for rule in group["rules"] if "record" in rule]


# ---------------------------------------------------------------------------
# alerts.yaml
# ---------------------------------------------------------------------------


def test_alerts_file_structure() -> None:
    document = yaml.safe_load(ALERTS.read_text())
    assert set(document) == {"groups"}
    assert document["groups"], "no rule groups"
    group_names = [group["name"] for group in document["groups"]]
    assert len(group_names) == len(set(group_names))
    names = []
    for group in document["groups"]:
        assert set(group) <= {"name", "interval", "rules"}, group["name"]
        assert group["rules"], group["name"]
        if group["name"] == "ascension-settings":
            # Settings only: one series per setting and namespace.
            for rule in group["rules"]:
                assert set(rule) == {"record", "expr", "labels"}, rule
                assert re.fullmatch(r"vector\([0-9.]+\)", rule["expr"]), rule
                assert rule["labels"]["namespace"] == "ascension", "compose's namespace"
            continue
        for rule in group["rules"]:
            assert set(rule) <= {
                "alert",
                "expr",
                "for",
                "labels",
                "annotations",
                "keep_firing_for",
            }, rule
            assert re.match(r"^[A-Z][A-Za-z0-9]+$", rule["alert"]), rule["alert"]
            assert DURATION.match(rule["for"]), f"{rule['alert']}: for {rule['for']!r}"
            assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
            assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule[
                "alert"
            ]
            names.append(rule["alert"])
    assert len(names) == len(set(names)), "duplicate alert names"


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda rule: rule["alert"])
def test_alert_expression_uses_contract_metrics(rule: dict[str, Any]) -> None:
    facts = check_promql(rule["expr"], rule["alert"])
    check_label_values(facts, rule["alert"])
    # Annotations may only name labels the expression keeps (a label some of its series lack
    # is named only under `{{ with $labels.x }}`, which writes nothing without it).
    text = json.dumps(rule["annotations"])
    used = set(re.findall(r"(?<!with )\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)", text))
    # Without an aggregation the series keep their target labels and their own too.
    kept = facts.labels
    if not aggregations(rule["expr"]):
        kept |= TARGET_LABELS
        for metric in facts.metrics:
            kept |= CONTRACT.metric_labels.get(metric, frozenset())
    assert used <= kept, f"{rule['alert']}: annotations use {sorted(used - kept)}"


def test_alerts_cover_every_topic() -> None:
    covered: dict[str, list[str]] = {}
    for rule in alert_rules():
        for metric in promql_facts(rule["expr"]).metrics:
            covered.setdefault(metric, []).append(rule["alert"])
    missing = {topic for topic, metric in TOPICS.items() if metric not in covered}
    assert not missing, f"no alert for: {sorted(missing)}"
    latency = [
        r
        for r in alert_rules()
        if "ascension_grpc_request_seconds_bucket" in promql_facts(r["expr"]).metrics
    ]
    assert any(q == 0.99 for r in latency for q, _ in promql_facts(r["expr"]).quantiles), (
        "latency alert is not p99"
    )
    errors = [
        r
        for r in alert_rules()
        if "ascension_grpc_requests_total" in promql_facts(r["expr"]).metrics
    ]
    assert any("code" in promql_facts(r["expr"]).labels for r in errors), (
        "error-rate alert does not look at codes"
    )


def server_error_selectors() -> list[tuple[str, PromQLFacts]]:
    """Every alert and dashboard query that selects requests by `code`."""
    found = [(r["alert"], promql_facts(r["expr"])) for r in alert_rules()]
    for panel in dashboard_panels():
        for target in panel["targets"]:
            found.append((panel["title"], promql_facts(grafana_to_promql(target["expr"]))))
    return [(where, facts) for where, facts in found if facts.matched_values("code")]


def test_server_error_codes_are_the_ones_the_server_records() -> None:
    """The error rate counts exactly the server-side codes the engine can answer with."""
    assert recorded_codes() >= SERVER_SIDE_CODES
    selectors = server_error_selectors()
    assert len(selectors) >= 3, "the alert and the dashboard's error panels"
    for where, facts in selectors:
        assert facts.matched_values("code") == SERVER_SIDE_CODES, where


def test_stalled_game_alert_leaves_the_sweeper_time_to_act() -> None:
    """The engine re-dispatches a move after ENGINE_AI_STALL_SECONDS (checked every
    ENGINE_AI_SWEEP_SECONDS): the alert must wait for that to have failed."""
    (rule,) = [r for r in alert_rules() if r["alert"] == "AscensionGamesStalled"]
    match = re.fullmatch(
        r"max by \(namespace\) \(ascension_ai_seat_wait_seconds\) > (\d+)", rule["expr"].strip()
    )
    assert match, rule["expr"]
    stall = float(CONTRACT.engine_defaults["ENGINE_AI_STALL_SECONDS"])
    sweep = float(CONTRACT.engine_defaults["ENGINE_AI_SWEEP_SECONDS"])
    assert int(match.group(1)) > stall + sweep


def alert_test_series() -> list[tuple[str, str]]:
    tests = yaml.safe_load(ALERTS_TEST.read_text())
    return [
        (test["name"], series["series"])
        for test in tests["tests"]
        for series in test.get("input_series", [])
    ]


@pytest.mark.parametrize(("name", "series"), alert_test_series())
def test_alert_unit_tests_use_real_series(name: str, series: str) -> None:
    """The promtool tests feed series the engine and the worker really export."""
    facts = check_promql(series, name)
    check_label_values(facts, name)


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("sum(rate(ascension_grpc_requests_total[5m]) > 1", "PromQL"),
        ("rate(ascension_grpc_requests[5m]) > 1", "outside the contract"),
        ('sum(rate(ascension_grpc_requests_total{status="INTERNAL"}[5m])) > 1', "labels"),
        (
            "histogram_quantile(0.99, sum by (method) (rate(ascension_grpc_request_seconds_bucket[5m])))",
            "le",
        ),
    ],
)
def test_expression_checks_are_not_vacuous(expr: str, message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_promql(expr, "bad")


# ---------------------------------------------------------------------------
# prometheus.yml (compose stack)
# ---------------------------------------------------------------------------


def test_prometheus_config_loads_the_alerts_and_scrapes_engine_and_workers() -> None:
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    assert DURATION.match(config["global"]["scrape_interval"])
    assert config["rule_files"] == ["/etc/prometheus/alerts.yaml"]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert len(jobs) == len(config["scrape_configs"]), "duplicate job names"
    expected = {
        "ascension-engine": ("engine", int(CONTRACT.engine_defaults["ENGINE_METRICS_PORT"])),
        "ascension-worker": ("worker", int(CONTRACT.worker_defaults["WORKER_METRICS_PORT"])),
    }
    for job_name, (service, port) in expected.items():
        (sd,) = jobs[job_name]["dns_sd_configs"]
        assert sd["names"] == [service] and sd["type"] == "A" and sd["port"] == port, job_name
        assert jobs[job_name].get("metrics_path", "/metrics") == "/metrics"


# ---------------------------------------------------------------------------
# Grafana
# ---------------------------------------------------------------------------


def dashboard_panels() -> list[dict[str, Any]]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [panel for panel in dashboard["panels"] if panel["type"] != "row"]


def grafana_to_promql(expr: str) -> str:
    """Replace Grafana's macros by values Prometheus would see."""
    return (
        expr.replace("$__rate_interval", "1m")
        .replace("$__interval", "30s")
        .replace("$__range", "1h")
    )


def test_dashboard_structure() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    cells: set[tuple[int, int]] = set()
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        area = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & area, f"panel {panel['title']!r} overlaps another"
        cells |= area
    for panel in dashboard_panels():
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        ref_ids = [target["refId"] for target in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), panel["title"]


@pytest.mark.parametrize("panel", dashboard_panels(), ids=lambda panel: panel["title"])
def test_dashboard_queries_use_contract_metrics(panel: dict[str, Any]) -> None:
    for target in panel["targets"]:
        facts = check_promql(
            grafana_to_promql(target["expr"]), f"{panel['title']}/{target['refId']}"
        )
        check_label_values(facts, f"{panel['title']}/{target['refId']}")
        legend_labels = set(
            re.findall(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}", target.get("legendFormat", ""))
        )
        assert legend_labels <= facts.labels, (
            f"{panel['title']}: legend uses {sorted(legend_labels - facts.labels)}"
        )


def test_dashboard_covers_every_topic_and_every_metric() -> None:
    used: set[str] = set()
    for panel in dashboard_panels():
        for target in panel["targets"]:
            used |= promql_facts(grafana_to_promql(target["expr"])).metrics
    shown_elsewhere = {"up"} | set(EXTERNAL_SERIES)  # the scraper's, the exporter's, settings
    assert set(TOPICS.values()) - shown_elsewhere <= used
    assert {"up", "redis_memory_max_bytes", "process_cpu_seconds_total"} <= used
    shown = {CONTRACT.family_of(series).name for series in used - set(EXTERNAL_SERIES)}
    missing = {family.name for family in CONTRACT.families} - shown
    assert not missing, f"metrics not shown: {sorted(missing)}"


def test_grafana_provisioning() -> None:
    datasources = yaml.safe_load(DATASOURCES.read_text())
    assert datasources["apiVersion"] == 1
    (prometheus,) = datasources["datasources"]
    assert prometheus["type"] == "prometheus"
    assert prometheus["url"] == "http://prometheus:9090"
    assert prometheus["isDefault"] is True
    providers = yaml.safe_load(DASHBOARD_PROVIDERS.read_text())
    assert providers["apiVersion"] == 1
    (provider,) = providers["providers"]
    assert provider["type"] == "file"
    assert provider["options"]["path"] == "/etc/grafana/dashboards"


# ---------------------------------------------------------------------------
# Scope: two releases in one Prometheus never mix
# ---------------------------------------------------------------------------

SCRAPE_JOBS = frozenset({"ascension-engine", "ascension-worker", "ascension-redis"})


def aggregations(expr: str) -> list[tuple[str, frozenset[str], bool]]:
    """(operator, grouping labels, is `without`) of every aggregation in an expression."""
    import promql_parser

    found: list[tuple[str, frozenset[str], bool]] = []

    def visit(node: Any) -> bool:
        if isinstance(node, promql_parser.AggregateExpr):
            modifier = node.modifier
            labels = frozenset(modifier.labels) if modifier is not None else frozenset()
            without = modifier is not None and "without" in str(modifier.type).lower()
            found.append((str(node.op), labels, without))
        return True

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda rule: rule["alert"])
def test_alert_rules_keep_the_namespace(rule: dict[str, Any]) -> None:
    """Every aggregation keeps `namespace`, so an alert names the release it is about."""
    for op, labels, without in aggregations(rule["expr"]):
        assert not without, f"{rule['alert']}: {op} without (...)"
        assert "namespace" in labels, f"{rule['alert']}: {op} drops the namespace"
    jobs = promql_facts(rule["expr"]).matched_values("job")
    assert jobs <= SCRAPE_JOBS, f"{rule['alert']}: unknown jobs {sorted(jobs - SCRAPE_JOBS)}"


def test_aggregation_check_is_not_vacuous() -> None:
    assert aggregations("sum(rate(ascension_cas_conflicts_total[5m]))") == [
        ("sum", frozenset(), False)
    ]


@pytest.mark.parametrize("panel", dashboard_panels(), ids=lambda panel: panel["title"])
def test_dashboard_queries_are_scoped_to_the_selected_namespace(panel: dict[str, Any]) -> None:
    import promql_parser

    for target in panel["targets"]:
        selectors: list[Any] = []

        def visit(node: Any, found: list[Any] = selectors) -> bool:
            if isinstance(node, promql_parser.VectorSelector):
                found.append(node)
            return True

        promql_parser.walk(promql_parser.parse(grafana_to_promql(target["expr"])), visit)
        assert selectors, panel["title"]
        for selector in selectors:
            matchers = {(m.name, m.value) for m in selector.matchers.matchers}
            assert ("namespace", "$namespace") in matchers, (
                f"{panel['title']}: {selector} is not scoped to $namespace"
            )


def test_dashboard_has_a_namespace_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    namespace = variables["namespace"]
    assert namespace["type"] == "query"
    assert namespace["includeAll"] is False, "All would mix two releases"
    assert 'up{job="ascension-engine"}' in namespace["definition"]


def test_compose_scrape_config_names_jobs_and_namespace() -> None:
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) >= SCRAPE_JOBS
    for name in SCRAPE_JOBS:
        relabel = jobs[name]["relabel_configs"]
        assert {"target_label": "namespace", "replacement": "ascension"} in relabel, name


# ---------------------------------------------------------------------------
# Service level objectives: the SRE workbook's multi-window, multi-burn-rate alerts
# ---------------------------------------------------------------------------

# (long window, short window, burn rate): page on 2% of a 30-day budget in 1 h or 5% in 6 h,
# ticket on 10% in 3 days; each short window 1/12 of its long one.
HOUR = datetime.timedelta(hours=1)
FAST_BURN = {(HOUR, HOUR / 12, 14.4), (6 * HOUR, 6 * HOUR / 12, 6.0)}
SLOW_BURN = {(72 * HOUR, 72 * HOUR / 12, 1.0)}


def burn_conditions(expr: str) -> list[tuple[datetime.timedelta, float, str]]:
    """(window, burn rate, objective) of each comparison of a ratio with an error budget
    (`ratio[window] > on (namespace) (rate * (1 - ascension:slo_objective:ratio{slo=...}))`),
    in the order they appear."""
    import promql_parser

    found: list[tuple[datetime.timedelta, float, str]] = []

    def nodes(tree: Any, kind: type) -> list[Any]:
        out: list[Any] = []

        def collect(node: Any) -> bool:
            if isinstance(node, kind):
                out.append(node)
            return True

        promql_parser.walk(tree, collect)
        return out

    def visit(node: Any) -> bool:
        if isinstance(node, promql_parser.BinaryExpr) and str(node.op) == ">":
            objectives = [
                m.value
                for s in nodes(node.rhs, promql_parser.VectorSelector)
                if s.name == "ascension:slo_objective:ratio"
                for m in s.matchers.matchers
                if m.name == "slo"
            ]
            if objectives:
                windows = {m.range for m in nodes(node.lhs, promql_parser.MatrixSelector)}
                (window,) = windows
                numbers = [n.val for n in nodes(node.rhs, promql_parser.NumberLiteral)]
                rate = [n for n in numbers if n != 1] or [1.0]
                found.append((window, float(rate[0]), objectives[0]))
        return True

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


@pytest.mark.parametrize("slo", ["availability", "latency"])
def test_each_objective_has_a_page_and_a_ticket_as_the_workbook_says(slo: str) -> None:
    name = slo.capitalize()
    rules = {r["alert"]: r for r in alert_rules()}
    fast, slow = rules[f"Ascension{name}BudgetBurnFast"], rules[f"Ascension{name}BudgetBurnSlow"]
    assert fast["labels"]["severity"] == "critical" and slow["labels"]["severity"] == "warning"
    for rule, expected in ((fast, FAST_BURN), (slow, SLOW_BURN)):
        found = burn_conditions(rule["expr"])
        assert {s for _w, _r, s in found} == {slo}, rule["alert"]
        # Each long window with its short one, both against the same burn rate.
        pairs = {(found[i][0], found[i + 1][0], found[i][1]) for i in range(0, len(found), 2)}
        assert all(found[i][1] == found[i + 1][1] for i in range(0, len(found), 2))
        assert pairs == expected, rule["alert"]
        assert re.search(r"\band on \(namespace\)", rule["expr"]), "both windows must agree"


def test_the_indicators_count_what_users_feel() -> None:
    """Availability: unary calls (WatchGame streams end CANCELLED whenever a watcher leaves)
    failing on the server's side, DEADLINE_EXCEEDED and CANCELLED included. Latency: unary
    calls but the searches (AnalyzePosition), which take their budget by design."""
    rules = {r["alert"]: r for r in alert_rules()}
    for name in (
        "AscensionAvailabilityBudgetBurnFast",
        "AscensionAvailabilityBudgetBurnSlow",
        "AscensionGrpcErrorRateHigh",
    ):
        facts = promql_facts(rules[name]["expr"])
        assert facts.matched_values("code") == SERVER_SIDE_CODES, name
        assert {"DEADLINE_EXCEEDED", "CANCELLED"} <= facts.matched_values("code")
        assert ("method", "!=", "WatchGame") in {
            (n, str(o), v) for n, o, v in facts.matchers
        } or all(v == "WatchGame" for n, o, v in facts.matchers if n == "method"), name
        assert facts.matched_values("method") == {"WatchGame"}, name
    for name in (
        "AscensionLatencyBudgetBurnFast",
        "AscensionLatencyBudgetBurnSlow",
        "AscensionGrpcLatencyP99High",
    ):
        facts = promql_facts(rules[name]["expr"])
        assert facts.matched_values("method") == {"WatchGame", "AnalyzePosition"}, name


def test_the_settings_the_alerts_compare_against_are_recorded() -> None:
    """Every settings series the rules read is recorded (for compose's namespace here; the
    chart writes its own), and compose's match compose's engines."""
    records = {r["record"] for r in recording_rules()}
    # Compose's one Redis has no replica to expect (the chart records the count it is given).
    assert records == set(RECORDED_SERIES) - {"ascension:redis_replicas_expected"}
    read = set().union(*(promql_facts(r["expr"]).metrics for r in alert_rules()))
    assert set(RECORDED_SERIES) <= read
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    cap = compose["services"]["engine"]["environment"].get(
        "ENGINE_MAX_LIVE_GAMES", CONTRACT.engine_defaults["ENGINE_MAX_LIVE_GAMES"]
    )
    (recorded_cap,) = [r for r in recording_rules() if r["record"] == "ascension:max_live_games"]
    assert recorded_cap["expr"] == f"vector({cap})"
    (threshold,) = [
        r for r in recording_rules() if r["record"] == "ascension:slo_latency_threshold:seconds"
    ]
    assert threshold["expr"] == f"vector({threshold['labels']['le']})", "the value is the bucket"
