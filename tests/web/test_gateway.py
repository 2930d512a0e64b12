"""The browser protocols without a browser: Connect and gRPC-Web clients (the Connect project's
Python client) against ``ascension web``, which forwards every call to its engine over gRPC."""

from __future__ import annotations

import http.client
import json
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import google.rpc.error_details_pb2 as error_details_pb2
import pytest
from connectrpc.client import ConnectClientSync
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType

from clients.web.gateway import PREFIX, SERVICE, method_info
from engine_service import names
from engine_service.api.ascension.v1 import engine_pb2
from tests.web.conftest import WebServer, ascension_command, start_web, stop_web

PROTOCOLS = {"connect": ProtocolType.CONNECT, "grpc-web": ProtocolType.GRPC_WEB}
METHODS = {m.name: method_info(m) for m in SERVICE.methods}


class Engine:
    """The Engine API as a browser reaches it (one protocol)."""

    def __init__(self, client: ConnectClientSync) -> None:
        self.client = client

    def call(self, name: str, request: Any) -> Any:
        return self.client.execute_unary(request=request, method=METHODS[name], timeout_ms=20_000)

    def stream(self, name: str, request: Any) -> Iterator[Any]:
        return self.client.execute_server_stream(
            request=request, method=METHODS[name], timeout_ms=60_000
        )


@pytest.fixture(params=list(PROTOCOLS))
def engine(request: pytest.FixtureRequest, web: WebServer) -> Iterator[Engine]:
    client = ConnectClientSync(
        web.origin,
        protocol=PROTOCOLS[request.param],
        codec=google_protobuf_binary_codec(),
        send_compression=None,
    )
    with client:
        yield Engine(client)


def test_unary_calls_reach_the_engine(engine: Engine) -> None:
    cards = engine.call("ListCards", engine_pb2.ListCardsRequest())
    assert len(cards.cards) > 50 and cards.catalog_fingerprint
    assert {"mystic", "heavy_infantry", "cultist", "thukal"} <= {c.key for c in cards.cards}
    people = [engine_pb2.SeatConfig(name="A"), engine_pb2.SeatConfig(name="B")]
    created = engine.call("CreateGame", engine_pb2.CreateGameRequest(seats=people, seed=3))
    assert len(created.seat_tokens) == 2
    view = engine.call(
        "GetGame",
        engine_pb2.GetGameRequest(
            game_id=created.game_id, token=created.seat_tokens[view_seat(created)]
        ),
    )
    assert view.version == 1 and view.legal_actions, "the seat to move sees its actions"
    place = view.legal_actions[0]
    submitted = engine.call(
        "SubmitAction",
        engine_pb2.SubmitActionRequest(
            game_id=created.game_id, token=created.seat_tokens[view.seat],
            expected_version=1, action=place.id,
        ),
    )  # fmt: skip
    assert submitted.update.version == 2 and submitted.view.version == 2


def view_seat(created: engine_pb2.CreateGameResponse) -> int:
    return int(created.view.to_move)


def test_errors_keep_the_engines_code_and_message(engine: Engine) -> None:
    with pytest.raises(ConnectError) as bad:
        engine.call("GetGame", engine_pb2.GetGameRequest(game_id="nope"))
    assert bad.value.code == Code.INVALID_ARGUMENT and "game_id" in bad.value.message
    # The engine's google.rpc.Status details come through: ErrorInfo, BadRequest.
    details = {d.type_name: d.message_bytes for d in bad.value.details}
    info = error_details_pb2.ErrorInfo.FromString(details["google.rpc.ErrorInfo"])
    assert info.domain == "ascension.v1" and info.reason
    violations = error_details_pb2.BadRequest.FromString(details["google.rpc.BadRequest"])
    assert [v.field for v in violations.field_violations] == ["game_id"]
    people = [engine_pb2.SeatConfig(), engine_pb2.SeatConfig()]
    created = engine.call("CreateGame", engine_pb2.CreateGameRequest(seats=people, seed=4))
    token = created.seat_tokens[view_seat(created)]
    mine = engine.call("GetGame", engine_pb2.GetGameRequest(game_id=created.game_id, token=token))
    with pytest.raises(ConnectError) as stale:
        engine.call(
            "SubmitAction",
            engine_pb2.SubmitActionRequest(
                game_id=created.game_id, token=token, expected_version=7,
                action=mine.legal_actions[0].id,
            ),
        )  # fmt: skip
    assert stale.value.code == Code.ABORTED
    with pytest.raises(ConnectError) as wrong_token:
        engine.call("GetGame", engine_pb2.GetGameRequest(game_id=created.game_id, token="x" * 32))
    assert wrong_token.value.code == Code.UNAUTHENTICATED


