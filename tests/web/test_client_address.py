"""Who a browser counts as for the engine's limits per caller, through a real ``ascension web``
in front of a real engine (and a real nginx in front of the gateway).

Browsers are HTTP clients on loopback addresses of their own (127.0.0.x: Linux routes all of
127/8 to lo), so the gateway sees one real peer per browser. Whatever address headers a
browser sends (X-Forwarded-For, Forwarded, X-Real-IP, the gateway's own metadata), its creates
count against the bucket of its real address, which the engine's refusal names; another
address has its own bucket; a caller without the gateway key cannot make the engine believe an
address; behind nginx (a trusted proxy of the gateway) the gateway takes nginx's report of the
browser, not what the browser wrote.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest

from clients.sdk.errors import rich_status
from clients.web.client_address import ClientAddress
from clients.web.gateway import PREFIX
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.forwarding import CLIENT_ADDRESS, GATEWAY_KEY
from tests.reliability.nginx_proxy import NginxProxy
from tests.service import support
from tests.web.conftest import WebServer, ascension_command, start_web, stop_web

GATEWAY_KEY_VALUE = "gateway-key-of-the-client-address-test"
CREATES = 2  # ENGINE_LIMIT_CREATE_PER_MINUTE: the third create of a minute is refused
RATE_LIMITED = "ENGINE_LIMIT_CREATE_PER_MINUTE"

# What a browser may write to pass for someone else: none of it may change its bucket.
FORGED: list[dict[str, str]] = [
    {},
    {"X-Forwarded-For": "198.51.100.1"},
    {"x-forwarded-for": "198.51.100.2, 203.0.113.5"},
    {"Forwarded": "for=198.51.100.3;proto=https"},
    {"X-Real-IP": "198.51.100.4"},
    {"True-Client-IP": "198.51.100.5", "X-Forwarded-Host": "play.example.com"},
    {CLIENT_ADDRESS: "198.51.100.6"},
    {CLIENT_ADDRESS: "198.51.100.7", GATEWAY_KEY: "a-guess-at-the-gateway-key"},
    {CLIENT_ADDRESS: "198.51.100.8", GATEWAY_KEY: GATEWAY_KEY_VALUE},  # even the right key
    {"x-forwarded-for": "2001:db8::9", "x-envoy-external-address": "198.51.100.10"},
]


@pytest.fixture(scope="module")
def engine() -> Iterator[support.Engine]:
    e = support.start_engine(
        "",
        ENGINE_LIMIT_CREATE_PER_MINUTE=str(CREATES),
        ENGINE_GATEWAY_KEYS=f"an-older-gateway-key-still-listed,{GATEWAY_KEY_VALUE}",
    )
    try:
        yield e
    finally:
        e.stop()


@contextlib.contextmanager
def gateway(engine: support.Engine, tmp: Path, *args: str) -> Iterator[WebServer]:
    key_file = tmp / "gateway-key"
    key_file.write_text(GATEWAY_KEY_VALUE + "\n")
    web = start_web("--address", engine.address, "--gateway-key-file", str(key_file), *args)
    try:
        yield web
    finally:
        stop_web(web.proc)


@pytest.fixture(scope="module")
def web(engine: support.Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    with gateway(engine, tmp_path_factory.mktemp("gateway")) as w:
        yield w


def create(url: str, source: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """A browser's CreateGame (Connect, JSON) from the loopback address ``source``."""
    where = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(
        where.hostname or "", where.port, timeout=60, source_address=(source, 0)
    )
    body = json.dumps({"seats": [{"name": "Mallory"}, {"name": "Eve"}]}).encode()
    try:
        conn.request(
            "POST",
            PREFIX + "CreateGame",
            body=body,
            headers={"content-type": "application/json", **headers},
        )
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"{}")
    finally:
        conn.close()


def bucket(answer: dict[str, Any]) -> str:
    """The caller a RESOURCE_EXHAUSTED answer was counted as (its message: "... for KEY; ...")."""
    assert answer.get("code") == "resource_exhausted", answer
    assert RATE_LIMITED in answer["message"], answer
    return str(answer["message"].split(" for ", 1)[1].split(";", 1)[0])


