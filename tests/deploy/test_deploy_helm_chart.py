"""The Helm chart deploy/helm/ascension-engine, rendered by the real Helm library.

helm_python embeds Helm's Go SDK (libhelm_c); rendering and linting run offline.
Every rendered manifest of the core API is validated against the Kubernetes
1.30 OpenAPI schemas in strict mode (unknown fields are errors); the Prometheus
Operator kinds are checked against their required fields separately.
"""

from __future__ import annotations

import atexit
import copy
import json
import re
import shutil
import tempfile
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

import helm_python
import jsonschema  # type: ignore[import-untyped, unused-ignore]
import kubernetes_validate
import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from clients.sdk import tls as client_tls
from engine_service import telemetry
from tests.deploy.deploy_support import (
    CHART_DIR,
    CONTRACT,
    DEPLOY,
    DEPLOYED_ENGINE_ENV,
    DEPLOYED_WORKER_ENV,
    DEPLOYMENT_CHOICES,
    KUBE_VERSION,
    PENDING_ENGINE_SETTINGS,
    engine_settings,
    load_yaml_documents,
    option,
    settings_named,
    worker_settings,
)
from tests.security.pki import Pki, make_pki

helm_python.disable_logging()

RELEASE = "demo"
NAMESPACE = "games"
MONITORING_API = "monitoring.coreos.com/v1"
KEDA_API = "keda.sh/v1alpha1"
GATEWAY_API = "gateway.networking.k8s.io/v1"
CERT_MANAGER_API = "cert-manager.io/v1"
CRD_APIS = frozenset({MONITORING_API, KEDA_API, GATEWAY_API, CERT_MANAGER_API})
PRODUCTION_EXAMPLE = CHART_DIR / "examples" / "production.yaml"
# What players' traffic goes through before the engine in the exposed scenarios: an ingress
# controller's (or Gateway's) pods, admitted by the NetworkPolicy and trusted for the
# client's address by the rate limits.
PROXY_PEERS: dict[str, Any] = {
    "engine": {"trustedProxies": ["10.64.0.0/14"]},
    "networkPolicy": {
        "grpcFrom": [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}
        ]
    },
}
DIGEST = "sha256:" + "ab" * 32
# Keys of an existing Secret holding the in-chart Redis users' passwords.
REDIS_KEYS = {
    "engine": "store",
    "broker": "celery",
    "exporter": "metrics",
    "keda": "scaler",
    "healthcheck": "probe",
}
REDIS_USERS = tuple(REDIS_KEYS)
STANDARD_LABELS = (
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/component",
    "helm.sh/chart",
)
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

# The workers' way to a broker outside the chart (networkPolicy.workerEgress.extra: the chart
# cannot know where it is, and refuses to render without one).
BROKER_EGRESS: dict[str, Any] = {
    "workerEgress": {
        "extra": [
            {
                "to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}],
                "ports": [{"port": 6380, "protocol": "TCP"}],
            }
        ]
    }
}

# Feature flags, one scenario each, plus everything at once.
SCENARIOS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "engine-hpa": {"engine": {"autoscaling": {"enabled": True}}},
    "worker-hpa": {"worker": {"autoscaling": {"enabled": True}}},
    "engine-pdb": {"engine": {"podDisruptionBudget": {"enabled": True}}},
    "engine-pdb-max-unavailable": {
        "engine": {
            "podDisruptionBudget": {"enabled": True, "minAvailable": None, "maxUnavailable": "25%"}
        }
    },
    "worker-pdb": {"worker": {"podDisruptionBudget": {"enabled": True}}},
    "service-monitor": {
        "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}}
    },
    "prometheus-rule": {"metrics": {"prometheusRule": {"enabled": True}}},
    "grafana-dashboard": {"metrics": {"grafanaDashboard": {"enabled": True}}},
    "no-scrape-annotations": {"metrics": {"podAnnotations": False}},
    "external-redis-url": {
        "networkPolicy": BROKER_EGRESS,
        "redis": {"enabled": False},
        "externalRedis": {"url": "rediss://:secret@redis.example.internal:6380/2"},
    },
    "external-redis-cluster": {
        "networkPolicy": BROKER_EGRESS,
        "redis": {"enabled": False},
        "externalRedis": {"url": "redis://redis-cluster.example.internal:6379", "mode": "cluster"},
        "broker": {"existingSecret": "games-broker"},
    },
    "external-redis-secret": {
        "networkPolicy": BROKER_EGRESS,
        "redis": {"enabled": False},
        "externalRedis": {"existingSecret": "games-redis", "existingSecretKey": "url"},
    },
    "broker-url": {
        "networkPolicy": BROKER_EGRESS,
        "broker": {"url": "amqp://guest:guest@rabbitmq:5672//"},
    },
    "broker-secret": {
        "networkPolicy": BROKER_EGRESS,
        "broker": {"existingSecret": "games-broker", "existingSecretKey": "amqp"},
    },
    "redis-ephemeral": {"redis": {"persistence": {"enabled": False}}},
    "redis-storage-class": {"redis": {"persistence": {"storageClass": "fast-ssd", "size": "20Gi"}}},
    "sweep-disabled": {"engine": {"aiSweepSeconds": 0}},
    "sweep-tuned": {"engine": {"aiSweepSeconds": 7.5, "aiStallSeconds": 240}},
    "local-ai": {"engine": {"aiDispatch": "local"}},
    "engine-processes": {
        "engine": {
            "processes": 4,
            "resources": {
                "requests": {"cpu": "4", "memory": "1Gi"},
                "limits": {"cpu": "4", "memory": "1536Mi"},
            },
        }
    },
    "advertise-address": {"engine": {"advertiseAddress": "engine.games.example.com:443"}},
    "worker-engine-address": {"worker": {"engineAddress": "games-engine.games.svc:50051"}},
    "no-headless": {"engine": {"headlessService": {"enabled": False}}},
    "no-prestop": {"engine": {"preStopSleepSeconds": 0}},
    "long-shutdown-grace": {"engine": {"shutdownGraceSeconds": 90}},
    "fractional-shutdown": {"engine": {"shutdownDrainSeconds": 12.5, "shutdownGraceSeconds": 45.5}},
    "explicit-termination-grace": {"engine": {"terminationGracePeriodSeconds": 120}},
    "existing-service-account": {"serviceAccount": {"create": False, "name": "games-sa"}},
    "scheduling": {
        "imagePullSecrets": [{"name": "regcred"}],
        "commonLabels": {"team": "games"},
        "engine": {
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "games", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 100,
                            "podAffinityTerm": {
                                "topologyKey": "kubernetes.io/hostname",
                                "labelSelector": {
                                    "matchLabels": {"app.kubernetes.io/component": "engine"}
                                },
                            },
                        }
                    ]
                }
            },
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "engine"}},
                }
            ],
            "extraEnv": [{"name": "PYTHONFAULTHANDLER", "value": "1"}],
            "priorityClassName": "games-high",
            "podAnnotations": {"example.com/owner": "games"},
        },
        "worker": {"nodeSelector": {"node.kubernetes.io/instance-type": "c7i.2xlarge"}},
    },
    "engine-pdb-off": {"engine": {"podDisruptionBudget": {"enabled": False}}},
    "no-network-policy": {"networkPolicy": {"enabled": False}},
    "network-policy-restricted-grpc": {
        "networkPolicy": {
            "grpcFrom": [{"namespaceSelector": {"matchLabels": {"team": "lobby"}}}],
            "metricsFrom": [
                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "obs"}}},
                {"podSelector": {"matchLabels": {"app": "prometheus"}}},
            ],
        }
    },
    "redis-auth-existing-secret": {
        "redis": {"auth": {"existingSecret": "games-redis-auth", "existingSecretKeys": REDIS_KEYS}}
    },
    "redis-exporter": {"redis": {"metrics": {"enabled": True}}},
    "ingress": {
        **PROXY_PEERS,
        "ingress": {
            "enabled": True,
            "className": "nginx",
            "hosts": ["play.example.com"],
            "tls": [{"secretName": "play-tls", "hosts": ["play.example.com"]}],
        },
    },
    "grpc-route": {
        **PROXY_PEERS,
        "gateway": {
            "grpcRoute": {
                "enabled": True,
                "parentRefs": [{"name": "public", "namespace": "gateways", "sectionName": "https"}],
                "hostnames": ["play.example.com"],
            }
        },
    },
    "load-balancer-without-limits": {
        "engine": {
            "service": {"type": "LoadBalancer"},
            "limits": {"createPerMinute": 0, "submitPerSecond": 0},
        },
        "networkPolicy": {"grpcFrom": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]},
    },
    "tls-existing-secret": {"engine": {"tls": {"enabled": True, "existingSecret": "games-tls"}}},
    "tls-cert-manager-mtls": {
        "engine": {
            "tls": {
                "enabled": True,
                "certManager": {
                    "enabled": True,
                    "issuerRef": {"name": "games-ca", "kind": "ClusterIssuer"},
                    "dnsNames": ["engine.games.internal"],
                },
                "clientAuth": {"enabled": True},
            }
        },
        "web": {"enabled": True},
        "worker": {"keda": {"enabled": True}},
    },
    "mtls-existing-secrets": {
        "engine": {
            "aiDispatch": "local",
            "tls": {
                "enabled": True,
                "existingSecret": "games-tls",
                "ca": {"secretName": "games-ca", "key": "bundle.pem"},
                "serverName": "engine.games.internal",
                "clientAuth": {
                    "enabled": True,
                    "caSecretName": "games-client-ca",
                    "caKey": "ca.pem",
                    "clientSecret": "games-client-tls",
                },
            },
        },
    },
    "operator-keys-existing-public-create": {
        "engine": {
            "operatorKeys": {"existingSecret": "games-ops", "existingSecretKey": "keys"},
            "publicCreate": True,
        },
        "web": {"enabled": True},
    },
    "open-engine": {
        "engine": {
            "operatorKeys": {"enabled": False},
            "limits": {"createPerMinute": 0, "submitPerSecond": 0},
            "maxLiveGames": 0,
        },
        "metrics": {"prometheusRule": {"enabled": True}},
    },
    "redis-everysec-no-pdb": {
        "redis": {"appendfsync": "everysec", "podDisruptionBudget": {"enabled": False}}
    },
    # As an operator installs it: with the digest of the image (--set image.digest=...).
    "production": {**yaml.safe_load(PRODUCTION_EXAMPLE.read_text()), "image": {
        **yaml.safe_load(PRODUCTION_EXAMPLE.read_text())["image"], "digest": DIGEST}},
    "keda-redis": {"worker": {"keda": {"enabled": True}}},
    "keda-external-redis": {
        "networkPolicy": BROKER_EGRESS,
        "redis": {"enabled": False},
        "externalRedis": {"existingSecret": "games-redis", "existingSecretKey": "url"},
        "worker": {
            "keda": {
                "enabled": True,
                "redis": {
                    "address": "redis.example.internal:6380",
                    "enableTLS": True,
                    "passwordSecret": {"name": "games-redis", "key": "password"},
                },
            }
        },
    },
    "keda-rabbitmq": {
        "networkPolicy": BROKER_EGRESS,
        "broker": {"existingSecret": "games-amqp", "existingSecretKey": "url"},
        "worker": {"keda": {"enabled": True, "broker": "rabbitmq", "minReplicaCount": 2}},
    },
    "image-digest-registry": {
        "global": {"imageRegistry": "registry.example.com/mirror"},
        "image": {"repository": "games/ascension-engine", "tag": "0.1.0", "digest": DIGEST},
        "redis": {"image": {"digest": DIGEST}, "metrics": {"enabled": True}},
    },
    "no-soft-spread": {
        "engine": {"softTopologySpread": False},
        "worker": {"softTopologySpread": False},
    },
    "no-ai-move-test": {"tests": {"aiMove": {"enabled": False}}},
    "ai-key-existing-secret": {
        "engine": {
            "aiTokenKeys": {"existingSecret": "games-engine-keys", "existingSecretKey": "ai"}
        }
    },
    "tracing-json-logs": {
        "logFormat": "json",
        "tracing": {
            "enabled": True,
            "otlpEndpoint": "http://otel-collector.observability:4317",
            "sampler": "parentbased_traceidratio",
            "samplerArg": "0.25",
        },
    },
    "everything": {
        **PROXY_PEERS,
        "networkPolicy": {**PROXY_PEERS["networkPolicy"], **BROKER_EGRESS},
        "engine": {
            "autoscaling": {"enabled": True},
            "podDisruptionBudget": {"enabled": True},
            "trustedProxies": ["10.64.0.0/14", "fd00:10:64::/48"],
        },
        "worker": {"autoscaling": {"enabled": True}, "podDisruptionBudget": {"enabled": True}},
        "metrics": {
            "serviceMonitor": {"enabled": True},
            "prometheusRule": {"enabled": True},
            "grafanaDashboard": {"enabled": True},
        },
        "broker": {"url": "redis://broker:6379/1"},
        "redis": {"metrics": {"enabled": True}},
        "ingress": {
            "enabled": True,
            "hosts": ["play.example.com"],
            "tls": [{"secretName": "play-tls", "hosts": ["play.example.com"]}],
        },
        "gateway": {
            "grpcRoute": {
                "enabled": True,
                "parentRefs": [{"name": "public", "sectionName": "https"}],
            }
        },
    },
    "everything-keda": {
        "worker": {"keda": {"enabled": True}},
        "metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}},
        "redis": {"metrics": {"enabled": True}},
    },
}


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@cache
def _chart() -> helm_python.Chart:
    return helm_python.Chart.load(str(CHART_DIR))