def test_watch_game_streams_each_update_as_it_happens(engine: Engine) -> None:
    """Server streaming through the gateway: every update, in order, while moves are made."""
    people = [engine_pb2.SeatConfig(name="A"), engine_pb2.SeatConfig(name="B")]
    created = engine.call("CreateGame", engine_pb2.CreateGameRequest(seats=people, seed=21))
    stream = engine.stream(
        "WatchGame", engine_pb2.WatchGameRequest(game_id=created.game_id, after_version=0)
    )
    received: list[int] = []
    done = threading.Event()

    def follow() -> None:
        for update in stream:
            received.append(update.version)
            if update.version == MOVES + 1:
                break
        done.set()

    watcher = threading.Thread(target=follow, daemon=True)
    watcher.start()
    seat = view_seat(created)
    for _ in range(MOVES):
        token = created.seat_tokens[seat]
        view = engine.call(
            "GetGame", engine_pb2.GetGameRequest(game_id=created.game_id, token=token)
        )
        action = next(
            (a for a in view.legal_actions if a.kind != "end_turn"), view.legal_actions[0]
        )
        submitted = engine.call(
            "SubmitAction",
            engine_pb2.SubmitActionRequest(
                game_id=created.game_id, token=token, expected_version=view.version,
                action=action.id,
            ),
        )  # fmt: skip
        seat = submitted.update.to_move
    assert done.wait(30), f"the stream delivered {received}"
    assert received == list(range(1, MOVES + 2)), "each version once, in order"


MOVES = 40


