"""The chart's production example (examples/production.yaml), and `helm test` against a
hardened engine: the test pods, the engine's probes and the web pod, as the chart renders
them, run against a real `ascension-engine serve` with TLS, mutual TLS, operator keys and the
web pods' gateway key, their files standing in for the Secrets they mount.

The example is also a scenario of test_deploy_helm_chart (linted strict, every manifest
validated against the Kubernetes 1.30 schemas, the CRDs against their required fields).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from engine_service.api.ascension.v1 import engine_pb2
from tests.deploy.deploy_support import CHART_DIR
from tests.deploy.test_deploy_helm_chart import (
    PRODUCTION_EXAMPLE,
    RELEASE,
    by_kind,
    container,
    env_of,
    manifests,
    merged_values,
    one,
)
from tests.service import support

FULLNAME = f"{RELEASE}-ascension-engine"
HARDENED = "tls-cert-manager-mtls"


# ---------------------------------------------------------------------------
# The example
# ---------------------------------------------------------------------------


def test_production_example_is_what_the_issue_of_a_launch_asks_for() -> None:
    docs = manifests("production")
    values = merged_values("production")
    engine = one(docs, "Deployment", "engine")
    assert engine["spec"]["replicas"] == 3
    env = env_of(container(docs, "engine"))
    # TLS and mutual TLS, from cert-manager; operator keys from a Secret of yours.
    assert {"ENGINE_TLS_CERT_FILE", "ENGINE_TLS_KEY_FILE", "ENGINE_TLS_CLIENT_CA_FILE"} <= set(env)
    assert {c["metadata"]["name"] for c in by_kind(docs, "Certificate")} == {
        f"{FULLNAME}-engine-tls",
        f"{FULLNAME}-engine-client",
    }
    assert "ENGINE_OPERATOR_KEYS_FILE" in env
    assert values["engine"]["operatorKeys"]["existingSecret"]
    # No Secret of generated keys: a GitOps render is the same every time.
    assert not [
        s for s in by_kind(docs, "Secret") if s["metadata"]["name"].endswith("-engine-keys")
    ]
    # An external Redis over TLS with a password, its CA mounted in engine and workers; the
    # broker apart.
    assert not by_kind(docs, "StatefulSet"), "not the in-chart Redis"
    assert env["REDIS_URL"]["valueFrom"]["secretKeyRef"]["name"] == "games-redis"
    assert env["CELERY_BROKER_URL"]["valueFrom"]["secretKeyRef"]["name"] == "games-broker"
    assert env["REDIS_TLS_CA_FILE"]["value"] == "/etc/ascension/redis-tls/ca.crt"
    # A failover loses no acknowledged move: each waits for a replica.
    assert env["ENGINE_REDIS_WAIT_REPLICAS"]["value"] == "1"
    for component in ("engine", "worker"):
        spec = one(docs, "Deployment", component)["spec"]["template"]["spec"]
        mounts = {m["mountPath"]: m["name"] for m in spec["containers"][0]["volumeMounts"]}
        volume = {v["name"]: v for v in spec["volumes"]}[mounts["/etc/ascension/redis-tls"]]
        assert volume["secret"]["secretName"] == "games-redis-ca", component
    broker_comment = PRODUCTION_EXAMPLE.read_text().split("broker:")[1]
    assert "ssl_ca_certs=/etc/ascension/redis-tls/ca.crt" in broker_comment
    # KEDA, a GRPCRoute, the NetworkPolicy admitting the Gateway, the monitoring.
    assert by_kind(docs, "ScaledObject") and by_kind(docs, "GRPCRoute")
    assert values["networkPolicy"]["grpcFrom"]
    assert by_kind(docs, "ServiceMonitor") and by_kind(docs, "PrometheusRule")
    assert env["ENGINE_TRUSTED_PROXIES"]["value"] == ",".join(values["engine"]["trustedProxies"])


def test_the_chart_readme_walks_through_the_example() -> None:
    readme = (CHART_DIR / "README.md").read_text()
    assert "examples/production.yaml" in readme
    assert "--values deploy/helm/ascension-engine/examples/production.yaml" in readme
    example = yaml.safe_load(PRODUCTION_EXAMPLE.read_text())
    for key in example:
        assert f"`{key}" in readme, f"the README's walk-through skips `{key}`"


# ---------------------------------------------------------------------------
# `helm test` and the probes against a real engine with TLS, mTLS and operator keys
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Certificates:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path  # signed by another CA
    stranger_key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(directory: Path, name: str, cert: x509.Certificate, key: Any) -> tuple[Path, Path]:
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def _issue(
    name: str, issuer: tuple[x509.Certificate, Any] | None, sans: list[x509.GeneralName], usage: Any
) -> tuple[x509.Certificate, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(issuer[0].subject if issuer else _name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
    else:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), False)
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), False)
    return builder.sign(issuer[1] if issuer else key, hashes.SHA256()), key


def issue_like_cert_manager(directory: Path, dns_names: list[str]) -> Certificates:
    """What cert-manager would put in the chart's Secrets: a server certificate for the
    rendered Certificate's dnsNames (and 127.0.0.1, which the engine advertises to its own
    local AI processes here), a client certificate, both from one CA; and a stranger's."""
    ca = _issue("games-ca", None, [], None)
    other_ca = _issue("other-ca", None, [], None)
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    server = _issue("engine", ca, sans, ExtendedKeyUsageOID.SERVER_AUTH)
    client = _issue("client", ca, [], ExtendedKeyUsageOID.CLIENT_AUTH)
    stranger = _issue("stranger", other_ca, [], ExtendedKeyUsageOID.CLIENT_AUTH)
    ca_path, _ = _write(directory, "ca", *ca)
    return Certificates(
        ca_path,
        *_write(directory, "server", *server),
        *_write(directory, "client", *client),
        *_write(directory, "stranger", *stranger),
    )


