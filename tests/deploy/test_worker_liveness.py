"""The worker's liveness probe is local, node names differ between workers of one host, and
`ascension-worker check` says which broker it asks. Real `ascension-worker run` processes on
a real redis-server; each test gets its own TMPDIR (where heartbeats are written)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ai_workers import heartbeat
from tests.service import support

WORKER = Path(sys.executable).parent / "ascension-worker"


def worker_env(tmp_path: Path, broker: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "WORKER_NODE_NAME"}
    env.update(
        CELERY_BROKER_URL=broker,
        WORKER_METRICS_PORT="0",
        WORKER_CONCURRENCY="1",
        TMPDIR=str(tmp_path),
        LOG_LEVEL="INFO",
    )
    return env


def start(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(WORKER), "run"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=support.ROOT,
        )


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def check(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(WORKER), "check", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def wait_ready(log: Path, count: int) -> None:
    deadline = time.monotonic() + 60
    while log.read_text(errors="replace").count("ready.") < count:
        assert time.monotonic() < deadline, log.read_text(errors="replace")
        time.sleep(0.2)


@pytest.fixture
def redis_url() -> Iterator[str]:
    with support.redis_server() as url:
        yield url


def test_two_workers_on_one_host_get_distinct_node_names(tmp_path: Path, redis_url: str) -> None:
    env = worker_env(tmp_path, redis_url)
    log = tmp_path / "workers.log"
    procs = [start(env, log), start(env, log)]
    try:
        wait_ready(log, 2)
        text = log.read_text(errors="replace")
        assert "DuplicateNodenameWarning" not in text
        beats = heartbeat.read_all(tmp_path / "ascension-worker")  # $TMPDIR/ascension-worker
        nodes = {beat.node for beat in beats if beat.process_alive()}
        assert nodes == {f"ascension-{p.pid}@{os.uname().nodename}" for p in procs}
        # Both answer the broker ping, each under its own name.
        ping = check(env, "--timeout", "10")
        assert ping.returncode == 0, ping.stdout + ping.stderr
        assert sorted(line.split(":")[0] for line in ping.stdout.splitlines()[1:]) == sorted(nodes)
    finally:
        for proc in procs:
            stop(proc)


def test_local_liveness_survives_a_broker_outage(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    with support.redis_server() as url:
        env = worker_env(tmp_path, url)
        proc = start(env, log)
        try:
            wait_ready(log, 1)
            alive = check(env, "--local")
            assert alive.returncode == 0, alive.stderr
            assert f"ascension-{proc.pid}@" in alive.stdout
            assert check(env, "--timeout", "10").returncode == 0
        except BaseException:
            stop(proc)
            raise
    # The redis-server is gone: the broker ping fails, the local check still passes.
    outage = time.time()
    try:
        # The worker keeps writing its heartbeat during the outage (no timing threshold: wait
        # for a write after the outage began).
        deadline = time.monotonic() + 60
        while not any(
            b.written > outage for b in heartbeat.read_all(tmp_path / "ascension-worker")
        ):
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.5)
        assert proc.poll() is None, log.read_text(errors="replace")
        ping = check(env, "--timeout", "2")
        assert ping.returncode == 1
        alive = check(env, "--local")
        assert alive.returncode == 0, alive.stderr + log.read_text(errors="replace")
    finally:
        stop(proc)
    # Once the worker is gone, the local check fails (its pid is dead).
    dead = check(env, "--local")
    assert dead.returncode == 1
    assert "no worker of this host" in dead.stderr


def test_check_names_the_broker_it_uses(tmp_path: Path) -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in {"CELERY_BROKER_URL", "WORKER_NODE_NAME"}
    }
    env["TMPDIR"] = str(tmp_path)
    result = check(env, "--timeout", "0.5")
    # no broker setting: said, and no default address probed
    assert result.returncode == 2 and not result.stdout
    assert "no broker set (CELERY_BROKER_URL or CELERY_BROKER_URL_FILE)" in result.stderr
    env["CELERY_BROKER_URL"] = "redis://:s3cret@127.0.0.1:1/0"
    result = check(env, "--timeout", "0.5")
    assert result.stdout.splitlines()[0] == "broker: redis://:***@127.0.0.1:1/0 (CELERY_BROKER_URL)"
    assert "s3cret" not in result.stdout + result.stderr
