"""TLS and mutual TLS on the gRPC port, end to end, with certificates the test makes: the SDK,
the terminal client, the workers' engine client and the engine's own AI processes."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ai_workers import engine_client
from clients.sdk import TLS, Client, UnavailableError, bot, human
from engine_service.api.ascension.v1 import engine_pb2 as epb
from tests.security.pki import Pki, make_pki
from tests.service import support

ASCENSION = Path(sys.executable).parent / "ascension"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_engine(pki: Pki) -> Iterator[support.Engine]:
    e = support.start_engine(
        ENGINE_TLS_CERT_FILE=str(pki.server_cert), ENGINE_TLS_KEY_FILE=str(pki.server_key)
    )
    yield e
    e.stop()


@pytest.fixture(scope="module")
def mtls_engine(pki: Pki) -> Iterator[support.Engine]:
    """mTLS, and the engine's local AI processes connect with the client certificate (they
    inherit the engine's ASCENSION_TLS_* environment)."""
    e = support.start_engine(
        ENGINE_TLS_CERT_FILE=str(pki.server_cert),
        ENGINE_TLS_KEY_FILE=str(pki.server_key),
        ENGINE_TLS_CLIENT_CA_FILE=str(pki.ca),
        ENGINE_AI_DISPATCH="local",
        ASCENSION_TLS_CA_FILE=str(pki.ca),
        ASCENSION_TLS_CERT_FILE=str(pki.client_cert),
        ASCENSION_TLS_KEY_FILE=str(pki.client_key),
    )
    yield e
    e.stop()


def _unreachable(address: str, tls: TLS | None) -> str:
    with Client(address, timeout=3.0, tls=tls) as c, pytest.raises(UnavailableError) as info:
        c.catalog()
    return str(info.value)


def test_tls_port_serves_a_client_that_trusts_its_ca(tls_engine: support.Engine, pki: Pki) -> None:
    with Client(tls_engine.address, timeout=10.0, tls=TLS(ca_file=str(pki.ca))) as c:
        game = c.create_game([human("A"), human("B")])
        view = c.get_view(game.game_id, game.token(game.view.to_move))
        c.submit(game.game_id, game.token(view.seat), view.legal_actions[0].id)
    # refused: plaintext, and a CA that did not sign the server's certificate
    _unreachable(tls_engine.address, None)
    _unreachable(tls_engine.address, TLS(ca_file=str(pki.other_ca)))


def test_mtls_needs_a_client_certificate(mtls_engine: support.Engine, pki: Pki) -> None:
    _unreachable(mtls_engine.address, TLS(ca_file=str(pki.ca)))
    mine = TLS(str(pki.ca), str(pki.client_cert), str(pki.client_key))
    with Client(mtls_engine.address, timeout=10.0, tls=mine) as c:
        assert c.catalog().fingerprint


def test_ai_seats_play_over_mtls(mtls_engine: support.Engine, pki: Pki) -> None:
    """The engine's AI processes (ai_workers.runner, as in a Celery worker) reach it over mTLS."""
    mine = TLS(str(pki.ca), str(pki.client_cert), str(pki.client_key))
    with Client(mtls_engine.address, timeout=10.0, tls=mine) as c:
        game = c.create_game([bot("random", seed=1), bot("random", seed=2)], seed=3)
        deadline = time.monotonic() + 60
        view = c.get_view(game.game_id)
        while view.version < 6 and time.monotonic() < deadline:
            time.sleep(0.2)
            view = c.get_view(game.game_id)
    assert view.version >= 6, mtls_engine.log()


def test_workers_engine_client_reads_the_tls_environment(
    mtls_engine: support.Engine, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASCENSION_TLS_CA_FILE", str(pki.ca))
    monkeypatch.setenv("ASCENSION_TLS_CERT_FILE", str(pki.client_cert))
    monkeypatch.setenv("ASCENSION_TLS_KEY_FILE", str(pki.client_key))
    try:
        resp = engine_client.stub(mtls_engine.address).ListCards(epb.ListCardsRequest(), timeout=10)
        assert resp.catalog_fingerprint
    finally:
        engine_client.reset(mtls_engine.address)


def test_terminal_client_lists_games_over_mtls(mtls_engine: support.Engine, pki: Pki) -> None:
    args = [str(ASCENSION), "games", "--address", mtls_engine.address]
    out = subprocess.run(
        [*args, "--tls-ca-file", str(pki.ca), "--tls-cert-file", str(pki.client_cert),
         "--tls-key-file", str(pki.client_key)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0 and "Games" in out.stdout, out.stdout + out.stderr
    refused = subprocess.run([*args, "--tls-ca-file", str(pki.ca)], capture_output=True,
                             text=True, timeout=60)  # fmt: skip
    assert refused.returncode == 1 and "UNAVAILABLE" in refused.stdout, refused.stdout


def test_async_client_over_mtls(mtls_engine: support.Engine, pki: Pki) -> None:
    import asyncio

    from clients.sdk import AsyncClient

    async def run() -> str:
        mine = TLS(str(pki.ca), str(pki.client_cert), str(pki.client_key))
        async with AsyncClient(mtls_engine.address, timeout=10.0, tls=mine) as c:
            return (await c.catalog()).fingerprint

    assert asyncio.run(run())