@dataclass(frozen=True)
class Hardened:
    engine: support.Engine
    files: dict[tuple[str, str], Path]  # (Secret, key) -> the local file standing in for it
    docs: list[dict[str, Any]]


@pytest.fixture(scope="module")
def hardened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hardened]:
    docs = manifests(HARDENED)
    directory = tmp_path_factory.mktemp("hardened")
    (certificate,) = [
        c for c in by_kind(docs, "Certificate") if c["metadata"]["name"].endswith("-engine-tls")
    ]
    certs = issue_like_cert_manager(directory, certificate["spec"]["dnsNames"])
    (keys_secret,) = [
        s for s in by_kind(docs, "Secret") if s["metadata"]["name"].endswith("-engine-keys")
    ]
    # The generated key, then one more (a rotation): clients send the first.
    operator_keys = directory / "operator-keys"
    operator_keys.write_text(
        keys_secret["stringData"]["operator-keys"] + "\nsecond-key-of-a-rotation-0123\n"
    )
    ai_keys = directory / "ai-token-keys"
    ai_keys.write_text(keys_secret["stringData"]["ai-token-keys"])
    gateway_keys = directory / "gateway-keys"
    gateway_keys.write_text(keys_secret["stringData"]["gateway-keys"])
    server, client = f"{FULLNAME}-engine-tls", f"{FULLNAME}-engine-client"
    files = {
        (server, "tls.crt"): certs.server_cert,
        (server, "tls.key"): certs.server_key,
        (server, "ca.crt"): certs.ca,
        (client, "tls.crt"): certs.client_cert,
        (client, "tls.key"): certs.client_key,
        (client, "ca.crt"): certs.ca,
        (keys_secret["metadata"]["name"], "operator-keys"): operator_keys,
        (keys_secret["metadata"]["name"], "ai-token-keys"): ai_keys,
        (keys_secret["metadata"]["name"], "gateway-keys"): gateway_keys,
    }
    # The engine's environment as the chart renders it, files mapped to the stand-ins; the
    # local AI processes play the AI seats (they inherit the client TLS environment).
    spec = one(docs, "Deployment", "engine")["spec"]["template"]["spec"]
    env = {
        k: v
        for k, v in local_env(spec, files).items()
        if k.startswith(
            ("ENGINE_TLS_", "ENGINE_OPERATOR", "ENGINE_AI_TOKEN", "ENGINE_GATEWAY", "ASCENSION_TLS_")
        )
        or k
        in {
            "ENGINE_PUBLIC_CREATE",
            "ENGINE_LIMIT_CREATE_PER_MINUTE",
            "ENGINE_LIMIT_SUBMIT_PER_SECOND",
        }
    }
    assert {
        "ENGINE_TLS_CLIENT_CA_FILE",
        "ENGINE_OPERATOR_KEYS_FILE",
        "ENGINE_GATEWAY_KEYS_FILE",
        "ASCENSION_TLS_CERT_FILE",
    } <= set(env)
    engine = support.start_engine(ENGINE_AI_DISPATCH="local", **env)
    try:
        yield Hardened(engine, files, docs)
    finally:
        engine.stop()


