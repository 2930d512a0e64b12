"""A redis-server on a disk that can be made slow: every fsync of the process then waits, as
on a busy disk (the library slow_fsync.c, built here with the C compiler and loaded with
LD_PRELOAD; tests/run installs gcc when it is missing). With ``appendfsync everysec`` Redis
then postpones writing its append-only file behind the fsync in progress, for up to 2 s, while
it acknowledges the writes: what a SIGKILL then loses."""

from __future__ import annotations

import shutil
import subprocess
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
    """The fsync delay of the Redis processes started with ``env``: ``slow(ms)``, ``fast()``."""

    def __init__(self, library: Path, control: Path) -> None:
        self.control = control
        self.env = {"LD_PRELOAD": str(library), "SLOW_FSYNC_FILE": str(control)}
        self.fast()

    def slow(self, ms: int) -> None:
        self.control.write_text(str(ms))

    def fast(self) -> None:
        self.control.write_text("0")

    def redis(self, data_dir: Path, *args: str) -> RedisProcess:
        """A RedisProcess (not started) on this disk."""
        return RedisProcess(data_dir, *args, env=self.env)