def render(values: dict[str, Any], release: str = RELEASE) -> dict[str, str]:
    return _chart().render(values, name=release, namespace=NAMESPACE)


def render_docs(values: dict[str, Any], release: str = RELEASE) -> list[dict[str, Any]]:
    """Every manifest the chart renders (NOTES.txt left out)."""
    docs: list[dict[str, Any]] = []
    for path, text in sorted(render(values, release).items()):
        if path.endswith("NOTES.txt"):
            continue
        docs.extend(load_yaml_documents(text))
    return docs


@cache
def _render_scenario(name: str, release: str = RELEASE) -> tuple[dict[str, Any], ...]:
    return tuple(render_docs(SCENARIOS[name], release))


def manifests(name: str, release: str = RELEASE) -> list[dict[str, Any]]:
    return copy.deepcopy(list(_render_scenario(name, release)))


def merged_values(name: str) -> dict[str, Any]:
    return _merge(_chart().values, SCENARIOS[name])


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [doc for doc in docs if doc["kind"] == kind]


def one(docs: list[dict[str, Any]], kind: str, component: str) -> dict[str, Any]:
    found = [
        doc
        for doc in by_kind(docs, kind)
        if doc["metadata"]["labels"].get("app.kubernetes.io/component") == component
    ]
    assert len(found) == 1, f"expected one {kind} of component {component}, found {len(found)}"
    return found[0]


