"""The engine's security settings in the deployments: the shared key of the AI move
credentials (every replica the same; tests/deploy/test_shared_ai_key.py shows why with real
processes), operator keys, TLS on the gRPC port (and the probes that still work with it), the
workers' TLS to the engine, and the limits. Rendered by the real Helm library; the compose file
as Compose reads it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from engine_service.server import tokens
from tests.deploy.deploy_support import CHART_DIR, engine_settings
from tests.deploy.test_deploy_compose import COMPOSE, REQUIRED_ON_HOST, services, settings_env
from tests.deploy.test_deploy_helm_chart import (
    SCENARIOS,
    by_kind,
    container,
    manifests,
    merged_values,
    one,
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
    assert (
        'lookup "v1" "Secret" .Release.Namespace (include "ascension-engine.engineKeysSecretName" .)'
        in generated
    )
    assert 'index $existing.data "ai-token-keys" | b64dec' in generated


def test_an_existing_ai_key_secret_rolls_the_engines_when_rotated() -> None:
    docs = render_docs(SCENARIOS["ai-key-existing-secret"])
    assert engine_secret(docs) is None, "nothing left for the chart's own Secret"
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
