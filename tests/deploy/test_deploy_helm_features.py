"""The chart's production options, rendered by the real Helm library: NetworkPolicies,
Redis authentication and exporter, the metrics Services and their jobs, Ingress and
GRPCRoute, KEDA, image digests and registry, safer defaults, rotation of Secrets, and the
`helm test` that plays an AI move (run here against a real engine).

Scenarios live in test_deploy_helm_chart.SCENARIOS, where every manifest of each is also
validated against the Kubernetes 1.30 schemas; the CRDs (GRPCRoute, ScaledObject,
TriggerAuthentication) are checked against their required fields here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import helm_python
import jsonschema  # type: ignore[import-untyped, unused-ignore]
import pytest

from ai_workers.config import QUEUE
from engine_service.api.ascension.v1 import engine_pb2
from tests.deploy.deploy_support import CHART_DIR
from tests.deploy.test_deploy_helm_chart import (
    BROKER_EGRESS,
    DIGEST,
    GATEWAY_API,
    KEDA_API,
    NAMESPACE,
    PRODUCTION_EXAMPLE,
    PROXY_PEERS,
    RELEASE,
    SCENARIOS,
    by_kind,
    env_of,
    manifests,
    merged_values,
    one,
    pod_specs,
    render,
    render_docs,
    selector_matches,
)
from tests.service import support

FULLNAME = f"{RELEASE}-ascension-engine"
SCRAPE_JOBS = {
    "engine": "ascension-engine",
    "worker": "ascension-worker",
    "redis": "ascension-redis",
}


def policies(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        p["metadata"]["labels"]["app.kubernetes.io/component"]: p
        for p in by_kind(docs, "NetworkPolicy")
    }


def rule_for_port(policy: dict[str, Any], port: str) -> dict[str, Any]:
    (rule,) = [r for r in policy["spec"]["ingress"] if [p["port"] for p in r["ports"]] == [port]]
    found: dict[str, Any] = rule
    return found


def pods_of(docs: list[dict[str, Any]], component: str) -> list[dict[str, Any]]:
    return [
        meta["labels"]
        for _name, meta, _spec in pod_specs(docs)
        if meta["labels"]["app.kubernetes.io/component"] == component
    ]


# ---------------------------------------------------------------------------
# NetworkPolicies
# ---------------------------------------------------------------------------


def test_network_policies_are_on_by_default() -> None:
    assert set(policies(manifests("defaults"))) == {"engine", "worker", "redis"}
    assert policies(manifests("no-network-policy")) == {}
    # An external Redis is not the chart's to police.
    assert set(policies(manifests("external-redis-url"))) == {"engine", "worker"}


@pytest.mark.parametrize(
    "scenario", ["defaults", "redis-exporter", "network-policy-restricted-grpc"]
)
def test_policies_select_their_pods_and_name_their_ports(scenario: str) -> None:
    docs = manifests(scenario)
    egress = merged_values(scenario)["networkPolicy"]["workerEgress"]["enabled"]
    for component, policy in policies(docs).items():
        # Only the workers' egress is restricted (tests/deploy/test_worker_egress.py).
        expected = ["Ingress", "Egress"] if component == "worker" and egress else ["Ingress"]
        assert policy["spec"]["policyTypes"] == expected, component
        selector = policy["spec"]["podSelector"]["matchLabels"]
        selected = [
            spec for _n, meta, spec in pod_specs(docs) if selector_matches(selector, meta["labels"])
        ]
        assert len(selected) == 1 and pods_of(docs, component), component
        port_names = {p["name"] for c in selected[0]["containers"] for p in c.get("ports", [])}
        for rule in policy["spec"]["ingress"]:
            for port in rule["ports"]:
                assert port["port"] in port_names, f"{component}: {port['port']}"


def test_only_engine_and_workers_reach_redis() -> None:
    docs = manifests("redis-exporter")
    rule = rule_for_port(policies(docs)["redis"], "redis")
    allowed = {
        component
        for component in ("engine", "worker", "redis", "test")
        for labels in pods_of(docs, component)
        or [
            {
                "app.kubernetes.io/component": component,
                "app.kubernetes.io/instance": RELEASE,
                "app.kubernetes.io/name": "ascension-engine",
            }
        ]
        if any(
            selector_matches(peer["podSelector"]["matchLabels"], labels) for peer in rule["from"]
        )
    }
    assert allowed == {"engine", "worker"}
    for peer in rule["from"]:
        assert set(peer) == {"podSelector"}, "same namespace, this release's pods only"
        assert peer["podSelector"]["matchLabels"]["app.kubernetes.io/instance"] == RELEASE
    # The exporter's port is for the monitoring namespace only.
    metrics = rule_for_port(policies(docs)["redis"], "metrics")
    assert metrics["from"] == merged_values("redis-exporter")["networkPolicy"]["metricsFrom"]


def test_metrics_ports_open_to_the_monitoring_namespace_only() -> None:
    for scenario in ("defaults", "network-policy-restricted-grpc"):
        docs = manifests(scenario)
        expected = merged_values(scenario)["networkPolicy"]["metricsFrom"]
        for component in ("engine", "worker"):
            assert rule_for_port(policies(docs)[component], "metrics")["from"] == expected
    default = merged_values("defaults")["networkPolicy"]["metricsFrom"]
    assert default == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]
    # Workers accept nothing but scrapes.
    worker = policies(manifests("defaults"))["worker"]
    assert [[p["port"] for p in r["ports"]] for r in worker["spec"]["ingress"]] == [["metrics"]]


def own_peers(docs: list[dict[str, Any]], rule: dict[str, Any]) -> set[str]:
    """The components of this release whose pods a rule's peers admit."""
    return {
        component
        for component in ("engine", "worker", "redis", "test", "web")
        for labels in pods_of(docs, component)
        if any(
            "podSelector" in peer
            and "namespaceSelector" not in peer
            and selector_matches(peer["podSelector"]["matchLabels"], labels)
            for peer in rule["from"]
        )
    }


def test_grpc_port_open_to_this_releases_pods_by_default() -> None:
    """Default: only the release's own clients (workers, `helm test`, the web pods when on);
    port-forward is not subject to NetworkPolicies. Nothing else in the cluster reaches it."""
    docs = manifests("defaults")
    rule = rule_for_port(policies(docs)["engine"], "grpc")
    assert own_peers(docs, rule) == {"worker", "test"}
    assert all(set(peer) == {"podSelector"} for peer in rule["from"])
    web = manifests("tls-cert-manager-mtls")
    assert own_peers(web, rule_for_port(policies(web)["engine"], "grpc")) == {
        "worker",
        "test",
        "web",
    }


