"""The engine's security settings in the deployments: the shared key of the AI move
credentials (every replica the same; tests/deploy/test_shared_ai_key.py shows why with real
processes), operator keys, TLS on the gRPC port (and the probes that still work with it), the
workers' TLS to the engine, and the limits. Rendered by the real Helm library; the compose file
as Compose reads it.
"""

from __future__ import annotations

import re
from typing import Any

import helm_python
import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from engine_service.server import tokens
from tests.deploy.deploy_support import CHART_DIR, engine_settings
from tests.deploy.test_deploy_compose import COMPOSE, REQUIRED_ON_HOST, services, settings_env
from tests.deploy.test_deploy_helm_chart import (
    RELEASE,
    SCENARIOS,
    by_kind,
    container,
    manifests,
    merged_values,
    one,
    render,
    render_docs,
    resolved_env,
    scenario_names,
    secret_files,
)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return document


# ---------------------------------------------------------------------------
# The AI credential key: one for every engine replica
# ---------------------------------------------------------------------------


def engine_secret(docs: list[dict[str, Any]]) -> dict[str, Any] | None:
    found = [s for s in by_kind(docs, "Secret") if s["metadata"]["name"].endswith("-engine-keys")]
    return found[0] if found else None


@scenario_names
def test_every_engine_replica_reads_one_ai_credential_key(scenario: str) -> None:
    """All replicas (one Deployment, scaled by hand or by the HPA) mount the same Secret key
    as a file; nothing draws a key per process, and the workers never see it."""
    docs = manifests(scenario)
    settings = engine_settings(resolved_env(docs, "engine"))
    keys = settings.ai_token_keys.split(",")
    assert keys and all(len(k) >= tokens.MIN_KEY_CHARS for k in keys)
    values = merged_values(scenario)["engine"]["aiTokenKeys"]
    files = secret_files(docs, "engine")
    path = {item["name"]: item.get("value") for item in container(docs, "engine")["env"]}[
        "ENGINE_AI_TOKEN_KEYS_FILE"
    ]
    if values["existingSecret"]:
        assert files[path] == (values["existingSecret"], values["existingSecretKey"])
        own = engine_secret(docs)
        assert own is None or "ai-token-keys" not in own["stringData"]
    else:
        secret = engine_secret(docs)
        assert secret is not None and files[path] == (secret["metadata"]["name"], "ai-token-keys")
        assert settings.ai_token_keys == secret["stringData"]["ai-token-keys"]
    worker = container(docs, "worker")
    assert not any("AI_TOKEN" in item["name"] for item in worker["env"])
    assert not any(path.startswith(m["mountPath"]) for m in worker["volumeMounts"])


def test_the_generated_key_is_random_and_kept_across_upgrades() -> None:
    """Each install draws its own key (no key ships with the chart); an upgrade keeps the one
    in the cluster (lookup; helm template and this offline render cannot look it up)."""
    first, second = (engine_secret(render_docs({})) for _ in range(2))
    assert first is not None and second is not None
    assert first["stringData"]["ai-token-keys"] != second["stringData"]["ai-token-keys"]
    helpers = (CHART_DIR / "templates" / "_helpers.tpl").read_text()
    generated = helpers.split('define "ascension-engine.generatedAiTokenKey"')[1].split(
        "{{- end }}\n\n"
    )[0]
    assert '"secret" (include "ascension-engine.engineKeysSecretName" .)' in generated
    assert '"key" "ai-token-keys"' in generated
    # The upgrade that finds the Secret keeps its key: tests/deploy/test_chart_upgrade.py.


def test_an_existing_ai_key_secret_rolls_the_engines_when_rotated() -> None:
    docs = render_docs(SCENARIOS["ai-key-existing-secret"])
    own = engine_secret(docs)
    assert own is None or set(own["stringData"]) == {"operator-keys"}, "only the operator key"
    annotations = one(docs, "Deployment", "engine")["spec"]["template"]["metadata"]["annotations"]
    assert "checksum/existing-secrets" in annotations


