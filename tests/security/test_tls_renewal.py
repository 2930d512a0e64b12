"""Certificates renewed under running processes, for real: an engine serving TLS and mutual TLS
(``ascension-engine serve``), an SDK client, the browser gateway (``ascension web``) and a
Celery worker (``ascension-worker run``), each given certificate files that the test renews
as deployments do (a file renamed over the old one, or a Kubernetes Secret volume's ``..data``
link swapped: tests/security/renewal.py). Every process checks its files each second here
(``*_TLS_RELOAD_SECONDS=1``); the tests wait for what a renewal should bring about, bounded
generously for a loaded machine, never for a fixed time.

A renewed certificate is signed by another CA than the first, and the peer that checks it
trusts only that CA: a connection that works proves the new certificate was presented. Under
mutual TLS the engine's client CA bundle is renewed too, to the new CA only, so that a client
still presenting its first certificate on a new connection is refused. The test's proxy
(tests/clients/proxy.py) counts the connections a client opens, and cuts them for the worker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from connectrpc.client import ConnectClientSync
from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.protocol import ProtocolType

from clients.sdk import TLS, Client, UnavailableError, bot, human
from clients.sdk.types import CreatedGame
from clients.web.gateway import SERVICE, method_info
from engine_service.api.ascension.v1 import engine_pb2 as epb
from tests.clients.proxy import CuttableProxy
from tests.security.pki import Authority, Leaf
from tests.security.renewal import REPLACE, SECRET_VOLUME, TlsDir, presented, scrape, wait_for
from tests.service import support
from tests.web.conftest import start_web, stop_web

RELOAD = "1"
EXPIRY = "ascension_tls_certificate_expiry_timestamp_seconds"
RELOADS = "ascension_tls_reloads_total"
REFUSED = "ascension_tls_files_refused"
CA_EXPIRY = "ascension_tls_ca_expiry_timestamp_seconds"
WORKER = Path(sys.executable).parent / "ascension-worker"


def served(engine: support.Engine, name: str, **labels: str) -> float:
    """A TLS metric of the engine's own certificate (role server)."""
    return scrape(engine.metrics_port, name, role="server", **labels)


class Updates:
    """A stream of a game's updates read in a thread: the versions received, and how it ended."""

    def __init__(self, stream: Any) -> None:
        self.versions: list[int] = []
        self.error: BaseException | None = None
        self.ended = threading.Event()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: Any) -> None:
        try:
            for update in stream:
                self.versions.append(update.version)
        except BaseException as e:
            self.error = e
        finally:
            self.ended.set()

    def reached(self, version: int) -> bool:
        assert self.error is None, f"the stream broke: {self.error!r}"
        return bool(self.versions) and self.versions[-1] >= version


def play(client: Client, game: CreatedGame, moves: int) -> int:
    """``moves`` legal moves of whichever seat is to move; the version reached."""
    version = 0
    for _ in range(moves):
        seat = client.get_view(game.game_id).to_move
        view = client.get_view(game.game_id, game.token(seat))
        version = client.submit(game.game_id, game.token(seat), view.legal_actions[0].id).view.version
    return version


@pytest.mark.parametrize("mode", [REPLACE, SECRET_VOLUME])
def test_new_connections_get_the_renewed_server_certificate_and_open_streams_go_on(
    tmp_path: Path, mode: str
) -> None:
    first_ca, next_ca = Authority(tmp_path, "first-ca"), Authority(tmp_path, "next-ca")
    old, new = first_ca.server("engine-old", days=2), next_ca.server("engine-new", days=20)
    files = TlsDir(tmp_path / "tls", mode)
    files.write_leaf(old)
    engine = support.start_engine(
        ENGINE_TLS_CERT_FILE=files.path("tls.crt"),
        ENGINE_TLS_KEY_FILE=files.path("tls.key"),
        ENGINE_TLS_RELOAD_SECONDS=RELOAD,
    )
    try:
        assert presented(engine.address) == old.der
        assert served(engine, EXPIRY) == old.not_after
        with Client(engine.address, timeout=20, tls=TLS(str(first_ca.path))) as before:
            game = before.create_game([human("A"), human("B")])
            watch = before.watch(game.game_id, game.view.version, reconnect=False)
            updates = Updates(watch)
            started = play(before, game, 1)
            wait_for("the stream is open", lambda: updates.reached(started))

            files.write_leaf(new)
            wait_for(
                "a new connection gets the renewed certificate",
                lambda: presented(engine.address) == new.der,
            )
            # A client trusting only the new CA plays; the stream opened before sees its moves.
            with Client(engine.address, timeout=20, tls=TLS(str(next_ca.path))) as after:
                version = play(after, game, 3)
            wait_for("the stream opened before the renewal goes on", lambda: updates.reached(version))
            assert watch.reconnects == 0
            # The first client's connection, opened before, still serves it.
            assert before.get_view(game.game_id).version == version
            watch.cancel()
        assert served(engine, EXPIRY) == new.not_after
        assert served(engine, RELOADS, result="loaded") == 1
        assert served(engine, REFUSED) == 0
    finally:
        engine.stop()