def exhaust(url: str, source: str) -> list[str]:
    """Every forged header set from ``source``: the first CREATES are served, each one after is
    refused; the buckets the refusals name."""
    named = []
    for i, headers in enumerate(FORGED):
        status, answer = create(url, source, headers)
        if i < CREATES:
            assert status == 200 and answer.get("gameId"), (headers, answer)
        else:
            assert status == 429, (headers, status, answer)
            named.append(bucket(answer))
    return named


def test_forged_address_headers_do_not_buy_a_browser_a_new_bucket(web: WebServer) -> None:
    assert exhaust(web.url, "127.0.0.11") == ["ipv4:127.0.0.11"] * (len(FORGED) - CREATES)
    # Another browser, another address: its own bucket, whatever the first one did.
    assert exhaust(web.url, "127.0.0.12") == ["ipv4:127.0.0.12"] * (len(FORGED) - CREATES)


def test_a_caller_without_the_gateway_key_cannot_name_an_address(engine: support.Engine) -> None:
    """Straight to the engine: the gateway's metadata without its key, or the right metadata
    with a wrong key, gets nobody a fresh bucket."""
    stub = rpc.EngineStub(grpc.insecure_channel(engine.address))
    request = epb.CreateGameRequest(sets="ss", seats=support.human_seats(2))
    for i in range(CREATES + 3):
        forged = ((CLIENT_ADDRESS, f"198.51.100.{20 + i}"), ("x-forwarded-for", f"203.0.113.{i}"))
        try:
            stub.CreateGame(request, metadata=forged, timeout=support.CALL_TIMEOUT)
            assert i < CREATES, "counted as its own address, whatever it names"
        except grpc.RpcError as e:
            assert i >= CREATES and e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e
            assert "for ipv4:127.0.0.1;" in (e.details() or ""), e.details()
    wrong = ((GATEWAY_KEY, "not-the-gateway-key-at-all"), (CLIENT_ADDRESS, "198.51.100.30"))
    for call in (
        lambda: stub.CreateGame(request, metadata=wrong, timeout=support.CALL_TIMEOUT),
        lambda: stub.ListCards(epb.ListCardsRequest(), metadata=wrong, timeout=support.CALL_TIMEOUT),
    ):
        with pytest.raises(grpc.RpcError) as refused:
            call()
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert rich_status(refused.value).reason == "UNKNOWN_GATEWAY_KEY"
        assert "ENGINE_GATEWAY_KEYS" in (refused.value.details() or "")
    # The gateway's own word, with its key (either listed key): that address's bucket.
    for key in ("an-older-gateway-key-still-listed", GATEWAY_KEY_VALUE):
        told = ((GATEWAY_KEY, key), (CLIENT_ADDRESS, "198.51.100.40"))
        stub.CreateGame(request, metadata=told, timeout=support.CALL_TIMEOUT)
    with pytest.raises(grpc.RpcError) as third:
        stub.CreateGame(request, metadata=told, timeout=support.CALL_TIMEOUT)
    assert "for ipv4:198.51.100.40;" in (third.value.details() or "")


def test_behind_its_trusted_proxy_the_gateway_takes_the_proxys_report(
    engine: support.Engine, tmp_path: Path
) -> None:
    """nginx (calling the gateway from 127.0.0.3) appends each browser's real address to
    X-Forwarded-For; the gateway, trusting 127.0.0.3 only, takes the right-most address that
    is not nginx: the browser's, whatever the browser wrote to its left."""
    with gateway(engine, tmp_path, "--trusted-proxies", "127.0.0.3/32") as web:
        upstream = urllib.parse.urlsplit(web.url).netloc
        proxy = NginxProxy(tmp_path / "nginx", upstream, source="127.0.0.3", http=True)
        try:
            front = f"http://{proxy.v4}/"
            assert exhaust(front, "127.0.0.31") == ["ipv4:127.0.0.31"] * (len(FORGED) - CREATES)
            assert exhaust(front, "127.0.0.32") == ["ipv4:127.0.0.32"] * (len(FORGED) - CREATES)
            # A browser that writes nginx's address itself gains nothing either.
            status, answer = create(front, "127.0.0.31", {"x-forwarded-for": "127.0.0.3"})
            assert bucket(answer) == "ipv4:127.0.0.31"
            # Around the proxy, straight to the gateway: the peer, not what it claims.
            assert exhaust(web.url, "127.0.0.33") == ["ipv4:127.0.0.33"] * (len(FORGED) - CREATES)
            status, answer = create(web.url, "127.0.0.34", {"x-forwarded-for": "127.0.0.31"})
            assert status == 200, answer
        finally:
            proxy.stop()


