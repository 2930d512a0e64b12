"""Redis URLs naming a primary through Sentinel (engine_service/redis_urls.py): how they are
read, checked, shown in logs, and handed to kombu; and that the store's Sentinel client never
falls back on a default address. No server is started here."""

from __future__ import annotations

from pathlib import Path

import pytest

from ai_workers import config as worker_config
from engine_service import config_checks, redis_urls
from engine_service.server import config
from engine_service.store.redis import primary

HOSTS = "10.0.0.1:26379,10.0.0.2,[fd00::3]:26380"


def test_a_sentinel_url_names_the_sentinels_the_service_and_the_servers_credentials() -> None:
    s = redis_urls.parse_sentinel(
        f"rediss+sentinel://app:p%40ss@{HOSTS}/games/3?sentinel_password=s3&ssl_ca_certs=/ca.pem"
    )
    assert s.sentinels == (("10.0.0.1", 26379), ("10.0.0.2", 26379), ("fd00::3", 26380))
    assert (s.service, s.db, s.tls) == ("games", 3, True)
    assert (s.username, s.password) == ("app", "p@ss")
    assert (s.sentinel_username, s.sentinel_password) == (None, "s3")
    assert s.options == (("ssl_ca_certs", "/ca.pem"),)
    assert s.server_url() == "rediss://app:p%40ss@localhost/3?ssl_ca_certs=%2Fca.pem"
    plain = redis_urls.parse_sentinel("redis+sentinel://h/games")
    assert (plain.sentinels, plain.db, plain.tls, plain.password) == ((("h", 26379),), 0, False, None)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("redis+sentinel:///games/0", "no Sentinel address"),
        ("redis+sentinel://h:26379", "must name the Sentinels' service"),
        ("redis+sentinel://h:26379/games/x", "/<service>/<database number>"),
        ("redis+sentinel://h:26379/games/0/1", "/<service>/<database number>"),
        ("redis+sentinel://h:99999/games/0", "port must be 1..65535"),
        ("redis+sentinel://:pw@h:26379,:1/games", "has no host"),
    ],
)
def test_a_bad_sentinel_url_is_refused_saying_why_and_no_secret(url: str, problem: str) -> None:
    found = config_checks.redis_url_problem(url, "standalone")
    assert found is not None and problem in found and "pw" not in found


def test_the_engine_takes_a_sentinel_url_and_its_credentials_and_tls_files(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    s = config.Settings(redis_url=f"rediss+sentinel://{HOSTS}/games/0?sentinel_password=x",
                        redis_password="pw", redis_tls_ca_file=str(ca))  # fmt: skip
    assert s._security_problems() == []
    parsed = redis_urls.parse_sentinel(s.store_url)
    assert parsed.password == "pw" and ("ssl_ca_certs", str(ca)) in parsed.options
    assert parsed.sentinel_password == "x"
    assert s.broker_url == s.store_url and s.dispatch_mode == "celery"
    with pytest.raises(ValueError, match="not reached through Sentinel"):
        config.load({"REDIS_URL": "redis+sentinel://h/games/0", "ENGINE_REDIS_MODE": "cluster",
                     "CELERY_BROKER_URL": "redis://b:6379/0"})  # fmt: skip
    loaded = config.load({"REDIS_URL": f"redis+sentinel://{HOSTS}/games/0"})
    assert loaded.redis_url.startswith("redis+sentinel://")


def test_logs_show_no_password_of_a_url() -> None:
    shown = redis_urls.redacted(
        "rediss+sentinel://app:p4ss@h1,h2/games/0?sentinel_password=s3cret&ssl_ca_certs=/ca.pem"
    )
    assert "p4ss" not in shown and "s3cret" not in shown
    assert shown.startswith("rediss+sentinel://app:***@h1,h2/games/0?") and "ssl_ca_certs=/ca.pem" in shown
    assert redis_urls.redacted("redis://:pw@redis:6379/0") == "redis://:***@redis:6379/0"
    assert redis_urls.redacted("redis://redis:6379/0") == "redis://redis:6379/0"


def test_a_sentinel_broker_url_becomes_kombus_sentinel_transport() -> None:
    url, conf = redis_urls.celery_broker(
        "rediss+sentinel://:pw@10.0.0.1,10.0.0.2:26380/games/2?sentinel_password=s&ssl_ca_certs=/ca"
    )
    assert url == "sentinel://:pw@10.0.0.1:26379/2;sentinel://10.0.0.2:26380/2"
    options = conf["broker_transport_options"]
    assert options["master_name"] == "games"
    assert options["sentinel_kwargs"]["password"] == "s" and options["sentinel_kwargs"]["ssl"]
    assert conf["broker_use_ssl"] == {"ssl_cert_reqs": "required", "ssl_ca_certs": "/ca"}
    # (Celery prefers the CELERY_BROKER_URL variable, the URL above, to the app's broker)
    assert conf["broker_read_url"] == conf["broker_write_url"] == url
    assert redis_urls.celery_broker("redis://b:6379/0") == ("redis://b:6379/0", {})
    assert config_checks.broker_url_problem(f"redis+sentinel://{HOSTS}/games/0") is None
    kombus = config_checks.broker_url_problem("sentinel://h:26379")
    assert kombus is not None and "redis+sentinel://" in kombus
    cfg = worker_config.load({"CELERY_BROKER_URL": f"redis+sentinel://{HOSTS}/games/0"})
    assert cfg.broker_url.startswith("redis+sentinel://")


def test_the_store_asks_the_sentinels_before_it_connects_anywhere() -> None:
    """Until the Sentinels name the primary, a connection of the store's pool points at an
    address that cannot resolve (never a default one: a local Redis that is not ours)."""
    client, sentinels = primary.client(f"redis+sentinel://{HOSTS}/games/0")
    assert sentinels is not None
    pool = client.connection_pool
    assert pool.connection_kwargs["host"] == primary.UNRESOLVED
    assert issubclass(pool.connection_class, primary.SentinelPrimaryConnection)
    conn = pool.connection_class(**pool.connection_kwargs)
    assert conn._resolves and conn.host == primary.UNRESOLVED
