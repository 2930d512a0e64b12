"""Certificates made by the tests (a throwaway CA, server and client certificates) and a
redis-server with TLS and a password, for the TLS and mTLS tests."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.service.support import free_port


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path  # a CA that signed nothing here: trusting it must not work


_CA_USAGE = x509.KeyUsage(
    digital_signature=True, content_commitment=False, key_encipherment=False,
    data_encipherment=False, key_agreement=False, key_cert_sign=True,
    crl_sign=True, encipher_only=False, decipher_only=False,
)  # fmt: skip


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _ca(
    directory: Path, cn: str, days: float = 1.0
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_CA_USAGE, critical=True)
        .sign(key, hashes.SHA256())
    )
    path = directory / f"{cn}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert, key, path


def _leaf(
    directory: Path,
    name: str,
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    usage: x509.ObjectIdentifier,
    days: float = 1.0,
) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_path, key_path = directory / f"{name}.pem", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, key_path)
    return cert_path, key_path


def make_pki(directory: Path) -> Pki:
    ca, ca_key, ca_path = _ca(directory, "test-ca")
    _, _, other = _ca(directory, "other-ca")
    server_cert, server_key = _leaf(directory, "server", ca, ca_key, ExtendedKeyUsageOID.SERVER_AUTH)
    client_cert, client_key = _leaf(directory, "client", ca, ca_key, ExtendedKeyUsageOID.CLIENT_AUTH)
    return Pki(ca_path, server_cert, server_key, client_cert, client_key, other)


@dataclass(frozen=True)
class Leaf:
    """A certificate and its key, as files and as what a peer sees."""

    cert: Path
    key: Path

    @property
    def der(self) -> bytes:
        return x509.load_pem_x509_certificate(self.cert.read_bytes()).public_bytes(
            serialization.Encoding.DER
        )

    @property
    def not_after(self) -> float:
        return x509.load_pem_x509_certificate(self.cert.read_bytes()).not_valid_after_utc.timestamp()


class Authority:
    """A throwaway CA that issues server and client certificates on demand (renewals)."""

    def __init__(self, directory: Path, cn: str, days: float = 30.0) -> None:
        self.directory = directory
        self.cert, self._key, self.path = _ca(directory, cn, days)

    @property
    def not_after(self) -> float:
        return self.cert.not_valid_after_utc.timestamp()

    def server(self, name: str, days: float = 1.0) -> Leaf:
        return Leaf(*_leaf(self.directory, name, self.cert, self._key,
                           ExtendedKeyUsageOID.SERVER_AUTH, days))  # fmt: skip

    def client(self, name: str, days: float = 1.0) -> Leaf:
        return Leaf(*_leaf(self.directory, name, self.cert, self._key,
                           ExtendedKeyUsageOID.CLIENT_AUTH, days))  # fmt: skip


def redis_supports_tls() -> bool:
    binary = shutil.which("redis-server")
    if binary is None:
        return False
    out = subprocess.run(
        [binary, "--port", "0", "--tls-port", "1", "--tls-cert-file", "/nonexistent"],
        capture_output=True, text=True, timeout=10,
    )  # fmt: skip
    # a build without TLS rejects the option itself; one with TLS fails on the missing file
    return "Bad directive" not in out.stdout + out.stderr


@contextlib.contextmanager
def tls_redis(pki: Pki, user: str, password: str) -> Iterator[int]:
    """redis-server with TLS only (no plaintext port), client certificates not required, the
    default user disabled and one ACL user ``user`` with ``password``; yields its port."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
         "--tls-cert-file", str(pki.server_cert), "--tls-key-file", str(pki.server_key),
         "--tls-ca-cert-file", str(pki.ca), "--tls-auth-clients", "no",
         "--save", "", "--appendonly", "no",
         "--user", "default", "off",
         "--user", user, "on", f">{password}", "~*", "&*", "+@all"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        import redis

        client = redis.Redis(
            port=port, username=user, password=password, ssl=True, ssl_ca_certs=str(pki.ca)
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("redis-server with TLS did not start") from None
                time.sleep(0.05)
        client.close()
        yield port
    finally:
        proc.terminate()
        proc.wait(10)
