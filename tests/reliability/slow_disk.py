"""A redis-server on a disk that can be made slow, or made to stop answering: the library
slow_fsync.c, built here with the C compiler and loaded with LD_PRELOAD (tests/run installs gcc
when it is missing).

- ``slow(ms)``: every fsync of the process waits that long, as on a busy disk;
- ``hold()``: an fsync waits until ``release()``, and while it waits so does every write to a
  file. With ``appendfsync everysec`` Redis then postpones writing its append-only file behind
  the fsync in progress (up to 2 s, then its write is held) while it acknowledges the writes:
  exactly what a SIGKILL then loses, and the library says when each thing happened
  (``wait_fsync_held``, ``wait_write_held``) and what the held write held (``held_bytes``).
  With ``appendfsync always`` the fsync that is held is the one before the replies."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from tests.reliability.redis_proc import RedisProcess

SOURCE = Path(__file__).with_name("slow_fsync.c")


def slow_fsync_library(build_dir: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed to build the slow disk (tests/run installs gcc)"
    out = build_dir / "slow_fsync.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out), str(SOURCE), "-ldl"],
                   check=True, capture_output=True, timeout=60)  # fmt: skip
    return out


class SlowDisk:
    """The disk of the Redis processes started with ``env``: ``slow(ms)``, ``fast()``,
    ``hold()`` and ``release()``."""

    def __init__(self, library: Path, control: Path) -> None:
        self.control = control
        self.env = {"LD_PRELOAD": str(library), "SLOW_FSYNC_FILE": str(control)}
        self.fast()

    def _beside(self, suffix: str) -> Path:
        return self.control.with_name(self.control.name + suffix)

    def slow(self, ms: int) -> None:
        self.control.write_text(str(ms))

    def fast(self) -> None:
        self.control.write_text("0")

    def hold(self) -> None:
        """From now on an fsync waits for ``release`` (and, while one waits, file writes)."""
        for suffix in (".fsync-held", ".write-held", ".held"):
            self._beside(suffix).unlink(missing_ok=True)
        self.control.write_text("hold")

    def release(self) -> None:
        self.fast()

    def _wait_for(self, suffix: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self._beside(suffix).exists():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def wait_fsync_held(self, timeout: float = 30.0) -> bool:
        """Until an fsync is held (since ``hold``); False after ``timeout`` s."""
        return self._wait_for(".fsync-held", timeout)

    def wait_write_held(self, timeout: float = 30.0) -> bool:
        """Until a write to a file is held (since ``hold``); False after ``timeout`` s."""
        return self._wait_for(".write-held", timeout)

    def held_bytes(self) -> bytes:
        """What the held writes would have written."""
        path = self._beside(".held")
        return path.read_bytes() if path.exists() else b""

    def redis(self, data_dir: Path, *args: str) -> RedisProcess:
        """A RedisProcess (not started) on this disk."""
        return RedisProcess(data_dir, *args, env=self.env)
