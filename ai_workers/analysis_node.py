"""The analyses node of ``ascension-worker run``: Celery processes of their own for hints and
review searches, so that an AI move never waits behind one.

``ascension-worker run`` is two Celery nodes on one host:

- the moves node (``WORKER_NODE_NAME``, queue ``ascension.moves``, ``WORKER_CONCURRENCY``
  processes), in the ``run`` process itself, as before;
- the analyses node (``<name>.analyses@<host>``, queue ``ascension.analyses``,
  ``WORKER_ANALYSIS_CONCURRENCY`` processes, 1 by default; 0: none), a child process
  (``ascension-worker analyses-node``) started, watched and restarted by ``run``.

A free moves process therefore always takes the next move at once, however many analyses
wait; and the analyses node runs ``WORKER_ANALYSIS_NICE`` (10) below the moves' CPU priority,
in a session of its own whose autogroup has that nice value too (Linux groups the CPU by
session when ``kernel.sched_autogroup_enabled`` is on, as on most distributions outside
containers), so that on a machine whose cores are all busy a search yields the CPU to a move
and to the engine rather than share it. The analyses node dies with ``run``
(``PR_SET_PDEATHSIG`` and a watchdog thread that notices being orphaned): a lost worker leaves
no search behind.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ai_workers import config
from engine_service import redis_urls

log = logging.getLogger("ascension.worker.analyses")
COMMAND = "analyses-node"  # the hidden subcommand of ascension-worker that runs the node
RESTART_SECONDS = (1.0, 30.0)  # first and longest wait before starting an exited node again
# Redis brokers (kombu's schemes, and the Sentinel URL the engine and the workers take)
REDIS_SCHEMES = ("redis", "rediss", "sentinel", "sentinels", *redis_urls.SENTINEL_SCHEMES)


def node_name(moves_node: str) -> str:
    """The analyses node's Celery name beside the moves node's: ``w1@host`` -> ``w1.analyses@host``."""
    name, at, host = moves_node.partition("@")
    return f"{name}.analyses{at}{host}"


def worker_argv(queue: str, concurrency: int, hostname: str, log_level: str) -> list[str]:
    """The Celery worker arguments of one node of ``ascension-worker run``."""
    return [
        "worker",
        "--queues", queue,
        "--pool", "prefork",
        "--concurrency", str(concurrency),
        "--prefetch-multiplier", "1",
        "--hostname", hostname,
        "--loglevel", log_level,
        "--without-gossip",
        "--without-mingle",
    ]  # fmt: skip


class AnalysisNode:
    """The analyses node as a child process of ``run``: started, restarted when it exits (with
    a growing wait), stopped with ``run``."""

    def __init__(self, cfg: config.WorkerConfig, moves_node: str) -> None:
        self.cfg = cfg
        self.hostname = node_name(moves_node)
        self.started = 0  # processes started (a restart counts)
        self._proc: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="analyses-node", daemon=True)

    @property
    def pid(self) -> int | None:
        p = self._proc
        return p.pid if p is not None and p.poll() is None else None

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(10)

    def _spawn(self) -> subprocess.Popen[bytes]:
        # Started from the watching thread, which lives as long as ``run``: PR_SET_PDEATHSIG
        # fires when the thread that started the child ends.
        argv = [sys.executable, "-m", "ai_workers.cli", COMMAND,
                "--hostname", self.hostname, "--parent", str(os.getpid())]  # fmt: skip
        self.started += 1
        # A session of its own: where the kernel groups the CPU by session (autogroup), its
        # lower priority then applies against the engine and the other processes too.
        return subprocess.Popen(argv, close_fds=True, start_new_session=True)

    def _watch(self) -> None:
        wait = RESTART_SECONDS[0]
        while not self._stop.is_set():
            try:
                self._proc = self._spawn()
            except OSError as e:
                log.error("the analyses node could not start: %s", e)
                self._proc = None
            self._ready.set()
            began = time.monotonic()
            while self._proc is not None and self._proc.poll() is None:
                if self._stop.wait(0.5):
                    return
            if self._stop.is_set():
                return
            code = None
            if self._proc is not None:
                code = self._proc.returncode
                with contextlib.suppress(ProcessLookupError):  # what it leaves: its pool
                    os.killpg(self._proc.pid, signal.SIGKILL)
            if time.monotonic() - began > 60:
                wait = RESTART_SECONDS[0]  # it ran a while: not a crash loop
            log.warning("the analyses node exited (code %s); starting it again in %.0fs", code, wait)
            if self._stop.wait(wait):
                return
            wait = min(RESTART_SECONDS[1], wait * 2)

    def stop(self, timeout: float) -> None:
        """Let the node finish the searches it runs (SIGTERM: Celery's warm shutdown) for up to
        ``timeout`` seconds, then kill it and its processes."""
        self._stop.set()
        self._thread.join(5)
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # its process group: the node and its pool
            proc.wait(10)


def _die_with_parent(parent: int) -> None:
    """Warm shutdown (SIGTERM) when ``run`` is gone, however it went."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def lower_priority(nice: int) -> None:
    """This process (and the pool it forks) ``nice`` below its parent's CPU priority, and its
    session's autogroup, where the kernel schedules by autogroup (the CPU is shared between
    sessions first, whatever their processes' nice values)."""
    os.nice(nice)
    with contextlib.suppress(OSError):
        Path("/proc/self/autogroup").write_text(str(nice))


def run_node(
    cfg: config.WorkerConfig, hostname: str, parent: int, prepare: Callable[[], None]
) -> int:
    """The analyses node itself (in the child process ``run`` started); ``prepare`` sets up
    its metrics and telemetry as ``run`` does its own."""
    lower_priority(cfg.analysis_nice)
    _die_with_parent(parent)
    from ai_workers.celery_app import app

    prepare()
    argv = worker_argv(config.ANALYSIS_QUEUE, max(1, cfg.analysis_concurrency), hostname,
                       cfg.log_level)  # fmt: skip
    if cfg.broker_url.partition(":")[0] in REDIS_SCHEMES:
        # An analysis is acknowledged as it starts: without this the node would then take the
        # next one off the queue and hold it, and a hint sent meanwhile would wait behind it.
        argv.append("--disable-prefetch")  # (a Redis broker's only)
    app.worker_main(argv)
    return 0
