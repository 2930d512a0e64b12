"""Which moves a worker started: a move delivered again is poison only if it had started.

The broker delivers a move again (``redelivered``) when the worker that held it did not
acknowledge it: a worker that shut down cleanly hands back the moves it had received but not
begun (and those that reached it while it was stopping), and a worker that died hands back
whatever it held, the move it was deciding included. Only that last one may be poison (a bot
that takes its whole worker down with it), so each move task marks its start in the broker's
Redis (``ascension:move-started:<task id>``, removed when the task ends, however it ends) and
a move delivered again is dead-lettered only when it is still marked: it started and never
finished. The mark outlives the broker's redelivery (``WORKER_VISIBILITY_TIMEOUT``) and the
task's time limit.

With a broker other than Redis (or one that does not answer), whether a move had started
cannot be told: a move delivered again is dead-lettered, as a possible poison.

A clean shutdown must let the moves being decided finish: :func:`take_sigterm_from_the_worker_only`
makes a pool process ignore a SIGTERM that does not come from its worker (the main process),
so that one sent to the whole process group (systemd's default ``KillMode``, ``pkill``) stops
the worker as one sent to its main process does: warm, the pool finishing its moves. The
worker's own SIGTERMs (a cold shutdown, a hard time limit, a revoke that terminates) still
end a pool process at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

log = logging.getLogger("ascension.worker.tasks")
PREFIX = "ascension:move-started:"
UNKNOWN = None  # started(): the broker cannot say


class Starts:
    """The start marks of one worker's moves, in its broker's Redis (one client per process)."""

    def __init__(self, app: Any, ttl_seconds: int) -> None:
        self.app = app
        self.ttl = ttl_seconds
        self._pid = 0
        self._conn: Any = None
        self._client: Any = None

    def _redis(self) -> Any:
        """The broker's Redis client (the one kombu made from the broker URL: TLS, password,
        Sentinel and all), or None when the broker is not Redis. Made in the process that
        uses it: a forked pool process makes its own."""
        if self._pid != os.getpid():
            self._pid, self._conn, self._client = os.getpid(), None, None
            conn = self.app.connection_for_write()
            if getattr(conn.transport, "driver_type", "") != "redis":
                conn.release()
                return None
            conn.ensure_connection(max_retries=1, timeout=10)  # a bounded wait, not a hang
            self._conn = conn
            self._client = conn.default_channel.client
        return self._client

    @contextlib.contextmanager
    def running(self, task_id: str | None) -> Iterator[None]:
        """Mark ``task_id`` started for the duration of the block."""
        key = PREFIX + (task_id or "")
        client = self._mark(key) if task_id else None
        try:
            yield
        finally:
            if client is not None:
                try:
                    client.delete(key)
                except Exception as e:  # left to expire: a redelivery would be dead-lettered
                    log.warning("could not clear the start mark of move %s: %s", task_id, e)

    def _mark(self, key: str) -> Any:
        try:
            client = self._redis()
            if client is not None:
                client.set(key, str(os.getpid()), ex=self.ttl)
            return client
        except Exception as e:
            log.warning("could not mark the start of move %s in the broker: %s", key, e)
            return None

    def started(self, task_id: str) -> bool | None:
        """Whether a worker started ``task_id`` and never finished it; None if unknown."""
        try:
            client = self._redis()
            if client is None:
                return UNKNOWN
            return bool(client.exists(PREFIX + task_id))
        except Exception as e:
            log.warning("could not read the start mark of move %s: %s", task_id, e)
            return UNKNOWN


def take_sigterm_from_the_worker_only() -> None:
    """In a pool process: SIGTERM is taken only from the parent worker process (or once it is
    gone); one from anyone else (a signal to the whole process group) is ignored, the parent
    having had it too. A thread waits for the signal, blocked elsewhere, to read its sender."""
    parent = os.getppid()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (here: only the main thread may set it)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})

    def wait() -> None:
        while True:
            info = signal.sigwaitinfo({signal.SIGTERM})
            if info.si_pid == parent or os.getppid() != parent:
                # End as the signal would: unblocked in this thread, by its default action.
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
                os.kill(os.getpid(), signal.SIGTERM)
                return
            log.info(
                "pool process %d: SIGTERM from process %d ignored: the worker stops its pool "
                "itself, after the moves in progress",
                os.getpid(),
                info.si_pid,
            )

    threading.Thread(target=wait, name="sigterm-from-worker", daemon=True).start()
