"""The chart with a Redis Sentinel setup: the schema takes a redis+sentinel:// URL, the chart
keeps it in the Redis Secret for REDIS_URL (and the broker, when it has none of its own), and
``externalRedis.waitReplicas`` is the engine's ENGINE_REDIS_WAIT_REPLICAS. The production
example is linted and validated with the other scenarios (tests/deploy)."""

from __future__ import annotations

import base64
from typing import Any

import helm_python
import pytest

from engine_service.server import config
from tests.deploy.deploy_support import CHART_DIR
from tests.deploy.test_deploy_helm_chart import by_kind, container, env_of, render_docs

URL = "rediss+sentinel://app:pw@sentinel-0:26379,sentinel-1:26379,sentinel-2:26379/games/0"
# The workers' egress (NetworkPolicy): a broker behind Sentinel is the Sentinels' port and the
# Redis servers'.
EGRESS = [{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "data"}}}],
           "ports": [{"port": 26379, "protocol": "TCP"}, {"port": 6380, "protocol": "TCP"}]}]  # fmt: skip
VALUES = {"redis": {"enabled": False}, "externalRedis": {"url": URL, "waitReplicas": 1},
          "networkPolicy": {"workerEgress": {"extra": EGRESS}}}  # fmt: skip


def test_a_sentinel_url_and_replicas_to_wait_for_reach_the_engine_and_workers() -> None:
    assert not helm_python.lint(str(CHART_DIR), VALUES, strict=True)["errors"]
    docs = render_docs(VALUES)
    engine, worker = env_of(container(docs, "engine")), env_of(container(docs, "worker"))
    secret_name = engine["REDIS_URL"]["valueFrom"]["secretKeyRef"]["name"]
    (secret,) = [s for s in by_kind(docs, "Secret") if s["metadata"]["name"] == secret_name]
    stored = secret.get("stringData", {}).get("redis-url") or base64.b64decode(
        secret["data"]["redis-url"]).decode()  # fmt: skip
    assert stored == URL
    assert engine["ENGINE_REDIS_WAIT_REPLICAS"]["value"] == "1"
    assert "ENGINE_REDIS_WAIT_REPLICAS" not in worker
    # The broker is the same primary (no broker of its own): the engine and the workers read
    # it as a Sentinel broker URL.
    assert worker["CELERY_BROKER_URL"]["valueFrom"]["secretKeyRef"]["name"] == secret_name
    settings = config.load({"REDIS_URL": URL, "ENGINE_REDIS_WAIT_REPLICAS": "1"})
    assert settings.broker_url.startswith("rediss+sentinel://")


@pytest.mark.parametrize(
    "values",
    [
        {**VALUES, "externalRedis": {"url": "sentinel://h:26379"}},
        {**VALUES, "externalRedis": {"url": URL, "waitReplicas": -1}},
    ],
)
def test_the_schema_refuses_what_the_engine_would(values: dict[str, Any]) -> None:
    with pytest.raises(helm_python.HelmValuesError):
        render_docs(values)
    assert helm_python.lint(str(CHART_DIR), values, strict=True)["errors"]
