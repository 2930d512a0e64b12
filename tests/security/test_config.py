"""Settings with secrets: <NAME>_FILE, Redis credentials and TLS files, bad combinations."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from ai_workers import config as worker_config
from engine_service.server import config
from tests.security.pki import make_pki


def test_every_variable_can_come_from_a_file(tmp_path: Path) -> None:
    url = tmp_path / "redis-url"
    url.write_text("redis://:s3cret@redis:6379/0\n")
    keys = tmp_path / "keys"
    keys.write_text("# ops\n" + "a" * 20 + "\n" + "b" * 20 + ", " + "c" * 20 + "\n")
    s = config.load({"REDIS_URL_FILE": str(url), "ENGINE_OPERATOR_KEYS_FILE": str(keys)})
    assert s.redis_url == "redis://:s3cret@redis:6379/0"
    assert len(s.access().key_digests) == 3
    assert "s3cret" not in repr(s) and "a" * 20 not in repr(s)  # secrets stay out of logs
    with pytest.raises(ValueError, match="REDIS_URL or REDIS_URL_FILE"):
        config.load({"REDIS_URL": "redis://x", "REDIS_URL_FILE": str(url)})
    with pytest.raises(ValueError, match="REDIS_URL_FILE: cannot read"):
        config.load({"REDIS_URL_FILE": str(tmp_path / "missing")})


def test_redis_credentials_and_tls_files_join_the_url(tmp_path: Path) -> None:
    ca = make_pki(tmp_path).ca
    s = config.load({"REDIS_URL": "rediss://redis:6380/2", "REDIS_USERNAME": "engine",
                     "REDIS_PASSWORD": "p@ss/word", "REDIS_TLS_CA_FILE": str(ca)})  # fmt: skip
    u = urlsplit(s.store_url)
    assert (u.scheme, u.username, u.password, u.hostname, u.port, u.path) == (
        "rediss", "engine", "p%40ss%2Fword", "redis", 6380, "/2")  # fmt: skip
    assert parse_qs(u.query)["ssl_ca_certs"] == [str(ca)]
    assert s.broker_url == s.store_url  # the broker defaults to the store, credentials included
    # a URL with its own credentials keeps them
    s = config.load({"REDIS_URL": "redis://u:p@h:1/0", "REDIS_PASSWORD": "other"})
    assert s.store_url == "redis://u:p@h:1/0"


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"ENGINE_TLS_CERT_FILE": "/nonexistent"}, "go together"),
        ({"ENGINE_TLS_CLIENT_CA_FILE": "/etc/hostname"}, "needs ENGINE_TLS_CERT_FILE"),
        ({"REDIS_URL": "redis://h:1/0", "REDIS_TLS_CA_FILE": "/etc/hostname"}, "rediss://"),
        ({"REDIS_PASSWORD": "x"}, "need REDIS_URL"),
        ({"ENGINE_OPERATOR_KEYS": "short"}, "at least 16"),
        ({"ENGINE_AI_TOKEN_KEYS": "x" * 20}, "at least 32"),
        ({"ENGINE_CALLER_SEEDS": "everyone"}, "operator or anyone"),
        ({"ENGINE_LIMIT_CREATE_PER_MINUTE": "-1"}, "must not be negative"),
        ({"ENGINE_PUBLIC_CREATE": "maybe"}, "ENGINE_PUBLIC_CREATE"),
    ],
)
def test_bad_security_settings_are_refused(env: dict[str, str], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        config.load(env)


def test_worker_broker_url_from_a_file(tmp_path: Path) -> None:
    f = tmp_path / "broker"
    f.write_text("redis://:pw@broker:6379/0\n")
    assert worker_config.load({"CELERY_BROKER_URL_FILE": str(f)}).broker_url == "redis://:pw@broker:6379/0"
