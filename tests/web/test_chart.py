"""The chart's optional browser client (web.enabled): `ascension web` in front of the engine.

Rendered offline with Helm's own library (helm_python) and checked against the Kubernetes
1.30 schemas; the container's command is parsed by the real `ascension` argument parser.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import helm_python
import kubernetes_validate
import pytest
import yaml

from clients.cli import build_parser

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "ascension-engine"
RELEASE = "games"
TLS = [{"secretName": "play-tls", "hosts": ["play.example.com"]}]
WEB = {
    "web": {
        "enabled": True,
        "bots": "heuristic,random",
        "players": 3,
        "ingress": {"enabled": True, "hosts": ["play.example.com"], "tls": TLS},
    },
    "networkPolicy": {"grpcFrom": [{"namespaceSelector": {"matchLabels": {"team": "games"}}}]},
}

helm_python.disable_logging()


def render(values: dict[str, Any]) -> list[dict[str, Any]]:
    out = helm_python.Chart.load(str(CHART)).render(values, name=RELEASE, namespace=RELEASE)
    docs: list[dict[str, Any]] = []
    for path, text in sorted(out.items()):
        if not path.endswith("NOTES.txt"):
            docs.extend(d for d in yaml.safe_load_all(text) if d)
    return docs


def of(docs: list[dict[str, Any]], kind: str, component: str = "web") -> list[dict[str, Any]]:
    return [
        d
        for d in docs
        if d["kind"] == kind and d["metadata"]["labels"]["app.kubernetes.io/component"] == component
    ]


def test_off_by_default() -> None:
    docs = render({})
    assert not [
        d for d in docs if d["metadata"]["labels"].get("app.kubernetes.io/component") == "web"
    ]


def test_manifests_are_valid_and_lint_is_clean() -> None:
    docs = render(WEB)
    web = [d for d in docs if d["metadata"]["labels"].get("app.kubernetes.io/component") == "web"]
    assert sorted(d["kind"] for d in web) == ["Deployment", "Ingress", "NetworkPolicy", "Service"]
    for doc in web:
        kubernetes_validate.validate(doc, "1.30.0", strict=True)
    report = helm_python.lint(str(CHART), WEB, strict=True)
    assert not report["errors"], report["errors"]


def test_the_pod_runs_ascension_web_in_front_of_the_engine_service() -> None:
    docs = render(WEB)
    (deployment,) = of(docs, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[:2] == ["ascension", "web"]
    args = build_parser().parse_args(command[1:])
    (engine_service,) = [
        d for d in of(docs, "Service", "engine") if d["metadata"]["name"].endswith("-engine")
    ]
    grpc = next(p for p in engine_service["spec"]["ports"] if p["name"] == "grpc")
    assert args.address == f"{engine_service['metadata']['name']}:{grpc['port']}"
    assert (args.host, args.no_browser) == ("0.0.0.0", True)
    assert (args.bot, args.players, args.sets) == (["heuristic", "random"], 3, "ss")
    (port,) = container["ports"]
    assert port == {"name": "http", "containerPort": args.port, "protocol": "TCP"}
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/config.json", "port": "http"}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] and not security["allowPrivilegeEscalation"]
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"]
    (service,) = of(docs, "Service")
    assert (
        service["spec"]["selector"].items()
        <= deployment["spec"]["template"]["metadata"]["labels"].items()
    )
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    (ingress,) = of(docs, "Ingress")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": service["metadata"]["name"], "port": {"name": "http"}}
    assert ingress["spec"]["tls"] == TLS


def test_network_policies_let_the_web_pods_reach_the_engine() -> None:
    docs = render(WEB)
    (engine_policy,) = of(docs, "NetworkPolicy", "engine")
    grpc_rule = next(r for r in engine_policy["spec"]["ingress"] if r["ports"][0]["port"] == "grpc")
    components = [
        p["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
        for p in grpc_rule["from"]
        if "podSelector" in p
    ]
    assert "web" in components
    (web_policy,) = of(docs, "NetworkPolicy")
    assert web_policy["spec"]["ingress"] == [{"ports": [{"port": "http", "protocol": "TCP"}]}]
    without = render({"networkPolicy": WEB["networkPolicy"]})
    (engine_policy,) = of(without, "NetworkPolicy", "engine")
    assert "web" not in str(engine_policy), "no web pods, no rule for them"


@pytest.mark.parametrize(
    "web",
    [
        {"enabled": True, "players": 9},
        {"enabled": True, "sets": "all"},
        {"enabled": True, "bots": "ismcts; rm -rf /"},
        {"enabled": True, "unknown": 1},
    ],
)
def test_the_schema_refuses_bad_values(web: dict[str, Any]) -> None:
    report = helm_python.lint(str(CHART), {"web": web}, strict=True)
    assert report["errors"], web


def test_the_ingress_needs_tls_and_hosts() -> None:
    for ingress in ({"enabled": True, "hosts": ["a.example.com"]}, {"enabled": True, "tls": TLS}):
        with pytest.raises(helm_python.HelmRenderError, match=r"web\.ingress\.enabled"):
            render({"web": {"enabled": True, "ingress": ingress}})


def web_values(**web: Any) -> dict[str, Any]:
    values: dict[str, Any] = copy.deepcopy(WEB)
    values["web"].update(web)
    return values


def test_the_gateway_answers_the_ingress_hosts_and_the_allowed_names() -> None:
    # The gateway refuses any Host it does not serve (421): behind the Ingress it must be told
    # the public names, or every browser request would be refused.
    values = web_values(allowedHosts=["lb.example.com", "play.example.com"])
    (deployment,) = of(render(values), "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["command"][1:])
    assert args.allow_host == ["play.example.com", "lb.example.com"]
    report = helm_python.lint(str(CHART), values, strict=True)
    assert not report["errors"], report["errors"]


def test_allowed_hosts_are_names_only() -> None:
    values = web_values(allowedHosts=["evil.example.com/x"])
    report = helm_python.lint(str(CHART), values, strict=True)
    assert report["errors"]
