"""A child process that ends with its parent, however the parent ends (SIGKILL included).

Called first thing in the child, with the pid of the parent it must not outlive:

- on Linux the kernel signals the child the moment the parent dies (``PR_SET_PDEATHSIG``). It
  fires when the *thread* that started the child ends: start children from a thread that
  lives as long as the process (the main thread, an event loop's);
- a watch thread also looks at the parent's pid every ``WATCH_SECONDS`` (any POSIX system,
  and a second line on Linux): once the child is orphaned (adopted by another process), it
  sends itself the signal.

Used by the engine's server processes (``--processes N``: SIGTERM, a graceful stop), its local
AI pool's processes and the bot host (SIGKILL: a search or a stuck bot has nothing to save).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
import time

PR_SET_PDEATHSIG = 1  # linux/prctl.h
WATCH_SECONDS = 0.5


def die_with_parent(parent: int, sig: int = signal.SIGKILL) -> None:
    """Send this process ``sig`` when ``parent`` (its parent's pid) dies; at once if it has
    died already."""
    with contextlib.suppress(OSError, AttributeError):  # (not Linux: the watch alone)
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig))
    if os.getppid() != parent:  # it died before that
        os.kill(os.getpid(), sig)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_SECONDS)
        os.kill(os.getpid(), sig)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
