"""`helm upgrade` of a release that changes nothing restarts nothing: the in-chart Redis above
all (one pod: its restart pauses every game), and the engines and workers.

Helm answers `lookup` from the cluster at install and upgrade, and with nothing offline
(helm template, helm_python). So the test renders a copy of the chart whose `lookup`s of
Secrets are answered from a value instead: empty at install, then the Secrets the install
wrote (as the API server returns them: data, base64) at the upgrade, as a cluster would.
"""

from __future__ import annotations

import base64
import re
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import helm_python
import pytest

from tests.deploy.deploy_support import CHART_DIR, load_yaml_documents
from tests.deploy.test_deploy_helm_chart import NAMESPACE, RELEASE, SCENARIOS, _merge

LOOKUP = re.compile(r'lookup "v1" "Secret" (\$?\w*)\.Release\.Namespace (.*?) }}')


@cache
def cluster_chart(directory: Path) -> helm_python.Chart:
    """The chart, its `lookup`s of Secrets answered from the value _clusterSecrets (name ->
    object, or {} for one that does not exist)."""
    copy = directory / "ascension-engine"
    shutil.copytree(CHART_DIR, copy)
    (copy / "values.schema.json").unlink()  # (it refuses the extra value)
    found = 0
    for template in (copy / "templates").rglob("*"):
        if template.is_file():
            text, n = LOOKUP.subn(
                lambda m: f"get ({m.group(1)}.Values._clusterSecrets) {m.group(2)} }}}}",
                template.read_text(),
            )
            found += n
            template.write_text(text)
    assert found >= 3, "the chart's lookups were not found: the test would prove nothing"
    return helm_python.Chart.load(str(copy))


def render(
    chart: helm_python.Chart, values: dict[str, Any], secrets: dict[str, Any]
) -> list[dict[str, Any]]:
    out = chart.render({**values, "_clusterSecrets": secrets}, name=RELEASE, namespace=NAMESPACE)
    docs: list[dict[str, Any]] = []
    for path, text in sorted(out.items()):
        if not path.endswith("NOTES.txt"):
            docs.extend(load_yaml_documents(text))
    return docs


def as_stored(docs: list[dict[str, Any]], names: set[str]) -> dict[str, Any]:
    """Every Secret `lookup` may ask for: those the render wrote, as the API server returns
    them; {} (no such Secret) for the others."""
    stored: dict[str, Any] = {name: {} for name in names}
    for doc in docs:
        if doc["kind"] == "Secret":
            data = {
                key: base64.b64encode(str(value).encode()).decode()
                for key, value in doc.get("stringData", {}).items()
            }
            stored[doc["metadata"]["name"]] = {**doc, "data": data}
    return stored


def pod_templates(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        f"{d['kind']}/{d['metadata']['name']}": d["spec"]["template"]
        for d in docs
        if d["kind"] in {"Deployment", "StatefulSet"}
    }


def secret_names(values: dict[str, Any]) -> set[str]:
    """Names the chart may look up in these scenarios (its own and those the values name)."""
    full = f"{RELEASE}-ascension-engine"
    names = {f"{full}-{suffix}" for suffix in ("redis-auth", "engine-keys", "engine-tls")}
    names |= {f"{full}-engine-client"}
    for path in (
        ("externalRedis", "existingSecret"),
        ("broker", "existingSecret"),
        ("redis", "auth", "existingSecret"),
        ("engine", "aiTokenKeys", "existingSecret"),
        ("engine", "operatorKeys", "existingSecret"),
        ("engine", "tls", "existingSecret"),
    ):
        node: Any = values
        for key in path:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        if node:
            names.add(node)
    return names


@pytest.mark.parametrize(
    "scenario", ["defaults", "redis-exporter", "keda-redis", "everything", "redis-ephemeral"]
)
def test_an_upgrade_that_changes_nothing_restarts_nothing(
    scenario: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    chart = cluster_chart(tmp_path_factory.mktemp("chart"))
    values = _merge(SCENARIOS[scenario], {})
    names = secret_names(values)
    install = render(chart, values, {name: {} for name in names})
    upgrade = render(chart, values, as_stored(install, names))
    before, after = pod_templates(install), pod_templates(upgrade)
    assert before, "no pods rendered"
    for name, template in before.items():
        assert after[name] == template, f"{name} would restart on the first upgrade"
    # The generated passwords and keys are kept (the pods use the same).
    secrets = {d["metadata"]["name"]: d for d in install if d["kind"] == "Secret"}
    for doc in upgrade:
        if doc["kind"] == "Secret":
            assert doc["stringData"] == secrets[doc["metadata"]["name"]]["stringData"]


def test_a_new_password_restarts_the_redis_pod(tmp_path: Path) -> None:
    """Not vacuous: when the Secret holds other passwords (rotated by deleting the Secret, or
    by hand), the Redis pod's template changes and it restarts with them."""
    chart = cluster_chart(tmp_path)
    names = secret_names({})
    install = render(chart, {}, {name: {} for name in names})
    stored = as_stored(install, names)
    auth = stored[f"{RELEASE}-ascension-engine-redis-auth"]
    auth["data"]["engine-password"] = base64.b64encode(b"another-password-0123456789").decode()
    upgrade = render(chart, {}, stored)
    redis = f"StatefulSet/{RELEASE}-ascension-engine-redis"
    assert pod_templates(upgrade)[redis] != pod_templates(install)[redis]
    engine = f"Deployment/{RELEASE}-ascension-engine-engine"
    assert pod_templates(upgrade)[engine] != pod_templates(install)[engine]
