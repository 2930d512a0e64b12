"""docs/operations.md documents the deployment as it is; the settings and metrics it names
are read from the code (tests/deploy/deploy_support.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from tests.deploy.deploy_support import (
    CHART_DIR,
    CONTRACT,
    DEPLOY,
    DEPLOYED_ENGINE_ENV,
    DEPLOYED_WORKER_ENV,
    REPO,
)

GUIDE = REPO / "docs" / "operations.md"
CONFIGURATION = REPO / "docs" / "configuration.md"


def guide() -> str:
    return str(GUIDE.read_text())


def section(heading: str) -> str:
    """The text under a heading, up to the next heading of the same or a higher level."""
    level = heading.split(" ", 1)[0]
    text = guide().split(f"\n{heading}\n", 1)[1]
    stop = re.search(rf"^#{{1,{len(level)}}} ", text, flags=re.M)
    return text[: stop.start()] if stop else text


def table_rows(text: str) -> dict[str, list[str]]:
    """Rows of the tables in a text whose first cell is one `name`, keyed by that name."""
    rows = {}
    for line in text.splitlines():
        match = re.match(r"^\|\s*`([A-Za-z_]+)`\s*\|(.*)\|\s*$", line)
        if match:
            rows[match.group(1)] = [cell.strip() for cell in match.group(2).split("|")]
    return rows


def test_engine_configuration_is_linked_not_repeated() -> None:
    """docs/configuration.md is the one table of the engine's settings."""
    configuration = section("## Configuration")
    assert "](configuration.md)" in configuration
    engine_only = CONTRACT.engine_env - CONTRACT.worker_env
    for heading in (
        "### What a deployment sets on the engine",
        "### AI worker (`ascension-worker`)",
    ):
        assert not set(table_rows(section(heading))) & engine_only, heading
    documented = set(table_rows(CONFIGURATION.read_text()))
    missing = CONTRACT.engine_env - documented
    assert not missing, f"docs/configuration.md, linked as the full table, lacks {sorted(missing)}"


def test_worker_settings_table_matches_the_worker() -> None:
    rows = table_rows(section("### AI worker (`ascension-worker`)"))
    assert set(rows) == CONTRACT.worker_env, (
        f"missing {sorted(CONTRACT.worker_env - set(rows))}, "
        f"unknown {sorted(set(rows) - CONTRACT.worker_env)}"
    )
    for name, default in CONTRACT.worker_defaults.items():
        assert rows[name][0] == f"`{default}`", f"{name}: the worker's default is {default}"


def test_where_each_variable_comes_from_matches_compose() -> None:
    rows = table_rows(section("### Where each variable comes from"))
    deployed = DEPLOYED_ENGINE_ENV | DEPLOYED_WORKER_ENV
    assert set(rows) == deployed, (
        f"missing {sorted(deployed - set(rows))}, unknown {sorted(set(rows) - deployed)}"
    )
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    for name, (compose_cell, helm_cell) in rows.items():
        # NAME, or NAME_FILE: a file holding it (the Redis URL the first run draws).
        engine, worker = compose["engine"]["environment"], compose["worker"]["environment"]
        env = engine if name in engine or f"{name}_FILE" in engine else worker
        key = name if name in env else f"{name}_FILE"
        value = env[key]
        shown = f"`{value}`" if key == name else f"`{key}={value}`"
        assert shown in compose_cell, f"{name}: compose sets {key}={value}"
        assert "`" in helm_cell, f"{name}: no Helm value named"


def metric_rows() -> dict[str, list[str]]:
    return table_rows(section("### Metrics"))


def test_every_metric_is_documented_with_its_type_and_labels() -> None:
    rows = metric_rows()
    expected = {family.documented_name: family for family in CONTRACT.families}
    assert set(rows) == set(expected), (
        f"missing {sorted(set(expected) - set(rows))}, unknown {sorted(set(rows) - set(expected))}"
    )
    for name, (kind, labels, _meaning) in rows.items():
        family = expected[name]
        assert kind == family.type, f"{name} is a {family.type}"
        assert set(re.findall(r"`(\w+)`", labels)) == family.labels, (
            f"{name} has the labels {sorted(family.labels)}"
        )


def test_every_alert_is_documented() -> None:
    text = guide()
    alerts = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yaml").read_text())
    for group in alerts["groups"]:
        for rule in group["rules"]:
            name = rule.get("alert") or rule["record"]
            assert f"`{name}`" in text, name


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


@pytest.mark.parametrize(
    "heading",
    [
        "## The image",
        "## Docker Compose",
        "### Images",
        "### Scheduling defaults",
        "### Worker liveness",
        "### Network policies",
        "### How players reach the engine",
        "### Scaling workers with KEDA",
        "### `helm test`",
        "### Rotating Secrets",
        "### Redis",
        "### Process metrics",
        "### Alerts",
        "### Dashboard",
        "## Proto hygiene (buf)",
        "## Running the tests",
        "## Logs and tracing",
    ],
)
def test_operations_guide_has_a_section_per_feature(heading: str) -> None:
    assert f"\n{heading}\n" in guide()
    assert len(section(heading).split()) > 40, f"{heading} says hardly anything"
