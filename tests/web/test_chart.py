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
CONTROLLER = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress"}}}]
WEB = {
    "web": {
        "enabled": True,
        "bots": "heuristic,random",
        "players": 3,
        "ingress": {"enabled": True, "hosts": ["play.example.com"], "tls": TLS},
        # The controller's pods (only they reach the web pods: networkPolicy.webFrom).
        "trustedProxies": ["10.64.200.0/26"],
    },
    "networkPolicy": {
        "grpcFrom": [{"namespaceSelector": {"matchLabels": {"team": "games"}}}],
        "webFrom": CONTROLLER,
    },
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
    http = [{"port": "http", "protocol": "TCP"}]
    assert web_policy["spec"]["ingress"] == [{"ports": http, "from": CONTROLLER}]
    (open_policy,) = of(render({"web": {"enabled": True}}), "NetworkPolicy")
    assert open_policy["spec"]["ingress"] == [{"ports": http}], "no webFrom: everyone"
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


# ---- Who a browser is: the engine trusts the web pods' key, and no address -----------------


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def only_container(deployment: dict[str, Any]) -> dict[str, Any]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def mounted_from(deployment: dict[str, Any], path: str) -> tuple[str, str]:
    """(Secret, key) of the file ``path`` in the deployment's (only) container."""
    spec = deployment["spec"]["template"]["spec"]
    directory, _, file = path.rpartition("/")
    (mount,) = [m for m in only_container(deployment)["volumeMounts"] if m["mountPath"] == directory]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    sources = (
        [s["secret"] for s in volume["projected"]["sources"]]
        if "projected" in volume
        else [{**volume["secret"], "name": volume["secret"]["secretName"]}]
    )
    found = [(s["name"], i["key"]) for s in sources for i in s["items"] if i["path"] == file]
    assert len(found) == 1, (path, volume)
    return found[0]


def engine_deployment(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (engine,) = of(docs, "Deployment", "engine")
    return engine


@pytest.mark.parametrize("values", [{"web": {"enabled": True}}, WEB])
def test_the_engine_trusts_the_web_pods_key_and_no_address(values: dict[str, Any]) -> None:
    docs = render(values)
    engine = engine_deployment(docs)
    env = env_of(only_container(engine))
    assert "ENGINE_TRUSTED_PROXIES" not in env, "no address is trusted by default"
    (web,) = of(docs, "Deployment")
    args = build_parser().parse_args(only_container(web)["command"][1:])
    # One key, the same Secret's, in both: the engine lists it, the web pods present it.
    secret = mounted_from(engine, env["ENGINE_GATEWAY_KEYS_FILE"])
    assert mounted_from(web, args.gateway_key_file) == secret
    (keys,) = [d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"] == secret[0]]
    key = keys["stringData"][secret[1]]
    assert len(key) >= 32 and key.isalnum()
    # The web pods hold that key alone, not the engine's other keys.
    web_volumes = web["spec"]["template"]["spec"]["volumes"]
    assert "operator-keys" not in str(web_volumes) and "ai-token-keys" not in str(web_volumes)
    web_trusted = args.trusted_proxies
    assert web_trusted == (",".join(values["web"]["trustedProxies"]) if "trustedProxies" in values["web"] else None)
    # Rolled with the engines when the key changes.
    assert "checksum/secret" in web["spec"]["template"]["metadata"]["annotations"]
    for doc in (engine, web):
        kubernetes_validate.validate(doc, "1.30.0", strict=True)


def test_without_web_pods_nothing_is_trusted() -> None:
    docs = render({})
    env = env_of(only_container(engine_deployment(docs)))
    assert "ENGINE_TRUSTED_PROXIES" not in env and "ENGINE_GATEWAY_KEYS_FILE" not in env
    assert "gateway-keys" not in str([d for d in docs if d["kind"] == "Secret"])


def test_a_gateway_key_of_your_own() -> None:
    values = web_values(gatewayKey={"existingSecret": "games-gateway", "existingSecretKey": "k"})
    docs = render(values)
    engine = engine_deployment(docs)
    (web,) = of(docs, "Deployment")
    args = build_parser().parse_args(only_container(web)["command"][1:])
    file = env_of(only_container(engine))["ENGINE_GATEWAY_KEYS_FILE"]
    assert mounted_from(engine, file) == mounted_from(web, args.gateway_key_file) == ("games-gateway", "k")
    assert "gateway-keys" not in str([d for d in docs if d["kind"] == "Secret"]), "none generated"
    assert not helm_python.lint(str(CHART), values, strict=True)["errors"]


def test_the_web_ingress_needs_its_proxies_named_and_alone_on_the_port() -> None:
    """Behind the web Ingress every browser comes from the controller: with a rate limit on,
    its addresses must be trusted, and only its pods may reach the port (else a pod in that
    range could write X-Forwarded-For itself)."""
    no_proxies = web_values()
    del no_proxies["web"]["trustedProxies"]
    with pytest.raises(helm_python.HelmRenderError, match=r"web\.trustedProxies"):
        render(no_proxies)
    render({**no_proxies, "engine": {"limits": {"createPerMinute": 0, "submitPerSecond": 0}}})
    alone = web_values()
    alone["networkPolicy"].pop("webFrom")
    with pytest.raises(helm_python.HelmRenderError, match=r"networkPolicy\.webFrom"):
        render(alone)
    assert helm_python.lint(str(CHART), web_values(trustedProxies=["10.0.0.3"]), strict=True)["errors"]