def test_a_certificate_renewed_before_its_key_is_refused_and_the_pair_in_use_kept(
    tmp_path: Path,
) -> None:
    ca = Authority(tmp_path, "ca")
    old, new = ca.server("engine-old", days=2), ca.server("engine-new", days=20)
    files = TlsDir(tmp_path / "tls", REPLACE)
    files.write_leaf(old)
    engine = support.start_engine(
        ENGINE_TLS_CERT_FILE=files.path("tls.crt"),
        ENGINE_TLS_KEY_FILE=files.path("tls.key"),
        ENGINE_TLS_RELOAD_SECONDS=RELOAD,
    )
    try:
        assert served(engine, RELOADS, result="refused") == 0
        files.write({"tls.crt": new.cert.read_bytes()})  # the key is not written yet
        wait_for(
            "the half-renewed pair is refused",
            lambda: served(engine, RELOADS, result="refused") == 1,
        )
        assert served(engine, REFUSED) == 1
        assert presented(engine.address) == old.der
        with Client(engine.address, timeout=20, tls=TLS(str(ca.path))) as c:
            assert c.catalog().fingerprint
        assert served(engine, EXPIRY) == old.not_after

        files.write({"tls.key": new.key.read_bytes()})
        wait_for("the whole pair is taken", lambda: presented(engine.address) == new.der)
        assert served(engine, REFUSED) == 0
        assert served(engine, EXPIRY) == new.not_after
        assert served(engine, RELOADS, result="refused") == 1
        refusals = [line for line in engine.log().splitlines() if "renewed files refused" in line]
        assert len(refusals) == 1, refusals  # once, not at every check
        assert f"{files.path('tls.key')!r} is not the key of the certificate in" in refusals[0]
    finally:
        engine.stop()


class Mtls:
    """An engine under mutual TLS whose client CA bundle first trusts two client CAs (the
    clients' first certificates come from the first) and is then renewed to the second only."""

    def __init__(self, tmp_path: Path, **env: str) -> None:
        self.server_ca = Authority(tmp_path, "server-ca")
        # (the first client CA ends first: the bundle's soonest end is exported)
        self.first = Authority(tmp_path, "clients-1", days=10)
        self.second = Authority(tmp_path, "clients-2", days=40)
        self.files = TlsDir(tmp_path / "engine", REPLACE)
        server = self.server_ca.server("engine", days=20)
        self.files.write({
            "tls.crt": server.cert.read_bytes(), "tls.key": server.key.read_bytes(),
            "ca.crt": self.first.path.read_bytes() + self.second.path.read_bytes(),
        })  # fmt: skip
        self.engine = support.start_engine(
            ENGINE_TLS_CERT_FILE=self.files.path("tls.crt"),
            ENGINE_TLS_KEY_FILE=self.files.path("tls.key"),
            ENGINE_TLS_CLIENT_CA_FILE=self.files.path("ca.crt"),
            ENGINE_TLS_RELOAD_SECONDS=RELOAD,
            **env,
        )
        self.tester = self.second.client("tester", days=20)  # the test's own client

    @property
    def port(self) -> int:
        return int(self.engine.address.rpartition(":")[2])

    def client(self) -> Client:
        tls = TLS(str(self.server_ca.path), str(self.tester.cert), str(self.tester.key))
        return Client(self.engine.address, timeout=20, tls=tls)

    def trust_only_the_second_ca(self) -> None:
        self.files.write({"ca.crt": self.second.path.read_bytes()})
        wait_for(
            "the engine takes its renewed client CA bundle",
            lambda: served(self.engine, RELOADS, result="loaded") == 1,
        )

    def refuses(self, leaf: Leaf) -> bool:
        """A new connection presenting ``leaf`` is refused."""
        tls = TLS(str(self.server_ca.path), str(leaf.cert), str(leaf.key), reload_seconds=0)
        with Client(self.engine.address, timeout=5, tls=tls) as c:
            try:
                c.catalog()
            except UnavailableError:
                return True
        return False


@pytest.fixture
def mtls(tmp_path: Path) -> Iterator[Mtls]:
    m = Mtls(tmp_path)
    yield m
    m.engine.stop()


