"""The browser protocols without a browser: Connect and gRPC-Web clients (the Connect project's
Python client) against ``ascension web``, which forwards every call to its engine over gRPC."""

from __future__ import annotations

import json
import threading
import urllib.error
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
from engine_service.api.ascension.v1 import engine_pb2
from tests.web.conftest import WebServer

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
    move = engine_pb2.SubmitActionRequest(
        game_id=created.game_id, token=token, expected_version=1, action=mine.legal_actions[0].id
    )
    engine.call("SubmitAction", move)
    with pytest.raises(ConnectError) as stale:  # version 1 again: the game went on
        engine.call("SubmitAction", move)
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
