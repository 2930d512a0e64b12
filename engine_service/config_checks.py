"""Checks of settings that need more than their value: files that must hold PEM certificates or
a key matching a certificate, URLs their libraries must accept, an address this machine has,
an importable AI target. Each problem is one line naming the variable at fault (and never a
secret: URLs are not echoed), so that a bad setting stops the engine with exit code 2 and that
line, before anything is started, rather than with a traceback later.
"""

from __future__ import annotations

import importlib.util
import socket
import ssl
from pathlib import Path
from urllib.parse import urlsplit

from engine_service import redis_urls

GRPC_INT_MAX = 2**31 - 1  # gRPC's channel arguments are C ints
REDIS_SCHEMES = ("redis", "rediss", "unix", *redis_urls.SENTINEL_SCHEMES)


class _Encrypted(Exception):
    """The key asked for a password."""


def _no_password() -> bytes:
    raise _Encrypted


def _ssl_reason(e: ssl.SSLError) -> str:
    return str(e.reason or e.strerror or e).replace("_", " ").lower()


def certificates_problem(name: str, path: str) -> str | None:
    """``path`` must hold one or more PEM certificates."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        return f"{name}: cannot read {path!r}: {e.strerror}"
    if b"-----BEGIN CERTIFICATE-----" not in data:
        return f"{name}: {path!r} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=path)
    except ssl.SSLError as e:
        return f"{name}: {path!r} is not a readable PEM certificate ({_ssl_reason(e)})"
    return None


def key_pair_problem(cert_name: str, cert: str, key_name: str, key: str) -> str | None:
    """``key`` must be the unencrypted PEM private key of the (first) certificate in ``cert``."""
    bad_cert = certificates_problem(cert_name, cert)
    if bad_cert:
        return bad_cert
    try:
        data = Path(key).read_bytes()
    except OSError as e:
        return f"{key_name}: cannot read {key!r}: {e.strerror}"
    if b"PRIVATE KEY-----" not in data:
        return f"{key_name}: {key!r} holds no PEM private key (-----BEGIN PRIVATE KEY-----)"
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key, password=_no_password)
    except _Encrypted:
        return f"{key_name}: {key!r} is encrypted; give the key unencrypted (protect the file)"
    except ssl.SSLError as e:
        if e.reason == "KEY_VALUES_MISMATCH":
            return f"{key_name}: {key!r} is not the key of the certificate in {cert_name} ({cert!r})"
        return f"{key_name}: {key!r} is not a readable PEM private key ({_ssl_reason(e)})"
    return None


def redis_url_problem(url: str, mode: str) -> str | None:
    """REDIS_URL as redis-py will read it (no connection is made)."""
    from redis.asyncio.connection import parse_url

    scheme = redis_urls.scheme_of(url)
    if scheme not in REDIS_SCHEMES:
        shown = f"{scheme}://" if scheme else "no scheme"
        return (
            "REDIS_URL must start with redis://, rediss://, unix://, redis+sentinel:// or "
            f"rediss+sentinel:// (got {shown})"
        )
    if mode == "cluster" and scheme == "unix":
        return "REDIS_URL: a Redis Cluster (ENGINE_REDIS_MODE=cluster) is reached by TCP, not unix://"
    if scheme in redis_urls.SENTINEL_SCHEMES:
        if mode == "cluster":
            return "REDIS_URL: a Redis Cluster (ENGINE_REDIS_MODE=cluster) is not reached through Sentinel"
        try:
            url = redis_urls.parse_sentinel(url).server_url()  # (its options, checked below)
        except ValueError as e:
            return f"REDIS_URL: {e}"
    try:
        kwargs = parse_url(url)
    except ValueError as e:
        return f"REDIS_URL: {e}"
    if scheme not in ("unix", *redis_urls.SENTINEL_SCHEMES):
        db = urlsplit(url).path.strip("/")
        if db and not db.isdigit():
            return f"REDIS_URL: the path must be a database number (/0), got /{db[:20]}"
    if mode == "cluster" and int(kwargs.get("db") or 0) != 0:
        return "REDIS_URL: a Redis Cluster has database 0 only"
    return None


def broker_url_problem(url: str) -> str | None:
    """CELERY_BROKER_URL as kombu reads it: a transport it knows, with its libraries installed
    (a redis+sentinel:// URL as redis_urls.celery_broker gives it to kombu)."""
    from kombu.connection import Connection

    scheme = redis_urls.scheme_of(url)
    if scheme == "sentinel":  # (kombu's own needs a transport option no URL carries)
        return (
            "CELERY_BROKER_URL: name a Sentinel-managed broker as "
            "redis+sentinel://host:26379,host2:26379/<service>/0"
        )
    try:
        kombu_url, _ = redis_urls.celery_broker(url)
        # Resolves the transport (importing its library); connects to nothing.
        Connection(kombu_url).transport  # type: ignore[no-untyped-call]  # noqa: B018
    except KeyError:
        return f"CELERY_BROKER_URL: {scheme}:// is not a Celery broker (e.g. redis://, amqp://)"
    except ImportError as e:
        return f"CELERY_BROKER_URL: its transport needs {e.name or e} installed"
    except ValueError as e:
        return f"CELERY_BROKER_URL: {e}"
    return None


def host_problem(host: str) -> str | None:
    """ENGINE_HOST must be an address of this machine (binding its port 0 says so)."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        infos = socket.getaddrinfo(bare, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as e:
        return f"ENGINE_HOST: {host!r} is not an address ({getattr(e, 'strerror', e)})"
    family, kind, proto, _, addr = infos[0]
    try:
        with socket.socket(family, kind, proto) as s:
            s.bind(addr)
    except OSError as e:
        return f"ENGINE_HOST: cannot listen on {host!r}: {e.strerror} (not an address of this machine?)"
    return None


def advertise_problem(address: str) -> str | None:
    """ENGINE_ADVERTISE_ADDRESS: HOST:PORT (or a gRPC target URI such as dns:///HOST:PORT)."""
    if any(c.isspace() for c in address):
        return "ENGINE_ADVERTISE_ADDRESS must not contain spaces"
    if ":///" in address or address.startswith(("unix:", "unix-abstract:", "ipv4:", "ipv6:")):
        return None
    host, sep, port = address.rpartition(":")
    if not (sep and host and port.isdigit() and 1 <= int(port) <= 65535):
        return f"ENGINE_ADVERTISE_ADDRESS must be HOST:PORT, got {address[:80]!r}"
    return None


def local_target_problem(target: str) -> str | None:
    """ENGINE_LOCAL_AI_TARGET ``module:function``: the module must be importable (found, not
    imported: the server never runs bot code)."""
    module, _, func = target.partition(":")
    if not (module and func.isidentifier()):
        return f"ENGINE_LOCAL_AI_TARGET must be 'module:function', got {target[:80]!r}"
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is None:
        return f"ENGINE_LOCAL_AI_TARGET: no module {module!r} is installed"
    return None
