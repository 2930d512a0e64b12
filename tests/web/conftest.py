"""Fixtures: ``ascension web`` as a user starts it (its own embedded engine), on a free port.

Browser tests drive Debian's Chromium (``/usr/bin/chromium``, installed by ``tests/run``)
with Playwright; screenshots go to ``tests/web/artifacts/`` (git-ignored) or to
``$ASCENSION_WEB_ARTIFACTS``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from clients.embedded import engine_command

URL_LINE = re.compile(r"Ascension in your browser: (http://\S+/)\s+\(engine at (\S+)\)")
ARTIFACTS = Path(os.environ.get("ASCENSION_WEB_ARTIFACTS", Path(__file__).parent / "artifacts"))
CHROMIUM = os.environ.get("ASCENSION_CHROMIUM", "/usr/bin/chromium")
# What Chromium needs on these machines: no sandbox as root, no GPU, and none of its own
# network traffic (which a closed network refuses, many times over).
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class WebServer:
    url: str  # http://127.0.0.1:PORT/
    engine: str  # HOST:PORT of the private engine it started
    proc: subprocess.Popen[str]

    @property
    def origin(self) -> str:
        return self.url.rstrip("/")


def ascension_command() -> list[str]:
    script = Path(sys.executable).with_name("ascension")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "clients.cli"]


def start_web(*args: str, timeout: float = 90.0) -> WebServer:
    """``ascension web --no-browser --port 0 ARGS``; waits for the URL line."""
    cmd = [*ascension_command(), "web", "--no-browser", "--port", "0", *args]
    env = {**os.environ, "COLUMNS": "200", "TERM": "dumb"}
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        m = URL_LINE.search(line)
        if m:
            return WebServer(m.group(1), m.group(2), proc)
    stop_web(proc)
    raise AssertionError("ascension web printed no URL:\n" + "".join(seen))


def stop_web(proc: subprocess.Popen[str], timeout: float = 20.0) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode


@pytest.fixture(scope="session")
def web() -> Iterator[WebServer]:
    assert engine_command()
    server = start_web("--bot", "random", "--budget-ms", "20", "--seed", "7", "--ai-processes", "2")
    try:
        yield server
    finally:
        stop_web(server.proc)


def have_chromium() -> bool:
    return Path(CHROMIUM).exists() or shutil.which("chromium") is not None


def missing(what: str) -> None:
    """Skip a test whose tool is missing, except in CI (where tests/run installs it)."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing (tests/run installs it)")
    pytest.skip(f"{what} is missing: run tests/run, which installs it")