def test_the_sdk_presents_a_renewed_client_certificate_on_new_connections(
    mtls: Mtls, tmp_path: Path
) -> None:
    old, new = mtls.first.client("sdk-old", days=2), mtls.second.client("sdk-new", days=20)
    mine = TlsDir(tmp_path / "sdk", SECRET_VOLUME)
    mine.write_leaf(old, ca=mtls.server_ca.path)
    proxy = CuttableProxy("127.0.0.1", mtls.port)
    tls = TLS(mine.path("ca.crt"), mine.path("tls.crt"), mine.path("tls.key"), reload_seconds=1)
    try:
        with Client(proxy.address, timeout=20, tls=tls) as c:
            game = c.create_game([human("A"), human("B")])
            watch = c.watch(game.game_id, game.view.version, reconnect=False)
            updates = Updates(watch)
            started = play(c, game, 1)
            wait_for("the stream is open", lambda: updates.reached(started))
            assert proxy.accepted == 1

            assert served(mtls.engine, CA_EXPIRY) == mtls.first.not_after
            mine.write_leaf(new, ca=mtls.server_ca.path)
            mtls.trust_only_the_second_ca()
            assert served(mtls.engine, CA_EXPIRY) == mtls.second.not_after
            assert mtls.refuses(old), "the engine still accepts the first CA's certificates"
            # The client's next call after its check is due goes over a new connection, which
            # the engine accepts only with the renewed certificate.
            wait_for(
                "the SDK opens a connection with its renewed certificate",
                lambda: c.get_view(game.game_id).version > 0 and proxy.accepted == 2,
            )
            version = play(c, game, 2)
            wait_for("the stream opened before the renewal goes on", lambda: updates.reached(version))
            assert watch.reconnects == 0 and proxy.open == 2
            # Once the last call on it ends, the first channel is closed: its connection goes.
            watch.cancel()
            wait_for("the first connection is closed once idle", lambda: proxy.open == 1)
            assert c.get_view(game.game_id).version == version
    finally:
        proxy.close()


def test_the_browser_gateway_presents_a_renewed_client_certificate_without_cutting_streams(
    mtls: Mtls, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = mtls.first.client("web-old", days=2), mtls.second.client("web-new", days=20)
    mine = TlsDir(tmp_path / "web", SECRET_VOLUME)
    mine.write_leaf(old, ca=mtls.server_ca.path)
    proxy = CuttableProxy("127.0.0.1", mtls.port)
    monkeypatch.setenv("ASCENSION_TLS_RELOAD_SECONDS", RELOAD)
    web = start_web(
        "--address", proxy.address, "--tls-ca-file", mine.path("ca.crt"),
        "--tls-cert-file", mine.path("tls.crt"), "--tls-key-file", mine.path("tls.key"),
    )  # fmt: skip
    methods = {m.name: method_info(m) for m in SERVICE.methods}

    def browser() -> ConnectClientSync:
        return ConnectClientSync(
            web.origin,
            protocol=ProtocolType.CONNECT,
            codec=google_protobuf_binary_codec(),
            send_compression=None,
        )

    try:
        with mtls.client() as tester, browser() as page, browser() as watcher:
            game = tester.create_game([human("A"), human("B")])

            def version_through_the_gateway() -> int:
                view = page.execute_unary(
                    request=epb.GetGameRequest(game_id=game.game_id),
                    method=methods["GetGame"],
                    timeout_ms=20_000,
                )
                return int(view.version)

            stream = watcher.execute_server_stream(
                request=epb.WatchGameRequest(game_id=game.game_id, after_version=1),
                method=methods["WatchGame"],
                timeout_ms=600_000,
            )
            updates = Updates(stream)
            started = play(tester, game, 1)
            wait_for("the browser's stream is open", lambda: updates.reached(started))
            assert version_through_the_gateway() == started and proxy.accepted == 1

            assert served(mtls.engine, CA_EXPIRY) == mtls.first.not_after
            mine.write_leaf(new, ca=mtls.server_ca.path)
            mtls.trust_only_the_second_ca()
            assert served(mtls.engine, CA_EXPIRY) == mtls.second.not_after
            assert mtls.refuses(old)
            wait_for(
                "the gateway opens a connection with its renewed certificate",
                lambda: version_through_the_gateway() == started and proxy.accepted == 2,
            )
            version = play(tester, game, 2)
            wait_for("the browser's stream opened before goes on", lambda: updates.reached(version))
            assert version_through_the_gateway() == version
            assert not updates.ended.is_set() and proxy.open == 2
    finally:
        stop_web(web.proc)
        proxy.close()


class Worker:
    """``ascension-worker run`` (one pool process) with its TLS files in ``files``."""

    def __init__(self, tmp_path: Path, broker: str, files: TlsDir) -> None:
        self.metrics_port = support.free_port()
        env = {
            **os.environ,
            "CELERY_BROKER_URL": broker,
            "WORKER_METRICS_PORT": str(self.metrics_port),
            "WORKER_CONCURRENCY": "1",
            "WORKER_NODE_NAME": "tls@%h",
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "worker-metrics"),
            "LOG_LEVEL": "INFO",
            "PYTHONPATH": str(support.ROOT),
            "ASCENSION_TLS_CA_FILE": files.path("ca.crt"),
            "ASCENSION_TLS_CERT_FILE": files.path("tls.crt"),
            "ASCENSION_TLS_KEY_FILE": files.path("tls.key"),
            "ASCENSION_TLS_RELOAD_SECONDS": RELOAD,
        }
        self.log_path = tmp_path / "worker.log"
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [str(WORKER), "run"], env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, cwd=support.ROOT,
            )  # fmt: skip
        try:
            wait_for("the worker starts", lambda: "ready." in self.log() or self.exited)
            assert not self.exited, self.log()
        except BaseException:
            self.stop()
            raise

    @property
    def exited(self) -> bool:
        return self.proc.poll() is not None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def metric(self, name: str, **labels: str) -> float:
        return scrape(self.metrics_port, name, role="client", **labels)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


