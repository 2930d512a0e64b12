"""Helpers of the service tests: real processes (redis-server, ascension-engine serve) and a
small client with a policy that ends games quickly."""

from __future__ import annotations

import contextlib
import os
import queue
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
ENGINE = Path(sys.executable).parent / "ascension-engine"
CALL_TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# ---- Redis -----------------------------------------------------------------------------------


def docker_answers() -> bool:
    """True when a Docker engine answers (then testcontainers can start Redis)."""
    try:
        import docker  # type: ignore[import-untyped]

        client = docker.from_env(timeout=3)
        client.ping()
        return True
    except Exception:
        return False


@contextlib.contextmanager
def redis_server(*settings: str) -> Iterator[str]:
    """A throwaway Redis: a testcontainers container if Docker answers, else a local
    ``redis-server`` on a free port with persistence off (.ci/run installs it if missing).
    ``settings``: more server arguments (``"--appendonly", "yes"``), for a local server."""
    if docker_answers() and not settings:
        from testcontainers.redis import RedisContainer

        with RedisContainer("redis:7.4-alpine") as c:
            yield f"redis://{c.get_container_host_ip()}:{c.get_exposed_port(6379)}/0"
        return
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(
        [*args, *settings],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import redis

        client = redis.Redis(port=port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        client.close()
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


# ---- the engine ------------------------------------------------------------------------------


def metric(engine: Engine, name: str) -> float:
    """A metric on the engine's /metrics: the sum of its series (every label set), or one
    series when ``name`` has its labels (``ascension_watch_refused_total{limit="per_peer"}``)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{engine.metrics_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    if "{" in name:
        return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " "))
    return sum(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.split("{")[0].split(" ")[0] == name
    )



@dataclass
class Engine:
    """A running ``ascension-engine serve`` process."""

    proc: subprocess.Popen[str]
    address: str
    metrics_port: int
    redis_url: str
    output: list[str] = field(default_factory=list)
    channel: Any = None

    def stub(self) -> rpc.EngineStub:
        if self.channel is None:
            self.channel = grpc.insecure_channel(self.address)
        return rpc.EngineStub(self.channel)

    def new_channel(self) -> Any:
        return grpc.insecure_channel(self.address)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode

    def log(self) -> str:
        return "".join(self.output)

    def wait_log(self, text: str, timeout: float = 15.0) -> str:
        """The log once ``text`` is in it: the engine logs after it answers, and its output
        reaches this process through a pipe read by another thread."""
        deadline = time.monotonic() + timeout
        while text not in (log := self.log()):
            assert time.monotonic() < deadline, f"{text!r} not logged:\n{log[-3000:]}"
            time.sleep(0.05)
        return log


def start_engine(redis_url: str = "", **env: str) -> Engine:
    """Start the server on a free port (ENGINE_GRPC_PORT=0) and wait for its address line."""
    return start_engine_of(ENGINE, redis_url, env)


def start_engine_of(executable: Path, redis_url: str, env: dict[str, str]) -> Engine:
    """``start_engine`` with an ``ascension-engine`` of another installation than this one's
    (run without the sources on its path)."""
    metrics_port = free_port()
    full_env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL")}
    full_env.update({
        "ENGINE_GRPC_PORT": "0",
        "ENGINE_HOST": "127.0.0.1",
        "ENGINE_METRICS_PORT": str(metrics_port),
        "ENGINE_SHUTDOWN_GRACE_SECONDS": "5",
        "ENGINE_SHUTDOWN_DRAIN_SECONDS": "0",
        "ENGINE_AI_DISPATCH": "off",
        "ENGINE_CALLER_SEEDS": "anyone",  # the tests replay seeded deals (docs/security.md)
        "PYTHONPATH": str(ROOT),
        "LOG_LEVEL": "INFO",
    })
    if redis_url:
        full_env["REDIS_URL"] = redis_url
    if executable != ENGINE:
        del full_env["PYTHONPATH"]
    full_env.update(env)
    proc = subprocess.Popen(
        [str(executable), "serve"],
        env=full_env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    engine = Engine(proc, "", metrics_port, redis_url)
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            engine.output.append(line)
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        if "listening on" in line:
            engine.address = line.split("listening on ")[1].split()[0]
            return engine
    engine.stop(signal.SIGKILL)
    raise RuntimeError("the engine did not start:\n" + engine.log())


# ---- playing ---------------------------------------------------------------------------------


def human_seats(n: int = 2) -> list[epb.SeatConfig]:
    return [epb.SeatConfig(kind=pb.SeatInfo.HUMAN, name=f"P{i + 1}") for i in range(n)]


def create(stub: rpc.EngineStub, sets: str = "ss", players: int = 2, seed: int | None = 7) -> epb.CreateGameResponse:
    req = epb.CreateGameRequest(sets=sets, seats=human_seats(players))
    if seed is not None:
        req.seed = seed
    resp: epb.CreateGameResponse = stub.CreateGame(req, timeout=CALL_TIMEOUT)
    return resp


def pick(view: pb.GameView, rng: random.Random) -> int:
    """A quick-ending policy: prefer buying and defeating, then playing cards, then the rest;
    end the turn only when nothing else is left (or now and then)."""
    acts = list(view.legal_actions)
    assert acts, "the seat to move has no legal action"
    for kinds in (("acquire", "defeat", "acquire_crew", "defeat_crew"), ("play",)):
        best = [a for a in acts if a.kind in kinds]
        if best:
            return rng.choice(best).id
    others = [a for a in acts if a.kind != "end_turn"]
    if others and rng.random() < 0.7:
        return rng.choice(others).id
    return acts[0].id if acts[0].kind == "end_turn" else rng.choice(acts).id


def play_to_end(stub: rpc.EngineStub, game: epb.CreateGameResponse, seed: int = 1,
                max_actions: int = 5000) -> tuple[pb.GameView, list[epb.SubmitActionResponse]]:  # fmt: skip
    """Play the game through the API; returns the last view and every response."""
    rng = random.Random(seed)
    view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[game.view.to_move]),
                        timeout=CALL_TIMEOUT)  # fmt: skip
    responses: list[epb.SubmitActionResponse] = []
    while not view.over and len(responses) < max_actions:
        seat = view.to_move
        if view.seat != seat:
            view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[seat]),
                                timeout=CALL_TIMEOUT)  # fmt: skip
        req = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[seat],
                                      expected_version=view.version, action=pick(view, rng),
                                      idempotency_key=f"{game.game_id}-{view.version}")  # fmt: skip
        resp = stub.SubmitAction(req, timeout=CALL_TIMEOUT)
        responses.append(resp)
        view = resp.view
    return view, responses


def rpc_error(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call and return the grpc.RpcError it raises (fails if it does not raise)."""
    try:
        fn(*args, timeout=CALL_TIMEOUT, **kwargs)
    except grpc.RpcError as e:
        return e
    raise AssertionError("the call did not fail")


class Watcher:
    """WatchGame in a thread from ``after_version`` to the game's end, resuming (with the last
    version and commit id received) when told to: collects every update."""

    def __init__(self, stub: rpc.EngineStub, game_id: str, after_version: int = 0,
                 timeout: float = 120.0) -> None:  # fmt: skip
        self.updates: list[pb.GameUpdate] = []
        self.errors: list[grpc.RpcError] = []
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(stub, game_id, after_version, timeout), daemon=True
        )
        self._thread.start()

    def _run(self, stub: rpc.EngineStub, game_id: str, after: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last_id = ""
        try:
            while time.monotonic() < deadline:
                req = epb.WatchGameRequest(game_id=game_id, after_version=after, after_commit_id=last_id)
                try:
                    for u in stub.WatchGame(req, timeout=max(1.0, deadline - time.monotonic())):
                        self.updates.append(u)
                        after, last_id = u.version, u.commit_id
                        if u.over:
                            return
                    return
                except grpc.RpcError as e:
                    self.errors.append(e)
                    if "watch again" not in (e.details() or ""):
                        return
        finally:
            self._done.set()

    def result(self, timeout: float = 60.0) -> list[pb.GameUpdate]:
        assert self._done.wait(timeout), "the watcher did not finish"
        return self.updates

    def until(self, version: int, timeout: float = 60.0) -> list[pb.GameUpdate]:
        """The updates received once ``version`` arrived (the watcher goes on)."""
        deadline = time.monotonic() + timeout
        while not (self.updates and self.updates[-1].version >= version):
            assert time.monotonic() < deadline and not self._done.is_set(), (
                f"version {version} did not arrive: {self.errors}"
            )
            time.sleep(0.02)
        return [u for u in list(self.updates) if u.version <= version]
