"""The error model: codes, stable reasons, google.rpc.Status details, and the SDK's typed
exceptions made from them (server side and SDK side meet here without a network)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest

from clients.sdk import errors as sdk
from engine_service.server import errors
from engine_service.server.errors import REASONS, Code, ServiceError

ROOT = Path(__file__).resolve().parents[2]


class WireError(grpc.RpcError):  # type: ignore[misc]
    """What a client gets for a ServiceError: code, message, trailing metadata."""

    def __init__(self, e: ServiceError) -> None:
        self.e = e

    def code(self) -> Any:
        return grpc.StatusCode[self.e.code.value]

    def details(self) -> str:
        return self.e.message

    def trailing_metadata(self) -> Any:
        return self.e.wire_trailers()


def test_every_code_is_a_grpc_status() -> None:
    names = {c.name for c in grpc.StatusCode}
    assert {c.value for c in Code} <= names
    assert {"DATA_LOSS", "RESOURCE_EXHAUSTED"} <= {c.value for c in Code}


def test_every_reason_is_documented_and_every_documented_reason_exists() -> None:
    doc = (ROOT / "docs" / "security.md").read_text()
    table = doc.split("## Error reasons", 1)[1].split("\n## ", 1)[0]
    documented = dict(re.findall(r"^\| `([A-Z_]+)` \| `([A-Z_]+)` \|", table, re.M))
    assert documented == {reason: code.value for reason, (code, _) in REASONS.items()}


def test_old_constructor_still_works_and_defaults_the_reason() -> None:
    e = ServiceError(Code.DATA_LOSS, "the game went back in time", (("x", "1"),))
    assert e.reason == "DATA_LOSS" and e.reason in REASONS
    assert e.wire_trailers()[0] == ("x", "1")
    got = sdk.from_rpc_error(WireError(e))
    assert isinstance(got, sdk.DataLossError) and got.reason == "DATA_LOSS"
    assert str(got) == "the game went back in time"


@pytest.mark.parametrize(
    ("error", "cls", "reason"),
    [
        (errors.not_found("g" * 22), sdk.GameNotFoundError, "GAME_NOT_FOUND"),
        (errors.not_your_turn(1, "to play"), sdk.NotYourTurnError, "NOT_YOUR_TURN"),
        (errors.illegal_action("no Runes"), sdk.IllegalActionError, "ILLEGAL_ACTION"),
        (errors.game_over(), sdk.GameOverError, "GAME_OVER"),
        (errors.token_required(), sdk.UnauthenticatedError, "TOKEN_REQUIRED"),
        (errors.unknown_token(), sdk.UnauthenticatedError, "UNKNOWN_TOKEN"),
        (errors.store_unavailable(), sdk.UnavailableError, "STORE_UNAVAILABLE"),
        (errors.internal(), sdk.ServerError, "INTERNAL"),
        (errors.undecodable("SubmitAction"), sdk.InvalidArgumentError, "UNDECODABLE_REQUEST"),
    ],
)
def test_reasons_become_typed_sdk_exceptions(
    error: ServiceError, cls: type[sdk.AscensionError], reason: str
) -> None:
    got = sdk.from_rpc_error(WireError(error))
    assert type(got) is cls and got.reason == reason and reason in REASONS
    assert got.code == error.code.value and str(got) == error.message
    assert REASONS[reason][0] is error.code


def test_version_mismatch_keeps_its_trailer_and_tells_the_version() -> None:
    e = errors.version_mismatch(7, 5)
    assert ("current-version", "7") in e.wire_trailers()
    got = sdk.from_rpc_error(WireError(e))
    assert isinstance(got, sdk.VersionConflictError) and got.current_version == 7
    assert got.reason == "VERSION_MISMATCH" and got.metadata["expected_version"] == "5"


def test_invalid_argument_names_the_field_in_bad_request() -> None:
    e = errors.invalid("seats[1].bot.name", "unknown bot 'x'")
    got = sdk.from_rpc_error(WireError(e))
    assert isinstance(got, sdk.InvalidArgumentError) and got.reason == "INVALID_FIELD"
    assert got.violations == (sdk.FieldViolation("seats[1].bot.name", "unknown bot 'x'"),)
    assert str(got).startswith("seats[1].bot.name:")


def test_rate_limit_has_retry_info() -> None:
    from engine_service.server.limits import RateLimit

    clock = [100.0]
    limit = RateLimit("ENGINE_LIMIT_CREATE_PER_MINUTE", "2 per minute", 2 / 60, 2.0, lambda: clock[0])
    limit.take("ipv4:1.2.3.4")
    limit.take("ipv4:1.2.3.4")
    limit.take("ipv4:5.6.7.8")  # another peer has its own bucket
    with pytest.raises(ServiceError) as info:
        limit.take("ipv4:1.2.3.4")
    got = sdk.from_rpc_error(WireError(info.value))
    assert isinstance(got, sdk.RateLimitedError) and got.limit == "ENGINE_LIMIT_CREATE_PER_MINUTE"
    assert got.retry_after == pytest.approx(30.0, abs=0.01)
    clock[0] += 30.0
    limit.take("ipv4:1.2.3.4")  # refilled


def test_a_reason_never_changes_the_code_class() -> None:
    """A server that pairs a known reason with another code still gets the code's class."""
    e = ServiceError(Code.UNAVAILABLE, "odd", reason="NOT_YOUR_TURN")
    assert type(sdk.from_rpc_error(WireError(e))) is sdk.UnavailableError


def test_peers_are_counted_by_address() -> None:
    from engine_service.server.limits import peer_key

    assert peer_key("ipv4:10.0.0.1:5555") == peer_key("ipv4:10.0.0.1:6666") == "ipv4:10.0.0.1"
    assert peer_key("ipv6:[2001:db8::1]:5555") == peer_key("ipv6:[2001:db8::ffff]:1") == "ipv6:2001:db8::/64"
    assert peer_key("ipv6:[2001:db8:0:1::1]:5") != peer_key("ipv6:[2001:db8::1]:5")
    assert peer_key("unix:/tmp/s") == "unix:/tmp/s"
    # IPv4 callers of a dual-stack port are not one /64
    assert peer_key("ipv6:[::ffff:10.0.0.1]:5") == "ipv4:10.0.0.1"
    assert peer_key("ipv6:[::ffff:10.0.0.2]:5") != peer_key("ipv6:[::ffff:10.0.0.1]:5")


def test_bad_request_log_is_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from engine_service.server.limits import LogLimiter

    clock = [0.0]
    limiter = LogLimiter(logging.getLogger("test.badrequests"), 3, 60.0, lambda: clock[0])
    with caplog.at_level(logging.WARNING, "test.badrequests"):
        logged = [limiter.warning("bad %d", i) for i in range(10)]
        assert logged == [True] * 3 + [False] * 7 and len(caplog.records) == 3
        clock[0] = 61.0
        limiter.warning("bad again")
    assert "7 more such lines" in caplog.records[3].getMessage()
    assert caplog.records[4].getMessage() == "bad again"