@pytest.fixture
def redis_url() -> Iterator[str]:
    with support.redis_server() as url:
        yield url


def test_a_worker_presents_its_renewed_client_certificate(tmp_path: Path, redis_url: str) -> None:
    """The AI seat's moves go on after the worker's certificate and the engine's client CA are
    renewed and every connection between them is cut: the worker's new connection presents
    the renewed certificate (the first one is no longer trusted)."""
    proxy = CuttableProxy("127.0.0.1", 0)  # its target is set once the engine listens
    m = Mtls(
        tmp_path, REDIS_URL=redis_url, ENGINE_AI_DISPATCH="celery", CELERY_BROKER_URL=redis_url,
        ENGINE_ADVERTISE_ADDRESS=proxy.address,  # the worker reaches the engine through it
        ENGINE_AI_SWEEP_SECONDS="1", ENGINE_AI_STALL_SECONDS="5",
        ENGINE_AI_MAX_DISPATCHES="0",  # only the worker plays the AI seat, never the engine
    )  # fmt: skip
    proxy.target = ("127.0.0.1", m.port)
    old, new = m.first.client("worker-old", days=2), m.second.client("worker-new", days=20)
    mine = TlsDir(tmp_path / "worker", SECRET_VOLUME)
    mine.write_leaf(old, ca=m.server_ca.path)
    worker = None
    try:
        worker = Worker(tmp_path, redis_url, mine)
        assert worker.metric(EXPIRY) == old.not_after
        assert worker.metric(CA_EXPIRY) == m.server_ca.not_after  # (the CA it checks the engine by)
        with m.client() as c:
            game = c.create_game([human("A"), bot("random", seed=1)], seed=11)
            token = game.token(0)

            def end_turn() -> int:
                """The human seat's moves until the move passes to the AI seat."""
                view = c.wait_turn(game.game_id, token, timeout=120)
                while view.to_move == 0 and not view.over:
                    ends = [a for a in view.legal_actions if a.kind == "end_turn"]
                    action = (ends or list(view.legal_actions))[0]
                    view = c.submit(game.game_id, token, action.id).view
                return int(view.version)

            def ai_moved(after: int) -> bool:
                view = c.get_view(game.game_id)
                return view.version > after and view.to_move == 0

            def logs() -> str:
                return f"worker:\n{worker.log()}\nengine:\n{m.engine.log()}" if worker else ""

            first = end_turn()
            wait_for("the AI seat moves", lambda: ai_moved(first), timeout=120, logs=logs)
            assert proxy.accepted >= 1

            mine.write_leaf(new, ca=m.server_ca.path)
            m.trust_only_the_second_ca()
            assert m.refuses(old)
            wait_for(
                "the worker exports its renewed certificate",
                lambda: worker is not None and worker.metric(EXPIRY) == new.not_after,
            )
            proxy.cut()  # every connection made before the renewal is gone
            second = end_turn()
            wait_for("the AI seat moves with the renewed certificate", lambda: ai_moved(second),
                     timeout=120, logs=logs)  # fmt: skip
        assert "TLS client: renewed files taken" in worker.log()
        assert worker.metric(RELOADS, result="loaded") == 1
        assert worker.metric(REFUSED) == 0
    finally:
        if worker is not None:
            worker.stop()
        m.engine.stop()
        proxy.close()
