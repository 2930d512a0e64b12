"""``ascension web`` as a command: its URL, its private engine's lifetime, a port in use."""

from __future__ import annotations

import socket
import subprocess
import urllib.request

from tests.clients.tty import port_open, wait_closed
from tests.web.conftest import ascension_command, start_web, stop_web


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