def test_compose_requires_one_ai_key_for_both_engine_replicas(compose: dict[str, Any]) -> None:
    engine = services(compose)["engine"]
    assert engine["deploy"]["replicas"] > 1
    # ${VAR:?message}: no default (a key written in this file would be everyone's), and
    # `docker compose up` refuses to start without it.
    assert re.fullmatch(
        r"\$\{ENGINE_AI_TOKEN_KEYS:\?[^}]+\}", engine["environment"]["ENGINE_AI_TOKEN_KEYS"]
    )
    settings = engine_settings(settings_env(compose, "engine"))
    assert settings.ai_token_keys == REQUIRED_ON_HOST["ENGINE_AI_TOKEN_KEYS"]
    assert "ENGINE_AI_TOKEN_KEYS" not in services(compose)["worker"]["environment"]


def test_a_short_key_stops_the_engine() -> None:
    """What an operator sees with a key under 32 characters: the engine exits at start."""
    with pytest.raises(ValueError, match="ENGINE_AI_TOKEN_KEYS"):
        engine_settings({"ENGINE_AI_TOKEN_KEYS": "too-short"})


# ---------------------------------------------------------------------------
# Operator keys: on by default, generated, mounted as a file
# ---------------------------------------------------------------------------


def engine_env_values(docs: list[dict[str, Any]]) -> dict[str, str]:
    return {item["name"]: item.get("value", "") for item in container(docs, "engine")["env"]}


def test_operator_keys_are_on_by_default_with_a_generated_key() -> None:
    docs = manifests("defaults")
    settings = engine_settings(resolved_env(docs, "engine"))
    assert settings.operator_keys, "an engine the chart installs is not open"
    assert not settings.public_create
    path = engine_env_values(docs)["ENGINE_OPERATOR_KEYS_FILE"]
    secret = engine_secret(docs)
    assert secret is not None
    assert secret_files(docs, "engine")[path] == (secret["metadata"]["name"], "operator-keys")
    assert re.fullmatch(r"[A-Za-z0-9]{40}", secret["stringData"]["operator-keys"])
    assert settings.operator_keys == secret["stringData"]["operator-keys"]
    # Each install draws its own; an upgrade keeps the one in the cluster (lookup).
    again = engine_secret(render_docs({}))
    assert again is not None
    assert again["stringData"]["operator-keys"] != secret["stringData"]["operator-keys"]
    helpers = (CHART_DIR / "templates" / "_helpers.tpl").read_text()
    generated = helpers.split('define "ascension-engine.generatedOperatorKey"')[1].split(
        "{{- end }}\n\n"
    )[0]
    assert '"key" "operator-keys"' in generated, "kept across upgrades (generatedValue)"
    # The workers play with per-move credentials, never with an operator key.
    worker = container(docs, "worker")
    assert not any("OPERATOR" in item["name"] for item in worker["env"])


def test_operator_keys_from_an_existing_secret() -> None:
    docs = manifests("operator-keys-existing-public-create")
    values = merged_values("operator-keys-existing-public-create")["engine"]
    path = engine_env_values(docs)["ENGINE_OPERATOR_KEYS_FILE"]
    assert secret_files(docs, "engine")[path] == ("games-ops", "keys")
    own = engine_secret(docs)
    assert own is None or "operator-keys" not in own["stringData"]
    settings = engine_settings(resolved_env(docs, "engine"))
    assert settings.public_create is values["publicCreate"] is True
    annotations = one(docs, "Deployment", "engine")["spec"]["template"]["metadata"]["annotations"]
    assert "checksum/existing-secrets" in annotations, "rotating the Secret rolls the engines"


def test_an_open_engine_is_a_choice_the_notes_warn_about() -> None:
    docs = manifests("open-engine")
    assert "ENGINE_OPERATOR_KEYS_FILE" not in engine_env_values(docs)
    assert not engine_settings(resolved_env(docs, "engine")).operator_keys
    notes = next(v for k, v in render(SCENARIOS["open-engine"]).items() if k.endswith("NOTES.txt"))
    assert "WARNING" in notes and "operatorKeys.enabled is false" in notes


# ---------------------------------------------------------------------------
# Rate limits: on by default; behind the chart's Ingress or GRPCRoute, per player
# ---------------------------------------------------------------------------


