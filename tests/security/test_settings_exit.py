"""Every bad setting stops the real `ascension-engine serve` with exit code 2 and one line on
stderr that names the variable at fault: no traceback, no secret echoed, nothing started.

The processes of all cases run at once (a few at a time), each case is then checked alone.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.security.pki import Pki, make_pki
from tests.service import support

SECRET = "hunter2-hunter2"


@dataclass(frozen=True)
class Files:
    pki: Pki
    der_cert: Path
    encrypted_key: Path
    text: Path


def _files(directory: Path) -> Files:
    pki = make_pki(directory)
    from cryptography import x509

    der = directory / "server.der"
    der.write_bytes(
        x509.load_pem_x509_certificate(pki.server_cert.read_bytes()).public_bytes(
            serialization.Encoding.DER
        )
    )
    encrypted = directory / "encrypted.key"
    encrypted.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"pass"),
        )
    )
    text = directory / "notes.txt"
    text.write_text("not a certificate\n")
    return Files(pki, der, encrypted, text)


def _tls(f: Files, cert: Path | None = None, key: Path | None = None) -> dict[str, str]:
    return {
        "ENGINE_TLS_CERT_FILE": str(cert or f.pki.server_cert),
        "ENGINE_TLS_KEY_FILE": str(key or f.pki.server_key),
    }


# (case, the variable the line must name, the settings); a function of the files made above.
CASES: list[tuple[str, str, Callable[[Files], dict[str, str]]]] = [
    ("tls-key-of-another-certificate", "ENGINE_TLS_KEY_FILE",
     lambda f: _tls(f, key=f.pki.client_key)),
    ("tls-certificate-in-der", "ENGINE_TLS_CERT_FILE", lambda f: _tls(f, cert=f.der_cert)),
    ("tls-certificate-not-a-certificate", "ENGINE_TLS_CERT_FILE",
     lambda f: _tls(f, cert=f.text)),
    ("tls-key-not-a-key", "ENGINE_TLS_KEY_FILE", lambda f: _tls(f, key=f.pki.server_cert)),
    ("tls-key-encrypted", "ENGINE_TLS_KEY_FILE", lambda f: _tls(f, key=f.encrypted_key)),
    ("tls-client-ca-not-pem", "ENGINE_TLS_CLIENT_CA_FILE",
     lambda f: {**_tls(f), "ENGINE_TLS_CLIENT_CA_FILE": str(f.text)}),
    ("tls-client-ca-in-der", "ENGINE_TLS_CLIENT_CA_FILE",
     lambda f: {**_tls(f), "ENGINE_TLS_CLIENT_CA_FILE": str(f.der_cert)}),
    ("tls-certificate-missing", "ENGINE_TLS_CERT_FILE",
     lambda f: _tls(f, cert=f.text.with_name("missing.pem"))),
    ("redis-url-http", "REDIS_URL", lambda f: {"REDIS_URL": f"http://:{SECRET}@127.0.0.1:6379"}),
    ("redis-url-no-scheme", "REDIS_URL", lambda f: {"REDIS_URL": "127.0.0.1:6379"}),
    ("redis-url-bad-port", "REDIS_URL",
     lambda f: {"REDIS_URL": f"redis://:{SECRET}@127.0.0.1:sixty/0"}),
    ("redis-url-bad-option", "REDIS_URL",
     lambda f: {"REDIS_URL": f"redis://:{SECRET}@127.0.0.1:6379/0?socket_timeout=soon"}),
    ("redis-url-bad-database", "REDIS_URL", lambda f: {"REDIS_URL": "redis://127.0.0.1:6379/games"}),
    ("redis-url-unix-cluster", "REDIS_URL",
     lambda f: {"REDIS_URL": "unix:///tmp/redis.sock", "ENGINE_REDIS_MODE": "cluster"}),
    ("redis-url-file-missing", "REDIS_URL_FILE", lambda f: {"REDIS_URL_FILE": "/nonexistent/url"}),
    ("redis-tls-ca-not-pem", "REDIS_TLS_CA_FILE",
     lambda f: {"REDIS_URL": "rediss://127.0.0.1:6380/0", "REDIS_TLS_CA_FILE": str(f.text)}),
    ("redis-tls-key-of-another-certificate", "REDIS_TLS_KEY_FILE",
     lambda f: {"REDIS_URL": "rediss://127.0.0.1:6380/0",
                "REDIS_TLS_CERT_FILE": str(f.pki.client_cert),
                "REDIS_TLS_KEY_FILE": str(f.pki.server_key)}),
    ("broker-url-http", "CELERY_BROKER_URL",
     lambda f: {"CELERY_BROKER_URL": f"http://:{SECRET}@127.0.0.1:5672"}),
    ("host-not-an-address", "ENGINE_HOST", lambda f: {"ENGINE_HOST": "no-such-host.invalid"}),
    ("host-not-of-this-machine", "ENGINE_HOST", lambda f: {"ENGINE_HOST": "192.0.2.1"}),
    ("advertise-address-without-port", "ENGINE_ADVERTISE_ADDRESS",
     lambda f: {"ENGINE_ADVERTISE_ADDRESS": "engine"}),
    ("local-ai-target-missing", "ENGINE_LOCAL_AI_TARGET",
     lambda f: {"ENGINE_LOCAL_AI_TARGET": "no_such_module:play"}),
    ("grace-not-a-number", "ENGINE_SHUTDOWN_GRACE_SECONDS",
     lambda f: {"ENGINE_SHUTDOWN_GRACE_SECONDS": "nan"}),
    ("redis-timeout-infinite", "ENGINE_REDIS_TIMEOUT_SECONDS",
     lambda f: {"ENGINE_REDIS_TIMEOUT_SECONDS": "inf"}),
    ("message-size-beyond-grpc", "ENGINE_MAX_MESSAGE_BYTES",
     lambda f: {"ENGINE_MAX_MESSAGE_BYTES": str(2**33)}),
    ("metrics-on-the-grpc-port", "ENGINE_METRICS_PORT",
     lambda f: {"ENGINE_GRPC_PORT": "50999", "ENGINE_METRICS_PORT": "50999"}),
    ("port-not-a-number", "ENGINE_GRPC_PORT", lambda f: {"ENGINE_GRPC_PORT": "http"}),
    ("operator-key-too-short", "ENGINE_OPERATOR_KEYS",
     lambda f: {"ENGINE_OPERATOR_KEYS": "short"}),
    ("gateway-key-too-short", "ENGINE_GATEWAY_KEYS",
     lambda f: {"ENGINE_GATEWAY_KEYS": "a-long-enough-gateway-key,short"}),
    ("several-processes-need-redis", "ENGINE_PROCESSES", lambda f: {"ENGINE_PROCESSES": "2"}),
]  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    code: int | None
    stdout: str
    stderr: str


def _run(env: dict[str, str], args: list[str]) -> Outcome:
    try:
        r = subprocess.run(
            [str(support.ENGINE), "serve", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired as e:  # it started: the setting was accepted
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""
        return Outcome(None, out, "")
    return Outcome(r.returncode, r.stdout, r.stderr)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    files = _files(tmp_path_factory.mktemp("settings"))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ENGINE_", "REDIS_",
                                                                       "CELERY_"))}  # fmt: skip
    base.update(ENGINE_GRPC_PORT="0", ENGINE_METRICS_PORT="0")
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futures = {
            name: pool.submit(_run, {**base, **make(files)}, []) for name, _, make in CASES
        }
        futures["flag-host"] = pool.submit(_run, base, ["--host", "no-such-host.invalid"])
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize(("case", "variable"), [(c, v) for c, v, _ in CASES])
def test_a_bad_setting_exits_2_with_one_line_naming_it(
    outcomes: dict[str, Outcome], case: str, variable: str
) -> None:
    out = outcomes[case]
    assert out.code == 2, (out.code, out.stdout[-500:], out.stderr[-2000:])
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    (line,) = lines
    assert line.startswith("ascension-engine: configuration error: "), line
    assert variable in line, line
    assert SECRET not in line, "a URL's password was echoed"
    assert "listening on" not in out.stdout


def test_the_host_flag_is_checked_like_its_variable(outcomes: dict[str, Outcome]) -> None:
    out = outcomes["flag-host"]
    assert out.code == 2 and "ENGINE_HOST" in out.stderr, out
    assert len(out.stderr.strip().splitlines()) == 1
