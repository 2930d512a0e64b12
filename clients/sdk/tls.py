"""Secure channels to the engine: TLS (optionally with a client certificate: mutual TLS).

    Client("engine.example:50051", tls=TLS(ca_file="ca.pem"))                      # TLS
    Client(addr, tls=TLS(ca_file="ca.pem", cert_file="me.pem", key_file="me.key"))  # mTLS
    Client(addr, tls=True)                                      # TLS, the system's CAs

Files follow renewals: every ``reload_seconds`` (30 by default) a call first checks them, and
a renewed set (a whole one: the key must be its certificate's) is used by the next
connections, while calls in flight finish on theirs (clients.sdk.reloading).

:meth:`TLS.from_env` reads the ``ASCENSION_TLS*`` variables, which the terminal client, the
browser gateway and the AI workers share (docs/security.md).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clients.sdk._grpc import aio, grpc
from clients.sdk.reloading import AioReloadingChannel, ReloadingChannel
from engine_service.tls_files import (
    DEFAULT_RELOAD_SECONDS,
    ROLE_CLIENT,
    Paths,
    Pem,
    Watched,
    load,
)
from engine_service.tls_files import TlsFilesError as TlsFilesError  # the SDK's error too

ENV_TLS = "ASCENSION_TLS"
ENV_CA = "ASCENSION_TLS_CA_FILE"
ENV_CERT = "ASCENSION_TLS_CERT_FILE"
ENV_KEY = "ASCENSION_TLS_KEY_FILE"
ENV_SERVER_NAME = "ASCENSION_TLS_SERVER_NAME"
ENV_RELOAD = "ASCENSION_TLS_RELOAD_SECONDS"
ENV_OPERATOR_KEY = "ASCENSION_OPERATOR_KEY"


@dataclass(frozen=True, slots=True)
class TLS:
    """How to reach the engine over TLS. ``ca_file``: PEM roots the server's certificate must
    chain to (None: the system's). ``cert_file``/``key_file``: this client's certificate and
    key, for a server that asks for one (mTLS). ``server_name``: the name to check in the
    server's certificate when it differs from the address's host. ``reload_seconds``: how
    often the files are checked for renewed ones (0: read once, when the channel is made)."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    server_name: str | None = None
    reload_seconds: float = DEFAULT_RELOAD_SECONDS

    def __post_init__(self) -> None:
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("TLS: cert_file and key_file go together (client certificate)")
        if not (math.isfinite(self.reload_seconds) and self.reload_seconds >= 0):
            raise ValueError("TLS: reload_seconds must be a number of seconds, 0 or more")

    @property
    def paths(self) -> Paths:
        return Paths(self.cert_file or "", self.key_file or "", self.ca_file or "")

    def credentials(self) -> Any:
        """Channel credentials from the files as they are now (checked as :meth:`watch` does)."""
        return _credentials(load(self.paths))

    def watch(self, **hooks: Any) -> Watched:
        """The files as a :class:`~engine_service.tls_files.Watched` set (checked now: a
        ``TlsFilesError``, a ValueError, says what is wrong with them). ``hooks``: its
        ``on_loaded``, ``on_refused``, ``on_state``."""
        return Watched(self.paths, ROLE_CLIENT, self.reload_seconds, **hooks)

    @property
    def reloads(self) -> bool:
        return self.reload_seconds > 0 and bool(self.paths)

    def options(self) -> list[tuple[str, str]]:
        if not self.server_name:
            return []
        return [("grpc.ssl_target_name_override", self.server_name)]

    @staticmethod
    def from_env(env: Mapping[str, str] | None = None) -> TLS | None:
        """TLS when ``ASCENSION_TLS`` is true or any ``ASCENSION_TLS_*`` file is set."""
        env = os.environ if env is None else env
        ca, cert, key = (env.get(n, "").strip() or None for n in (ENV_CA, ENV_CERT, ENV_KEY))
        name = env.get(ENV_SERVER_NAME, "").strip() or None
        on = env.get(ENV_TLS, "").strip().lower() in ("1", "true", "yes", "on")
        if not (on or ca or cert or key):
            return None
        return TLS(ca, cert, key, name, reload_seconds_from_env(env))


def reload_seconds_from_env(env: Mapping[str, str] | None = None) -> float:
    """``ASCENSION_TLS_RELOAD_SECONDS`` (TlsFilesError, a ValueError, when it is not seconds)."""
    env = os.environ if env is None else env
    raw = env.get(ENV_RELOAD, "").strip()
    try:
        seconds = float(raw) if raw else DEFAULT_RELOAD_SECONDS
    except ValueError:
        seconds = -1.0
    if not (math.isfinite(seconds) and seconds >= 0):
        raise TlsFilesError(f"{ENV_RELOAD}={raw!r}: give seconds, 0 or more (0: read once)")
    return seconds


def operator_key_from_env(env: Mapping[str, str] | None = None) -> str | None:
    """``ASCENSION_OPERATOR_KEY``, or the content of the file ``ASCENSION_OPERATOR_KEY_FILE``."""
    env = os.environ if env is None else env
    path = env.get(ENV_OPERATOR_KEY + "_FILE", "").strip()
    if path:
        return Path(path).read_text().strip() or None
    return env.get(ENV_OPERATOR_KEY, "").strip() or None


def _resolve(tls: TLS | bool | None) -> TLS | None:
    if tls is True:
        return TLS()
    return tls or None


def _credentials(pem: Pem) -> Any:
    return grpc.ssl_channel_credentials(
        root_certificates=pem.ca, private_key=pem.key, certificate_chain=pem.cert
    )


def channel(address: str, tls: TLS | bool | None, options: list[tuple[str, Any]]) -> Any:
    """A blocking channel: TLS when ``tls`` is a :class:`TLS` (or True), else plaintext."""
    t = _resolve(tls)
    if t is None:
        return grpc.insecure_channel(address, options=options)
    options = options + t.options()
    if not t.reloads:
        return grpc.secure_channel(address, t.credentials(), options=options)
    return ReloadingChannel(
        t.watch(), lambda pem: grpc.secure_channel(address, _credentials(pem), options=options)
    )


def aio_channel(
    address: str,
    tls: TLS | bool | None,
    options: list[tuple[str, Any]],
    interceptors: list[Any] | None = None,
) -> Any:
    """The asyncio twin of :func:`channel` (``interceptors``: grpc.aio client interceptors)."""
    t = _resolve(tls)
    if t is None:
        return aio.insecure_channel(address, options=options, interceptors=interceptors)
    options = options + t.options()
    if not t.reloads:
        return aio.secure_channel(
            address, t.credentials(), options=options, interceptors=interceptors
        )
    return AioReloadingChannel(
        t.watch(),
        lambda pem: aio.secure_channel(
            address, _credentials(pem), options=options, interceptors=interceptors
        ),
    )


def operator_metadata(key: str | None) -> tuple[tuple[str, str], ...] | None:
    return (("authorization", f"Bearer {key}"),) if key else None