@pytest.mark.parametrize(
    "exposure",
    [
        {"ingress": {"enabled": True, "hosts": ["a.example"], "tls": [{"secretName": "a"}]}},
        {"gateway": {"grpcRoute": {"enabled": True, "parentRefs": [{"name": "public"}]}}},
        {"engine": {"service": {"type": "LoadBalancer"}}},
    ],
    ids=["ingress", "grpc-route", "load-balancer"],
)
def test_an_exposed_engine_needs_the_peers_its_players_come_through(
    exposure: dict[str, Any],
) -> None:
    """Else the NetworkPolicy would refuse every player: the render says what to set."""
    values = {
        **exposure,
        "engine": {**exposure.get("engine", {}), "trustedProxies": ["10.0.0.0/8"]},
    }
    with pytest.raises(helm_python.HelmRenderError, match=r"networkPolicy\.grpcFrom"):
        render(values)
    render({**values, "networkPolicy": PROXY_PEERS["networkPolicy"]})
    render({**values, "networkPolicy": {"enabled": False}})


def test_grpc_port_open_as_configured() -> None:
    # Restricted: the configured peers, plus this release's workers and helm test pods.
    docs = manifests("network-policy-restricted-grpc")
    rule = rule_for_port(policies(docs)["engine"], "grpc")
    configured = merged_values("network-policy-restricted-grpc")["networkPolicy"]["grpcFrom"]
    assert rule["from"][: len(configured)] == configured
    own = rule["from"][len(configured) :]
    for component in ("worker", "test"):
        assert any(
            all(
                selector_matches(p["podSelector"]["matchLabels"], labels)
                for labels in pods_of(docs, component)
            )
            for p in own
        ), component
    assert pods_of(docs, "test"), "helm test pods exist to be allowed"


# ---------------------------------------------------------------------------
# Metrics Services, jobs, Redis exporter
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["service-monitor", "everything", "everything-keda"])
def test_service_monitor_names_the_jobs_the_rules_select_on(scenario: str) -> None:
    docs = manifests(scenario)
    (monitor,) = by_kind(docs, "ServiceMonitor")
    job_label = monitor["spec"]["jobLabel"]
    selector = monitor["spec"]["selector"]["matchLabels"]
    selected = [
        s for s in by_kind(docs, "Service") if selector_matches(selector, s["metadata"]["labels"])
    ]
    jobs = {
        s["metadata"]["labels"]["app.kubernetes.io/component"]: s["metadata"]["labels"][job_label]
        for s in selected
    }
    expected = {
        k: v
        for k, v in SCRAPE_JOBS.items()
        if k != "redis" or merged_values(scenario)["redis"]["metrics"]["enabled"]
    }
    assert jobs == expected
    for service in selected:
        assert [p["name"] for p in service["spec"]["ports"]] == ["metrics"], "metrics only"
        assert service["spec"]["type"] == "ClusterIP"


def test_load_balancer_does_not_expose_metrics() -> None:
    docs = manifests("load-balancer-without-limits")
    exposed = [s for s in by_kind(docs, "Service") if s["spec"]["type"] == "LoadBalancer"]
    assert len(exposed) == 1
    assert [p["name"] for p in exposed[0]["spec"]["ports"]] == ["grpc"]


