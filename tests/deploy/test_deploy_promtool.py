"""Prometheus's own checker and rule unit tests (promtool).

promtool comes with Debian's `prometheus` package
(`apt-get install -y --no-install-recommends prometheus`); CI installs it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

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
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=60, check=False, cwd=cwd
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
    names = {rule["alert"] for group in alerts["groups"] for rule in group["rules"]}
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
