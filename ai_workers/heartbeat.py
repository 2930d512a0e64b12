"""The worker's heartbeat file: a local liveness signal that needs no broker.

``ascension-worker run`` starts a thread that rewrites ``<tmp>/ascension-worker/<node>.json``
every few seconds (node name, process id, broker); ``ascension-worker check --local`` reads
it. A liveness probe built on it does not fail during a broker outage (a ping through the
broker would, restarting every worker at once), and ``ascension-worker check`` finds this
host's node names there when they carry the process id (``%p``).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from engine_service import redis_urls

INTERVAL_SECONDS = 5.0
MAX_AGE_SECONDS = 60.0


def directory() -> Path:
    return Path(tempfile.gettempdir()) / "ascension-worker"


def redact(url: str) -> str:
    """A broker URL without its passwords."""
    return redis_urls.redacted(url)


@dataclass(frozen=True)
class Beat:
    node: str
    pid: int
    broker: str
    written: float  # time.time() of the last write

    def age(self) -> float:
        return max(0.0, time.time() - self.written)

    def process_alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True  # exists, owned by someone else
        return True


def _path(node: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in node)
    return directory() / f"{safe}.json"


def write(node: str, broker: str) -> None:
    path = _path(node)
    path.parent.mkdir(parents=True, exist_ok=True)
    beat = {"node": node, "pid": os.getpid(), "broker": redact(broker), "written": time.time()}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(beat))
    tmp.replace(path)  # atomic: a reader never sees half a file


def start(node: str, broker: str, interval: float = INTERVAL_SECONDS) -> threading.Event:
    """Write the heartbeat now and every `interval` seconds from a daemon thread; set the
    returned event to stop (the file is removed then, and at exit)."""
    write(node, broker)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(interval):
            with contextlib.suppress(OSError):
                write(node, broker)
        with contextlib.suppress(OSError):
            _path(node).unlink()

    threading.Thread(target=beat, name="ascension-heartbeat", daemon=True).start()
    return stop


def read_all(where: Path | None = None) -> list[Beat]:
    """Every heartbeat in `where` (default: this process's directory())."""
    beats = []
    for path in sorted((where or directory()).glob("*.json")):
        try:
            raw = json.loads(path.read_text())
            beats.append(
                Beat(str(raw["node"]), int(raw["pid"]), str(raw["broker"]), float(raw["written"]))
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being replaced, or not ours
    return beats
