"""The bot host: bot code runs in a supervised process with a deadline (ai_workers/supervisor.py).

Bots that hang, swallow every signal and exception, exit their process, never load, or print
on stdout are answered with ``BotFailed`` within their allowance (generous bounds below: the
point is that a bot sleeping an hour does not take an hour), and the host is replaced.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ai_workers import supervisor
from ai_workers.bots import BotSettings
from ai_workers.bots.decide import LOAD_FAILED
from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import best_action
from engine_service import rules
from tests.ai.bad_bots import install_entry_points
from tests.ai.positions import play_until

ROOT = Path(__file__).resolve().parents[2]
SLACK = 15.0  # process start and a loaded machine: far below what a hanging bot would take


@pytest.fixture(scope="module")
def position() -> tuple[rules.View, bytes, list[int]]:
    s = play_until("ss", 3, 6)
    view = rules.view(s, s.to_move())
    return view, view.serialize(), rules.legal_actions(s)


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[supervisor.BotHost]:
    plugins = install_entry_points(tmp_path / "plugins")
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{plugins}")
    h = supervisor.BotHost(load_seconds=20.0)
    yield h
    h.close()


def settings(name: str, time_ms: int = 200) -> dict[str, object]:
    return BotSettings(name=name, time_ms=time_ms, seed=1).to_payload()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_healthy_bot_answers_and_its_host_is_reused(
    host: supervisor.BotHost, position: tuple[rules.View, bytes, list[int]]
) -> None:
    _view, raw, legal = position
    first = host.choose(settings("heuristic"), raw, legal, 10.0)
    pid = host.pid
    second = host.choose(settings("heuristic"), raw, legal, 10.0)
    assert first.action in legal and second.action == first.action and not first.fallback
    assert host.pid == pid and host.started == 1


@pytest.mark.parametrize("bot", ["sleeper", "stubborn"])
def test_a_bot_past_its_deadline_is_killed(
    host: supervisor.BotHost, position: tuple[rules.View, bytes, list[int]], bot: str
) -> None:
    _view, raw, legal = position
    host.choose(settings("heuristic"), raw, legal, 10.0)  # a warm host
    pid = host.pid
    assert pid is not None
    start = time.monotonic()
    with pytest.raises(supervisor.BotFailed) as e:
        host.choose(settings(bot), raw, legal, 1.0)
    assert e.value.reason == supervisor.DEADLINE
    assert time.monotonic() - start < 1.0 + SLACK
    assert host.pid is None and not alive(pid)  # SIGKILL: ignored signals do not matter
    assert host.choose(settings("heuristic"), raw, legal, 10.0).action in legal
    assert host.started == 2  # a fresh host for the next decision


def test_a_bot_that_exits_its_process(
    host: supervisor.BotHost, position: tuple[rules.View, bytes, list[int]]
) -> None:
    _view, raw, legal = position
    with pytest.raises(supervisor.BotFailed) as e:
        host.choose(settings("exiter"), raw, legal, 30.0)
    assert e.value.reason == supervisor.BOT_DIED and "status 3" in e.value.detail
    assert host.choose(settings("random"), raw, legal, 10.0).action in legal


def test_a_bot_that_never_loads(
    host: supervisor.BotHost, position: tuple[rules.View, bytes, list[int]]
) -> None:
    _view, raw, legal = position
    host.load_seconds = 2.0
    start = time.monotonic()
    with pytest.raises(supervisor.BotFailed) as e:
        host.choose(settings("slow-load"), raw, legal, 10.0)
    assert e.value.reason == supervisor.LOAD_TIMEOUT
    assert time.monotonic() - start < 2.0 + SLACK


def test_an_unknown_bot_fails_to_load_without_killing_the_host(
    host: supervisor.BotHost, position: tuple[rules.View, bytes, list[int]]
) -> None:
    _view, raw, legal = position
    with pytest.raises(supervisor.BotFailed) as e:
        host.choose(settings("no-such-bot"), raw, legal, 10.0)
    assert e.value.reason == LOAD_FAILED and "UnknownBotError" in e.value.detail
    assert host.pid is not None and host.started == 1


def test_what_a_bot_prints_does_not_reach_the_protocol(
    host: supervisor.BotHost, position: tuple[rules.View, bytes, list[int]]
) -> None:
    _view, raw, legal = position
    assert host.choose(settings("chatty"), raw, legal, 10.0).action == legal[-1]
    assert host.choose(settings("chatty"), raw, legal, 10.0).action == legal[-1]
    assert host.started == 1


def test_supervised_decide_plays_the_heuristic_fallback_and_warns(
    host: supervisor.BotHost,
    position: tuple[rules.View, bytes, list[int]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    view, raw, legal = position
    s = BotSettings(name="sleeper", time_ms=300, seed=1)
    with caplog.at_level(logging.WARNING, logger="ascension.worker.decide"):
        d = supervisor.supervised_decide(
            view, raw, legal, s, host, grace=0.5, where="game g seat 0 v9"
        )
    assert d.fallback == supervisor.DEADLINE
    assert d.action == best_action(view.state, legal, knowledge(view.state.T))
    assert d.seconds < 0.8 + SLACK
    (record,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "sleeper" in record.getMessage() and "game g seat 0 v9" in record.getMessage()
    assert "budget 0.3s + grace 0.5s" in record.getMessage()


def test_the_host_dies_with_its_parent(tmp_path: Path) -> None:
    """A worker process lost mid-decision (kill -9) leaves no bot running."""
    plugins = install_entry_points(tmp_path / "plugins")
    script = (
        "import sys, os\n"
        "from ai_workers import supervisor\n"
        "from tests.ai.positions import play_until\n"
        "from engine_service import rules\n"
        "s = play_until('ss', 3, 6); v = rules.view(s, s.to_move())\n"
        "h = supervisor.BotHost(20.0)\n"
        "h.choose({'name': 'random', 'iterations': 0, 'time_ms': 0, 'seed': 0, 'exploration': 0.3},"
        " v.serialize(), rules.legal_actions(s), 10.0)\n"
        "print(h.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{plugins}"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=60, cwd=ROOT)  # fmt: skip
    pid = int(out.stdout.split()[-1])
    deadline = time.monotonic() + SLACK
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid)


def test_the_worker_metrics_count_the_bot_hosts_with_the_pool(tmp_path: Path) -> None:
    """The searching happens in the bot hosts: their CPU and memory are the pool's."""
    from ai_workers.metrics import PoolCollector

    script = (
        "import time\n"
        "from ai_workers import supervisor\n"
        "from tests.ai.positions import play_until\n"
        "from engine_service import rules\n"
        "s = play_until('ss', 3, 6); v = rules.view(s, s.to_move())\n"
        "h = supervisor.BotHost(20.0)\n"
        "h.choose({'name': 'random', 'iterations': 0, 'time_ms': 0, 'seed': 0, 'exploration': 0.3},"
        " v.serialize(), rules.legal_actions(s), 10.0)\n"
        "print(h.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    pool = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    try:
        assert pool.stdout is not None
        host_pid = int(pool.stdout.readline())

        def rss(pid: int) -> int:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return int(fields[21]) * os.sysconf("SC_PAGE_SIZE")

        samples = {f.name: f.samples[0].value for f in PoolCollector(os.getpid()).collect()}
        assert samples["ascension_worker_pool_processes"] >= 1
        assert (
            samples["ascension_worker_pool_resident_memory_bytes"]
            >= rss(host_pid) + rss(pool.pid) * 0.5
        )
    finally:
        pool.kill()
        pool.wait()


def test_the_bot_host_does_not_inherit_the_workers_secrets(
    host: supervisor.BotHost,
    position: tuple[rules.View, bytes, list[int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _view, raw, legal = position
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://:hunter2@broker:6379/0")
    monkeypatch.setenv("SOME_API_KEY", "k")
    monkeypatch.setenv("DB_PASSWORD", "p")
    assert host.choose(settings("snoop"), raw, legal, 10.0).action == legal[0]


def test_a_bot_installed_after_its_bot_process_started_is_found(
    position: tuple[rules.View, bytes, list[int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the worker's start line says: a bot installed later is found when first asked
    for, without a restart (the bot process reads the entry points again, then a new bot
    process is tried: an editable install's path is read only when a process starts)."""
    _, raw, legal = position
    later = tmp_path / "later"
    later.mkdir()
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{later}")
    h = supervisor.BotHost(load_seconds=20.0)
    try:
        assert h.choose(settings("heuristic"), raw, legal, SLACK).action in legal
        first = h.pid
        install_entry_points(later, {"late-comer": "tests.ai.bad_bots:Chatty"})
        answer = h.choose(settings("late-comer"), raw, legal, SLACK)
        assert answer.action == legal[-1] and not answer.fallback  # Chatty's own answer
        assert h.pid == first  # found by the same bot process
    finally:
        h.close()