def test_redis_exporter_sidecar_reads_the_password_and_listens_on_metrics() -> None:
    docs = manifests("redis-exporter")
    spec = by_kind(docs, "StatefulSet")[0]["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in spec["containers"]}
    exporter = containers["exporter"]
    env = env_of(exporter)
    assert env["REDIS_ADDR"]["value"] == "redis://127.0.0.1:6379"
    # As the read-only user exporter, with its own password.
    assert env["REDIS_USER"]["value"] == "exporter"
    assert (
        env["REDIS_PASSWORD"]["valueFrom"]
        == env_of(containers["redis"])["REDIS_PASSWORD_EXPORTER"]["valueFrom"]
    )
    assert exporter["ports"] == [{"name": "metrics", "containerPort": 9121, "protocol": "TCP"}]
    assert "--web.listen-address=:9121" in exporter["args"]

    def sidecars(values: dict[str, Any]) -> set[str]:
        spec = by_kind(render_docs(values), "StatefulSet")[0]["spec"]["template"]["spec"]
        return {c["name"] for c in spec["containers"]}

    assert "exporter" in sidecars({}), "on by default: the Redis alerts need it"
    assert "exporter" not in sidecars({"redis": {"metrics": {"enabled": False}}})


# ---------------------------------------------------------------------------
# Ingress and Gateway API
# ---------------------------------------------------------------------------

GRPC_ROUTE_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": GATEWAY_API},
        "kind": {"const": "GRPCRoute"},
        "spec": {
            "type": "object",
            "required": ["parentRefs", "rules"],
            "properties": {
                "parentRefs": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "object", "required": ["name"]},
                },
                "hostnames": {"type": "array", "items": {"type": "string"}},
                "rules": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["backendRefs"],
                        "properties": {
                            "matches": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "method": {
                                            "type": "object",
                                            "required": ["service"],
                                            "properties": {
                                                "type": {"enum": ["Exact", "RegularExpression"]}
                                            },
                                        }
                                    },
                                },
                            },
                            "backendRefs": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "object",
                                    "required": ["name", "port"],
                                    "properties": {"port": {"type": "integer"}},
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def engine_service(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (service,) = [
        s for s in by_kind(docs, "Service") if s["metadata"]["name"] == f"{FULLNAME}-engine"
    ]
    return service


def test_ingress_routes_grpc_to_the_engine_over_tls() -> None:
    docs = manifests("ingress")
    (ingress,) = by_kind(docs, "Ingress")
    values = merged_values("ingress")["ingress"]
    assert ingress["spec"]["tls"] == values["tls"]
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert (
        ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/backend-protocol"] == "GRPC"
    )
    service = engine_service(docs)
    for rule, host in zip(ingress["spec"]["rules"], values["hosts"], strict=True):
        assert rule["host"] == host
        (path,) = rule["http"]["paths"]
        backend = path["backend"]["service"]
        assert backend["name"] == service["metadata"]["name"]
        assert backend["port"]["name"] in {p["name"] for p in service["spec"]["ports"]}
        assert backend["port"]["name"] == "grpc"


def test_ingress_requires_tls_and_hosts() -> None:
    with pytest.raises(helm_python.HelmRenderError, match=r"ingress\.tls"):
        render({**PROXY_PEERS, "ingress": {"enabled": True, "hosts": ["play.example.com"]}})
    with pytest.raises(helm_python.HelmRenderError, match=r"ingress\.hosts"):
        render({**PROXY_PEERS, "ingress": {"enabled": True, "tls": [{"secretName": "x"}]}})


@pytest.mark.parametrize("scenario", ["grpc-route", "everything"])
def test_grpc_route_sends_the_engine_services_to_the_engine(scenario: str) -> None:
    docs = manifests(scenario)
    (route,) = [d for d in docs if d["kind"] == "GRPCRoute"]
    jsonschema.validate(route, GRPC_ROUTE_SCHEMA)
    assert (
        route["spec"]["parentRefs"] == merged_values(scenario)["gateway"]["grpcRoute"]["parentRefs"]
    )
    (rule,) = route["spec"]["rules"]
    services = {m["method"]["service"] for m in rule["matches"]}
    engine = engine_pb2.DESCRIPTOR.services_by_name["Engine"].full_name
    assert services == {engine, "grpc.health.v1.Health"}
    (backend,) = rule["backendRefs"]
    service = engine_service(docs)
    assert backend["name"] == service["metadata"]["name"]
    assert backend["port"] in {p["port"] for p in service["spec"]["ports"] if p["name"] == "grpc"}


def test_grpc_route_needs_a_parent_and_its_schema_check_is_not_vacuous() -> None:
    with pytest.raises(helm_python.HelmRenderError, match="parentRefs"):
        render({**PROXY_PEERS, "gateway": {"grpcRoute": {"enabled": True}}})
    (route,) = [d for d in manifests("grpc-route") if d["kind"] == "GRPCRoute"]
    del route["spec"]["rules"][0]["backendRefs"][0]["port"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(route, GRPC_ROUTE_SCHEMA)


# ---------------------------------------------------------------------------
# KEDA
# ---------------------------------------------------------------------------

SCALED_OBJECT_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": KEDA_API},
        "kind": {"const": "ScaledObject"},
        "spec": {
            "type": "object",
            "required": ["scaleTargetRef", "triggers"],
            "properties": {
                "scaleTargetRef": {"type": "object", "required": ["name"]},
                "minReplicaCount": {"type": "integer", "minimum": 0},
                "maxReplicaCount": {"type": "integer", "minimum": 1},
                "pollingInterval": {"type": "integer"},
                "cooldownPeriod": {"type": "integer"},
                "triggers": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["type", "metadata"],
                        "properties": {
                            # KEDA's trigger metadata values are strings.
                            "metadata": {
                                "type": "object",
                                "additionalProperties": {"type": "string"},
                            },
                            "authenticationRef": {"type": "object", "required": ["name"]},
                        },
                    },
                },
            },
        },
    },
}
TRIGGER_AUTH_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": KEDA_API},
        "kind": {"const": "TriggerAuthentication"},
        "spec": {
            "type": "object",
            "properties": {
                "secretTargetRef": {
                    "type": "array",
                    "items": {"type": "object", "required": ["parameter", "name", "key"]},
                }
            },
        },
    },
}


def keda_objects(scenario: str) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    docs = manifests(scenario)
    (scaled,) = [d for d in docs if d["kind"] == "ScaledObject"]
    (auth,) = [d for d in docs if d["kind"] == "TriggerAuthentication"]
    jsonschema.validate(scaled, SCALED_OBJECT_SCHEMA)
    jsonschema.validate(auth, TRIGGER_AUTH_SCHEMA)
    return scaled, auth, docs


@pytest.mark.parametrize(
    "scenario", ["keda-redis", "keda-external-redis", "keda-rabbitmq", "everything-keda"]
)
def test_keda_scales_the_workers_on_the_moves_queue(scenario: str) -> None:
    scaled, auth, docs = keda_objects(scenario)
    keda = merged_values(scenario)["worker"]["keda"]
    worker = one(docs, "Deployment", "worker")
    assert scaled["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": worker["metadata"]["name"],
    }
    assert "replicas" not in worker["spec"], "KEDA owns the replica count"
    assert not by_kind(docs, "HorizontalPodAutoscaler")
    assert scaled["spec"]["minReplicaCount"] == keda["minReplicaCount"]
    assert scaled["spec"]["maxReplicaCount"] == keda["maxReplicaCount"]
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["authenticationRef"]["name"] == auth["metadata"]["name"]
    secrets = {s["metadata"]["name"]: s for s in by_kind(docs, "Secret")}
    refs = {r["parameter"]: r for r in auth["spec"]["secretTargetRef"]}
    if keda["broker"] == "redis":
        assert trigger["type"] == "redis"
        assert trigger["metadata"]["listName"] == QUEUE
        assert trigger["metadata"]["listLength"] == str(keda["queueLength"])
        if keda["redis"]["address"]:
            assert trigger["metadata"]["address"] == keda["redis"]["address"]
            assert trigger["metadata"]["enableTLS"] == "true"
            assert refs["password"]["name"] == keda["redis"]["passwordSecret"]["name"]
        else:
            redis = [
                s for s in by_kind(docs, "Service") if s["metadata"]["name"] == f"{FULLNAME}-redis"
            ]
            assert trigger["metadata"]["address"] == f"{FULLNAME}-redis.{NAMESPACE}.svc:6379"
            assert redis
            # The in-chart Redis's read-only user keda, its password from the Secret the chart
            # generated.
            assert refs["password"]["key"] == "keda-password"
            assert secrets[refs["password"]["name"]]["stringData"][refs["password"]["key"]]
            username = secrets[refs["username"]["name"]]["stringData"][refs["username"]["key"]]
            assert username == "keda"
    else:
        assert trigger["type"] == "rabbitmq"
        assert trigger["metadata"]["queueName"] == QUEUE
        assert trigger["metadata"]["mode"] == "QueueLength"
        broker = merged_values(scenario)["broker"]
        assert refs["host"] == {
            "parameter": "host",
            "name": broker["existingSecret"],
            "key": broker["existingSecretKey"],
        }


