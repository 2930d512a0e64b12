"""Sentinel with passwords and TLS everywhere, as a managed or operator-run setup has: the
servers require a password (``requirepass``), the Sentinels one of their own, and every
connection (clients, replication, Sentinels) is TLS, checked against a CA of the test's.

The engine reads ``REDIS_URL=rediss+sentinel://.../games/0?sentinel_password=...`` with the
servers' password and the CA in ``REDIS_PASSWORD`` and ``REDIS_TLS_CA_FILE``, plays through
the primary the Sentinels name, and the Celery broker URL made of the same settings carries
messages. A wrong Sentinel password stops the engine at start with one line, no secret in it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kombu.connection import Connection

from engine_service import redis_urls
from engine_service.server import config
from tests.cluster.play import Player
from tests.failover.sentinel import LocalSentinel, Secured, local_sentinel
from tests.security.pki import make_pki, redis_supports_tls
from tests.service import support

pytestmark = pytest.mark.skipif(not redis_supports_tls(), reason="redis-server built without TLS")

SERVER_PASSWORD = "server-secret-3a41"
SENTINEL_PASSWORD = "sentinel-secret-77c2"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSentinel]:
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    with local_sentinel(1, Secured(pki, SERVER_PASSWORD, SENTINEL_PASSWORD)) as s:
        yield s


def engine_env(s: LocalSentinel) -> dict[str, str]:
    assert s.secured.pki is not None
    hosts = ",".join(f"127.0.0.1:{p}" for p in s.sentinel_ports)
    return {
        "REDIS_URL": f"rediss+sentinel://{hosts}/games/0?sentinel_password={SENTINEL_PASSWORD}",
        "REDIS_PASSWORD": SERVER_PASSWORD,
        "REDIS_TLS_CA_FILE": str(s.secured.pki.ca),
        "ENGINE_REDIS_WAIT_REPLICAS": "1",
    }


def test_the_engine_plays_through_sentinels_with_passwords_and_tls(secured: LocalSentinel) -> None:
    env = engine_env(secured)
    e = support.start_engine("", **env)
    try:
        stub = e.stub()
        p = Player(stub, support.create(stub, seed=3))
        for _ in range(10):
            p.step()
        assert p.refresh().version == 11
        with secured.client(secured.primary()) as c:  # (the moves are on the primary named)
            assert any(k.startswith(b"asc:") for k in c.scan_iter(count=1000))
        log = e.log()
        assert SERVER_PASSWORD not in log and SENTINEL_PASSWORD not in log
    finally:
        e.stop()


def test_the_broker_url_made_of_the_same_settings_carries_messages(secured: LocalSentinel) -> None:
    settings = config.load(engine_env(secured))
    kombu_url, conf = redis_urls.celery_broker(settings.broker_url)  # (the engine's default)
    assert kombu_url.startswith("sentinel://") and SENTINEL_PASSWORD not in kombu_url
    with Connection(kombu_url, ssl=conf["broker_use_ssl"],  # type: ignore[no-untyped-call]
                          transport_options=conf["broker_transport_options"]) as c:  # fmt: skip
        q = c.SimpleQueue("ascension.test.sentinel")
        q.put({"move": 1})
        message = q.get(timeout=30)
        assert message.payload == {"move": 1}
        message.ack()
        q.close()


def test_a_wrong_sentinel_password_stops_the_engine_with_one_line(
    secured: LocalSentinel, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL")}
    env.update(engine_env(secured), ENGINE_STORE_STARTUP_SECONDS="3", ENGINE_AI_DISPATCH="off",
               PYTHONPATH=str(support.ROOT))  # fmt: skip
    env["REDIS_URL"] = env["REDIS_URL"].replace(SENTINEL_PASSWORD, "wrong-password")
    run = subprocess.run([str(support.ENGINE), "serve", "--grpc-port", "0", "--metrics-port", "0"],
                         env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "wrong-password" not in out and SERVER_PASSWORD not in out
    assert "Traceback" not in out
    line = next(x for x in out.splitlines() if "did not answer within 3s" in x)
    assert "no Sentinel names the primary of 'games'" in line and "AuthenticationError" in line