def test_an_engine_trusting_the_gateways_address_gets_the_browsers_too() -> None:
    """Without a gateway key, an engine that names the gateway in ENGINE_TRUSTED_PROXIES (as
    before gateway keys) reads the one X-Forwarded-For entry the gateway writes: the browser's
    real address, never one the browser wrote."""
    engine = support.start_engine(
        "", ENGINE_LIMIT_CREATE_PER_MINUTE=str(CREATES), ENGINE_TRUSTED_PROXIES="127.0.0.1/32"
    )
    web = start_web("--address", engine.address)
    try:
        assert exhaust(web.url, "127.0.0.21") == ["ipv4:127.0.0.21"] * (len(FORGED) - CREATES)
        assert exhaust(web.url, "127.0.0.22") == ["ipv4:127.0.0.22"] * (len(FORGED) - CREATES)
    finally:
        stop_web(web.proc)
        engine.stop()


@pytest.mark.parametrize(
    ("peer", "headers", "expected"),
    [
        ("127.0.0.1:5000", [("x-forwarded-for", "198.51.100.1")], "127.0.0.1"),
        ("::1:5000", [], "::1"),
        ("[2001:db8::1]:443", [], "2001:db8::1"),
        ("::ffff:10.0.0.9:80", [], "10.0.0.9"),
        ("10.0.0.5:5000", [("x-forwarded-for", "198.51.100.1, 203.0.113.9")], "203.0.113.9"),
        ("10.0.0.5:5000", [("x-forwarded-for", "203.0.113.9, 10.1.2.3")], "203.0.113.9"),
        ("10.0.0.5:5000", [("x-forwarded-for", "10.1.2.3")], "10.0.0.5"),  # only proxies
        ("10.0.0.5:5000", [("x-forwarded-for", "_hidden-3")], "_hidden-3"),
        ("10.0.0.5:5000", [("x-forwarded-for", 'bad"name')], "10.0.0.5"),
        ("10.0.0.5:5000", [], "10.0.0.5"),
        (None, [("x-forwarded-for", "203.0.113.9")], None),
    ],
)
def test_the_address_the_gateway_reports(
    peer: str | None, headers: list[tuple[str, str]], expected: str | None
) -> None:
    client = ClientAddress.of("10.0.0.0/8", "", GATEWAY_KEY_VALUE)
    assert client.browser(peer, headers) == expected
    metadata = client.metadata(peer, headers)
    if expected is None:
        assert metadata == []
    else:
        assert metadata == [
            ("x-forwarded-for", expected),
            (CLIENT_ADDRESS, expected),
            (GATEWAY_KEY, GATEWAY_KEY_VALUE),
        ]
    for name in ("x-forwarded-for", "Forwarded", "x-real-ip", "x-forwarded-proto", GATEWAY_KEY):
        assert not client.passes(name)
    assert client.passes("authorization") and client.passes("traceparent")


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--trusted-proxies", "10.0.0.0/8,not-a-network"], {}, "--trusted-proxies"),
        ([], {"ASCENSION_WEB_TRUSTED_PROXIES": "10.0.0.300"}, "ASCENSION_WEB_TRUSTED_PROXIES"),
        (["--client-address-header", "x forwarded"], {}, "--client-address-header"),
        (["--gateway-key-file", "/no/such/file"], {}, "--gateway-key-file"),
        ([], {"ASCENSION_WEB_GATEWAY_KEY": "short"}, "ASCENSION_WEB_GATEWAY_KEY"),
    ],
)
def test_bad_address_settings_stop_it_before_it_serves(
    args: list[str], env: dict[str, str], named: str
) -> None:
    result = subprocess.run(
        [*ascension_command(), "web", "--no-browser", "--port", "0", *args],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, **env, "COLUMNS": "200"},
    )  # fmt: skip
    assert result.returncode == 2, result
    assert named in result.stdout + result.stderr, result