def test_every_engine_method_is_served(web: WebServer) -> None:
    """Each RPC of the service answers at its path (an RPC added to proto/ is served too)."""
    for method in SERVICE.methods:
        req = urllib.request.Request(
            web.origin + PREFIX + method.name, data=b"{}", method="POST",
            headers={"content-type": "application/json"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(req, timeout=20) as resp:
                status = resp.status
                resp.read() if not method.server_streaming else None
        except urllib.error.HTTPError as e:
            status = e.code
            body = json.loads(e.read() or b"{}")
            assert body.get("code") != "unimplemented", method.name
        assert status != 404, method.name


def test_page_settings_and_files(web: WebServer) -> None:
    with urllib.request.urlopen(web.url, timeout=10) as resp:
        html = resp.read().decode()
        csp = resp.headers["content-security-policy"]
    assert '<div id="app"' in html and "default-src 'self'" in csp
    script = html.split('src="./', 1)[1].split('"', 1)[0]
    with urllib.request.urlopen(web.url + script, timeout=10) as resp:
        assert resp.headers["content-type"].startswith(
            ("text/javascript", "application/javascript")
        )
    with urllib.request.urlopen(web.url + "config.json", timeout=10) as resp:
        config = json.loads(resp.read())
    assert config["bots"] == ["random"] and config["budget_ms"] == 20 and config["seed"] == 7
    assert config["engine"] == web.engine
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(web.url + "no-such-file.js", timeout=10)
    assert missing.value.code == 404


# ---- Host and Origin: DNS rebinding and cross-site requests ------------------------------


def send(
    web: WebServer, method: str, path: str, headers: dict[str, str], body: bytes | None = None
) -> tuple[int, bytes]:
    """One request with exactly these Host/Origin headers (http.client sends no Host of its
    own when one is given)."""
    where = urllib.parse.urlsplit(web.url)
    conn = http.client.HTTPConnection(where.hostname or "", where.port, timeout=20)
    try:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def list_call(web: WebServer, **headers: str) -> tuple[int, bytes]:
    return send(
        web, "POST", PREFIX + "ListGames",
        {"content-type": "application/json", **headers}, b"{}",
    )  # fmt: skip


def create_call(web: WebServer, **headers: str) -> tuple[int, bytes]:
    seats = json.dumps({"seats": [{"name": "Mallory"}, {"name": "Eve"}]}).encode()
    return send(
        web, "POST", PREFIX + "CreateGame",
        {"content-type": "application/json", **headers}, seats,
    )  # fmt: skip


def games(web: WebServer) -> int:
    status, body = list_call(web, host=urllib.parse.urlsplit(web.url).netloc)
    assert status == 200, body
    return len(json.loads(body).get("games", []))


def test_a_foreign_host_is_refused_everywhere(web: WebServer) -> None:
    """DNS rebinding: attacker.example resolved to 127.0.0.1 reaches the port, but its
    requests say Host: attacker.example and are refused: page, settings and API."""
    port = urllib.parse.urlsplit(web.url).port
    before = games(web)
    for host in (f"attacker.example:{port}", "attacker.example", f"localhost.attacker.example:{port}", ""):
        for method, path in (("GET", "/"), ("GET", "/config.json"), ("GET", "/index.html")):
            status, body = send(web, method, path, {"host": host})
            assert status == 421, (host, path, status, body[:200])
            assert b"--allow-host" in body
        assert list_call(web, host=host)[0] == 421
        assert create_call(web, host=host, origin=f"http://{host}")[0] == 421
    assert games(web) == before, "no game was created"


def test_a_foreign_origin_is_refused(web: WebServer) -> None:
    """A page of another site posting to the gateway (a simple request needs no preflight)."""
    own = urllib.parse.urlsplit(web.url).netloc
    before = games(web)
    for origin in ("http://attacker.example", f"http://attacker.example:{web.url.rsplit(':', 1)[1].strip('/')}",
                   "null", "http://127.0.0.1:1", "file://"):  # fmt: skip
        status, body = create_call(web, host=own, origin=origin)
        assert status == 403, (origin, status, body[:200])
        assert b"other sites" in body
        status, _ = send(web, "GET", "/config.json", {"host": own, "origin": origin})
        assert status == 403
    assert games(web) == before, "no game was created"


def test_the_pages_own_requests_are_answered(web: WebServer) -> None:
    own = urllib.parse.urlsplit(web.url).netloc
    port = urllib.parse.urlsplit(web.url).port
    for host, origin in ((own, f"http://{own}"), (f"localhost:{port}", f"http://localhost:{port}"),
                         (f"[::1]:{port}", None), (own, None)):  # fmt: skip
        headers = {"host": host, **({"origin": origin} if origin else {})}
        assert send(web, "GET", "/", headers)[0] == 200, headers
        assert send(web, "GET", "/config.json", headers)[0] == 200, headers
        status, body = create_call(web, **headers)
        assert status == 200, (headers, body[:300])


def test_more_names_can_be_allowed(web: WebServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind a reverse proxy: --allow-host and ASCENSION_WEB_ALLOWED_HOSTS add names."""
    monkeypatch.setenv("ASCENSION_WEB_ALLOWED_HOSTS", "b.example, c.example")
    proxied = start_web("--address", web.engine, "--allow-host", "play.example.com")
    try:
        for name in ("play.example.com", "b.example", "c.example"):
            assert send(proxied, "GET", "/config.json", {"host": name})[0] == 200, name
            status, body = create_call(proxied, host=name, origin=f"https://{name}")
            assert status == 200, (name, body[:300])
        assert send(proxied, "GET", "/config.json", {"host": "attacker.example"})[0] == 421
        own = urllib.parse.urlsplit(proxied.url).netloc
        assert create_call(proxied, host=own, origin="https://attacker.example")[0] == 403
    finally:
        stop_web(proxied.proc)


def test_a_bad_allowed_name_stops_it_before_it_serves() -> None:
    for args in (["--allow-host", "http://play.example.com/"], ["--allow-host", "a b"]):
        result = subprocess.run(
            [*ascension_command(), "web", "--no-browser", "--port", "0", *args],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert result.returncode == 2 and "not a host name" in result.stderr, result


@pytest.mark.parametrize("name", ["Ann\u202eevil", "\u200b\u200b"])
def test_the_lobby_cannot_create_a_disguised_name(engine: Engine, name: str) -> None:
    """The lobby's form sends the name in CreateGame: refused with the rule, through both
    browser protocols."""
    seats = [engine_pb2.SeatConfig(name=name), engine_pb2.SeatConfig(name="B")]
    with pytest.raises(ConnectError) as info:
        engine.call("CreateGame", engine_pb2.CreateGameRequest(seats=seats))
    assert info.value.code == Code.INVALID_ARGUMENT
    assert info.value.message.startswith(f"seats[0].name: {names.ALLOWED}; "), info.value.message
