"""Secure channels to the engine: TLS (optionally with a client certificate: mutual TLS).

    Client("engine.example:50051", tls=TLS(ca_file="ca.pem"))                      # TLS
    Client(addr, tls=TLS(ca_file="ca.pem", cert_file="me.pem", key_file="me.key"))  # mTLS
    Client(addr, tls=True)                                      # TLS, the system's CAs

:meth:`TLS.from_env` reads the ``ASCENSION_TLS*`` variables, which the terminal client and the
AI workers share (docs/security.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clients.sdk._grpc import aio, grpc

ENV_TLS = "ASCENSION_TLS"
ENV_CA = "ASCENSION_TLS_CA_FILE"
ENV_CERT = "ASCENSION_TLS_CERT_FILE"
ENV_KEY = "ASCENSION_TLS_KEY_FILE"
ENV_SERVER_NAME = "ASCENSION_TLS_SERVER_NAME"
ENV_OPERATOR_KEY = "ASCENSION_OPERATOR_KEY"


@dataclass(frozen=True, slots=True)
class TLS:
    """How to reach the engine over TLS. ``ca_file``: PEM roots the server's certificate must
    chain to (None: the system's). ``cert_file``/``key_file``: this client's certificate and
    key, for a server that asks for one (mTLS). ``server_name``: the name to check in the
    server's certificate when it differs from the address's host."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    server_name: str | None = None

    def __post_init__(self) -> None:
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("TLS: cert_file and key_file go together (client certificate)")

    def credentials(self) -> Any:
        def read(path: str | None) -> bytes | None:
            return Path(path).read_bytes() if path else None

        return grpc.ssl_channel_credentials(
            root_certificates=read(self.ca_file),
            private_key=read(self.key_file),
            certificate_chain=read(self.cert_file),
        )

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
        return TLS(ca, cert, key, name)


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


def channel(address: str, tls: TLS | bool | None, options: list[tuple[str, Any]]) -> Any:
    """A blocking channel: TLS when ``tls`` is a :class:`TLS` (or True), else plaintext."""
    t = _resolve(tls)
    if t is None:
        return grpc.insecure_channel(address, options=options)
    return grpc.secure_channel(address, t.credentials(), options=options + t.options())


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
    return aio.secure_channel(
        address, t.credentials(), options=options + t.options(), interceptors=interceptors
    )


def operator_metadata(key: str | None) -> tuple[tuple[str, str], ...] | None:
    return (("authorization", f"Bearer {key}"),) if key else None