@scenario_names
def test_rate_limits_follow_their_values(scenario: str) -> None:
    docs = manifests(scenario)
    limits = merged_values(scenario)["engine"]["limits"]
    settings = engine_settings(resolved_env(docs, "engine"))
    assert settings.limit_create_per_minute == limits["createPerMinute"]
    assert settings.limit_submit_per_second == limits["submitPerSecond"]
    assert settings.max_live_games == merged_values(scenario)["engine"]["maxLiveGames"]


def test_rate_limits_are_on_by_default_at_rates_a_table_never_meets() -> None:
    limits = merged_values("defaults")["engine"]["limits"]
    # A table of six, everyone acting at once, twice a second; a lobby of a hundred players
    # behind one address creating a game each per two minutes.
    assert limits["submitPerSecond"] >= 6 * 2 * 4
    assert limits["createPerMinute"] >= 100 / 2


@pytest.mark.parametrize("scenario", ["ingress", "grpc-route", "everything", "production"])
def test_behind_a_proxy_the_limits_key_on_the_players_address(scenario: str) -> None:
    env = engine_env_values(manifests(scenario))
    values = merged_values(scenario)["engine"]
    assert env["ENGINE_TRUSTED_PROXIES"] == ",".join(values["trustedProxies"])
    assert env["ENGINE_CLIENT_ADDRESS_HEADER"] == "x-forwarded-for"
    # ingress-nginx and Envoy put the client's address in x-forwarded-for.
    assert "ENGINE_TRUSTED_PROXIES" not in engine_env_values(manifests("defaults"))


def test_a_proxy_without_trusted_proxies_is_refused_while_limits_are_on() -> None:
    exposed = {
        "networkPolicy": {"enabled": False},
        "ingress": {"enabled": True, "hosts": ["a.example"], "tls": [{"secretName": "a"}]},
    }
    with pytest.raises(helm_python.HelmRenderError, match=r"engine\.trustedProxies"):
        render(exposed)
    render({**exposed, "engine": {"limits": {"createPerMinute": 0, "submitPerSecond": 0}}})
    lint = helm_python.lint(
        str(CHART_DIR), {"engine": {"trustedProxies": ["10.0.0.0"]}}, strict=True
    )
    assert lint["errors"], "a proxy must be a CIDR"


# ---------------------------------------------------------------------------
# TLS on the gRPC port, from Secrets or cert-manager, mounted as files
# ---------------------------------------------------------------------------

TLS_SCENARIOS = [
    "tls-existing-secret",
    "tls-cert-manager-mtls",
    "mtls-existing-secrets",
    "production",
]


def pod_env(spec: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item.get("value", "") for item in spec["containers"][0].get("env", [])}


def mounted(spec: dict[str, Any], path: str) -> tuple[str, str]:
    """(Secret, key) of the file at ``path`` in the pod's first container."""
    volumes = {v["name"]: v for v in spec["volumes"]}
    for mount in spec["containers"][0].get("volumeMounts", []):
        if not path.startswith(mount["mountPath"] + "/"):
            continue
        name = path[len(mount["mountPath"]) + 1 :]
        volume = volumes[mount["name"]]
        sources = volume.get("projected", {}).get("sources", [])
        if "secret" in volume:
            sources = [{"secret": {"name": volume["secret"]["secretName"], **volume["secret"]}}]
        for source in sources:
            for item in source.get("secret", {}).get("items", []):
                if item["path"] == name:
                    return source["secret"]["name"], item["key"]
    raise AssertionError(f"nothing mounted at {path}")


def tls_secrets(scenario: str) -> dict[str, tuple[str, str]]:
    """Role -> (Secret, key) the values name."""
    values = merged_values(scenario)["engine"]["tls"]
    server = values["existingSecret"] or f"{FULLNAME}-engine-tls"
    ca = values["ca"]["secretName"] or server
    client_ca = values["clientAuth"]["caSecretName"] or ca
    client_ca_key = (
        values["clientAuth"]["caKey"]
        if values["clientAuth"]["caSecretName"]
        else values["ca"]["key"]
    )
    client = values["clientAuth"]["clientSecret"] or f"{FULLNAME}-engine-client"
    return {
        "cert": (server, "tls.crt"),
        "key": (server, "tls.key"),
        "ca": (ca, values["ca"]["key"]),
        "client-ca": (client_ca, client_ca_key),
        "client-cert": (client, "tls.crt"),
        "client-key": (client, "tls.key"),
    }


FULLNAME = f"{RELEASE}-ascension-engine"


