"""engine_service.tls_files on real files: what a check takes, refuses and reports, and the
settings that name the files and the interval (checked before anything starts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from clients.sdk import TLS
from clients.sdk.tls import reload_seconds_from_env
from engine_service.server import config
from engine_service.tls_files import ROLE_CLIENT, ROLE_SERVER, Paths, TlsFilesError, Watched
from tests.security.pki import Authority, Leaf
from tests.security.renewal import SECRET_VOLUME, TlsDir

WORKER = Path(sys.executable).parent / "ascension-worker"


class Seen:
    """What a Watched set reported through its hooks."""

    def __init__(self) -> None:
        self.loaded: list[float | None] = []
        self.refused: list[str] = []
        self.state: list[bool] = []

    def hooks(self) -> dict[str, Any]:
        return {
            "on_loaded": lambda pem: self.loaded.append(pem.not_after),
            "on_refused": self.refused.append,
            "on_state": self.state.append,
        }


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return Authority(tmp_path_factory.mktemp("pki"), "ca")


def pair(directory: Path, leaf: Leaf) -> Paths:
    files = TlsDir(directory, SECRET_VOLUME)
    files.write_leaf(leaf)
    return Paths(files.path("tls.crt"), files.path("tls.key"))


def test_a_set_is_checked_when_made(ca: Authority, tmp_path: Path) -> None:
    one, two = ca.server("one"), ca.server("two")
    with pytest.raises(TlsFilesError, match="is not the key of the certificate in"):
        Watched(Paths(str(one.cert), str(two.key)), ROLE_SERVER)
    with pytest.raises(TlsFilesError, match="cannot read"):
        Watched(Paths(str(one.cert), str(tmp_path / "missing.key")), ROLE_SERVER)
    (tmp_path / "text.pem").write_text("not a certificate\n")
    with pytest.raises(TlsFilesError, match="holds no readable PEM certificate"):
        Watched(Paths(str(tmp_path / "text.pem"), str(one.key)), ROLE_SERVER)
    with pytest.raises(TlsFilesError, match="holds no readable PEM private key"):
        Watched(Paths(str(one.cert), str(one.cert)), ROLE_SERVER)


def test_an_encrypted_key_is_refused_and_the_files_going_back_clear_the_refusal(
    ca: Authority, tmp_path: Path
) -> None:
    old = ca.server("old")
    seen = Seen()
    files = TlsDir(tmp_path / "tls", SECRET_VOLUME)
    files.write_leaf(old)
    watched = Watched(
        Paths(files.path("tls.crt"), files.path("tls.key")), ROLE_SERVER, 30, **seen.hooks()
    )
    assert seen.loaded == [old.not_after] and seen.state == [False]
    key = serialization.load_pem_private_key(old.key.read_bytes(), password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    files.write({"tls.crt": old.cert.read_bytes(), "tls.key": encrypted})
    assert not watched.check() and not watched.check()  # the second check tells nothing new
    assert len(seen.refused) == 1 and "is encrypted" in seen.refused[0]
    assert watched.refused and seen.state[-1] is True
    assert watched.snapshot()[0] == 0 and watched.pem.key == old.key.read_bytes()

    files.write_leaf(old)  # back to the set in use
    assert not watched.check()
    assert not watched.refused and seen.state[-1] is False
    assert seen.loaded == [old.not_after]  # nothing new was taken


def test_a_file_missing_for_a_while_is_told_once(ca: Authority, tmp_path: Path) -> None:
    old, new = ca.server("old"), ca.server("new")
    seen = Seen()
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(old.cert.read_bytes())
    key.write_bytes(old.key.read_bytes())
    watched = Watched(Paths(str(cert), str(key)), ROLE_SERVER, 30, **seen.hooks())
    key.unlink()
    assert not watched.check() and not watched.check()
    assert len(seen.refused) == 1 and "cannot read" in seen.refused[0]
    cert.write_bytes(new.cert.read_bytes())
    key.write_bytes(new.key.read_bytes())
    assert watched.check()
    assert seen.loaded == [old.not_after, new.not_after] and seen.state[-1] is False
    assert watched.snapshot()[0] == 1


def test_a_ca_bundle_alone_is_followed(ca: Authority, tmp_path: Path) -> None:
    """A client without a certificate of its own (TLS, not mutual) follows its CA bundle; the
    bundle's soonest end is what it reports (once any CA ends, what it signed is refused)."""
    other = Authority(tmp_path, "other", days=3)  # (ends before the module's CA, 30 days)
    bundle = tmp_path / "ca.crt"
    bundle.write_bytes(ca.path.read_bytes())
    seen = Seen()
    watched = TLS(ca_file=str(bundle), reload_seconds=5).watch(**seen.hooks())
    assert watched.role == ROLE_CLIENT and watched.pem.not_after is None
    assert watched.pem.ca_not_after == ca.not_after
    assert not watched.due()  # checked at most every reload_seconds
    bundle.write_bytes(ca.path.read_bytes() + other.path.read_bytes())
    assert watched.check() and watched.pem.ca == bundle.read_bytes()
    assert watched.pem.ca_not_after == other.not_after < ca.not_after
    assert seen.loaded == [None, None]


def test_the_interval_settings_are_checked() -> None:
    assert config.load({}).tls_reload_seconds == 30
    assert config.load({"ENGINE_TLS_RELOAD_SECONDS": "0"}).tls_reload_seconds == 0
    with pytest.raises(ValueError, match="ENGINE_TLS_RELOAD_SECONDS must not be negative"):
        config.load({"ENGINE_TLS_RELOAD_SECONDS": "-1"})
    assert reload_seconds_from_env({}) == 30
    for bad in ("-1", "soon", "nan"):
        with pytest.raises(TlsFilesError, match="ASCENSION_TLS_RELOAD_SECONDS"):
            reload_seconds_from_env({"ASCENSION_TLS_RELOAD_SECONDS": bad})
    with pytest.raises(ValueError, match="reload_seconds"):
        TLS(ca_file="ca.pem", reload_seconds=-1)


def test_a_worker_with_a_key_of_another_certificate_does_not_start(
    ca: Authority, tmp_path: Path
) -> None:
    one, two = ca.client("one"), ca.client("two")
    env = {
        "PATH": "/usr/bin:/bin",
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",
        "ASCENSION_TLS_CA_FILE": str(ca.path),
        "ASCENSION_TLS_CERT_FILE": str(one.cert),
        "ASCENSION_TLS_KEY_FILE": str(two.key),
    }
    out = subprocess.run([str(WORKER), "run"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "configuration error: ASCENSION_TLS_* files:" in out.stderr
    assert "is not the key of the certificate in" in out.stderr
