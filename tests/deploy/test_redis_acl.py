"""Least privilege for the Redis users (deploy/helm/ascension-engine/files/redis-users.rules),
against a real redis-server loading the ACL file deploy/compose-secrets.sh writes, with
compose's command: the engine's and the broker's users are refused every command that would
wipe, reconfigure or watch the server, and every key but their own; a real engine and a real
Celery worker play whole games through them, and Redis logs no refusal of anything they sent.

To read Redis's ACL LOG the server loads a copy of the file with one more user, `admin`, which
only this test has (the generated users are loaded as written)."""

from __future__ import annotations

import random
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import redis as redis_py
import yaml  # type: ignore[import-untyped, unused-ignore]

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from tests.deploy.deploy_support import DEPLOY
from tests.service import support

ADMIN = ("admin", "test-only-admin-password")
CALL = 10.0

# Commands no user of the engine or of Celery sends: each would let whoever holds the
# credential wipe the store (SWAPDB empties db 0 into db 1), stop or reconfigure Redis, see
# every other client's traffic (MONITOR, SYNC, PSYNC stream every write), or cut the others off.
REFUSED: tuple[tuple[str, ...], ...] = (
    ("SWAPDB", "0", "1"),
    ("FLUSHALL",),
    ("FLUSHDB",),
    ("CLIENT", "PAUSE", "10"),
    ("CLIENT", "UNPAUSE"),
    ("CLIENT", "KILL", "TYPE", "normal"),
    ("CLIENT", "LIST"),
    ("CLIENT", "NO-EVICT", "on"),
    ("CLIENT", "SETNAME", "x"),
    ("CONFIG", "SET", "appendfsync", "no"),
    ("CONFIG", "GET", "*"),
    ("CONFIG", "REWRITE"),
    ("CONFIG", "RESETSTAT"),
    ("DEBUG", "SLEEP", "0"),
    ("FUNCTION", "FLUSH"),
    ("FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', function() return 1 end)"),
    ("SCRIPT", "FLUSH"),
    ("SCRIPT", "KILL"),
    ("SYNC",),
    ("PSYNC", "?", "-1"),
    ("MONITOR",),
    ("SHUTDOWN", "NOSAVE"),
    ("ACL", "SETUSER", "intruder", "on", "nopass", "+@all", "~*"),
    ("ACL", "LIST"),
    ("MODULE", "LIST"),
    ("REPLICAOF", "127.0.0.1", "1"),
    ("FAILOVER",),
    ("SAVE",),
    ("BGREWRITEAOF",),
    ("KEYS", "*"),
    ("SCAN", "0"),
    ("SELECT", "1"),
    ("INFO",),
)


def refusal(client: Any, command: tuple[str, ...]) -> str:
    """Why Redis refused ``command`` ("" if it did not): NOPERM, or for DEBUG the server's own
    refusal (enable-debug-command is off by default) when the ACL would let it through."""
    try:
        client.execute_command(*command)
    except redis_py.exceptions.NoPermissionError as e:
        return f"NOPERM {e}"
    except redis_py.exceptions.ResponseError as e:
        if command[0] == "DEBUG" and "DEBUG command not allowed" in str(e):
            return str(e)
        return ""
    return ""


def assert_refused(client: Any, *commands: tuple[str, ...]) -> None:
    """Each command is refused."""
    allowed = [c for c in commands if not refusal(client, c)]
    assert not allowed, f"not refused: {allowed}"


# ---------------------------------------------------------------------------
# A redis-server with compose's command and the generated ACL file
# ---------------------------------------------------------------------------


