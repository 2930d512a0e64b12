"""Start a private engine (``ascension-engine serve``) for one command, and stop it after.

Used by ``ascension play`` and ``ascension bots`` when no ``--address`` is given: the engine
runs with its embedded defaults (games kept in process, AI seats played by a local process
pool), on a free loopback port, in its own session so that a Ctrl-C at the terminal reaches
the client only; the client stops the engine when it exits. Its log is a temporary file
(``ascension-engine-*.log``), removed after a clean stop unless the client keeps it
(:meth:`EmbeddedEngine.keep_log`: ``ascension bots`` does when a bot failed, and says where).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO

from clients.sdk import Client, UnavailableError


class EngineStartError(RuntimeError):
    """The embedded engine did not start; the message ends with the tail of its log."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def engine_command() -> list[str]:
    """``ascension-engine`` next to this Python (the installed console script), else the module."""
    script = Path(sys.executable).with_name("ascension-engine")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "engine_service.server.cli"]


class EmbeddedEngine:
    """``with EmbeddedEngine() as engine: Client(engine.address)``."""

    def __init__(
        self,
        *,
        ai_processes: int = 1,
        log_level: str = "WARNING",
        start_timeout: float = 60.0,
        log_path: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``env``: settings of the engine beyond the environment's and a private engine's."""
        self.ai_processes = max(1, ai_processes)
        self.env = dict(env or {})
        self.log_level = log_level
        self.start_timeout = start_timeout
        self.port = 0
        self.address = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_path = log_path
        self._own_log = log_path is None
        self._log: IO[bytes] | None = None
        self.returncode: int | None = None

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    def keep_log(self) -> Path | None:
        """Keep the engine's log when it stops (it is removed after a clean stop otherwise):
        e.g. the tracebacks of bots that failed. Returns its path."""
        self._own_log = False
        return self._log_path

    def start(self) -> str:
        """Start the engine and wait until it answers SERVING; returns its address."""
        for attempt in range(3):
            try:
                return self._start_once()
            except EngineStartError:
                self.stop()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _start_once(self) -> str:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        if self._log_path is None:
            fd, name = tempfile.mkstemp(prefix="ascension-engine-", suffix=".log")
            os.close(fd)
            self._log_path = Path(name)
        self._log = open(self._log_path, "ab")  # noqa: SIM115 - closed in stop()
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL")}
        env.update(
            ENGINE_AI_DISPATCH="local",
            # a private engine of one user: `ascension play --seed` deals a chosen game
            ENGINE_CALLER_SEEDS="anyone",
            ENGINE_LOCAL_AI_PROCESSES=str(self.ai_processes),
            ENGINE_METRICS_PORT="0",
            ENGINE_SHUTDOWN_GRACE_SECONDS="1",
            LOG_LEVEL=self.log_level,
        )
        env.update(self.env)
        cmd = [*engine_command(), "serve", "--host", "127.0.0.1", "--grpc-port", str(self.port)]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # Ctrl-C at the terminal is the client's to handle
        )
        deadline = time.monotonic() + self.start_timeout
        with Client(self.address, timeout=5.0) as client:
            while True:
                if self.proc.poll() is not None:
                    raise EngineStartError(
                        f"the engine exited with code {self.proc.returncode}\n{self.log_tail()}"
                    )
                try:
                    client.wait_ready(timeout=1.0)
                    return self.address
                except UnavailableError:
                    if time.monotonic() >= deadline:
                        raise EngineStartError(
                            f"the engine did not answer on {self.address} within "
                            f"{self.start_timeout:.0f}s\n{self.log_tail()}"
                        ) from None

    def log_tail(self, lines: int = 15) -> str:
        if self._log_path is None or not self._log_path.exists():
            return ""
        text = self._log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def last_problem(self) -> str:
        """The engine's last WARNING/ERROR log line (e.g. why an AI move failed), if any."""
        for line in reversed(self.log_tail(200).splitlines()):
            for level in (" ERROR ", " WARNING ", " CRITICAL "):
                if level in line:
                    return line.split(level, 1)[1]
        return ""

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (the engine shuts down gracefully), then SIGKILL if it lingers."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            # AI pool workers the engine left behind are in its session: end them too.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            self.returncode = proc.returncode
        if self._log is not None:
            self._log.close()
            self._log = None
        clean = self.returncode in (0, -signal.SIGTERM)
        if self._own_log and clean and self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    def __enter__(self) -> EmbeddedEngine:
        self.start()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
