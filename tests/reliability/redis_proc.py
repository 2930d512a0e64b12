"""A redis-server of the test's own, on a free loopback port, that a test may kill and restart
on the same port and data directory (so it comes back from its own RDB or AOF files)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

import redis

from tests.service.support import free_port


class RedisProcess:
    def __init__(self, data_dir: Path, *args: str, env: Mapping[str, str] | None = None) -> None:
        """``env``: more environment variables of the server (e.g. ``LD_PRELOAD``)."""
        self.dir = data_dir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.args = args
        self.env = {**os.environ, **env} if env else None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=5)

    def start(self) -> RedisProcess:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        cmd = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
               "--save", "", "--appendonly", "no", *self.args]  # fmt: skip
        out = subprocess.DEVNULL
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=out, env=self.env)
        deadline = time.monotonic() + 30
        while True:
            try:
                with self.client() as c:
                    c.ping()
                    if c.info("persistence").get("loading", 0) == 0:
                        return self
            except (redis.ConnectionError, redis.BusyLoadingError):
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"redis-server did not start: {cmd}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: whatever was not yet on disk is lost, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def restart(self) -> None:
        self.kill()
        self.start()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
