"""`ascension-engine serve` started by hand listens on loopback only, and its listening line
says whether the engine is open (plaintext, no operator keys) or not."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.security.pki import make_pki
from tests.service import support


@dataclass
class Started:
    line: str  # the listening line
    output: str = ""  # everything it wrote, once stopped

    @property
    def port(self) -> int:
        return int(self.line.split("listening on ")[1].split()[0].rpartition(":")[2])


@contextmanager
def serve(*args: str, **env: str) -> Iterator[Started]:
    """The real server with only ``env`` of its own settings; stopped (SIGINT) on exit."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ENGINE_", "REDIS_"))}
    proc = subprocess.Popen(
        [str(support.ENGINE), "serve", *args],
        env={**base, "ENGINE_GRPC_PORT": "0", "ENGINE_METRICS_PORT": "0", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line)
        if "listening on" in line:
            break
    started = Started(lines[-1] if lines else "")
    try:
        assert "listening on" in started.line, "".join(lines)
        yield started
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        # Not communicate(): it would skip what the line iterator above already buffered.
        started.output = "".join(lines) + proc.stdout.read()
        proc.stdout.close()


def other_address() -> str | None:
    """An address of this machine that is not loopback (the one its default route uses)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a route
        except OSError:
            return None
        ip: str = s.getsockname()[0]
    return None if ip.startswith("127.") else ip


def reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def test_by_default_it_listens_on_loopback_and_says_it_is_open() -> None:
    with serve() as engine:
        assert "listening on 127.0.0.1:" in engine.line, engine.line
        assert "(open: plaintext, no operator keys;" in engine.line, engine.line
        assert reachable("127.0.0.1", engine.port)
        other = other_address()
        if other is not None:  # a machine with a network: not reachable from it
            assert not reachable(other, engine.port), f"reachable on {other}"
    assert "WARNING" not in engine.output, "no warning on loopback"


def test_every_interface_when_asked_with_a_warning_if_open() -> None:
    for args, env in ((["--host", "0.0.0.0"], {}), ([], {"ENGINE_HOST": "0.0.0.0"})):
        with serve(*args, **env) as engine:
            assert "listening on 0.0.0.0:" in engine.line, engine.line
            assert "(open: plaintext, no operator keys;" in engine.line, engine.line
        (warning,) = [x for x in engine.output.splitlines() if "WARNING" in x]
        assert "is open on 0.0.0.0:" in warning and "ENGINE_OPERATOR_KEYS" in warning


def test_a_protected_engine_is_not_called_open(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    tls = {"ENGINE_TLS_CERT_FILE": str(pki.server_cert), "ENGINE_TLS_KEY_FILE": str(pki.server_key)}
    keys = {"ENGINE_OPERATOR_KEYS": "k" * 24}
    for env, words in (
        ({**tls, **keys}, "(TLS, operator keys;"),
        ({**tls, "ENGINE_TLS_CLIENT_CA_FILE": str(pki.ca)}, "(mTLS, no operator keys;"),
        ({**keys, "ENGINE_HOST": "0.0.0.0"}, "(plaintext, operator keys;"),
    ):
        with serve(**env) as engine:
            assert words in engine.line and "open" not in engine.line, engine.line
        assert "WARNING" not in engine.output, engine.output