def test_keda_refuses_conflicting_or_incomplete_settings() -> None:
    with pytest.raises(helm_python.HelmRenderError, match="autoscaling"):
        render({"worker": {"keda": {"enabled": True}, "autoscaling": {"enabled": True}}})
    with pytest.raises(helm_python.HelmRenderError, match="address"):
        render(
            {
                "redis": {"enabled": False},
                "externalRedis": {"url": "redis://r:6379/0"},
                "networkPolicy": BROKER_EGRESS,
                "worker": {"keda": {"enabled": True}},
            }
        )
    with pytest.raises(helm_python.HelmRenderError, match="broker"):
        render({"worker": {"keda": {"enabled": True, "broker": "rabbitmq"}}})
    scaled, _auth, _docs = keda_objects("keda-redis")
    scaled["spec"]["triggers"][0]["metadata"]["listLength"] = 5
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(scaled, SCALED_OBJECT_SCHEMA)


# ---------------------------------------------------------------------------
# Images, defaults, rotation
# ---------------------------------------------------------------------------


def images(docs: list[dict[str, Any]]) -> dict[str, str]:
    return {
        f"{name}/{c['name']}": c["image"]
        for name, _meta, spec in pod_specs(docs)
        for c in spec["containers"]
    }


def test_image_digest_and_global_registry() -> None:
    found = images(manifests("image-digest-registry"))
    for where, image in found.items():
        assert image.startswith("registry.example.com/mirror/"), where
    app = {w: i for w, i in found.items() if not w.endswith(("/redis", "/exporter"))}
    assert set(app.values()) == {
        f"registry.example.com/mirror/games/ascension-engine:0.1.0@{DIGEST}"
    }
    redis = merged_values("defaults")["redis"]
    tag, exporter = redis["image"]["tag"], redis["metrics"]["image"]
    assert found[f"{FULLNAME}-redis/redis"] == f"registry.example.com/mirror/redis:{tag}@{DIGEST}"
    assert found[f"{FULLNAME}-redis/exporter"] == (
        f"registry.example.com/mirror/oliver006/redis_exporter:{exporter['tag']}@{exporter['digest']}"
    )
    # Defaults: no registry, the chart's appVersion as tag; Redis pinned by digest.
    defaults = images(manifests("defaults"))
    assert defaults[f"{FULLNAME}-engine/engine"] == "ascension-engine:0.1.0"
    assert defaults[f"{FULLNAME}-redis/redis"] == f"redis:{tag}@{redis['image']['digest']}"


def test_a_malformed_digest_is_refused() -> None:
    with pytest.raises(helm_python.HelmValuesError, match="digest"):
        render({"image": {"digest": "latest"}})


def test_engine_pdb_is_on_by_default() -> None:
    def engine_budgets(scenario: str) -> list[dict[str, Any]]:
        return [
            b
            for b in by_kind(manifests(scenario), "PodDisruptionBudget")
            if b["metadata"]["labels"]["app.kubernetes.io/component"] == "engine"
        ]

    # One engine at a time, however many the HPA runs: minAvailable 1 would let a drain of
    # several nodes evict all but one replica at once.
    (pdb,) = engine_budgets("defaults")
    assert pdb["spec"] == {
        "maxUnavailable": 1,
        "selector": {
            "matchLabels": {
                "app.kubernetes.io/name": "ascension-engine",
                "app.kubernetes.io/instance": RELEASE,
                "app.kubernetes.io/component": "engine",
            }
        },
    }
    (pdb,) = engine_budgets("engine-hpa")
    assert pdb["spec"]["maxUnavailable"] == 1 and "minAvailable" not in pdb["spec"]
    assert not engine_budgets("engine-pdb-off")


