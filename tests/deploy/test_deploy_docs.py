"""docs/operations.md documents the contract and the deployment as they are."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from tests.deploy.deploy_support import CHART_DIR, CONTRACT, DEPLOY, REPO

GUIDE = REPO / "docs" / "operations.md"


def guide() -> str:
    return str(GUIDE.read_text())


def configuration_rows() -> dict[str, list[str]]:
    """Rows of the table under '## Configuration' keyed by the variable name."""
    section = guide().split("## Configuration", 1)[1].split("\n### ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"^\|\s*`([A-Z_]+)`\s*\|(.*)\|\s*$", line)
        if match:
            rows[match.group(1)] = [cell.strip() for cell in match.group(2).split("|")]
    return rows


def test_every_environment_variable_is_in_the_configuration_table() -> None:
    rows = configuration_rows()
    expected = CONTRACT.engine_env | CONTRACT.worker_env
    assert set(rows) == expected, (
        f"missing {sorted(expected - set(rows))}, unknown {sorted(set(rows) - expected)}"
    )
    for name, default in CONTRACT.env_defaults.items():
        assert f"`{default}`" in rows[name][1], (
            f"{name}: the table does not give the default {default}"
        )


def test_every_metric_is_documented() -> None:
    text = guide()
    for metric in CONTRACT.metrics:
        assert f"`{metric}`" in text, metric


def test_every_alert_is_documented() -> None:
    text = guide()
    alerts = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yaml").read_text())
    for group in alerts["groups"]:
        for rule in group["rules"]:
            assert f"`{rule['alert']}`" in text, rule["alert"]


def test_every_command_is_documented() -> None:
    text = guide()
    for script, subcommands in CONTRACT.commands.items():
        for subcommand in subcommands:
            assert f"`{script} {subcommand}`" in text, f"{script} {subcommand}"


def _has_key(values: dict[str, Any], dotted: str) -> bool:
    node: Any = values
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def test_documented_chart_values_exist() -> None:
    values = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    sections = "|".join(sorted(values))
    mentioned = set(re.findall(rf"`((?:{sections})(?:\.[A-Za-z]+)+)(?::[^`]*)?`", guide()))
    mentioned |= {m for m in re.findall(r"`([a-zA-Z]+)`", guide()) if m == "logLevel"}
    assert len(mentioned) > 20, "the guide names hardly any chart value"
    for key in sorted(mentioned):
        assert _has_key(values, key), (
            f"docs/operations.md names the value {key}, which values.yaml lacks"
        )


@pytest.mark.parametrize(
    "path",
    [
        "deploy/compose.yaml",
        "deploy/docker/Dockerfile",
        "deploy/prometheus/alerts.yaml",
        "deploy/grafana/dashboards/ascension-engine.json",
        "deploy/helm/ascension-engine/",
    ],
)
def test_documented_paths_exist(path: str) -> None:
    assert f"`{path}`" in guide()
    assert (REPO / path).exists()