@pytest.mark.parametrize("scenario", TLS_SCENARIOS)
def test_the_engine_serves_tls_from_its_secrets(scenario: str) -> None:
    docs = manifests(scenario)
    values = merged_values(scenario)["engine"]["tls"]
    roles = tls_secrets(scenario)
    spec = one(docs, "Deployment", "engine")["spec"]["template"]["spec"]
    env = pod_env(spec)
    assert mounted(spec, env["ENGINE_TLS_CERT_FILE"]) == roles["cert"]
    assert mounted(spec, env["ENGINE_TLS_KEY_FILE"]) == roles["key"]
    if values["clientAuth"]["enabled"]:
        assert mounted(spec, env["ENGINE_TLS_CLIENT_CA_FILE"]) == roles["client-ca"]
    else:
        assert "ENGINE_TLS_CLIENT_CA_FILE" not in env
    # What the server makes of it (the files stand-ins for the Secrets' PEM).
    settings = engine_settings(resolved_env(docs, "engine"))
    assert settings.tls_cert_file and settings.tls_key_file
    assert bool(settings.tls_client_ca_file) == values["clientAuth"]["enabled"]
    # Nothing secret in the environment: files only.
    for item in spec["containers"][0]["env"]:
        assert "secretKeyRef" not in item.get("valueFrom", {}) or "TLS" not in item["name"]


@pytest.mark.parametrize("scenario", TLS_SCENARIOS)
def test_the_charts_own_clients_speak_tls_to_the_engine(scenario: str) -> None:
    """Workers, web pods, `helm test` pods and the engine's own probes: the CA they check
    the engine against, and the client certificate they present under mTLS."""
    from clients.sdk.tls import TLS

    docs = manifests(scenario)
    values = merged_values(scenario)["engine"]["tls"]
    roles = tls_secrets(scenario)
    clients = [
        (f"{d['kind']}/{d['metadata']['name']}", d["spec"]["template"]["spec"])
        for d in by_kind(docs, "Deployment")
        # (the external Redis's exporter is no client of the engine)
        if d["metadata"]["labels"]["app.kubernetes.io/component"] != "redis-exporter"
    ] + [(f"Pod/{p['metadata']['name']}", p["spec"]) for p in by_kind(docs, "Pod")]
    assert len(clients) >= 4
    for where, spec in clients:
        env = pod_env(spec)
        assert mounted(spec, env["ASCENSION_TLS_CA_FILE"]) == roles["ca"], where
        tls = TLS.from_env(env)
        assert tls is not None, where
        if values["clientAuth"]["enabled"]:
            assert mounted(spec, env["ASCENSION_TLS_CERT_FILE"]) == roles["client-cert"], where
            assert mounted(spec, env["ASCENSION_TLS_KEY_FILE"]) == roles["client-key"], where
        else:
            assert "ASCENSION_TLS_CERT_FILE" not in env, where
        expected_name = values["serverName"] or (
            f"{FULLNAME}-engine" if where.endswith(f"{FULLNAME}-engine") else None
        )
        if expected_name:
            assert env["ASCENSION_TLS_SERVER_NAME"] == expected_name, where


def test_plaintext_engines_clients_carry_no_tls() -> None:
    for _kind, spec in [
        (d["kind"], d["spec"]["template"]["spec"])
        for d in by_kind(manifests("defaults"), "Deployment")
    ]:
        assert not any(name.startswith("ASCENSION_TLS") for name in pod_env(spec))


CERTIFICATE_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "cert-manager.io/v1"},
        "kind": {"const": "Certificate"},
        "spec": {
            "type": "object",
            "required": ["secretName", "issuerRef"],
            "anyOf": [{"required": ["dnsNames"]}, {"required": ["commonName"]}],
            "properties": {
                "secretName": {"type": "string", "minLength": 1},
                "issuerRef": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"kind": {"enum": ["Issuer", "ClusterIssuer"]}},
                },
                "dnsNames": {"type": "array", "items": {"type": "string"}},
                "duration": {"type": "string", "pattern": "^([0-9]+(h|m|s))+$"},
                "renewBefore": {"type": "string", "pattern": "^([0-9]+(h|m|s))+$"},
                "usages": {
                    "type": "array",
                    "items": {
                        "enum": [
                            "server auth",
                            "client auth",
                            "digital signature",
                            "key encipherment",
                        ]
                    },
                },
                "privateKey": {
                    "type": "object",
                    "properties": {
                        "algorithm": {"enum": ["RSA", "ECDSA", "Ed25519"]},
                        "rotationPolicy": {"enum": ["Never", "Always"]},
                    },
                },
            },
        },
    },
}