@pytest.mark.parametrize("component", ["engine", "worker"])
def test_pods_spread_softly_over_nodes_and_zones_by_default(component: str) -> None:
    docs = manifests("defaults")
    spec = one(docs, "Deployment", component)["spec"]["template"]["spec"]
    constraints = spec["topologySpreadConstraints"]
    assert {c["topologyKey"] for c in constraints} == {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
    }
    labels = one(docs, "Deployment", component)["spec"]["template"]["metadata"]["labels"]
    for constraint in constraints:
        assert constraint["whenUnsatisfiable"] == "ScheduleAnyway", "soft: never blocks scheduling"
        assert selector_matches(constraint["labelSelector"]["matchLabels"], labels)
        assert (
            constraint["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == component
        )
    assert (
        "topologySpreadConstraints"
        not in one(manifests("no-soft-spread"), "Deployment", component)["spec"]["template"]["spec"]
    )
    # Given constraints replace the defaults.
    given = SCENARIOS["scheduling"]["engine"]["topologySpreadConstraints"]
    if component == "engine":
        assert (
            one(manifests("scheduling"), "Deployment", "engine")["spec"]["template"]["spec"][
                "topologySpreadConstraints"
            ]
            == given
        )


def pod_annotations(docs: list[dict[str, Any]], kind: str, component: str) -> dict[str, str]:
    found: dict[str, str] = one(docs, kind, component)["spec"]["template"]["metadata"][
        "annotations"
    ]
    return found


def test_secret_changes_roll_the_pods() -> None:
    """The chart's own Secrets are hashed into the pods' annotations; an existing Secret is
    looked up at install/upgrade (no cluster here: its annotation is still rendered)."""
    external = {"redis": {"enabled": False}, "networkPolicy": BROKER_EGRESS}
    base = render_docs({**external, "externalRedis": {"url": "redis://a:6379/0"}})
    changed = render_docs({**external, "externalRedis": {"url": "redis://b:6379/0"}})
    for component in ("engine", "worker"):
        before = pod_annotations(base, "Deployment", component)["checksum/secret"]
        assert before != pod_annotations(changed, "Deployment", component)["checksum/secret"]
    existing = manifests("redis-auth-existing-secret")
    for kind, component in (
        ("Deployment", "engine"),
        ("Deployment", "worker"),
        ("StatefulSet", "redis"),
    ):
        assert "checksum/existing-secrets" in pod_annotations(existing, kind, component), component
    assert "checksum/existing-secrets" not in pod_annotations(
        manifests("defaults"), "Deployment", "engine"
    )


# ---------------------------------------------------------------------------
# helm test: one AI move end to end
# ---------------------------------------------------------------------------


def ai_move_pod(scenario: str = "defaults") -> dict[str, Any] | None:
    pods = [
        p
        for p in by_kind(manifests(scenario), "Pod")
        if p["metadata"]["name"].endswith("-test-ai-move")
    ]
    return pods[0] if pods else None


def test_helm_test_pod_runs_the_ai_move_script(check_command: Any) -> None:
    pod = ai_move_pod()
    assert pod is not None and ai_move_pod("no-ai-move-test") is None
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    (test,) = pod["spec"]["containers"]
    check_command(test["command"], "helm test ai-move pod")
    assert test["command"][2] == (CHART_DIR / "files" / "helm-test-ai-move.py").read_text()
    assert test["command"][3:] == [f"{FULLNAME}-engine:50051", "120"]


def test_helm_test_script_waits_for_a_real_ai_move() -> None:
    """The pod's script against a real engine whose AI seats are played by its local
    process pool: it exits 0 once the AI moved, and deletes its game."""
    pod = ai_move_pod()
    assert pod is not None
    code = pod["spec"]["containers"][0]["command"][2]
    engine = support.start_engine(ENGINE_AI_DISPATCH="local")
    try:
        result = subprocess.run(
            [sys.executable, "-c", code, engine.address, "60"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr + engine.log()
        assert "AI move played" in result.stdout
        game_id = result.stdout.split("game ", 1)[1].split()[0]
        err = support.rpc_error(engine.stub().GetGame, engine_pb2.GetGameRequest(game_id=game_id))
        assert err.code().name == "NOT_FOUND", "the test game is deleted"
    finally:
        engine.stop()


def test_helm_test_script_fails_without_workers() -> None:
    """No one plays the AI seats (dispatch off): the script gives up and says why."""
    pod = ai_move_pod()
    assert pod is not None
    code = pod["spec"]["containers"][0]["command"][2]
    engine = support.start_engine(ENGINE_AI_DISPATCH="off")
    try:
        result = subprocess.run(
            [sys.executable, "-c", code, engine.address, "2"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 1
        assert "no AI move within 2s" in result.stderr
    finally:
        engine.stop()


def test_engine_processes_with_resources_to_match() -> None:
    """engine.processes sets ENGINE_PROCESSES (1 by default); a CPU limit below one core per
    process is refused at render time."""

    def engine_container(docs: list[dict[str, Any]]) -> dict[str, Any]:
        spec = one(docs, "Deployment", "engine")["spec"]["template"]["spec"]
        container: dict[str, Any] = spec["containers"][0]
        return container

    assert env_of(engine_container(manifests("defaults")))["ENGINE_PROCESSES"]["value"] == "1"
    four = engine_container(manifests("engine-processes"))
    assert env_of(four)["ENGINE_PROCESSES"]["value"] == "4"
    assert four["resources"]["limits"]["cpu"] == "4"
    for cpu in ("1500m", "1", 1):
        with pytest.raises(helm_python.HelmRenderError, match="at least 2 cores"):
            render({"engine": {"processes": 2, "resources": {"limits": {"cpu": cpu}}}})
    for enough in ("2000m", "2", 2.5):
        render({"engine": {"processes": 2, "resources": {"limits": {"cpu": enough}}}})
    lint = helm_python.lint(str(CHART_DIR), {"engine": {"processes": 0}}, strict=True)
    assert lint["errors"], "processes below 1 passes the schema"


def test_values_yaml_options_documented_in_json_dump() -> None:
    """values.schema.json stays valid JSON with the new sections."""
    schema = json.loads((CHART_DIR / "values.schema.json").read_text())
    for key in ("networkPolicy", "ingress", "gateway", "tests", "global"):
        assert key in schema["properties"], key


# ---------------------------------------------------------------------------
# Tracing and log format
# ---------------------------------------------------------------------------


def test_tracing_is_off_by_default_and_sets_the_otlp_exporter_when_on() -> None:
    from engine_service import telemetry

    for component in ("engine", "worker"):
        env = env_of(
            one(manifests("defaults"), "Deployment", component)["spec"]["template"]["spec"][
                "containers"
            ][0]
        )
        assert env["LOG_FORMAT"]["value"] == "text"
        assert "ASCENSION_TRACING" not in env
        traced = env_of(
            one(manifests("tracing-json-logs"), "Deployment", component)["spec"]["template"][
                "spec"
            ]["containers"][0]
        )
        values = {name: item["value"] for name, item in traced.items() if "value" in item}
        assert values["LOG_FORMAT"] == "json"
        assert values["ASCENSION_TRACING"] == "otlp"
        assert values["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector.observability:4317"
        assert values["OTEL_TRACES_SAMPLER"] == "parentbased_traceidratio"
        assert values["OTEL_TRACES_SAMPLER_ARG"] == "0.25"
        assert values["OTEL_RESOURCE_ATTRIBUTES"] == f"k8s.namespace.name={NAMESPACE}"
        # What the processes make of it (raises on a bad value, as they would).
        assert telemetry.tracing_mode(values) == "otlp" and telemetry.log_format(values) == "json"


def test_tracing_needs_an_endpoint() -> None:
    with pytest.raises(helm_python.HelmRenderError, match="otlpEndpoint"):
        render({"tracing": {"enabled": True}})


def test_keda_watches_the_redis_list_celery_fills() -> None:
    """The engine's real Celery dispatcher, on a real redis-server: the move waits in the
    Redis list the ScaledObject's listName names."""
    import asyncio

    import redis

    from engine_service.server.dispatch import CeleryDispatcher

    scaled, _auth, _docs = keda_objects("keda-redis")
    list_name = scaled["spec"]["triggers"][0]["metadata"]["listName"]
    with support.redis_server() as url:
        dispatcher = CeleryDispatcher(url)
        payload = {
            "game_id": "g" * 22,
            "seat": 1,
            "version": 3,
            "token": "t",
            "bot": {"name": "random"},
        }

        async def send() -> None:
            await dispatcher.dispatch(payload)
            await dispatcher.close()

        asyncio.run(send())
        client = redis.Redis.from_url(url, decode_responses=True)
        assert client.llen(list_name) == 1
        assert [str(k) for k in client.keys("ascension*")] == [list_name]


def test_an_external_redis_cluster() -> None:
    """externalRedis.mode=cluster sets ENGINE_REDIS_MODE on the engine (standalone: not set, the
    engine's default); a Cluster cannot hold the Celery queue, so it needs a broker of its own."""

    def engine_env(docs: list[dict[str, Any]]) -> dict[str, Any]:
        spec = one(docs, "Deployment", "engine")["spec"]["template"]["spec"]
        return env_of(spec["containers"][0])

    assert (
        engine_env(manifests("external-redis-cluster"))["ENGINE_REDIS_MODE"]["value"] == "cluster"
    )
    assert "ENGINE_REDIS_MODE" not in engine_env(manifests("external-redis-url"))
    with pytest.raises(helm_python.HelmRenderError, match="cannot hold the Celery queue"):
        render({"redis": {"enabled": False}, "networkPolicy": BROKER_EGRESS,
                "externalRedis": {"url": "redis://node:6379", "mode": "cluster"}})  # fmt: skip
    lint = helm_python.lint(str(CHART_DIR), {"externalRedis": {"mode": "sharded"}}, strict=True)
    assert lint["errors"], "an unknown mode passes the schema"


# ---------------------------------------------------------------------------
# KEDA reading the queue: admitted to the in-chart Redis, authenticated, with a fallback
# ---------------------------------------------------------------------------


def test_the_keda_operator_may_read_the_in_chart_redis() -> None:
    """With KEDA on the in-chart Redis, its NetworkPolicy admits the KEDA operator's pods
    (worker.keda.operator: namespace and labels), and nothing else from outside."""
    docs = manifests("keda-redis")
    rule = rule_for_port(policies(docs)["redis"], "redis")
    outside = [peer for peer in rule["from"] if "namespaceSelector" in peer]
    operator = merged_values("keda-redis")["worker"]["keda"]["operator"]
    assert operator["podLabels"] == {}, "KEDA's own chart's labels by default"
    assert outside == [
        {
            "namespaceSelector": {
                "matchLabels": {"kubernetes.io/metadata.name": operator["namespace"]}
            },
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "keda-operator"}},
        }
    ]
    assert own_peers(docs, rule) == {"engine", "worker"}
    custom = render_docs(
        {
            "worker": {
                "keda": {
                    "enabled": True,
                    "operator": {"namespace": "autoscaling", "podLabels": {"app": "keda"}},
                }
            }
        }
    )
    (peer,) = [
        p
        for p in rule_for_port(policies(custom)["redis"], "redis")["from"]
        if "namespaceSelector" in p
    ]
    assert peer["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "autoscaling"
    }
    assert peer["podSelector"]["matchLabels"] == {"app": "keda"}
    # Without KEDA, or with KEDA reading another Redis, the in-chart Redis admits no one else.
    for scenario in ("defaults", "keda-rabbitmq"):
        docs = manifests(scenario)
        peers = rule_for_port(policies(docs)["redis"], "redis")["from"]
        assert all(set(p) == {"podSelector"} for p in peers), scenario


@pytest.mark.parametrize("scenario", ["keda-redis", "keda-external-redis", "production"])
def test_keda_holds_a_fallback_when_it_cannot_read_the_queue(scenario: str) -> None:
    scaled, _auth, _docs = keda_objects(scenario)
    fallback = merged_values(scenario)["worker"]["keda"]["fallback"]
    assert scaled["spec"]["fallback"] == fallback
    keda = merged_values(scenario)["worker"]["keda"]
    assert keda["minReplicaCount"] <= fallback["replicas"] <= keda["maxReplicaCount"]


def test_keda_authenticates_to_a_tls_redis_with_its_user_and_ca() -> None:
    """The production example's broker: rediss with an ACL user and a private CA; KEDA's
    redis scaler reads username, password and ca from the TriggerAuthentication (and
    enableTLS from the trigger; both places at once is an error in KEDA)."""
    scaled, auth, _docs = keda_objects("production")
    redis = merged_values("production")["worker"]["keda"]["redis"]
    refs = {
        r["parameter"]: {"name": r["name"], "key": r["key"]}
        for r in auth["spec"]["secretTargetRef"]
    }
    assert refs == {
        "username": redis["usernameSecret"],
        "password": redis["passwordSecret"],
        "ca": redis["caSecret"],
    }
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["metadata"]["enableTLS"] == "true"
    assert trigger["metadata"]["address"] == redis["address"]
    client = render_docs(
        {
            "redis": {"enabled": False},
            "externalRedis": {"existingSecret": "r"},
            "networkPolicy": BROKER_EGRESS,
            "worker": {
                "keda": {
                    "enabled": True,
                    "redis": {"address": "r:6380", "enableTLS": True, "clientCertSecret": "kc"},
                }
            },
        }
    )
    (client_auth,) = by_kind(client, "TriggerAuthentication")
    pairs = {r["parameter"]: (r["name"], r["key"]) for r in client_auth["spec"]["secretTargetRef"]}
    assert pairs == {"cert": ("kc", "tls.crt"), "key": ("kc", "tls.key")}


def test_keda_refuses_tls_files_without_tls_and_a_fallback_above_its_maximum() -> None:
    external = {
        "redis": {"enabled": False},
        "externalRedis": {"existingSecret": "r"},
        "networkPolicy": BROKER_EGRESS,
    }
    with pytest.raises(helm_python.HelmRenderError, match="enableTLS"):
        render({**external, "worker": {"keda": {"enabled": True, "redis": {
            "address": "r:6379", "caSecret": {"name": "ca", "key": "ca.crt"}}}}})  # fmt: skip
    with pytest.raises(helm_python.HelmRenderError, match="fallback"):
        render({"worker": {"keda": {"enabled": True, "fallback": {"replicas": 9}}}})


# ---------------------------------------------------------------------------
# The in-chart Redis (for trials): pinned, fsync on every write, a disruption budget
# ---------------------------------------------------------------------------


def redis_container(docs: list[dict[str, Any]], name: str = "redis") -> dict[str, Any]:
    spec = by_kind(docs, "StatefulSet")[0]["spec"]["template"]["spec"]
    (found,) = [c for c in spec["containers"] if c["name"] == name]
    container: dict[str, Any] = found
    return container


def test_in_chart_redis_is_pinned_by_digest_and_fsyncs_every_write() -> None:
    values = merged_values("defaults")["redis"]
    image = redis_container(manifests("defaults"))["image"]
    assert re.fullmatch(r"redis:7\.4\.\d+-alpine@sha256:[0-9a-f]{64}", image), image
    assert image == f"redis:{values['image']['tag']}@{values['image']['digest']}"
    args = redis_container(manifests("defaults"))["args"]
    options = dict(zip(args[::2], args[1::2], strict=True))
    assert options["--appendonly"] == "yes"
    assert options["--appendfsync"] == "always"
    everysec = redis_container(manifests("redis-everysec-no-pdb"))["args"]
    assert dict(zip(everysec[::2], everysec[1::2], strict=True))["--appendfsync"] == "everysec"
    lint = helm_python.lint(str(CHART_DIR), {"redis": {"appendfsync": "no"}}, strict=True)
    assert lint["errors"], "appendfsync no would lose acknowledged moves on every crash"
    exporter = redis_container(manifests("redis-exporter"), "exporter")["image"]
    assert re.fullmatch(r"oliver006/redis_exporter:v[\d.]+@sha256:[0-9a-f]{64}", exporter)


def test_in_chart_redis_has_a_disruption_budget() -> None:
    docs = manifests("defaults")
    (budget,) = [
        b
        for b in by_kind(docs, "PodDisruptionBudget")
        if b["metadata"]["labels"]["app.kubernetes.io/component"] == "redis"
    ]
    assert budget["spec"]["maxUnavailable"] == 0, "a drain never evicts the only Redis"
    (pod,) = pods_of(docs, "redis")
    assert selector_matches(budget["spec"]["selector"]["matchLabels"], pod)
    for scenario in ("redis-everysec-no-pdb", "external-redis-url"):
        assert not [
            b
            for b in by_kind(manifests(scenario), "PodDisruptionBudget")
            if b["metadata"]["labels"]["app.kubernetes.io/component"] == "redis"
        ], scenario


def test_the_exporter_reads_the_length_of_the_moves_queue() -> None:
    args = redis_container(manifests("redis-exporter"), "exporter")["args"]
    assert f"--check-single-keys=db0={QUEUE}" in args


# ---------------------------------------------------------------------------
# The settings the alerts compare against, from the values
# ---------------------------------------------------------------------------


def recorded_settings(docs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    (rule,) = by_kind(docs, "PrometheusRule")
    (group,) = [g for g in rule["spec"]["groups"] if g["name"] == "ascension-settings"]
    return {
        (r["record"], r["labels"].get("slo", r["labels"].get("le", ""))): r for r in group["rules"]
    }


def test_objectives_and_the_live_games_cap_are_values() -> None:
    docs = render_docs(
        {
            "engine": {"maxLiveGames": 2500},
            "metrics": {
                "prometheusRule": {
                    "enabled": True,
                    "slo": {
                        "availability": 0.995,
                        "latency": {"objective": 0.95, "thresholdSeconds": "0.1"},
                    },
                }
            },
        }
    )
    settings = recorded_settings(docs)
    assert settings[("ascension:slo_objective:ratio", "availability")]["expr"] == "vector(0.995)"
    assert settings[("ascension:slo_objective:ratio", "latency")]["expr"] == "vector(0.95)"
    threshold = settings[("ascension:slo_latency_threshold:seconds", "0.1")]
    assert threshold["expr"] == "vector(0.1)"
    assert settings[("ascension:max_live_games", "")]["expr"] == "vector(2500)"
    assert {r["labels"]["namespace"] for r in settings.values()} == {NAMESPACE}
    engine = env_of(one(docs, "Deployment", "engine")["spec"]["template"]["spec"]["containers"][0])
    assert engine["ENGINE_MAX_LIVE_GAMES"]["value"] == "2500", "the alert and the engine agree"
    # No cap: nothing to compare with (the alert stays silent rather than divide by 0).
    assert ("ascension:max_live_games", "") not in recorded_settings(manifests("open-engine"))
    # The threshold must be a bucket bound the engine exports.
    lint = helm_python.lint(
        str(CHART_DIR),
        {"metrics": {"prometheusRule": {"slo": {"latency": {"thresholdSeconds": "0.3"}}}}},
        strict=True,
    )
    assert lint["errors"]


def test_the_latency_thresholds_offered_are_the_engines_buckets() -> None:
    from prometheus_client.utils import floatToGoString

    from engine_service.server import metrics

    schema = json.loads((CHART_DIR / "values.schema.json").read_text())
    slo = schema["properties"]["metrics"]["properties"]["prometheusRule"]["properties"]["slo"]
    offered = slo["properties"]["latency"]["properties"]["thresholdSeconds"]["enum"]
    assert offered == [floatToGoString(b) for b in metrics._LATENCY_BUCKETS]  # type: ignore[no-untyped-call]


def test_only_its_users_restart_the_in_chart_redis() -> None:
    """Rotating a TLS certificate or a key rolls the engines and workers, never the one Redis
    pod (whose restart pauses every game): its pod carries only the checksums of its users'
    passwords and rules (that an upgrade which changes nothing keeps the same is
    tests/deploy/test_chart_upgrade.py's)."""
    plain = pod_annotations(manifests("defaults"), "StatefulSet", "redis")
    assert set(plain) == {"checksum/redis-auth", "checksum/redis-users"}
    for scenario in ("tls-existing-secret", "operator-keys-existing-public-create"):
        redis = pod_annotations(manifests(scenario), "StatefulSet", "redis")
        assert set(redis) == set(plain), scenario
        assert redis["checksum/redis-users"] == plain["checksum/redis-users"], scenario
        engine = pod_annotations(manifests(scenario), "Deployment", "engine")
        assert "checksum/existing-secrets" in engine, scenario


def test_the_replicas_each_redis_primary_should_have_are_a_value() -> None:
    """metrics.prometheusRule.redisReplicas is recorded for the release's namespace (the alert
    AscensionRedisReplicasLost compares with it); 0, the default, records nothing."""
    docs = render_docs({"metrics": {"prometheusRule": {"enabled": True, "redisReplicas": 2}}})
    recorded = recorded_settings(docs)[("ascension:redis_replicas_expected", "")]
    assert recorded["expr"] == "vector(2)" and recorded["labels"] == {"namespace": NAMESPACE}
    default = render_docs({"metrics": {"prometheusRule": {"enabled": True}}})
    assert ("ascension:redis_replicas_expected", "") not in recorded_settings(default)


# ---------------------------------------------------------------------------
# Pull secrets on every pod the chart renders
# ---------------------------------------------------------------------------

POD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod"}
PULL_SECRETS = [{"name": "regcred"}, {"name": "mirror-cred"}]


def every_pod_spec(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(kind/name, pod spec) of every pod any manifest would start, hooks and tests included."""
    found = []
    for doc in docs:
        kind, name = doc["kind"], doc["metadata"]["name"]
        if kind == "Pod":
            found.append((f"{kind}/{name}", doc["spec"]))
        elif kind == "CronJob":
            found.append((f"{kind}/{name}", doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]))
        elif kind in POD_KINDS:
            found.append((f"{kind}/{name}", doc["spec"]["template"]["spec"]))
    return found


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_pod_gets_the_pull_secrets(scenario: str) -> None:
    """imagePullSecrets reach every PodSpec: engine, workers, web, the in-chart Redis (and its
    exporter), the external Redis's exporter, and both `helm test` pods."""
    values = {**SCENARIOS[scenario], "imagePullSecrets": PULL_SECRETS}
    docs = render_docs(values)
    pods = every_pod_spec(docs)
    assert pods, "no pod rendered"
    kinds = {d["kind"] for d in docs}
    assert not (kinds & {"DaemonSet", "ReplicaSet", "Job", "CronJob"} - {"Job"}), kinds
    for where, spec in pods:
        assert spec.get("imagePullSecrets") == PULL_SECRETS, where
    if scenario == "defaults":
        names = {where for where, _ in pods}
        assert {
            f"StatefulSet/{FULLNAME}-redis",
            f"Pod/{FULLNAME}-test-ai-move",
            f"Pod/{FULLNAME}-test-health",
        } <= names, names


def test_without_pull_secrets_no_pod_names_any() -> None:
    for where, spec in every_pod_spec(manifests("everything")):
        assert "imagePullSecrets" not in spec, where


# ---------------------------------------------------------------------------
# The workers (third-party bot code) reach only the engine, the broker and DNS
# ---------------------------------------------------------------------------


def worker_egress(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    policy = policies(docs)["worker"]
    assert "Egress" in policy["spec"]["policyTypes"]
    rules: list[dict[str, Any]] = policy["spec"]["egress"]
    return rules


def test_worker_egress_is_the_engine_the_broker_and_dns() -> None:
    docs = manifests("defaults")
    rules = worker_egress(docs)
    selected = [
        meta["labels"]["app.kubernetes.io/component"]
        for _n, meta, _s in pod_specs(docs)
        if selector_matches(
            policies(docs)["worker"]["spec"]["podSelector"]["matchLabels"], meta["labels"]
        )
    ]
    assert selected == ["worker"]
    dns, engine, redis = rules
    assert dns["ports"] == [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]
    assert dns["to"] == [
        {"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}
    ]
    values = merged_values("defaults")
    for rule, component, port in (
        (engine, "engine", values["engine"]["grpcPort"]),
        (redis, "redis", values["redis"]["port"]),
    ):
        assert rule["ports"] == [{"port": port, "protocol": "TCP"}], component
        (peer,) = rule["to"]
        assert set(peer) == {"podSelector"}, "this namespace's pods only"
        reached = [
            meta["labels"]["app.kubernetes.io/component"]
            for _n, meta, _s in pod_specs(docs)
            if selector_matches(peer["podSelector"]["matchLabels"], meta["labels"])
        ]
        assert reached == [component]
        # The port is the one those pods listen on.
        (pod,) = [
            s
            for _n, m, s in pod_specs(docs)
            if m["labels"]["app.kubernetes.io/component"] == component
        ]
        assert port in {p["containerPort"] for c in pod["containers"] for p in c.get("ports", [])}


def test_worker_egress_to_a_broker_outside_the_chart_must_be_named() -> None:
    external = {"redis": {"enabled": False}, "externalRedis": {"url": "redis://r:6379/0"}}
    with pytest.raises(helm_python.HelmRenderError, match=r"workerEgress\.extra"):
        render(external)
    with pytest.raises(helm_python.HelmRenderError, match=r"workerEgress\.extra"):
        render({"broker": {"url": "redis://broker:6379/0"}})
    docs = render_docs({**external, "networkPolicy": BROKER_EGRESS})
    rules = worker_egress(docs)
    assert len(rules) == 3, "DNS, the engine and the extra rule: no in-chart Redis"
    assert rules[-1] == BROKER_EGRESS["workerEgress"]["extra"][0]
    # Off: the workers' egress is not restricted.
    off = render_docs({**external, "networkPolicy": {"workerEgress": {"enabled": False}}})
    assert policies(off)["worker"]["spec"]["policyTypes"] == ["Ingress"]
    assert "egress" not in policies(off)["worker"]["spec"]


def test_the_production_example_lets_its_workers_reach_their_broker_only() -> None:
    docs = manifests("production")
    rules = worker_egress(docs)
    extra = merged_values("production")["networkPolicy"]["workerEgress"]["extra"]
    assert extra and rules[-len(extra) :] == extra
    assert all(rule.get("to") for rule in rules), "every rule names where (none is `anywhere`)"


# ---------------------------------------------------------------------------
# The production example: pinned by digest, its Redis watched
# ---------------------------------------------------------------------------


def test_the_production_example_refuses_to_render_without_a_digest() -> None:
    import yaml

    example = yaml.safe_load(PRODUCTION_EXAMPLE.read_text())
    assert example["image"]["requireDigest"] is True and not example["image"]["digest"]
    with pytest.raises(helm_python.HelmRenderError, match=r"image\.digest") as refused:
        render(example)
    assert "sha256" in str(refused.value)
    # With the digest an operator passes (--set image.digest=...), every pod of the app pulls
    # exactly that image.
    docs = manifests("production")
    app = {
        c["image"]
        for _where, spec in every_pod_spec(docs)
        for c in spec["containers"]
        if "redis_exporter" not in c["image"]
    }
    assert app == {f"{example['image']['repository']}:{example['image']['tag']}@{DIGEST}"}
    # The default chart (trials) does not ask for one.
    assert not merged_values("defaults")["image"]["requireDigest"]
    render({"image": {"requireDigest": True, "digest": DIGEST}})


def test_the_production_example_watches_its_redis() -> None:
    values = merged_values("production")
    assert values["redis"]["metrics"]["enabled"] and values["redis"]["metrics"]["targets"]
    assert values["metrics"]["prometheusRule"]["redisReplicas"] > 0
    docs = manifests("production")
    (rule,) = by_kind(docs, "PrometheusRule")
    (settings,) = [g for g in rule["spec"]["groups"] if g["name"] == "ascension-settings"]
    assert "ascension:redis_replicas_expected" in {r["record"] for r in settings["rules"]}