def local_env(spec: dict[str, Any], files: dict[tuple[str, str], Path]) -> dict[str, str]:
    """A pod's first container's environment with each path of a mounted Secret's file
    replaced by the local file standing in for that (Secret, key)."""
    mounted = mounted_files(spec)
    env = {}
    for item in spec["containers"][0].get("env", []):
        value = item.get("value", "")
        env[item["name"]] = str(files[mounted[value]]) if value in mounted else value
    return env


def mounted_files(spec: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Path in the pod's first container -> the (Secret, key) mounted there."""
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounted: dict[str, tuple[str, str]] = {}
    for mount in spec["containers"][0].get("volumeMounts", []):
        volume = volumes[mount["name"]]
        sources = volume.get("projected", {}).get("sources", [])
        if "secret" in volume:
            sources = [{"secret": {"name": volume["secret"]["secretName"], **volume["secret"]}}]
        for source in sources:
            for item in source.get("secret", {}).get("items", []):
                path = str(PurePosixPath(mount["mountPath"]) / item["path"])
                mounted[path] = (source["secret"]["name"], item["key"])
    return mounted


def run_pod(
    spec: dict[str, Any],
    hardened: Hardened,
    drop: tuple[str, ...] = (),
    target: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """The pod's `python -c` command against the real engine: it dials 127.0.0.1 and checks
    the name it would dial in the cluster (what DNS gives it there)."""
    command = spec["containers"][0]["command"]
    python, flag, code, dialed, *rest = command
    assert (python, flag) == ("python", "-c")
    env = local_env(spec, hardened.files)
    env.setdefault("ASCENSION_TLS_SERVER_NAME", dialed.rsplit(":", 1)[0])
    for name in drop:
        env.pop(name, None)
    port = hardened.engine.address.rsplit(":", 1)[1]
    base = {k: v for k, v in os.environ.items() if not k.startswith("ASCENSION_")}
    return subprocess.run(
        [sys.executable, "-c", code, target or f"127.0.0.1:{port}", *rest],
        env={**base, "PYTHONPATH": str(support.ROOT), **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def helm_test_pod(docs: list[dict[str, Any]], suffix: str) -> dict[str, Any]:
    (pod,) = [p for p in by_kind(docs, "Pod") if p["metadata"]["name"].endswith(suffix)]
    spec: dict[str, Any] = pod["spec"]
    return spec


def test_helm_test_health_passes_against_the_hardened_engine(hardened: Hardened) -> None:
    spec = helm_test_pod(hardened.docs, "-test-health")
    result = run_pod(spec, hardened)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SERVING" in result.stdout
    # Without the client certificate the engine refuses the handshake (mTLS), and the test
    # fails, saying so.
    refused = run_pod(spec, hardened, drop=("ASCENSION_TLS_CERT_FILE", "ASCENSION_TLS_KEY_FILE"))
    assert refused.returncode != 0
    assert "UNAVAILABLE" in refused.stderr


def test_helm_test_ai_move_passes_against_the_hardened_engine(hardened: Hardened) -> None:
    spec = helm_test_pod(hardened.docs, "-test-ai-move")
    result = run_pod(spec, hardened, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr + hardened.engine.log()
    assert "AI move played" in result.stdout
    # Its game is gone (deleted with the operator key).
    game_id = result.stdout.split("game ", 1)[1].split()[0]
    from clients.sdk.tls import TLS, channel
    from engine_service.api.ascension.v1 import engine_pb2_grpc

    env = local_env(spec, hardened.files)
    tls = TLS(
        env["ASCENSION_TLS_CA_FILE"],
        env["ASCENSION_TLS_CERT_FILE"],
        env["ASCENSION_TLS_KEY_FILE"],
        f"{FULLNAME}-engine",
    )
    with channel(hardened.engine.address, tls, []) as ch:
        stub = engine_pb2_grpc.EngineStub(ch)
        err = support.rpc_error(stub.GetGame, engine_pb2.GetGameRequest(game_id=game_id))
    assert err.code().name == "NOT_FOUND"


def test_helm_test_ai_move_fails_without_the_operator_key(hardened: Hardened) -> None:
    spec = helm_test_pod(hardened.docs, "-test-ai-move")
    result = run_pod(spec, hardened, drop=("ASCENSION_OPERATOR_KEYS_FILE",))
    assert result.returncode != 0
    assert "UNAUTHENTICATED" in result.stderr or "OPERATOR_CREDENTIAL_REQUIRED" in result.stderr


def test_the_engines_tls_probes_pass_and_fail_as_they_should(hardened: Hardened) -> None:
    """The exec probes the chart gives a TLS engine: SERVING from the pod's own port; a
    stranger's certificate is refused."""
    spec = one(hardened.docs, "Deployment", "engine")["spec"]["template"]["spec"]
    engine = spec["containers"][0]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        command = engine[probe]["exec"]["command"]
        probe_spec = {**spec, "containers": [{**engine, "command": command}]}
        result = run_pod(probe_spec, hardened)
        assert result.returncode == 0, f"{probe}: {result.stdout}{result.stderr}"
    env_spec = {
        **spec,
        "containers": [{**engine, "command": engine["readinessProbe"]["exec"]["command"]}],
    }
    certs_dir = hardened.files[(f"{FULLNAME}-engine-tls", "tls.crt")].parent
    stranger = dict(hardened.files)
    stranger[(f"{FULLNAME}-engine-client", "tls.crt")] = certs_dir / "stranger.crt"
    stranger[(f"{FULLNAME}-engine-client", "tls.key")] = certs_dir / "stranger.key"
    refused = run_pod(env_spec, Hardened(hardened.engine, stranger, hardened.docs))
    assert refused.returncode != 0


def start_web_pod(hardened: Hardened, files: dict[tuple[str, str], Path]) -> Any:
    """The web Deployment's `ascension web` as rendered (its files the stand-ins), in front of
    the hardened engine: on loopback, a free port."""
    from tests.web.conftest import start_web

    spec = one(hardened.docs, "Deployment", "web")["spec"]["template"]["spec"]
    command = spec["containers"][0]["command"]
    assert command[:2] == ["ascension", "web"]
    mounted = mounted_files(spec)
    args, dialed = [], ""
    rest = iter(command[2:])
    for arg in rest:
        if arg in ("--host", "--port"):
            next(rest)
        elif arg == "--address":
            dialed = next(rest)
            args += [arg, hardened.engine.address]
        else:
            args.append(str(files[mounted[arg]]) if arg in mounted else arg)
    env = local_env(spec, files)
    env.setdefault("ASCENSION_TLS_SERVER_NAME", dialed.rsplit(":", 1)[0])
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # (start_web runs it with this process's environment)
    try:
        return start_web(*[a for a in args if a != "--no-browser"])
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def list_cards(url: str) -> tuple[int, dict[str, Any]]:
    import json
    import urllib.error
    import urllib.request

    req = urllib.request.Request(
        url + "ascension.v1.Engine/ListCards", data=b"{}", method="POST",
        headers={"content-type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_the_web_pod_presents_the_key_the_engine_holds(hardened: Hardened, tmp_path: Path) -> None:
    """The chart mounts one generated key in the engines (ENGINE_GATEWAY_KEYS_FILE) and the
    web pods (--gateway-key-file): the hardened engine answers the rendered web pod's calls,
    which carry it; with another key in the web pod's file, every call is refused."""
    from tests.web.conftest import stop_web

    web = start_web_pod(hardened, hardened.files)
    try:
        status, answer = list_cards(web.url)
        assert status == 200 and len(answer["cards"]) > 50, (status, answer)
    finally:
        stop_web(web.proc)
    keys = f"{FULLNAME}-engine-keys"
    wrong = tmp_path / "gateway-keys"
    wrong.write_text("a-key-the-engine-does-not-hold")
    web = start_web_pod(hardened, {**hardened.files, (keys, "gateway-keys"): wrong})
    try:
        status, answer = list_cards(web.url)
        assert status == 401 and answer["code"] == "unauthenticated", (status, answer)
        assert "ENGINE_GATEWAY_KEYS" in answer["message"]
    finally:
        stop_web(web.proc)
