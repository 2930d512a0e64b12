"""``ascension-engine serve --processes N``: N server processes listening on one port, their
metrics merged by the parent, signals forwarded, a process that dies stops the whole."""

from __future__ import annotations

import os
import signal
import time
import urllib.request
from pathlib import Path

import pytest
import redis

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.server import cli, config
from engine_service.store import keys
from tests.service import support

PROCESSES = {"ENGINE_PROCESSES": "2", "LOG_LEVEL": "WARNING"}


def _listeners(port: int) -> int:
    """Listening TCP sockets on ``port`` (IPv4 and IPv6 tables)."""
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            n += state == "0A" and int(local.rsplit(":", 1)[1], 16) == port
    return n


def _servers(parent: int) -> list[int]:
    """The parent's server processes (not multiprocessing's resource tracker)."""
    kids = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return [int(k) for k in kids if b"spawn_main" in Path(f"/proc/{k}/cmdline").read_bytes()]


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except OSError:
        return False


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _metrics(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_more_than_one_process_needs_redis(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match="ENGINE_PROCESSES > 1 needs REDIS_URL"):
        config.load({"ENGINE_PROCESSES": "2"})
    assert config.load({"ENGINE_PROCESSES": "2", "REDIS_URL": "redis://x:1/0"}).processes == 2
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("REDIS_URL_FILE", raising=False)
    assert cli.main(["serve", "--processes", "3"]) == 2
    assert "ENGINE_PROCESSES > 1 needs REDIS_URL" in capsys.readouterr().err


def test_processes_share_the_port_and_merge_their_metrics(redis_url: str) -> None:
    e = support.start_engine(redis_url, **PROCESSES)
    try:
        servers = _servers(e.proc.pid)
        assert len(servers) == 2
        assert _listeners(int(e.address.rsplit(":", 1)[1])) == 2
        for _ in range(6):  # the kernel spreads connections (not calls) over the processes
            channel = e.new_channel()
            stub = rpc.EngineStub(channel)
            game = support.create(stub)
            stub.GetGame(
                epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[0]),
                timeout=support.CALL_TIMEOUT,
            )
            channel.close()
        cpu = sum(_cpu_seconds(p) for p in servers)
        r = redis.Redis.from_url(redis_url)
        active = sum(int(r.zcard(keys.index_keys(b)[1])) for b in range(keys.BUCKETS))
        r.close()
        deadline = time.monotonic() + 20
        while True:  # the whole-store gauge is refreshed every 5 s by process 0 only
            m = _metrics(e.metrics_port)
            if m.get("ascension_games_active") == active or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert m['ascension_grpc_requests_total{code="OK",method="CreateGame"}'] == 6
        assert m['ascension_grpc_requests_total{code="OK",method="GetGame"}'] == 6
        assert m["ascension_games_created_total"] == 6
        assert m["ascension_games_active"] == active >= 6  # "livemax": the others hold 0
        assert m["process_cpu_seconds_total"] >= cpu  # the server processes' CPU included

        os.kill(servers[0], signal.SIGKILL)  # a process dies: the others stop, exit non-zero
        assert e.proc.wait(60) == 1
        assert not any(_alive(p) for p in servers)
        e.wait_log("exited with SIGKILL")
    finally:
        e.stop()  # SIGTERM (then SIGKILL): the parent removes its metrics directory


def test_sigterm_stops_every_process_and_removes_the_metrics_directory(redis_url: str) -> None:
    e = support.start_engine(redis_url, **PROCESSES)
    try:
        servers = _servers(e.proc.pid)
        environ = Path(f"/proc/{servers[0]}/environ").read_bytes().split(b"\0")
        (found,) = [v for v in environ if v.startswith(b"PROMETHEUS_MULTIPROC_DIR=")]
        metrics_dir = Path(found.split(b"=", 1)[1].decode())
        assert metrics_dir.is_dir()
        assert e.stop(signal.SIGTERM) == 0
        assert not any(_alive(p) for p in servers)
        assert not metrics_dir.exists()
    finally:
        e.stop()  # SIGTERM (then SIGKILL): the parent removes its metrics directory


def test_one_process_keeps_its_port_to_itself() -> None:
    from engine_service.server.app import server_options

    assert ("grpc.so_reuseport", 0) in server_options(config.Settings())
    assert ("grpc.so_reuseport", 1) in server_options(config.Settings(processes=2))


def test_the_event_loop_is_uvloop_unless_asked_otherwise() -> None:
    import asyncio

    import uvloop

    from engine_service.server.app import run

    loops: list[type] = []

    async def which() -> None:
        loops.append(type(asyncio.get_running_loop()))

    run(which())
    run(which(), "asyncio")
    assert issubclass(loops[0], uvloop.Loop) and not issubclass(loops[1], uvloop.Loop)
    with pytest.raises(ValueError, match="ENGINE_EVENT_LOOP must be"):
        config.load({"ENGINE_EVENT_LOOP": "trio"})
