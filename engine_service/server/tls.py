"""The gRPC port's TLS: its certificate, key and client CA (mutual TLS), renewed without a restart.

The files are checked every ``ENGINE_TLS_RELOAD_SECONDS`` (engine_service.tls_files: a renewed
set is taken only when whole). gRPC asks :meth:`ServerTls.fetch` before each new connection's
handshake (``grpc.dynamic_ssl_server_credentials``), so new connections get the latest set;
connections already open, and the streams on them (a WatchGame), keep theirs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any

from engine_service.server.grpc_compat import grpc
from engine_service.server.metrics import Metrics
from engine_service.tls_files import ROLE_SERVER, Paths, Pem, TlsFilesError, Watched, metric_hooks

log = logging.getLogger("ascension.tls")


def _configuration(pem: Pem) -> Any:
    assert pem.cert is not None and pem.key is not None
    return grpc.ssl_server_certificate_configuration(
        [(pem.key, pem.cert)], root_certificates=pem.ca
    )


class ServerTls:
    """The port's TLS files and the credentials that follow them."""

    def __init__(self, files: Watched) -> None:
        self.files = files
        self._lock = threading.Lock()
        self._given = 0  # the generation gRPC has

    def credentials(self) -> Any:
        generation, pem = self.files.snapshot()
        self._given = generation
        return grpc.dynamic_ssl_server_credentials(
            _configuration(pem), self.fetch, require_client_authentication=pem.ca is not None
        )

    def fetch(self) -> Any:
        """A new configuration when the files were renewed since gRPC was last given one, else
        None (keep it). Called by gRPC on one of its threads before every handshake: no I/O."""
        generation, pem = self.files.snapshot()
        with self._lock:
            if generation == self._given:
                return None
            self._given = generation
        return _configuration(pem)

    async def run(self, stop: asyncio.Event) -> None:
        """Check the files every interval until ``stop`` (reads off the event loop)."""
        if self.files.interval <= 0:
            return
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.files.interval)
            if stop.is_set():
                return
            try:
                await asyncio.to_thread(self.files.check)
            except Exception:  # a hook's failure: keep checking
                log.exception("checking the TLS files failed")


def server_tls(
    cert: str, key: str, client_ca: str, interval: float, metrics: Metrics
) -> ServerTls | None:
    """None without a certificate (plaintext). OSError naming the settings when the files
    cannot be used (they were checked at start; this is a renewal caught halfway)."""
    if not cert:
        return None
    hooks = metric_hooks(
        ROLE_SERVER, metrics.tls_expiry, metrics.tls_reloads, metrics.tls_refused,
        metrics.tls_ca_expiry,
    )  # fmt: skip
    try:
        return ServerTls(Watched(Paths(cert, key, client_ca), ROLE_SERVER, interval, **hooks))
    except TlsFilesError as e:
        raise OSError(f"ENGINE_TLS_* files: {e}") from None
