"""The chart's TLS files can be renewed under running pods: every process that reads them
(engine, probes, workers, web, `helm test`) reads them from a whole Secret volume, which the
kubelet updates when cert-manager renews the Secret (a ``subPath`` mount never is), and none
turns the reload off (docs/operations.md, "Certificate rotation")."""

from __future__ import annotations

import pytest

from tests.deploy.test_deploy_helm_chart import manifests, pod_specs

FILE_VARIABLES = (
    "ENGINE_TLS_CERT_FILE",
    "ENGINE_TLS_KEY_FILE",
    "ENGINE_TLS_CLIENT_CA_FILE",
    "ASCENSION_TLS_CA_FILE",
    "ASCENSION_TLS_CERT_FILE",
    "ASCENSION_TLS_KEY_FILE",
)
RELOAD_VARIABLES = ("ENGINE_TLS_RELOAD_SECONDS", "ASCENSION_TLS_RELOAD_SECONDS")


@pytest.mark.parametrize(
    "scenario", ["tls-existing-secret", "tls-cert-manager-mtls", "mtls-existing-secrets"]
)
def test_tls_files_are_read_where_renewals_land(scenario: str) -> None:
    readers = 0
    for name, _, spec in pod_specs(manifests(scenario)):
        secret_volumes = {
            v["name"] for v in spec.get("volumes", []) if "secret" in v or "projected" in v
        }
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            env = {e["name"]: e.get("value", "") for e in container.get("env", [])}
            mounts = container.get("volumeMounts", [])
            for variable in FILE_VARIABLES:
                if variable not in env:
                    continue
                readers += 1
                path = env[variable]
                (mount,) = [m for m in mounts if path.startswith(m["mountPath"].rstrip("/") + "/")]
                assert mount["name"] in secret_volumes, f"{name}: {variable} is not in a Secret"
                assert "subPath" not in mount, f"{name}: {variable} under a subPath mount"
            for variable in RELOAD_VARIABLES:
                assert env.get(variable, "30") != "0", f"{name}: {variable}=0 (read once)"
    assert readers, "no process reads TLS files in this scenario"