@dataclass
class Stack:
    port: int
    urls: dict[str, str]  # user -> redis:// URL with its password
    proc: subprocess.Popen[bytes]

    def client(self, user: str) -> Any:
        return redis_py.Redis.from_url(self.urls[user], socket_timeout=10)

    def admin(self) -> Any:
        return redis_py.Redis(port=self.port, username=ADMIN[0], password=ADMIN[1])

    def refusals(self, *users: str) -> list[dict[str, Any]]:
        """ACL LOG entries of these users."""
        return [e for e in self.admin().acl_log(200) if e.get("username") in users]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    from tests.deploy.test_deploy_compose import redis_command, run_secrets_script

    directory = tmp_path_factory.mktemp("redis-acl")
    volumes = run_secrets_script(directory)
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    inspected = directory / "inspected"
    inspected.mkdir()
    acl = (volumes["redis-secrets"] / "users.acl").read_text()
    (inspected / "users.acl").write_text(f"{acl}user {ADMIN[0]} on >{ADMIN[1]} +@all ~* &*\n")
    port = support.free_port()
    proc = subprocess.Popen(
        redis_command(compose, {**volumes, "redis-secrets": inspected}, port),
        cwd=directory,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    here = f"@127.0.0.1:{port}/"

    def read(volume: str, name: str) -> str:
        return (volumes[volume] / name).read_text().strip().replace("@redis:6379/", here)

    exporter = (volumes["exporter-secrets"] / "redis-password.json").read_text().split('"')[3]
    health = (volumes["redis-secrets"] / "healthcheck-password").read_text().strip()
    urls = {
        "engine": read("engine-secrets", "redis-url"),
        "broker": read("worker-secrets", "broker-url"),
        "exporter": f"redis://exporter:{exporter}{here}0",
        "healthcheck": f"redis://healthcheck:{health}{here}0",
    }
    s = Stack(port, urls, proc)
    deadline = time.monotonic() + 15
    while True:
        try:
            s.admin().ping()
            break
        except redis_py.ConnectionError:
            assert time.monotonic() < deadline and proc.poll() is None, "redis-server did not start"
            time.sleep(0.05)
    yield s
    proc.terminate()
    proc.wait(10)


@pytest.mark.parametrize("user", ["engine", "broker"])
def test_no_user_of_the_game_may_wipe_reconfigure_or_watch_the_server(
    stack: Stack, user: str
) -> None:
    client = stack.client(user)
    assert client.ping()
    assert_refused(client, *REFUSED)
    # And the ACL itself refuses each (ACL DRYRUN: what the user's rules say, whatever else
    # of the server might refuse it too, as it does DEBUG).
    for command in REFUSED:
        answer = stack.admin().execute_command("ACL", "DRYRUN", user, *command)
        assert answer != b"OK" and b"no permissions" in answer, (command, answer)
    # Nor through a script, which runs as its caller.
    with pytest.raises(redis_py.exceptions.ResponseError, match="can't run this command"):
        client.eval("return redis.call('FLUSHALL')", 0)
    # Nothing was done: the admin still sees the server as it was.
    assert stack.admin().config_get("appendfsync") == {"appendfsync": "always"}
    assert stack.admin().dbsize() >= 0


def test_each_user_reaches_only_its_own_keys_and_channels(stack: Stack) -> None:
    engine, broker = stack.client("engine"), stack.client("broker")
    engine.set("asc:{00}:r:acl-test:1", "x", ex=60)
    assert engine.getdel("asc:{00}:r:acl-test:1") == b"x"
    broker.lpush("ascension.acl-test", "x")
    assert broker.rpop("ascension.acl-test") == b"x"
    for client, key in (
        (engine, "ascension.moves"),
        (engine, "unacked"),
        (broker, "asc:{00}:games"),
    ):
        with pytest.raises(redis_py.exceptions.NoPermissionError):
            client.get(key)
    with pytest.raises(redis_py.exceptions.NoPermissionError):
        engine.publish("/0.celery.pidbox", "x")
    with pytest.raises(redis_py.exceptions.NoPermissionError):
        broker.publish("elsewhere", "x")
    with pytest.raises(redis_py.exceptions.NoPermissionError):
        broker.execute_command("PSUBSCRIBE", "*")


def test_the_monitoring_users_only_read(stack: Stack) -> None:
    exporter, health = stack.client("exporter"), stack.client("healthcheck")
    assert "redis_version" in exporter.info()
    assert exporter.llen("ascension.moves") >= 0
    assert health.ping()
    for client in (exporter, health):
        assert_refused(client, ("SET", "ascension.moves", "x"), ("LPOP", "ascension.moves"))
        assert_refused(client, *REFUSED[:3], ("CONFIG", "SET", "appendfsync", "no"))
    assert_refused(exporter, ("GET", "asc:{00}:games"), ("CLIENT", "KILL", "TYPE", "normal"))
    assert_refused(health, ("INFO",), ("LLEN", "ascension.moves"))
    # KEDA's user exists in the rules but nothing of compose uses it: it is off.
    with pytest.raises(redis_py.AuthenticationError):
        redis_py.Redis(port=stack.port, username="keda", password="").ping()


# ---------------------------------------------------------------------------
# A real engine and a real Celery worker through these users
# ---------------------------------------------------------------------------


def _ai(seed: int) -> epb.SeatConfig:
    return epb.SeatConfig(
        kind=pb.SeatInfo.AI, name="bot", bot=epb.BotSettings(name="random", seed=seed)
    )


def test_an_engine_and_a_worker_play_through_their_users(stack: Stack, tmp_path: Path) -> None:
    """Games with AI seats to the end (the engine dispatching, a worker of 2 processes playing),
    watched, analysed, reviewed, listed and deleted; the worker answers `ascension-worker
    check` through the broker; the sweeper runs. Redis refused nothing either sent."""
    from tests.ai.test_celery_integration import start_worker

    stack.admin().acl_log_reset()  # (the refusals the tests above asked for)
    engine = support.start_engine(
        stack.urls["engine"],
        ENGINE_AI_DISPATCH="celery",
        CELERY_BROKER_URL=stack.urls["broker"],
        ENGINE_AI_SWEEP_SECONDS="1",
        ENGINE_AI_STALL_SECONDS="5",
        ENGINE_STORE_PROBE_SECONDS="0.5",
    )
    worker = start_worker(stack.urls["broker"], str(support.ROOT), tmp_path, "acl")
    try:
        stub = engine.stub()
        bots = stub.CreateGame(
            epb.CreateGameRequest(sets="ss", seed=5, seats=[_ai(1), _ai(2)]), timeout=CALL
        )
        watched: list[Any] = []
        watcher = rpc.EngineStub(engine.new_channel())

        def watch() -> None:
            try:
                for update in watcher.WatchGame(
                    epb.WatchGameRequest(game_id=bots.game_id), timeout=180
                ):
                    watched.append(update)
            except grpc.RpcError as e:
                watched.append(e)

        threading.Thread(target=watch, daemon=True).start()
        # A player against an AI seat: a hint on the player's turn, moves on both sides.
        mixed = stub.CreateGame(
            epb.CreateGameRequest(
                sets="ss",
                seed=8,
                seats=[epb.SeatConfig(kind=pb.SeatInfo.HUMAN, name="player"), _ai(3)],
            ),
            timeout=CALL,
        )
        token, rng, hinted, mine = mixed.seat_tokens[0], random.Random(1), False, 0
        deadline = time.monotonic() + 120
        while mine < 12 and time.monotonic() < deadline:
            view = stub.GetGame(
                epb.GetGameRequest(game_id=mixed.game_id, token=token), timeout=CALL
            )
            if view.over:
                break
            if view.to_move != 0:
                time.sleep(0.05)
                continue
            if not hinted:
                hint = stub.AnalyzePosition(
                    epb.AnalyzePositionRequest(game_id=mixed.game_id, token=token, budget_ms=50),
                    timeout=60,
                )
                assert hint.candidates
                hinted = True
            try:
                stub.SubmitAction(
                    epb.SubmitActionRequest(
                        game_id=mixed.game_id,
                        token=token,
                        expected_version=view.version,
                        action=support.pick(view, rng),
                        idempotency_key=f"k{view.version}",
                    ),
                    timeout=CALL,
                )
                mine += 1
            except grpc.RpcError as e:
                assert e.code() in (grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION)
        assert hinted and mine >= 12, f"{mine} moves of the player"
        assert view.version - 1 > mine, "the AI seat played its turns too"
        # The AI-only game to its end.
        while time.monotonic() < deadline + 60:
            final = stub.GetGame(epb.GetGameRequest(game_id=bots.game_id), timeout=CALL)
            if final.over:
                break
            time.sleep(0.25)
        assert final.over, f"not over at version {final.version}"
        reviewed = stub.ReviewGame(
            epb.ReviewGameRequest(
                game_id=bots.game_id, token=bots.admin_token, seat=0, budget_ms=20
            ),
            timeout=60,
        )
        assert next(iter(reviewed)) is not None
        listed = stub.ListGames(epb.ListGamesRequest(), timeout=CALL)
        assert {g.game_id for g in listed.games} >= {bots.game_id, mixed.game_id}
        stub.DeleteGame(
            epb.DeleteGameRequest(game_id=bots.game_id, admin_token=bots.admin_token),
            timeout=CALL,
        )
        check = worker.check()
        assert check.returncode == 0 and "pong" in check.stdout, check.stderr
        assert len(watched) > 10 and not isinstance(watched[0], Exception)
        assert support.metric(engine, "ascension_store_up") == 1
    finally:
        worker.stop()
        engine.stop()
    refused = stack.refusals("engine", "broker")
    assert not refused, f"Redis refused the engine or the worker: {refused}"


# ---------------------------------------------------------------------------
# The chart's in-chart Redis: its container writes the ACL file from the same rules
# ---------------------------------------------------------------------------


def test_the_charts_redis_writes_the_same_users_and_the_engine_and_worker_use_them(
    tmp_path: Path,
) -> None:
    """The in-chart Redis's container command, as the chart renders it, run here with the
    users' passwords in its environment and the rules where its ConfigMap is mounted: Redis
    (the local 7.0 build) loads the file it writes; the engine and the worker, with the URLs
    the chart gives them, get an AI seat's move played through their users; each user is
    refused what it must be; the readiness probe answers as the user healthcheck."""
    import shutil

    from tests.ai.test_celery_integration import start_worker
    from tests.deploy.test_deploy_helm_chart import by_kind, env_of, render_docs

    docs = render_docs({})
    (statefulset,) = by_kind(docs, "StatefulSet")
    spec = statefulset["spec"]["template"]["spec"]
    redis = next(c for c in spec["containers"] if c["name"] == "redis")
    (rules,) = [c for c in by_kind(docs, "ConfigMap") if c["metadata"]["name"].endswith("-users")]
    (secret,) = [s for s in by_kind(docs, "Secret") if s["metadata"]["name"].endswith("redis-auth")]
    passwords = secret["stringData"]
    env = {"PATH": str(Path(shutil.which("redis-server") or "/usr/bin/redis-server").parent)}
    env["PATH"] += ":/usr/bin:/bin"
    for name, item in env_of(redis).items():
        env[name] = passwords[item["valueFrom"]["secretKeyRef"]["key"]]
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "redis-users.rules").write_text(rules["data"]["redis-users.rules"])
    script = redis["command"][2].replace("/etc/redis-users/", f"{tmp_path}/etc/")
    script = script.replace("/tmp/users.acl", f"{tmp_path}/users.acl")
    port = support.free_port()
    # The chart's options; the data directory (its volume, /data) and the address this test's.
    args = [str(tmp_path) if a == "/data" else a for a in redis["args"]]
    args += ["--port", str(port), "--bind", "127.0.0.1"]
    proc = subprocess.Popen(
        ["sh", "-c", script, "redis-server", *args],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "redis.log").open("w"),
    )
    engine = worker = None
    try:
        here = f"@127.0.0.1:{port}/0"
        urls = {
            user: f"redis://{user}:{passwords[f'{user}-password']}{here}"
            for user in ("engine", "broker")
        }
        store = redis_py.Redis.from_url(urls["engine"])
        deadline = time.monotonic() + 15
        while True:
            try:
                store.ping()
                break
            except redis_py.ConnectionError:
                assert time.monotonic() < deadline and proc.poll() is None, (
                    tmp_path / "redis.log"
                ).read_text()
                time.sleep(0.05)
        acl = (tmp_path / "users.acl").read_text()
        assert acl.startswith("user default off")
        assert not any(p in acl for p in passwords.values()), "digests, not passwords"
        for user in ("engine", "broker"):
            assert_refused(redis_py.Redis.from_url(urls[user]), *REFUSED)
        keda = redis_py.Redis(port=port, username="keda", password=passwords["keda-password"])
        assert keda.llen("ascension.moves") == 0
        assert_refused(keda, ("LPOP", "ascension.moves"), ("GET", "asc:{00}:games"), ("INFO",))
        probe = " ".join(redis["readinessProbe"]["exec"]["command"][2:])
        probe = probe.replace(f"-p {redis['ports'][0]['containerPort']}", f"-p {port}")
        assert (
            subprocess.run(
                ["sh", "-c", probe],
                env={**env, "REDISCLI_AUTH": passwords["healthcheck-password"]},
                timeout=10,
                check=False,
            ).returncode
            == 0
        )
        # The engine and a worker, with the URLs the chart builds.
        engine_env = env_of(
            next(
                d for d in by_kind(docs, "Deployment") if d["metadata"]["name"].endswith("-engine")
            )["spec"]["template"]["spec"]["containers"][0]
        )
        chart_host = engine_env["REDIS_URL"]["value"].split("@")[1]
        store_url = (
            engine_env["REDIS_URL"]["value"]
            .replace("$(ASCENSION_REDIS_PASSWORD)", passwords["engine-password"])
            .replace(chart_host, f"127.0.0.1:{port}/0")
        )
        broker_url = (
            engine_env["CELERY_BROKER_URL"]["value"]
            .replace("$(ASCENSION_BROKER_PASSWORD)", passwords["broker-password"])
            .replace(chart_host, f"127.0.0.1:{port}/0")
        )
        assert (store_url, broker_url) == (urls["engine"], urls["broker"])
        engine = support.start_engine(
            store_url, ENGINE_AI_DISPATCH="celery", CELERY_BROKER_URL=broker_url
        )
        worker = start_worker(broker_url, str(support.ROOT), tmp_path, "chart")
        stub = engine.stub()
        game = stub.CreateGame(
            epb.CreateGameRequest(
                sets="ss",
                seed=2,
                seats=[_ai(1), epb.SeatConfig(kind=pb.SeatInfo.HUMAN, name="player")],
            ),
            timeout=CALL,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL)
            if view.to_move == 1:
                break
            time.sleep(0.2)
        assert view.to_move == 1, "the AI seat's turn was played through the chart's users"
    finally:
        if worker is not None:
            worker.stop()
        if engine is not None:
            engine.stop()
        proc.terminate()
        proc.wait(10)
