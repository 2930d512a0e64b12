"""Stopping an engine stops its AI processes, whatever they are doing: an engine with local AI
(``ENGINE_AI_DISPATCH=local``) has one pool process in a minute-long search in its bot host,
one whose bot host is stuck (a bot that ignores signals and never answers), and one in a
minute-long analysis of its own; it is stopped by SIGTERM, SIGINT or SIGKILL, and every
process it had started (by pid) is gone within a bounded wait.

Real processes: ``ascension-engine serve`` (in-process store), its spawned pool processes and
their bot hosts (``python -m ai_workers.supervisor``), bot plugins registered like any
installed package."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from tests.ai.bad_bots import install_entry_points
from tests.service import support

MINUTE_MS = 60_000


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _descendants(root: int) -> set[int]:
    """Every live process below ``root`` (by parent pid; a new session is still a child)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None and fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found


def _cpu_seconds(pid: int) -> float:
    fields = _stat(pid)
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _busy(engine: support.Engine, seconds: float = 90.0) -> dict[str, set[int]]:
    """Once the engine's AI is busy: its pool processes, their bot hosts, and every process
    below the engine."""
    deadline = time.monotonic() + seconds
    while True:
        below = _descendants(engine.proc.pid)
        hosts = {p for p in below if b"ai_workers.supervisor" in _cmdline(p)}
        pool = {p for p in below if b"spawn_main" in _cmdline(p)}
        analysing = pool - {int(_stat(h)[1]) for h in hosts if _stat(h)}  # type: ignore[index]
        if len(pool) == 3 and len(hosts) == 2 and analysing:
            (a,) = analysing
            if _cpu_seconds(a) > 2.0:  # (imports take about 1 s of it: searching now)
                return {"pool": pool, "hosts": hosts, "all": below}
        assert time.monotonic() < deadline, (engine.log(), below)
        time.sleep(0.2)


@pytest.fixture(scope="module")
def plugins(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"{support.ROOT}{os.pathsep}{install_entry_points(tmp_path_factory.mktemp('bots'))}"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL],
                         ids=["SIGTERM", "SIGINT", "SIGKILL"])  # fmt: skip
def test_stopping_the_engine_stops_its_ai_processes(plugins: str, sig: signal.Signals) -> None:
    engine = support.start_engine(
        ENGINE_AI_DISPATCH="local", ENGINE_LOCAL_AI_PROCESSES="3", PYTHONPATH=plugins,
        ENGINE_ANALYSIS_MAX_BUDGET_MS=str(MINUTE_MS), ENGINE_SHUTDOWN_GRACE_SECONDS="2",
    )  # fmt: skip
    started: dict[str, set[int]] = {"all": set()}
    try:
        stub = engine.stub()

        def bots(name: str) -> list[epb.SeatConfig]:
            bot = epb.BotSettings(name=name, time_ms=MINUTE_MS, seed=1)
            return [epb.SeatConfig(kind=pb.SeatInfo.AI, bot=bot) for _ in range(2)]

        for name in ("ismcts", "stubborn"):  # a minute-long search; a bot stuck for good
            stub.CreateGame(epb.CreateGameRequest(seats=bots(name)), timeout=30)
        people = support.create(stub, seed=3)
        seat = people.view.to_move
        hint = epb.AnalyzePositionRequest(game_id=people.game_id, token=people.seat_tokens[seat],
                                          budget_ms=MINUTE_MS)  # fmt: skip
        asking = threading.Thread(target=lambda: _swallow(stub.AnalyzePosition, hint), daemon=True)
        asking.start()  # a minute-long search in a pool process itself
        started = _busy(engine)

        stopped = time.monotonic()
        engine.proc.send_signal(sig)
        deadline = stopped + 30  # SIGTERM: the grace (2 s) for the analysis call in flight
        while left := {p for p in started["all"] if _alive(p)}:
            assert time.monotonic() < deadline, (
                f"{sig.name}: still running after 30 s: "
                f"{[(p, _cmdline(p)[:80]) for p in sorted(left)]}\n{engine.log()[-3000:]}"
            )
            time.sleep(0.1)
        assert engine.proc.wait(30) is not None
    finally:
        engine.stop(signal.SIGKILL)
        for pid in started["all"]:  # (a failed run leaves none behind)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _swallow(call: object, request: object) -> None:
    with contextlib.suppress(grpc.RpcError):  # (the engine stops under it)
        call(request, timeout=120)  # type: ignore[operator]