def pod_specs(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(name, pod metadata, pod spec) of every workload and bare Pod."""
    out = []
    for doc in docs:
        if doc["kind"] in {"Deployment", "StatefulSet"}:
            template = doc["spec"]["template"]
            out.append((doc["metadata"]["name"], template["metadata"], template["spec"]))
        elif doc["kind"] == "Pod":
            out.append((doc["metadata"]["name"], doc["metadata"], doc["spec"]))
    return out


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in container.get("env", [])}


def selector_matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


scenario_names = pytest.mark.parametrize("scenario", sorted(SCENARIOS))


# ---------------------------------------------------------------------------
# Rendering and schema validation of every manifest
# ---------------------------------------------------------------------------


@scenario_names
def test_every_core_manifest_is_valid_kubernetes_1_30(scenario: str) -> None:
    docs = manifests(scenario)
    assert docs, "the chart rendered nothing"
    for doc in docs:
        if doc["apiVersion"] in CRD_APIS:
            continue  # CRDs: checked against their required fields by their own tests
        try:
            kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(part) for part in error.path)
            pytest.fail(f"{doc['kind']}/{doc['metadata']['name']}: {path}: {error.message}")
        except kubernetes_validate.SchemaNotFoundError as error:
            pytest.fail(
                f"no Kubernetes {KUBE_VERSION} schema for {doc['kind']} {doc['apiVersion']}: {error.message}"
            )


def test_validation_is_not_vacuous() -> None:
    """The validator really rejects a broken Deployment from this chart."""
    deployment = one(manifests("defaults"), "Deployment", "engine")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["grpc"]["prot"] = 1
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBE_VERSION, strict=True)
    deployment = one(manifests("defaults"), "Deployment", "engine")
    deployment["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBE_VERSION, strict=True)


@scenario_names
def test_helm_lint_strict_passes(scenario: str) -> None:
    report = helm_python.lint(
        str(CHART_DIR),
        SCENARIOS[scenario],
        strict=True,
        namespace=NAMESPACE,
        kube_version=f"v{KUBE_VERSION}",
    )
    assert report["errors"] == []
    serious = [message for message in report["messages"] if message["severity"] >= 2]
    assert serious == []


def test_helm_lint_reports_a_broken_value() -> None:
    report = helm_python.lint(str(CHART_DIR), {"engine": {"grpcPort": "grpc"}}, strict=True)
    assert report["errors"], "lint accepted a string port"


# ---------------------------------------------------------------------------
# Labels, names, selectors
# ---------------------------------------------------------------------------


@scenario_names
def test_standard_labels_and_names(scenario: str) -> None:
    values = merged_values(scenario)
    for doc in manifests(scenario):
        meta = doc["metadata"]
        where = f"{doc['kind']}/{meta['name']}"
        assert DNS1123_LABEL.match(meta["name"]) and len(meta["name"]) <= 63, where
        labels = meta.get("labels", {})
        for key in STANDARD_LABELS:
            if key == "app.kubernetes.io/component" and doc["kind"] in {
                "ServiceMonitor",
                "PrometheusRule",
                "ConfigMap",
                "ServiceAccount",
            }:
                continue  # release-wide objects
            assert key in labels, f"{where} lacks label {key}"
        assert labels["app.kubernetes.io/instance"] == RELEASE
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["app.kubernetes.io/name"] == "ascension-engine"
        assert labels["helm.sh/chart"] == "ascension-engine-0.1.0"
        for key, value in values["commonLabels"].items():
            assert labels.get(key) == value, f"{where} lacks common label {key}"


def test_names_fit_63_characters_for_the_longest_release_name() -> None:
    release = "r" * 53  # Helm's limit for release names
    names = [doc["metadata"]["name"] for doc in manifests("everything", release)]
    assert names
    for name in names:
        assert len(name) <= 63 and DNS1123_LABEL.match(name), name
    docs = manifests("everything", release)
    for kind in {doc["kind"] for doc in docs}:
        kind_names = [d["metadata"]["name"] for d in docs if d["kind"] == kind]
        assert len(kind_names) == len(set(kind_names)), f"two {kind}s share a name"


@scenario_names
def test_workload_selectors_match_their_pod_labels_and_are_disjoint(scenario: str) -> None:
    docs = manifests(scenario)
    workloads = by_kind(docs, "Deployment") + by_kind(docs, "StatefulSet")
    for workload in workloads:
        selector = workload["spec"]["selector"]["matchLabels"]
        assert selector_matches(selector, workload["spec"]["template"]["metadata"]["labels"])
        assert "app.kubernetes.io/version" not in selector, "selectors must not change on upgrade"
        assert "helm.sh/chart" not in selector, "selectors must not change on upgrade"
        others = [w for w in workloads if w is not workload]
        for other in others:
            assert not selector_matches(
                selector, other["spec"]["template"]["metadata"]["labels"]
            ), f"{workload['metadata']['name']} selects the pods of {other['metadata']['name']}"


@scenario_names
def test_services_select_pods_with_the_named_ports(scenario: str) -> None:
    docs = manifests(scenario)
    pods = pod_specs([d for d in docs if d["kind"] in {"Deployment", "StatefulSet"}])
    for service in by_kind(docs, "Service"):
        selected = [
            spec
            for _, meta, spec in pods
            if selector_matches(service["spec"]["selector"], meta["labels"])
        ]
        assert len(selected) == 1, (
            f"Service {service['metadata']['name']} selects {len(selected)} workloads"
        )
        port_names = {p["name"] for c in selected[0]["containers"] for p in c.get("ports", [])}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in port_names, (
                f"{service['metadata']['name']}: {port['targetPort']}"
            )


# ---------------------------------------------------------------------------
# Security
# ---------------------------------------------------------------------------


@scenario_names
def test_pods_run_non_root_read_only_without_capabilities(scenario: str) -> None:
    for name, _meta, spec in pod_specs(manifests(scenario)):
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"].get("runAsUser", 0) != 0, name
        assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", name
        assert spec["automountServiceAccountToken"] is False, name
        for host_namespace in ("hostNetwork", "hostPID", "hostIPC"):
            assert not spec.get(host_namespace), f"{name}: {host_namespace}"
        volumes = {volume["name"]: volume for volume in spec["volumes"]}
        for container in spec["containers"]:
            where = f"{name}/{container['name']}"
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, where
            assert context["allowPrivilegeEscalation"] is False, where
            assert context["capabilities"]["drop"] == ["ALL"], where
            assert not context["capabilities"].get("add"), where
            assert not context.get("privileged"), where
            mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
            assert "/tmp" in mounts, f"{where}: no /tmp mount"
            assert "emptyDir" in volumes[mounts["/tmp"]], f"{where}: /tmp is not an emptyDir"
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]), where
            assert "memory" in resources["limits"], where


def test_in_chart_redis_has_a_generated_password_per_user_and_no_default_user() -> None:
    docs = manifests("defaults")
    secret = one(docs, "Secret", "redis")
    assert set(secret["stringData"]) == {f"{user}-password" for user in REDIS_USERS}
    passwords = list(secret["stringData"].values())
    for password in passwords:
        assert re.fullmatch(r"[A-Za-z0-9]{40}", password), "URL-safe, 40 characters"
    assert len(set(passwords)) == len(passwords), "one password per user"
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    redis = by_kind(docs, "StatefulSet")[0]["spec"]["template"]["spec"]["containers"][0]
    args = dict(zip(redis["args"][::2], redis["args"][1::2], strict=True))
    assert args["--protected-mode"] == "yes"
    # The users come from the rules file (a ConfigMap) and the passwords from the Secret,
    # written into an ACL file at start: never on the command line.
    script = redis["command"][2]
    assert "user default off" in script and "--aclfile /tmp/users.acl" in script
    assert "requirepass" not in script
    assert not any(password in json.dumps(redis["command"] + redis["args"]) for password in passwords)
    (rules,) = [c for c in by_kind(docs, "ConfigMap") if c["metadata"]["name"].endswith("-users")]
    assert rules["data"]["redis-users.rules"] == (CHART_DIR / "files" / "redis-users.rules").read_text()
    env = env_of(redis)
    for user in REDIS_USERS:
        ref = env[f"REDIS_PASSWORD_{user.upper()}"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": secret["metadata"]["name"], "key": f"{user}-password"}, user
    assert env["REDISCLI_AUTH"]["valueFrom"]["secretKeyRef"]["key"] == "healthcheck-password"
    probe = " ".join(redis["readinessProbe"]["exec"]["command"])
    assert "--user healthcheck" in probe and "PONG" in probe
    # The engine reaches the store as engine and Celery as broker; the workers, which run bot
    # code, get only the broker's password.
    engine, worker = env_of(container(docs, "engine")), env_of(container(docs, "worker"))
    assert engine["REDIS_URL"]["value"].startswith("redis://engine:$(ASCENSION_REDIS_PASSWORD)@")
    for where in (engine, worker):
        assert where["CELERY_BROKER_URL"]["value"].startswith(
            "redis://broker:$(ASCENSION_BROKER_PASSWORD)@"
        )
        ref = where["ASCENSION_BROKER_PASSWORD"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": secret["metadata"]["name"], "key": "broker-password"}
    assert engine["ASCENSION_REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == "engine-password"
    assert "ASCENSION_REDIS_PASSWORD" not in worker and "REDIS_URL" not in worker
    exporter = env_of(by_kind(docs, "StatefulSet")[0]["spec"]["template"]["spec"]["containers"][1])
    assert exporter["REDIS_USER"]["value"] == "exporter"
    assert exporter["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == "exporter-password"


def test_redis_auth_existing_secret() -> None:
    docs = manifests("redis-auth-existing-secret")
    redis_secrets = [
        s
        for s in by_kind(docs, "Secret")
        if s["metadata"]["labels"]["app.kubernetes.io/component"] == "redis"
    ]
    assert not redis_secrets, "the chart makes no Secret of its own for Redis"
    redis = by_kind(docs, "StatefulSet")[0]["spec"]["template"]["spec"]["containers"][0]
    for user, key in REDIS_KEYS.items():
        assert env_of(redis)[f"REDIS_PASSWORD_{user.upper()}"]["valueFrom"]["secretKeyRef"] == {
            "name": "games-redis-auth",
            "key": key,
        }
    engine = env_of(container(docs, "engine"))
    assert engine["ASCENSION_REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "games-redis-auth",
        "key": "store",
    }
    assert engine["ASCENSION_BROKER_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == "celery"
    lint = helm_python.lint(
        str(CHART_DIR),
        {"redis": {"auth": {"existingSecret": "x", "existingSecretKeys": {"keda": ""}}}},
        strict=True,
    )
    assert lint["errors"], "every user's key must be named"


# ---------------------------------------------------------------------------
# Commands, environment and probes against the contract
# ---------------------------------------------------------------------------


@scenario_names
def test_commands_are_console_scripts(scenario: str, check_command: Any) -> None:
    docs = manifests(scenario)
    seen = set()
    for name, _meta, spec in pod_specs(docs):
        for container in spec["containers"]:
            if container["name"] in {"redis", "exporter"}:
                continue  # third-party images
            argv = container["command"] + container.get("args", [])
            check_command(argv, f"{name}/{container['name']}")
            seen.add(tuple(argv[:2]))
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                if "exec" in container.get(probe, {}):
                    check_command(
                        container[probe]["exec"]["command"], f"{name}/{container['name']} {probe}"
                    )
    assert ("ascension-engine", "serve") in seen
    assert ("ascension-worker", "run") in seen
    assert ("ascension-worker", "sweeper") not in seen


@scenario_names
def test_no_sweeper_workload(scenario: str) -> None:
    """The sweeper runs inside every engine replica: the chart has no workload of its own."""
    docs = manifests(scenario)
    components = sorted(
        doc["metadata"]["labels"]["app.kubernetes.io/component"]
        for doc in docs
        if doc["kind"] in {"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"}
    )
    values = merged_values(scenario)
    redis = ["redis"] if values["redis"]["enabled"] else []
    exporter = (
        ["redis-exporter"]
        if not values["redis"]["enabled"] and values["redis"]["metrics"]["targets"]
        else []
    )
    web = ["web"] if values["web"]["enabled"] else []
    assert components == sorted(["engine", "worker", *redis, *exporter, *web])
    assert not any("sweeper" in doc["metadata"]["name"] for doc in docs)


def container(docs: list[dict[str, Any]], component: str) -> dict[str, Any]:
    spec = one(docs, "Deployment", component)["spec"]["template"]["spec"]
    found: dict[str, Any] = spec["containers"][0]
    return found


# The in-chart Redis users' passwords, for the $(...) references in the URLs.
CHART_INTERNAL_ENV = frozenset({"ASCENSION_REDIS_PASSWORD", "ASCENSION_BROKER_PASSWORD"})
# Logging and tracing, read by engine_service.telemetry in the engine and the workers.
TELEMETRY_ENV = telemetry.ENVIRONMENT
# A client's TLS to the engine (clients/sdk/tls.py): the workers', and the engine's own (its
# probes and local AI processes connect as clients).
CLIENT_TLS_ENV = frozenset(
    {client_tls.ENV_CA, client_tls.ENV_CERT, client_tls.ENV_KEY, client_tls.ENV_SERVER_NAME}
)


SETTINGS = CONTRACT.engine_env | CONTRACT.worker_env
# What a Secret the chart does not make holds, as far as these tests are concerned.
EXISTING_SECRET_VALUE = "an-existing-secret-of-forty-characters-x"


def secret_files(docs: list[dict[str, Any]], component: str) -> dict[str, tuple[str, str]]:
    """Files the component's container reads from Secrets: path -> (Secret, key)."""
    spec = one(docs, "Deployment", component)["spec"]["template"]["spec"]
    (main,) = [c for c in spec["containers"] if c["name"] == component]
    volumes = {v["name"]: v for v in spec["volumes"]}
    files = {}
    for mount in main.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        sources = volume.get("projected", {}).get("sources", [])
        if "secret" in volume:
            sources = [{"secret": {"name": volume["secret"]["secretName"], **volume["secret"]}}]
        for source in sources:
            secret = source.get("secret")
            if secret is None:
                continue
            for item in secret["items"]:
                files[f"{mount['mountPath']}/{item['path']}"] = (secret["name"], item["key"])
    return files


def secret_value(docs: list[dict[str, Any]], name: str, key: str) -> str:
    """A key of a Secret the chart renders, or a stand-in for an existing Secret's."""
    for secret in by_kind(docs, "Secret"):
        if secret["metadata"]["name"] == name:
            value: str = secret["stringData"][key]
            return value
    return EXISTING_SECRET_VALUE


@cache
def pki() -> Pki:
    """Certificates standing in for the TLS Secrets' (a throwaway CA, server and client)."""
    directory = Path(tempfile.mkdtemp(prefix="chart-pki-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return make_pki(directory)


def pem_standing_in_for(path: str) -> str:
    """The local PEM file standing in for a mounted TLS file, by the name the chart gives it."""
    certificates = pki()
    by_name = {
        "server.crt": certificates.server_cert,
        "server.key": certificates.server_key,
        "ca.crt": certificates.ca,
        "client-ca.crt": certificates.ca,
        "client.crt": certificates.client_cert,
        "client.key": certificates.client_key,
    }
    return str(by_name[PurePosixPath(path).name])


def resolved_env(docs: list[dict[str, Any]], component: str) -> dict[str, str]:
    """The container's environment as the process sees it (Secret refs: a broker URL, over
    TLS when the pod has the Redis CA; $(VAR) references expanded as Kubernetes does;
    NAME_FILE naming a file mounted from a Secret: NAME with that Secret's value, as the
    engine reads it; a TLS file setting: a local PEM file of the same role)."""
    env: dict[str, str] = {}
    files = secret_files(docs, component)
    declared = env_of(container(docs, component))
    scheme = "rediss" if "REDIS_TLS_CA_FILE" in declared else "redis"
    for name, item in declared.items():
        if "valueFrom" in item:
            assert "secretKeyRef" in item["valueFrom"], f"{component}: {name}"
            value = "s3cret" if name in CHART_INTERNAL_ENV else f"{scheme}://secret.example:6379/0"
        else:
            value = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], item["value"])
        base = name.removesuffix("_FILE")
        if value in files and name not in SETTINGS and base in SETTINGS:
            env[base] = secret_value(docs, *files[value])
            continue
        if value in files and (name in SETTINGS or name in CLIENT_TLS_ENV):
            value = pem_standing_in_for(value)
        env[name] = value
    return {k: v for k, v in env.items() if k not in CHART_INTERNAL_ENV}


@scenario_names
def test_environment_follows_the_contract(scenario: str) -> None:
    docs = manifests(scenario)
    values = merged_values(scenario)
    secrets = {s["metadata"]["name"]: s for s in by_kind(docs, "Secret")}
    existing = {
        values["externalRedis"]["existingSecret"],
        values["broker"]["existingSecret"],
        values["redis"]["auth"]["existingSecret"],
    } - {""}
    allowed = {
        "engine": CONTRACT.engine_env | TELEMETRY_ENV | CLIENT_TLS_ENV | PENDING_ENGINE_SETTINGS,
        "worker": CONTRACT.worker_env | TELEMETRY_ENV | CLIENT_TLS_ENV,
    }
    required = {"engine": DEPLOYED_ENGINE_ENV, "worker": DEPLOYED_WORKER_ENV}
    for component in ("engine", "worker"):
        env = env_of(container(docs, component))
        extra = {item["name"] for item in values[component].get("extraEnv", [])}
        # The in-chart Redis users' passwords, for the $(...) references in the URLs.
        extra |= CHART_INTERNAL_ENV
        named = settings_named(env, allowed[component])
        assert named - extra <= allowed[component], (
            f"{component}: {named - extra - allowed[component]} are not its settings"
        )
        assert required[component] <= named, f"{component} lacks {required[component] - named}"
        for item in env.values():
            ref = item.get("valueFrom", {}).get("secretKeyRef")
            if ref is None:
                assert isinstance(item.get("value"), str), (
                    f"{component}: {item['name']} is not a string"
                )
                continue
            if ref["name"] in secrets:
                assert ref["key"] in secrets[ref["name"]]["stringData"], (
                    f"{component}: {item['name']}"
                )
            else:
                assert ref["name"] in existing, (
                    f"{component}: {item['name']} refers to unknown Secret {ref['name']}"
                )


@scenario_names
def test_engine_and_workers_accept_their_environment(scenario: str) -> None:
    """The rendered environment, read by the server's and the worker's own settings code."""
    docs = manifests(scenario)
    values = merged_values(scenario)["engine"]
    settings = engine_settings(resolved_env(docs, "engine"))  # raises like the server would
    worker = worker_settings(resolved_env(docs, "worker"))
    assert settings.ai_dispatch == values["aiDispatch"]
    if values["aiDispatch"] in {"celery", "auto"}:
        assert settings.dispatch_mode == "celery"
    assert settings.ai_sweep_seconds == values["aiSweepSeconds"]
    assert settings.ai_stall_seconds == values["aiStallSeconds"]
    assert settings.shutdown_drain_seconds == values["shutdownDrainSeconds"]
    assert settings.shutdown_grace_seconds == values["shutdownGraceSeconds"]
    # Workers connect to the address in each move (it wins over their ENGINE_ADDRESS).
    assert settings.advertise_address == (values["advertiseAddress"] or worker.engine_address)
    assert not settings.advertise_address.startswith(("127.", "localhost"))


def test_chart_defaults_are_the_servers_defaults() -> None:
    """Apart from the deployment's own choices, the chart passes the server's defaults, so
    docs/configuration.md describes a default install."""
    docs = manifests("defaults")
    engine = resolved_env(docs, "engine")
    for key, value in engine.items():
        if key not in DEPLOYMENT_CHOICES | TELEMETRY_ENV and key != "LOG_LEVEL":
            opt = option(key)
            assert opt.kind(value) == opt.default, f"{key}={value}, the server says {opt.default}"
    assert engine["LOG_LEVEL"] == CONTRACT.engine_defaults["LOG_LEVEL"]
    worker = resolved_env(docs, "worker")
    assert worker["WORKER_METRICS_PORT"] == CONTRACT.worker_defaults["WORKER_METRICS_PORT"]
    assert engine["ENGINE_AI_DISPATCH"] == "celery"


def test_environment_values_come_from_values() -> None:
    values = {
        "logLevel": "DEBUG",
        "engine": {
            "grpcPort": 6000,
            "metricsPort": 6001,
            "gameTtlSeconds": 600,
            "streamMaxlen": 2_000_000,
            "maxMessageBytes": 8388608,
            "redisTimeoutSeconds": 2.5,
            "aiSweepSeconds": 10,
            "aiStallSeconds": 45,
            "shutdownDrainSeconds": 3,
            "shutdownGraceSeconds": 30,
        },
        "worker": {"concurrency": 7, "metricsPort": 6002},
    }
    docs = render_docs(values)
    engine = resolved_env(docs, "engine")
    worker = resolved_env(docs, "worker")
    assert engine["ENGINE_GRPC_PORT"] == "6000"
    assert engine["ENGINE_METRICS_PORT"] == "6001"
    assert engine["ENGINE_GAME_TTL_SECONDS"] == "600"
    assert engine["ENGINE_STREAM_MAXLEN"] == "2000000", "no exponent notation for big numbers"
    assert engine["ENGINE_MAX_MESSAGE_BYTES"] == "8388608"
    assert engine["ENGINE_REDIS_TIMEOUT_SECONDS"] == "2.5"
    assert engine["ENGINE_AI_SWEEP_SECONDS"] == "10"
    assert engine["ENGINE_AI_STALL_SECONDS"] == "45"
    assert engine["ENGINE_SHUTDOWN_DRAIN_SECONDS"] == "3"
    assert engine["ENGINE_SHUTDOWN_GRACE_SECONDS"] == "30"
    assert engine["LOG_LEVEL"] == "DEBUG"
    assert engine["ENGINE_ADVERTISE_ADDRESS"].endswith("-engine-headless:6000")
    assert worker["WORKER_CONCURRENCY"] == "7"
    assert worker["WORKER_METRICS_PORT"] == "6002"
    assert worker["ENGINE_ADDRESS"].endswith("-engine-headless:6000")
    assert container(docs, "engine")["readinessProbe"]["grpc"]["port"] == 6000
    engine_config = engine_settings(engine)
    assert engine_config.grpc_port == 6000 and engine_config.stream_maxlen == 2_000_000


@scenario_names
def test_engine_probes_ask_grpc_health_on_its_grpc_port(scenario: str) -> None:
    """Plaintext: the kubelet's native gRPC probe. TLS (which that probe cannot speak): the
    chart's TLS health check against the pod's own port, as a client of the engine
    (tests/deploy/test_deploy_production.py runs it against a real engine with mTLS)."""
    container = one(manifests(scenario), "Deployment", "engine")["spec"]["template"]["spec"][
        "containers"
    ][0]
    grpc_port = {p["name"]: p["containerPort"] for p in container["ports"]}["grpc"]
    assert int(env_of(container)["ENGINE_GRPC_PORT"]["value"]) == grpc_port
    tls = merged_values(scenario)["engine"]["tls"]["enabled"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert "httpGet" not in container[probe], probe
        if not tls:
            assert container[probe]["grpc"]["port"] == grpc_port, probe
            assert "exec" not in container[probe]
            continue
        assert "grpc" not in container[probe], f"{probe}: the kubelet's probe speaks plaintext"
        python, flag, code, target = container[probe]["exec"]["command"]
        assert (python, flag) == ("python", "-c")
        assert code == (CHART_DIR / "files" / "grpc-health.py").read_text()
        assert target == f"127.0.0.1:{grpc_port}", probe
        # Two python starts a minute or so, not one every few seconds.
        assert container[probe]["periodSeconds"] >= (2 if probe == "startupProbe" else 10)
        assert container[probe]["timeoutSeconds"] >= 5


@scenario_names
def test_worker_liveness_is_checked_locally(scenario: str) -> None:
    """The heartbeat file, not a ping through the broker: a broker outage must not restart
    every worker at once (tests/deploy/test_worker_liveness.py runs the command for real)."""
    container = one(manifests(scenario), "Deployment", "worker")["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert container["livenessProbe"]["exec"]["command"] == [
        "ascension-worker",
        "check",
        "--local",
    ]
    probe = container["livenessProbe"]
    # Failing for the whole default heartbeat age takes longer than one missed beat.
    assert probe["periodSeconds"] * probe["failureThreshold"] >= 60


@scenario_names
def test_termination_grace_outlasts_the_server_shutdown(scenario: str) -> None:
    docs = manifests(scenario)
    spec = one(docs, "Deployment", "engine")["spec"]["template"]["spec"]
    settings = engine_settings(resolved_env(docs, "engine"))
    pre_stop = (
        spec["containers"][0]
        .get("lifecycle", {})
        .get("preStop", {})
        .get("sleep", {})
        .get("seconds", 0)
    )
    # preStop, then SIGTERM: health NOT_SERVING for the drain, then the grace for calls.
    needed = pre_stop + settings.shutdown_drain_seconds + settings.shutdown_grace_seconds
    assert spec["terminationGracePeriodSeconds"] > needed


def test_too_short_termination_grace_is_refused() -> None:
    # 5 s preStop + 2 s drain + 20 s grace
    with pytest.raises(helm_python.HelmRenderError, match="terminationGracePeriodSeconds"):
        render({"engine": {"terminationGracePeriodSeconds": 27}})
    docs = render_docs({"engine": {"terminationGracePeriodSeconds": 28}})
    assert (
        one(docs, "Deployment", "engine")["spec"]["template"]["spec"][
            "terminationGracePeriodSeconds"
        ]
        == 28
    )


def test_worker_termination_grace_outlasts_its_longest_task() -> None:
    docs = manifests("defaults")
    spec = one(docs, "Deployment", "worker")["spec"]["template"]["spec"]
    worker = worker_settings(resolved_env(docs, "worker"))
    assert spec["terminationGracePeriodSeconds"] >= worker.time_limit


# ---------------------------------------------------------------------------
# Feature flags
# ---------------------------------------------------------------------------


@scenario_names
def test_autoscalers_follow_their_flags(scenario: str) -> None:
    docs = manifests(scenario)
    values = merged_values(scenario)
    hpas = {
        h["spec"]["scaleTargetRef"]["name"]: h for h in by_kind(docs, "HorizontalPodAutoscaler")
    }
    for component in ("engine", "worker"):
        deployment = one(docs, "Deployment", component)
        enabled = values[component]["autoscaling"]["enabled"]
        keda = values[component].get("keda", {}).get("enabled", False)
        assert (deployment["metadata"]["name"] in hpas) == enabled, component
        # With an HPA (or KEDA's) the Deployment must not carry replicas (an upgrade would
        # reset the scale).
        assert ("replicas" in deployment["spec"]) != (enabled or keda), component
        if keda:
            continue
        if enabled:
            hpa = hpas[deployment["metadata"]["name"]]
            assert hpa["spec"]["scaleTargetRef"]["kind"] == "Deployment"
            assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"
        else:
            assert deployment["spec"]["replicas"] == values[component]["replicaCount"]
    assert len(hpas) == sum(values[c]["autoscaling"]["enabled"] for c in ("engine", "worker"))


@scenario_names
def test_disruption_budgets_follow_their_flags(scenario: str) -> None:
    docs = manifests(scenario)
    values = merged_values(scenario)
    pdbs = by_kind(docs, "PodDisruptionBudget")
    redis = values["redis"]["enabled"] and values["redis"]["podDisruptionBudget"]["enabled"]
    assert len(pdbs) == redis + sum(
        values[c]["podDisruptionBudget"]["enabled"] for c in ("engine", "worker")
    )
    for pdb in pdbs:
        component = pdb["metadata"]["labels"]["app.kubernetes.io/component"]
        selector = pdb["spec"]["selector"]["matchLabels"]
        for _name, meta, _spec in pod_specs(docs):
            pod_component = meta["labels"]["app.kubernetes.io/component"]
            assert selector_matches(selector, meta["labels"]) == (pod_component == component), (
                f"the {component} PodDisruptionBudget and the {pod_component} pods"
            )
        assert ("minAvailable" in pdb["spec"]) != ("maxUnavailable" in pdb["spec"])


def test_disruption_budget_needs_exactly_one_bound() -> None:
    with pytest.raises(helm_python.HelmRenderError, match="exactly one"):
        render(
            {
                "engine": {
                    "podDisruptionBudget": {"enabled": True, "minAvailable": 1, "maxUnavailable": 1}
                }
            }
        )


def test_autoscaler_bounds_are_checked() -> None:
    with pytest.raises(helm_python.HelmRenderError, match="minReplicas"):
        render({"worker": {"autoscaling": {"enabled": True, "minReplicas": 5, "maxReplicas": 2}}})


@scenario_names
def test_engine_services_plain_and_headless(scenario: str) -> None:
    docs = manifests(scenario)
    values = merged_values(scenario)
    engine_services = [
        s
        for s in by_kind(docs, "Service")
        if s["metadata"]["labels"]["app.kubernetes.io/component"] == "engine"
    ]
    metrics = [s for s in engine_services if s["metadata"]["name"].endswith("-engine-metrics")]
    engine_services = [s for s in engine_services if s not in metrics]
    headless = [s for s in engine_services if s["spec"].get("clusterIP") == "None"]
    plain = [s for s in engine_services if s["spec"].get("clusterIP") != "None"]
    assert len(plain) == 1
    # /metrics is never exposed with the players' Service (engine.service.type).
    assert {p["name"] for p in plain[0]["spec"]["ports"]} == {"grpc"}
    assert len(metrics) == 1 and [p["name"] for p in metrics[0]["spec"]["ports"]] == ["metrics"]
    assert metrics[0]["spec"]["type"] == "ClusterIP"
    assert len(headless) == (1 if values["engine"]["headlessService"]["enabled"] else 0)
    worker_env = env_of(
        one(docs, "Deployment", "worker")["spec"]["template"]["spec"]["containers"][0]
    )
    target = (headless or plain)[0]
    default_address = f"{target['metadata']['name']}:{values['engine']['grpcPort']}"
    assert worker_env["ENGINE_ADDRESS"]["value"] == (
        values["worker"]["engineAddress"] or default_address
    )
    if headless:
        assert headless[0]["spec"]["publishNotReadyAddresses"] is False
        assert [p["name"] for p in headless[0]["spec"]["ports"]] == ["grpc"]


@scenario_names
def test_redis_in_chart_or_external(scenario: str) -> None:
    docs = manifests(scenario)
    values = merged_values(scenario)
    statefulsets = by_kind(docs, "StatefulSet")
    engine_env = env_of(
        one(docs, "Deployment", "engine")["spec"]["template"]["spec"]["containers"][0]
    )
    redis_ref = engine_env["REDIS_URL"].get("valueFrom", {}).get("secretKeyRef")
    broker_ref = engine_env["CELERY_BROKER_URL"].get("valueFrom", {}).get("secretKeyRef")
    secrets = {s["metadata"]["name"]: s for s in by_kind(docs, "Secret")}
    if values["redis"]["enabled"]:
        assert len(statefulsets) == 1
        redis = statefulsets[0]
        args = redis["spec"]["template"]["spec"]["containers"][0]["args"]
        pairs = dict(zip(args[::2], args[1::2], strict=True))
        assert pairs["--appendonly"] == "yes"
        assert pairs["--maxmemory-policy"] == "noeviction"
        assert pairs["--maxmemory"] == values["redis"]["maxmemory"]
        claims = redis["spec"].get("volumeClaimTemplates", [])
        volumes = {v["name"] for v in redis["spec"]["template"]["spec"]["volumes"]}
        if values["redis"]["persistence"]["enabled"]:
            assert [c["metadata"]["name"] for c in claims] == ["data"] and "data" not in volumes
            assert (
                claims[0]["spec"]["resources"]["requests"]["storage"]
                == values["redis"]["persistence"]["size"]
            )
            if values["redis"]["persistence"]["storageClass"]:
                assert (
                    claims[0]["spec"]["storageClassName"]
                    == values["redis"]["persistence"]["storageClass"]
                )
        else:
            assert not claims and "data" in volumes
        # Its URLs carry the users' passwords, expanded by Kubernetes from the auth Secret.
        assert redis_ref is None
        password = engine_env["ASCENSION_REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]
        assert list(engine_env).index("ASCENSION_REDIS_PASSWORD") < list(engine_env).index(
            "REDIS_URL"
        ), "a $(VAR) reference only sees variables defined before it"
        redis_service = f"{RELEASE}-ascension-engine-redis"
        assert engine_env["REDIS_URL"]["value"] == (
            f"redis://engine:$(ASCENSION_REDIS_PASSWORD)@{redis_service}:6379/0"
        )
        if values["redis"]["auth"]["existingSecret"]:
            assert password["name"] == values["redis"]["auth"]["existingSecret"]
        else:
            assert secrets[password["name"]]["stringData"][password["key"]]
    else:
        assert statefulsets == []
        external = values["externalRedis"]
        if external["existingSecret"]:
            assert redis_ref == {
                "name": external["existingSecret"],
                "key": external["existingSecretKey"],
            }
            assert redis_ref["name"] not in secrets
        else:
            assert secrets[redis_ref["name"]]["stringData"][redis_ref["key"]] == external["url"]
    broker = values["broker"]
    if broker["existingSecret"]:
        assert broker_ref == {"name": broker["existingSecret"], "key": broker["existingSecretKey"]}
    elif broker["url"]:
        assert secrets[broker_ref["name"]]["stringData"][broker_ref["key"]] == broker["url"]
    elif values["redis"]["enabled"]:
        # The in-chart Redis holds the queue too, reached as Celery's own user.
        assert engine_env["CELERY_BROKER_URL"]["value"] == (
            f"redis://broker:$(ASCENSION_BROKER_PASSWORD)@{RELEASE}-ascension-engine-redis:6379/0"
        )
        assert list(engine_env).index("ASCENSION_BROKER_PASSWORD") < list(engine_env).index(
            "CELERY_BROKER_URL"
        )
    else:
        assert engine_env["CELERY_BROKER_URL"] == {
            **engine_env["REDIS_URL"],
            "name": "CELERY_BROKER_URL",
        }, "the broker defaults to the Redis URL"


def test_external_redis_needs_a_url_or_secret() -> None:
    with pytest.raises(helm_python.HelmValuesError, match="externalRedis"):
        render({"redis": {"enabled": False}})


@scenario_names
def test_scrape_annotations_follow_their_flag(scenario: str) -> None:
    docs = manifests(scenario)
    enabled = merged_values(scenario)["metrics"]["podAnnotations"]
    for component, port_key in (("engine", "metricsPort"), ("worker", "metricsPort")):
        annotations = one(docs, "Deployment", component)["spec"]["template"]["metadata"][
            "annotations"
        ]
        if enabled:
            assert annotations["prometheus.io/scrape"] == "true"
            assert annotations["prometheus.io/port"] == str(
                merged_values(scenario)[component][port_key]
            )
        else:
            assert "prometheus.io/scrape" not in annotations


def test_secret_change_rolls_the_pods() -> None:
    def checksum(values: dict[str, Any]) -> str:
        docs = render_docs(values)
        return str(
            one(docs, "Deployment", "engine")["spec"]["template"]["metadata"]["annotations"][
                "checksum/secret"
            ]
        )

    first = {
        "redis": {"enabled": False},
        "externalRedis": {"url": "redis://a:6379/0"},
        "networkPolicy": BROKER_EGRESS,
    }
    second = {**first, "externalRedis": {"url": "redis://b:6379/0"}}
    assert checksum(first) != checksum(second)


# ---------------------------------------------------------------------------
# Prometheus Operator resources (CRDs: not in the Kubernetes schemas)
# ---------------------------------------------------------------------------

DURATION = (
    r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
)
_METADATA = {
    "type": "object",
    "required": ["name", "labels"],
    "properties": {"name": {"type": "string", "minLength": 1}, "labels": {"type": "object"}},
}
# The required fields and formats of the monitoring.coreos.com/v1 CRDs (a subset of their OpenAPI schema).
SERVICE_MONITOR_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": MONITORING_API},
        "kind": {"const": "ServiceMonitor"},
        "metadata": _METADATA,
        "spec": {
            "type": "object",
            "required": ["selector", "endpoints"],
            "properties": {
                "jobLabel": {"type": "string"},
                "selector": {
                    "type": "object",
                    "minProperties": 1,
                    "properties": {
                        "matchLabels": {
                            "type": "object",
                            "additionalProperties": {"type": "string"},
                        }
                    },
                },
                "namespaceSelector": {
                    "type": "object",
                    "properties": {
                        "any": {"type": "boolean"},
                        "matchNames": {"type": "array", "items": {"type": "string"}},
                    },
                    "additionalProperties": False,
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "anyOf": [{"required": ["port"]}, {"required": ["targetPort"]}],
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string", "pattern": "^/"},
                            "scheme": {"enum": ["http", "https"]},
                            "interval": {"type": "string", "pattern": DURATION},
                            "scrapeTimeout": {"type": "string", "pattern": DURATION},
                        },
                    },
                },
            },
        },
    },
}
PROMETHEUS_RULE_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": MONITORING_API},
        "kind": {"const": "PrometheusRule"},
        "metadata": _METADATA,
        "spec": {
            "type": "object",
            "required": ["groups"],
            "properties": {
                "groups": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["name", "rules"],
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                            "interval": {"type": "string", "pattern": DURATION},
                            "rules": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "object",
                                    "required": ["expr"],
                                    "oneOf": [{"required": ["alert"]}, {"required": ["record"]}],
                                    "additionalProperties": False,
                                    "properties": {
                                        "alert": {"type": "string"},
                                        "record": {"type": "string"},
                                        "expr": {"type": "string", "minLength": 1},
                                        "for": {"type": "string", "pattern": DURATION},
                                        "keep_firing_for": {"type": "string", "pattern": DURATION},
                                        "labels": {
                                            "type": "object",
                                            "additionalProperties": {"type": "string"},
                                        },
                                        "annotations": {
                                            "type": "object",
                                            "additionalProperties": {"type": "string"},
                                        },
                                    },
                                },
                            },
                        },
                    },
                }
            },
        },
    },
}


