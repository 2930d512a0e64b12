"""The service's error model: every code it answers with is a gRPC status code."""

from __future__ import annotations

import grpc  # type: ignore[import-untyped]

from engine_service.server.errors import Code


def test_every_code_is_a_grpc_status() -> None:
    names = {c.name for c in grpc.StatusCode}
    assert {c.value for c in Code} <= names
    assert {"DATA_LOSS", "RESOURCE_EXHAUSTED"} <= {c.value for c in Code}
