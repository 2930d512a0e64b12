"""``ascension web`` as a command: its URL, its private engine's lifetime, a port in use."""

from __future__ import annotations

import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest
from connectrpc.client import ConnectClientSync
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.errors import ConnectError

from clients.embedded import EmbeddedEngine
from engine_service.api.ascension.v1 import engine_pb2
from tests.clients.tty import port_open, wait_closed
from tests.web.conftest import ascension_command, start_web, stop_web
from tests.web.test_gateway import METHODS


def test_stopping_it_stops_its_private_engine() -> None:
    server = start_web("--bot", "random", "--ai-processes", "1")
    try:
        assert server.url.startswith("http://127.0.0.1:") and port_open(server.engine)
        with urllib.request.urlopen(server.url, timeout=10) as resp:
            assert resp.status == 200
    finally:
        code = stop_web(server.proc)
    assert code in (0, 130), code
    assert wait_closed(server.engine), f"the private engine at {server.engine} still answers"


def test_a_port_in_use_is_reported() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*ascension_command(), "web", "--no-browser", "--port", str(port)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 1
    assert f"Cannot serve on 127.0.0.1:{port}" in done.stdout


OPERATOR_KEY = "web-test-operator-key-0123456789"


def list_games(client: ConnectClientSync) -> engine_pb2.ListGamesResponse:
    resp: engine_pb2.ListGamesResponse = client.execute_unary(
        request=engine_pb2.ListGamesRequest(), method=METHODS["ListGames"]
    )
    return resp


def test_an_operator_key_is_sent_for_the_browsers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an engine with operator keys, `--operator-key-file` makes the page's calls operator
    calls (ListGames needs one there); without it they are refused as the engine says."""
    monkeypatch.setenv("ENGINE_OPERATOR_KEYS", OPERATOR_KEY)
    key = tmp_path / "key"
    key.write_text(OPERATOR_KEY + "\n")
    with EmbeddedEngine(ai_processes=1) as engine:
        for args, expected in (
            ([], Code.UNAUTHENTICATED),
            (["--operator-key-file", str(key)], None),
        ):
            server = start_web("--address", engine.address, *args)
            try:
                with ConnectClientSync(
                    server.origin, codec=google_protobuf_binary_codec(), send_compression=None
                ) as client:
                    if expected is None:
                        assert list_games(client).next_page_token == ""
                    else:
                        with pytest.raises(ConnectError) as refused:
                            list_games(client)
                        assert refused.value.code == expected
            finally:
                stop_web(server.proc)
        assert port_open(engine.address), "an engine given by --address is left running"
