"""The engine on a Redis that speaks only TLS and has no default user: an ACL user and its
password (from a secret file), the CA from REDIS_TLS_CA_FILE; AI moves go to the Celery broker
on the same Redis, over TLS too."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest
import redis

from clients.sdk import Client, bot, human
from engine_service.store.keys import game_keys
from tests.security.pki import make_pki, redis_supports_tls, tls_redis
from tests.service import support

pytestmark = pytest.mark.skipif(
    not redis_supports_tls(), reason="this redis-server was built without TLS"
)
USER, PASSWORD = "engine", "pw-" + "x" * 20


def test_engine_and_broker_over_tls_with_an_acl_user(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    secret = tmp_path / "redis-password"
    secret.write_text(PASSWORD + "\n")
    with tls_redis(pki, USER, PASSWORD) as port:
        engine = support.start_engine(
            f"rediss://127.0.0.1:{port}/0",
            REDIS_USERNAME=USER,
            REDIS_PASSWORD_FILE=str(secret),
            REDIS_TLS_CA_FILE=str(pki.ca),
            ENGINE_AI_DISPATCH="celery",  # the broker defaults to the store's URL
            ENGINE_AI_SWEEP_SECONDS="0",
        )
        r = redis.Redis(port=port, username=USER, password=PASSWORD, ssl=True,
                        ssl_ca_certs=str(pki.ca))  # fmt: skip
        try:
            with Client(engine.address, timeout=10.0) as c:
                game = c.create_game([human("A"), human("B")])
                view = c.get_view(game.game_id, game.token(game.view.to_move))
                c.submit(game.game_id, game.token(view.seat), view.legal_actions[0].id)
                assert c.get_view(game.game_id).version == 2
                assert r.exists(game_keys(game.game_id)[0])  # written over TLS
                ai = c.create_game([bot("random", seed=1), bot("random", seed=2)], seed=5)
            deadline = time.monotonic() + 20
            sent: list[dict[str, object]] = []
            while not sent and time.monotonic() < deadline:
                for raw in r.lrange("ascension.moves", 0, -1):
                    kwargs = json.loads(base64.b64decode(json.loads(raw)["body"]))[1]
                    if kwargs["game_id"] == ai.game_id:
                        sent.append(kwargs)
                time.sleep(0.2)
            assert sent and sent[0]["version"] == 1, engine.log()
            assert PASSWORD not in engine.log()
        finally:
            r.close()
            engine.stop()


def test_plaintext_and_wrong_password_are_refused(tmp_path: Path) -> None:
    """The Redis of the test above really demands TLS and the ACL user's password."""
    pki = make_pki(tmp_path)
    with tls_redis(pki, USER, PASSWORD) as port:
        with pytest.raises(redis.ConnectionError):
            redis.Redis(port=port, socket_timeout=2).ping()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port, username=USER, password="wrong", ssl=True,
                        ssl_ca_certs=str(pki.ca)).ping()  # fmt: skip
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port, ssl=True, ssl_ca_certs=str(pki.ca)).set("k", "v")
