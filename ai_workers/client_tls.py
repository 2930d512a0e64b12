"""The client certificate a worker presents to the engine (``ASCENSION_TLS_*``, mutual TLS):
checked at start, then every ``ASCENSION_TLS_RELOAD_SECONDS`` by the worker's parent, which
exports its notAfter and counts renewals taken and refused (ai_workers/metrics.py).

The pool processes' channels follow renewed files by themselves (clients.sdk.reloading): on
their next call after a check is due, a renewed whole set is used by new connections.
"""

from __future__ import annotations

import logging
import threading

from clients.sdk.tls import TLS
from engine_service.tls_files import ROLE_CLIENT, Watched, load, metric_hooks

log = logging.getLogger("ascension.tls")


def check(tls: TLS | None) -> None:
    """ValueError naming the files when they cannot be used (a configuration error)."""
    if tls is not None and tls.paths:
        try:
            load(tls.paths)
        except ValueError as e:
            raise ValueError(f"ASCENSION_TLS_* files: {e}") from None


def watch(tls: TLS | None, stop: threading.Event) -> Watched | None:
    """Export the files' notAfter and check them in a thread until ``stop`` (None without a
    certificate or CA file). Needs PROMETHEUS_MULTIPROC_DIR set (ai_workers/cli.py)."""
    if tls is None or not tls.paths:
        return None
    from ai_workers import metrics

    hooks = metric_hooks(ROLE_CLIENT, metrics.tls_expiry, metrics.tls_reloads,
                         metrics.tls_refused, metrics.tls_ca_expiry)  # fmt: skip
    files = tls.watch(**hooks)

    def run() -> None:
        while not stop.wait(files.interval):
            try:
                files.check()
            except Exception:  # a hook's failure: keep checking
                log.exception("checking the TLS files failed")

    if files.interval > 0:
        threading.Thread(target=run, name="tls-files", daemon=True).start()
    return files