@scenario_names
def test_prometheus_operator_resources_have_required_fields(scenario: str) -> None:
    docs = manifests(scenario)
    values = merged_values(scenario)
    monitors = by_kind(docs, "ServiceMonitor")
    rules = by_kind(docs, "PrometheusRule")
    assert len(monitors) == int(values["metrics"]["serviceMonitor"]["enabled"])
    assert len(rules) == int(values["metrics"]["prometheusRule"]["enabled"])
    assert {d["kind"] for d in docs if d["apiVersion"] == MONITORING_API} <= {
        "ServiceMonitor",
        "PrometheusRule",
    }
    for monitor in monitors:
        jsonschema.validate(monitor, SERVICE_MONITOR_SCHEMA)
        for key, value in values["metrics"]["serviceMonitor"]["labels"].items():
            assert monitor["metadata"]["labels"][key] == value
    for rule in rules:
        jsonschema.validate(rule, PROMETHEUS_RULE_SCHEMA)


def test_crd_checks_are_not_vacuous() -> None:
    monitor = by_kind(manifests("everything"), "ServiceMonitor")[0]
    del monitor["spec"]["selector"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(monitor, SERVICE_MONITOR_SCHEMA)
    rule = by_kind(manifests("everything"), "PrometheusRule")[0]
    rule["spec"]["groups"][0]["rules"][0]["for"] = "ten minutes"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(rule, PROMETHEUS_RULE_SCHEMA)


def test_service_monitor_scrapes_engine_and_workers_once() -> None:
    docs = manifests("service-monitor")
    monitor = by_kind(docs, "ServiceMonitor")[0]
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [NAMESPACE]
    selector = monitor["spec"]["selector"]["matchLabels"]
    selected = [
        s for s in by_kind(docs, "Service") if selector_matches(selector, s["metadata"]["labels"])
    ]
    components = sorted(s["metadata"]["labels"]["app.kubernetes.io/component"] for s in selected)
    # The engines, the workers and the Redis exporter (a sidecar of the in-chart Redis).
    assert components == ["engine", "redis", "worker"], (
        "each component must be scraped through exactly one Service"
    )
    endpoint_ports = {e["port"] for e in monitor["spec"]["endpoints"]}
    for service in selected:
        assert endpoint_ports <= {p["name"] for p in service["spec"]["ports"]}, service["metadata"][
            "name"
        ]
    jobs = {s["metadata"]["labels"]["ascension-engine/job"] for s in selected}
    assert jobs == {"ascension-engine", "ascension-worker", "ascension-redis"}


def test_an_external_redis_is_watched_node_by_node() -> None:
    """redis.metrics with an external Redis: one exporter Deployment, and a ServiceMonitor
    endpoint per node of redis.metrics.targets (GET /scrape?target=...), each node its own
    instance, as the job ascension-redis; the exporter authenticates as a user of yours and
    checks the Redis's TLS with externalRedis.tls.caSecret."""
    docs = manifests("production")
    values = merged_values("production")
    targets = values["redis"]["metrics"]["targets"]
    assert targets, "the production example watches its Redis"
    (exporter,) = [
        d
        for d in by_kind(docs, "Deployment")
        if d["metadata"]["labels"]["app.kubernetes.io/component"] == "redis-exporter"
    ]
    spec = exporter["spec"]["template"]["spec"]
    (box,) = spec["containers"]
    env = env_of(box)
    assert env["REDIS_ADDR"]["value"] == ""
    auth = values["redis"]["metrics"]["auth"]
    assert env["REDIS_USER"]["valueFrom"]["secretKeyRef"] == {
        "name": auth["existingSecret"],
        "key": auth["usernameKey"],
    }
    assert env["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == auth["existingSecret"]
    assert env["REDIS_EXPORTER_TLS_CA_CERT_FILE"]["value"] == "/etc/ascension/redis-tls/ca.crt"
    assert "--check-single-keys=db0=ascension.moves" in box["args"]
    (monitor,) = by_kind(docs, "ServiceMonitor")
    selector = monitor["spec"]["selector"]["matchLabels"]
    (service,) = [
        s
        for s in by_kind(docs, "Service")
        if selector_matches(selector, s["metadata"]["labels"])
        and s["metadata"]["labels"]["app.kubernetes.io/component"] == "redis-exporter"
    ]
    assert service["metadata"]["labels"]["ascension-engine/job"] == "ascension-redis"
    assert selector_matches(
        service["spec"]["selector"], exporter["spec"]["template"]["metadata"]["labels"]
    )
    scrapes = [e for e in monitor["spec"]["endpoints"] if e["path"] == "/scrape"]
    assert [e["params"]["target"] for e in scrapes] == [[t] for t in targets]
    for endpoint, target in zip(scrapes, targets, strict=True):
        assert endpoint["port"] == "redis-metrics"
        (relabel,) = endpoint["relabelings"]
        assert relabel["targetLabel"] == "instance"
        assert relabel["replacement"] == target.split("://")[1]
    # The engines' and workers' Services have no port of that name: they are not scraped
    # through /scrape.
    for other in by_kind(docs, "Service"):
        if other is not service:
            assert "redis-metrics" not in {p["name"] for p in other["spec"]["ports"]}
    # Without targets there is nothing to watch: no exporter, and the notes say so.
    bare = {"redis": {"enabled": False}, "externalRedis": {"url": "redis://r:6379/0"}}
    bare_values = {**bare, "networkPolicy": BROKER_EGRESS}
    assert not [
        d
        for d in render_docs(bare_values)
        if d["metadata"]["labels"].get("app.kubernetes.io/component") == "redis-exporter"
    ]
    notes = next(v for k, v in render(bare_values).items() if k.endswith("NOTES.txt"))
    assert "no Redis exporter" in notes and "redis.metrics.targets" in notes


def test_prometheus_rule_carries_the_alerts_file() -> None:
    """The rules of deploy/prometheus/alerts.yaml, with the settings compose records for its
    namespace replaced by the chart's for the release's: by default the same objectives and
    cap."""
    rule = by_kind(manifests("prometheus-rule"), "PrometheusRule")[0]
    alerts = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yaml").read_text())
    chart_groups = {g["name"]: g for g in rule["spec"]["groups"]}
    compose_groups = {g["name"]: g for g in alerts["groups"]}
    assert list(chart_groups) == [
        *[name for name in compose_groups if name != "ascension-settings"],
        "ascension-settings",
    ]
    for name, group in compose_groups.items():
        if name != "ascension-settings":
            assert chart_groups[name] == group, name

    def settings(group: dict[str, Any]) -> set[tuple[str, str, str]]:
        found = set()
        for r in group["rules"]:
            labels = {k: v for k, v in r["labels"].items() if k != "namespace"}
            found.add((r["record"], r["expr"].strip(), json.dumps(labels, sort_keys=True)))
        return found

    chart, compose = chart_groups["ascension-settings"], compose_groups["ascension-settings"]
    assert {r["labels"]["namespace"] for r in chart["rules"]} == {NAMESPACE}
    assert {r["labels"]["namespace"] for r in compose["rules"]} == {"ascension"}
    assert settings(chart) == settings(compose)


def test_grafana_dashboard_configmap_carries_the_dashboard() -> None:
    configmap = by_kind(manifests("grafana-dashboard"), "ConfigMap")[0]
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(
        (DEPLOY / "grafana" / "dashboards" / "ascension-engine.json").read_text()
    )
    assert json.loads(configmap["data"]["ascension-engine.json"]) == dashboard


@pytest.mark.parametrize(
    ("chart_file", "source"),
    [
        ("files/alerts.yaml", "prometheus/alerts.yaml"),
        ("files/ascension-engine.json", "grafana/dashboards/ascension-engine.json"),
    ],
)
def test_chart_copies_are_identical_to_the_deploy_files(chart_file: str, source: str) -> None:
    # Helm cannot read files outside the chart directory, so the chart ships copies.
    assert (CHART_DIR / chart_file).read_bytes() == (DEPLOY / source).read_bytes(), (
        f"run: cp deploy/{source} deploy/helm/ascension-engine/{chart_file}"
    )


def test_helm_test_hook_checks_grpc_health(check_command: Any) -> None:
    pods = [
        p
        for p in by_kind(manifests("defaults"), "Pod")
        if p["metadata"]["name"].endswith("-test-health")
    ]
    assert len(pods) == 1
    pod = pods[0]
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    container = pod["spec"]["containers"][0]
    check_command(container["command"], "helm test pod")
    assert "grpc_health.v1" in container["command"][2]
    assert container["command"][3].endswith("-engine:50051")


def test_notes_render_for_every_scenario() -> None:
    for scenario in SCENARIOS:
        notes = next(v for k, v in render(SCENARIOS[scenario]).items() if k.endswith("NOTES.txt"))
        assert f"{RELEASE}-ascension-engine-engine.{NAMESPACE}.svc:" in notes, scenario


# ---------------------------------------------------------------------------
# values.schema.json
# ---------------------------------------------------------------------------

BAD_VALUES = [
    pytest.param({"imagee": {"tag": "1"}}, "imagee", id="typo-top-level"),
    pytest.param({"engine": {"replicaCont": 3}}, "replicaCont", id="typo-engine"),
    pytest.param({"engine": {"autoscaling": {"enable": True}}}, "enable", id="typo-nested"),
    pytest.param(
        {"metrics": {"serviceMonitor": {"enabled": True, "intervall": "1m"}}},
        "intervall",
        id="typo-monitor",
    ),
    pytest.param({"redis": {"persistence": {"sise": "1Gi"}}}, "sise", id="typo-redis"),
    pytest.param({"engine": {"replicaCount": "three"}}, "replicaCount", id="wrong-type-string"),
    pytest.param({"engine": {"grpcPort": 70000}}, "grpcPort", id="port-out-of-range"),
    pytest.param({"worker": {"concurrency": 0}}, "concurrency", id="zero-concurrency"),
    pytest.param(
        {"engine": {"headlessService": {"enabled": "yes"}}}, "enabled", id="wrong-type-bool"
    ),
    pytest.param({"sweeper": {"enabled": True}}, "sweeper", id="no-separate-sweeper"),
    pytest.param({"engine": {"aiDispatch": "threads"}}, "aiDispatch", id="bad-dispatch"),
    pytest.param({"engine": {"aiSweepSeconds": -1}}, "aiSweepSeconds", id="negative-sweep"),
    pytest.param({"engine": {"aiStallSeconds": 0}}, "aiStallSeconds", id="zero-stall"),
    pytest.param(
        {"engine": {"shutdownDrainSeconds": "2s"}}, "shutdownDrainSeconds", id="drain-not-a-number"
    ),
    pytest.param({"logLevel": "LOUD"}, "logLevel", id="bad-enum"),
    pytest.param({"engine": {"resources": {"limits": {"cpu": "lots"}}}}, "cpu", id="bad-quantity"),
    pytest.param(
        {"securityContext": {"allowPrivilegeEscalation": True}},
        "allowPrivilegeEscalation",
        id="privilege-escalation",
    ),
    pytest.param({"podSecurityContext": {"runAsNonRoot": False}}, "runAsNonRoot", id="root-pods"),
    pytest.param({"externalRedis": {"url": "http://redis:6379"}}, "url", id="bad-redis-url"),
    pytest.param({"redis": {"enabled": False}}, "externalRedis", id="no-redis-at-all"),
]


@pytest.mark.parametrize(("values", "key"), BAD_VALUES)
def test_schema_rejects_bad_values(values: dict[str, Any], key: str) -> None:
    with pytest.raises(helm_python.HelmValuesError) as caught:
        render(values)
    assert key in str(caught.value)
    report = helm_python.lint(str(CHART_DIR), values, strict=True)
    assert report["errors"], f"helm lint accepted {values}"


def test_schema_is_a_valid_draft7_schema_that_forbids_unknown_keys() -> None:
    schema = json.loads((CHART_DIR / "values.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)

    def walk(node: dict[str, Any], path: str) -> None:
        if "$ref" in node:
            walk(schema["definitions"][node["$ref"].rsplit("/", 1)[-1]], path)
            return
        if "properties" in node and path != ".global":  # globals are shared with parents
            assert node.get("additionalProperties") is False, (
                f"{path or '<root>'} accepts unknown keys"
            )
            for key, child in node["properties"].items():
                walk(child, f"{path}.{key}")

    walk(schema, "")


def _schema_keys(schema: dict[str, Any], node: dict[str, Any], path: str = "") -> set[str]:
    if "$ref" in node:
        return _schema_keys(schema, schema["definitions"][node["$ref"].rsplit("/", 1)[-1]], path)
    keys = set()
    for key, child in node.get("properties", {}).items():
        keys.add(f"{path}.{key}")
        keys |= _schema_keys(schema, child, f"{path}.{key}")
    return keys


def _value_keys(
    node: Any, schema: dict[str, Any], schema_node: dict[str, Any], path: str = ""
) -> set[str]:
    keys = set()
    if "$ref" in schema_node:
        schema_node = schema["definitions"][schema_node["$ref"].rsplit("/", 1)[-1]]
    if isinstance(node, dict) and "properties" in schema_node:
        for key, child in node.items():
            keys.add(f"{path}.{key}")
            keys |= _value_keys(
                child, schema, schema_node["properties"].get(key, {}), f"{path}.{key}"
            )
    return keys


def test_values_yaml_documents_every_schema_key() -> None:
    schema = json.loads((CHART_DIR / "values.schema.json").read_text())
    values = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    in_values = _value_keys(values, schema, schema)
    # Optional pass-through keys of definitions (e.g. ephemeral-storage) need no default.
    in_schema = {
        k for k in _schema_keys(schema, {"properties": schema["properties"]}) if k.count(".") <= 3
    }
    optional = {
        ".global",
        ".podSecurityContext.fsGroupChangePolicy",
        ".podSecurityContext.supplementalGroups",
        ".podSecurityContext.seccompProfile.localhostProfile",
        ".securityContext.runAsUser",
        ".securityContext.runAsGroup",
        ".securityContext.privileged",
        ".securityContext.capabilities.add",
        ".securityContext.seccompProfile",
        ".securityContext.seccompProfile.type",
        ".securityContext.seccompProfile.localhostProfile",
        ".redis.podSecurityContext.fsGroupChangePolicy",
        ".redis.podSecurityContext.supplementalGroups",
        ".redis.podSecurityContext.seccompProfile.localhostProfile",
    }
    missing = {
        k
        for k in in_schema - in_values - optional
        if not re.search(r"\.(requests|limits)\.", k) and not k.endswith((".requests", ".limits"))
    }
    assert not missing, f"schema keys without a default in values.yaml: {sorted(missing)}"
    assert in_values <= _schema_keys(schema, {"properties": schema["properties"]}), (
        "values.yaml has keys the schema lacks"
    )


def test_chart_metadata() -> None:
    metadata = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    assert metadata["apiVersion"] == "v2"
    assert metadata["name"] == Path(CHART_DIR).name
    assert metadata["type"] == "application"
    assert re.match(r"^\d+\.\d+\.\d+$", metadata["version"])


def test_packaged_chart_renders_like_the_directory(tmp_path: Path) -> None:
    """.helmignore keeps what the templates read (files/), and the archive loads."""
    archive = helm_python.package(str(CHART_DIR), destination=str(tmp_path))
    values = SCENARIOS["everything"]
    with helm_python.Chart.load(archive) as packaged:
        assert packaged.version == "0.1.0"
        rendered = packaged.render(values, name=RELEASE, namespace=NAMESPACE)
        assert mask_generated(rendered) == mask_generated(render(values))


def mask_generated(rendered: dict[str, str]) -> dict[str, str]:
    """A render with the generated Redis password and AI credential key (and the checksums
    over them) masked."""
    return {
        path: re.sub(
            r'(-password: "|ai-token-keys: "|operator-keys: "|checksum/secret: |checksum/redis-auth: )[A-Za-z0-9]+',
            r"\1<generated>",
            text,
        )
        for path, text in rendered.items()
    }