@pytest.mark.parametrize("scenario", ["tls-cert-manager-mtls", "production"])
def test_cert_manager_issues_certificates_for_the_names_the_clients_dial(scenario: str) -> None:
    import jsonschema  # type: ignore[import-untyped, unused-ignore]

    docs = manifests(scenario)
    certificates = {c["metadata"]["name"]: c for c in by_kind(docs, "Certificate")}
    assert set(certificates) == {f"{FULLNAME}-engine-tls", f"{FULLNAME}-engine-client"}
    for certificate in certificates.values():
        jsonschema.validate(certificate, CERTIFICATE_SCHEMA)
        assert (
            certificate["spec"]["issuerRef"]
            == merged_values(scenario)["engine"]["tls"]["certManager"]["issuerRef"]
        )
    server = certificates[f"{FULLNAME}-engine-tls"]["spec"]
    client = certificates[f"{FULLNAME}-engine-client"]["spec"]
    assert server["usages"] == ["server auth", "digital signature"]
    assert client["usages"] == ["client auth", "digital signature"]
    roles = tls_secrets(scenario)
    assert server["secretName"] == roles["cert"][0]
    assert client["secretName"] == roles["client-cert"][0]
    # Every host a client of the chart dials is in the certificate.
    dialed = {engine_env_values(docs)["ASCENSION_TLS_SERVER_NAME"]}  # the probes'
    worker = {i["name"]: i.get("value", "") for i in container(docs, "worker")["env"]}
    dialed.add(engine_env_values(docs)["ENGINE_ADVERTISE_ADDRESS"].rsplit(":", 1)[0])
    dialed.add(worker["ENGINE_ADDRESS"].rsplit(":", 1)[0])
    for pod in by_kind(docs, "Pod"):
        dialed.add(pod["spec"]["containers"][0]["command"][3].rsplit(":", 1)[0])
    assert dialed <= set(server["dnsNames"]), dialed - set(server["dnsNames"])
    extra = merged_values(scenario)["engine"]["tls"]["certManager"]["dnsNames"]
    assert set(extra) <= set(server["dnsNames"])
    assert not by_kind(manifests("mtls-existing-secrets"), "Certificate")


@pytest.mark.parametrize(
    ("tls", "message"),
    [
        ({"enabled": True}, "existingSecret"),
        (
            {
                "enabled": True,
                "existingSecret": "a",
                "certManager": {"enabled": True, "issuerRef": {"name": "ca"}},
            },
            "not both",
        ),
        ({"enabled": True, "certManager": {"enabled": True}}, "issuerRef.name"),
        ({"clientAuth": {"enabled": True}}, "needs engine.tls.enabled"),
        ({"enabled": True, "existingSecret": "a", "clientAuth": {"enabled": True}}, "clientSecret"),
    ],
    ids=["no-source", "two-sources", "no-issuer", "mtls-without-tls", "mtls-without-client-cert"],
)
def test_tls_settings_that_cannot_work_are_refused(tls: dict[str, Any], message: str) -> None:
    with pytest.raises(helm_python.HelmRenderError, match=re.escape(message)):
        render({"engine": {"tls": tls}})


def test_an_ingress_to_a_tls_engine_speaks_tls_to_it() -> None:
    ingress = {
        **SCENARIOS["ingress"],
        "engine": {
            **SCENARIOS["ingress"]["engine"],
            "tls": {"enabled": True, "existingSecret": "t"},
        },
    }
    (found,) = by_kind(render_docs(ingress), "Ingress")
    assert (
        found["metadata"]["annotations"]["nginx.ingress.kubernetes.io/backend-protocol"] == "GRPCS"
    )
    (plain,) = by_kind(manifests("ingress"), "Ingress")
    assert (
        plain["metadata"]["annotations"]["nginx.ingress.kubernetes.io/backend-protocol"] == "GRPC"
    )
