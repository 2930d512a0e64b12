"""Prometheus's own checker and rule unit tests (promtool).

promtool comes with Debian's `prometheus` package
(`apt-get install -y --no-install-recommends prometheus`); CI installs it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from tests.deploy.deploy_support import CHART_DIR, DEPLOY

PROMETHEUS_DIR = DEPLOY / "prometheus"


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool is missing: apt-get install -y --no-install-recommends prometheus"
    return path


def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # The unit tests evaluate every rule each simulated minute for hours of burn-rate
    # windows: about 10 s of CPU, more on a loaded machine.
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=240, check=False, cwd=cwd
    )


@pytest.mark.parametrize(
    "rules", [PROMETHEUS_DIR / "alerts.yaml", CHART_DIR / "files" / "alerts.yaml"]
)
def test_promtool_accepts_the_rules(promtool: str, rules: Path) -> None:
    result = run(promtool, "check", "rules", str(rules))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_alert_unit_tests_pass(promtool: str) -> None:
    """Each alert fires on the series in alerts_test.yaml, with its labels and annotations."""
    result = run(promtool, "test", "rules", "alerts_test.yaml", cwd=PROMETHEUS_DIR)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_unit_test_that_fires_it() -> None:
    alerts = yaml.safe_load((PROMETHEUS_DIR / "alerts.yaml").read_text())
    names = {
        rule["alert"] for group in alerts["groups"] for rule in group["rules"] if "alert" in rule
    }
    tests = yaml.safe_load((PROMETHEUS_DIR / "alerts_test.yaml").read_text())
    assert tests["rule_files"] == ["alerts.yaml"]
    fired = {
        case["alertname"]
        for test in tests["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert names == fired, f"alerts without a firing test: {sorted(names - fired)}"


def test_promtool_rejects_a_broken_rule(promtool: str, tmp_path: Path) -> None:
    broken = tmp_path / "alerts.yaml"
    broken.write_text(
        (PROMETHEUS_DIR / "alerts.yaml").read_text().replace("for: 2m", "for: two minutes", 1)
    )
    result = run(promtool, "check", "rules", str(broken))
    assert result.returncode != 0


def test_promtool_accepts_the_compose_prometheus_config(promtool: str, tmp_path: Path) -> None:
    # In the container the rules are at /etc/prometheus/alerts.yaml; point at the repository copy.
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    assert config["rule_files"] == ["/etc/prometheus/alerts.yaml"]
    config["rule_files"] = [str(PROMETHEUS_DIR / "alerts.yaml")]
    local = tmp_path / "prometheus.yml"
    local.write_text(yaml.safe_dump(config))
    result = run(promtool, "check", "config", str(local))
    assert result.returncode == 0, result.stdout + result.stderr


def chart_rules(tmp_path: Path, values: dict[str, Any]) -> Path:
    """The chart's PrometheusRule groups, as a rules file Prometheus loads."""
    from tests.deploy.test_deploy_helm_chart import by_kind, render_docs

    (rule,) = by_kind(render_docs(values), "PrometheusRule")
    path = tmp_path / "chart-rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    return path


def test_promtool_accepts_the_charts_rules(promtool: str, tmp_path: Path) -> None:
    rules = chart_rules(tmp_path, {"metrics": {"prometheusRule": {"enabled": True}}})
    result = run(promtool, "check", "rules", str(rules))
    assert result.returncode == 0, result.stdout + result.stderr


# 1% of calls fail in namespace "games" (the release's): ten times a 99.9% objective's budget
# (a page), a tenth of a 90% one's (nothing).
OBJECTIVE_TEST = """
rule_files: [chart-rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'ascension_grpc_requests_total{namespace="games",method="SubmitAction",code="OK"}'
        values: '0+594x60'
      - series: 'ascension_grpc_requests_total{namespace="games",method="SubmitAction",code="INTERNAL"}'
        values: '0+6x60'
    alert_rule_test:
      - eval_time: 40m
        alertname: AscensionAvailabilityBudgetBurnFast
        exp_alerts: %s
"""


@pytest.mark.parametrize(("objective", "pages"), [(0.999, True), (0.9, False)])
def test_the_availability_objective_is_a_value(
    promtool: str, tmp_path: Path, objective: float, pages: bool
) -> None:
    """The chart's alerts page, or not, on the same failures depending on
    metrics.prometheusRule.slo.availability, for the release's namespace."""
    slo = {"availability": objective, "latency": {"objective": 0.99, "thresholdSeconds": "0.25"}}
    chart_rules(tmp_path, {"metrics": {"prometheusRule": {"enabled": True, "slo": slo}}})
    (rule,) = [
        r
        for g in yaml.safe_load((PROMETHEUS_DIR / "alerts.yaml").read_text())["groups"]
        for r in g["rules"]
        if r.get("alert") == "AscensionAvailabilityBudgetBurnFast"
    ]
    description = " ".join(rule["annotations"]["description"].split())
    description = description.replace("{{ $value | humanizePercentage }}", "1%")
    description = description.replace("{{ $labels.namespace }}", "games")
    expected = json.dumps(
        [
            {
                "exp_labels": {"severity": "critical", "component": "engine", "namespace": "games"},
                "exp_annotations": {
                    "summary": rule["annotations"]["summary"],
                    "description": description,
                },
            }
        ]
    )
    test = tmp_path / "objective_test.yaml"
    test.write_text(OBJECTIVE_TEST % (expected if pages else "[]"))
    result = run(promtool, "test", "rules", test.name, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# Two replicas expected in "games": the primary keeps one for hours.
REPLICAS_TEST = """
rule_files: [chart-rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'redis_connected_slaves{namespace="games",job="ascension-redis",instance="redis-0:9121"}'
        values: '1x180'
      - series: 'redis_instance_info{namespace="games",job="ascension-redis",instance="redis-0:9121",role="master"}'
        values: '1x180'
    alert_rule_test:
      - eval_time: 3h
        alertname: AscensionRedisReplicasLost
        exp_alerts: %s
"""


@pytest.mark.parametrize(("expected", "fires"), [(2, True), (1, False)])
def test_the_charts_replica_count_keeps_the_alert_on(
    promtool: str, tmp_path: Path, expected: int, fires: bool
) -> None:
    """metrics.prometheusRule.redisReplicas: a primary that never had the replicas it should
    have fires, and keeps firing (no history to forget)."""
    chart_rules(
        tmp_path,
        {"metrics": {"prometheusRule": {"enabled": True, "redisReplicas": expected}}},
    )
    rules = yaml.safe_load((tmp_path / "chart-rules.yaml").read_text())
    (rule,) = [
        r
        for g in rules["groups"]
        for r in g["rules"]
        if r.get("alert") == "AscensionRedisReplicasLost"
    ]
    alert = {
        "exp_labels": {
            "severity": "warning",
            "component": "redis",
            "namespace": "games",
            "job": "ascension-redis",
            "instance": "redis-0:9121",
        },
        "exp_annotations": {
            "summary": "Redis primary redis-0:9121 has lost replicas",
            "description": " ".join(rule["annotations"]["description"].split())
            .replace("{{ $labels.instance }}", "redis-0:9121")
            .replace("{{ $labels.namespace }}", "games")
            .replace("{{ $value }}", "1"),
        },
    }
    test = tmp_path / "replicas_test.yaml"
    test.write_text(REPLICAS_TEST % json.dumps([alert] if fires else []))
    result = run(promtool, "test", "rules", test.name, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
