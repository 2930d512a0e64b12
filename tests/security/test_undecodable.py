"""Bytes that are not the method's message: INVALID_ARGUMENT with a clear message, never
UNKNOWN, no traceback in the log, and a log that a flood of them cannot fill."""

from __future__ import annotations

from collections.abc import Iterator

import grpc  # type: ignore[import-untyped]
import pytest

from clients.sdk import errors as sdk
from engine_service.api.ascension.v1 import engine_pb2 as epb
from tests.service import support

ENGINE = [m for m in epb.DESCRIPTOR.services_by_name["Engine"].methods]
BAD = {
    "random": b"\xff\xfe\x00\x13\x99garbage",
    "invalid utf-8 in a string": b"",  # made per method: see _payload
    "truncated length": b"\x0a\x20abc",  # field 1 claims 32 bytes, has 3
    "wrong wire type": b"\x0d\x01\x02",  # field 1 as fixed32, 2 of its 4 bytes
}


def _payload(m: object, kind: str) -> bytes | None:
    if kind != "invalid utf-8 in a string":
        return BAD[kind]
    fields = m.input_type.fields  # type: ignore[attr-defined]
    strings = [f.number for f in fields if f.type == f.TYPE_STRING]
    if not strings:
        return None  # nothing to put it in
    return bytes([strings[0] << 3 | 2, 3]) + b"\xff\xfe\xfd"


@pytest.fixture(scope="module")
def engine() -> Iterator[support.Engine]:
    e = support.start_engine()
    yield e
    e.stop()


def _raw_call(channel: object, method: str, payload: bytes, streaming: bool) -> grpc.RpcError:
    call = (channel.unary_stream if streaming else channel.unary_unary)(method)  # type: ignore[attr-defined]
    try:
        result = call(payload, timeout=10)
        if streaming:
            list(result)
    except grpc.RpcError as e:
        return e
    raise AssertionError(f"{method} accepted {payload!r}")


@pytest.mark.parametrize("kind", sorted(BAD))
def test_every_engine_method_refuses_undecodable_bytes(engine: support.Engine, kind: str) -> None:
    with engine.new_channel() as ch:
        for m in ENGINE:
            payload = _payload(m, kind)
            if payload is None:
                continue
            err = _raw_call(ch, f"/ascension.v1.Engine/{m.name}", payload, m.server_streaming)
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (m.name, err.details())
            assert f"not a valid {m.name} request" in err.details()
            got = sdk.from_rpc_error(err)
            assert isinstance(got, sdk.InvalidArgumentError) and got.reason == "UNDECODABLE_REQUEST"
    assert "Traceback" not in engine.log() and "Unexpected" not in engine.log()


def test_health_and_reflection_refuse_them_too(engine: support.Engine) -> None:
    with engine.new_channel() as ch:
        for method, streaming in (("/grpc.health.v1.Health/Check", False),
                                  ("/grpc.health.v1.Health/Watch", True)):  # fmt: skip
            err = _raw_call(ch, method, BAD["random"], streaming)
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
        refl = ch.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
        with pytest.raises(grpc.RpcError) as info:
            list(refl(iter([BAD["truncated length"]]), timeout=10))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "Traceback" not in engine.log()


def test_a_flood_of_bad_requests_logs_a_few_lines(engine: support.Engine) -> None:
    before = engine.log().count("undecodable")
    with engine.new_channel() as ch:
        call = ch.unary_unary("/ascension.v1.Engine/SubmitAction")
        for _ in range(60):
            with pytest.raises(grpc.RpcError):
                call(BAD["random"], timeout=10)
    lines = engine.log().count("undecodable") - before
    assert lines <= 10, lines
    # and the server still serves
    assert engine.stub().ListCards(epb.ListCardsRequest(), timeout=10).catalog_fingerprint


def test_guarded_health_and_reflection_still_answer_good_requests(engine: support.Engine) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    with engine.new_channel() as ch:
        health = health_pb2_grpc.HealthStub(ch)
        assert health.Check(health_pb2.HealthCheckRequest(), timeout=10).status == 1  # SERVING
        stream = health.Watch(health_pb2.HealthCheckRequest(), timeout=10)
        assert next(stream).status == 1
        stream.cancel()
        refl = reflection_pb2_grpc.ServerReflectionStub(ch)
        ask = reflection_pb2.ServerReflectionRequest(list_services="")
        answer = next(refl.ServerReflectionInfo(iter([ask]), timeout=10))
        names = {s.name for s in answer.list_services_response.service}
        assert "ascension.v1.Engine" in names and "grpc.health.v1.Health" in names
    assert "Traceback" not in engine.log()
