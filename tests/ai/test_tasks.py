"""The move task's dead letters, driven directly: what the main worker process does when a
task's pool process died or the task hit its hard time limit (the real thing, a bot killing
its worker process, is in tests/reliability/test_bad_bots.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from celery.exceptions import TimeLimitExceeded, WorkerLostError

from ai_workers import config, handoff, metrics, runner, slots, tasks
from tests.service.support import redis_server


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[dict[str, Any], str]]:
    """What the handler publishes (no broker here), and a node directory of its own."""
    monkeypatch.setenv(slots.STATE_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(tasks, "starts", handoff.Starts(Celery(broker="memory://"), 60))
    out: list[tuple[dict[str, Any], str]] = []
    monkeypatch.setattr(
        tasks, "publish", lambda payload, task_id, countdown=0.0: out.append((payload, task_id))
    )
    return out


def payload(**extra: Any) -> dict[str, Any]:
    return {"game_id": "g1", "seat": 1, "version": 12, "token": "ai1.secret", "attempt": 1,
            "bot": {"name": "stubborn", "time_ms": 200}, **extra}  # fmt: skip


@pytest.mark.parametrize(
    ("exception", "reason"),
    [(TimeLimitExceeded(90), "time_limit"), (WorkerLostError("signal 9"), "worker_lost")],
)
def test_a_lost_or_hard_limited_task_is_dead_lettered_and_its_fallback_sent(
    sent: list[tuple[dict[str, Any], str]],
    caplog: pytest.LogCaptureFixture,
    exception: BaseException,
    reason: str,
) -> None:
    before = metrics.dead_letters.labels(reason)._value.get()
    with caplog.at_level(logging.WARNING, logger="ascension.worker.tasks"):
        tasks._on_failure(sender=tasks.choose_move, task_id="g1:12:1", exception=exception,
                          kwargs=payload())  # fmt: skip
    assert metrics.dead_letters.labels(reason)._value.get() == before + 1
    assert sent == [({**payload(), "fallback_only": True}, "g1:12:1:fallback")]
    (line,) = [r.getMessage() for r in caplog.records]
    assert f"dead-lettered ({reason})" in line and "'stubborn'" in line and "secret" not in line
    assert runner.bot_records().record("stubborn").failures == 1  # counts towards quarantine


def test_a_lost_fallback_is_not_sent_again(sent: list[tuple[dict[str, Any], str]]) -> None:
    tasks._on_failure(sender=tasks.choose_move, task_id="g1:12:1:fallback",
                      exception=WorkerLostError("signal 9"), kwargs=payload(fallback_only=True))  # fmt: skip
    assert sent == []  # the engine's backstop plays it after its re-dispatches


def test_an_ordinary_failure_is_not_a_dead_letter(sent: list[tuple[dict[str, Any], str]]) -> None:
    before = metrics.task_failures._value.get()
    tasks._on_failure(sender=tasks.choose_move, task_id="g1:12:1", exception=RuntimeError("x"),
                      kwargs=payload())  # fmt: skip
    assert sent == [] and metrics.task_failures._value.get() == before + 1


def test_retries_and_deferrals_show_no_token_in_their_headers() -> None:
    headers: dict[str, Any] = {"kwargsrepr": "{'token': 'ai1.secret'}", "argsrepr": "()"}
    tasks._redact_headers(sender=config.TASK_NAME, body=((), payload(), {}), headers=headers)
    assert "secret" not in headers["kwargsrepr"] and "g1" in headers["kwargsrepr"]


def test_a_move_of_a_bot_at_its_cap_is_deferred(
    sent: list[tuple[dict[str, Any], str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    def busy(**_: Any) -> str:
        raise runner.BotBusy("stubborn", 1)

    monkeypatch.setattr(runner, "play_move", busy)
    before = metrics.outcomes.labels(runner.DEFERRED)._value.get()
    assert tasks.choose_move(**payload()) == runner.DEFERRED
    assert [p for p, _ in sent] == [payload()]  # sent back to the queue, as it came
    assert metrics.outcomes.labels(runner.DEFERRED)._value.get() == before + 1


def test_a_move_is_marked_started_while_it_runs_in_the_brokers_redis() -> None:
    """What tells a move handed back on a clean shutdown (never started: played as usual) from
    one whose worker died deciding it (started, never finished: dead-lettered)."""
    with redis_server() as url:
        starts = handoff.Starts(Celery(broker=url, set_as_current=False), 60)
        assert starts.started("g1:12:1") is False
        with starts.running("g1:12:1"):
            assert starts.started("g1:12:1") is True
            ttl = redis.Redis.from_url(url).ttl(handoff.PREFIX + "g1:12:1")
            assert 0 < ttl <= 60
        assert starts.started("g1:12:1") is False
        with pytest.raises(RuntimeError), starts.running("g1:12:2"):  # however it ends
            raise RuntimeError("boom")
        assert starts.started("g1:12:2") is False
    # another broker, or none answering: it cannot be told (the move is dead-lettered)
    assert handoff.Starts(Celery(broker="memory://"), 60).started("g1:12:1") is None


def test_a_move_delivered_again_is_dead_lettered_only_if_it_had_started(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(slots.STATE_DIR_ENV, str(tmp_path))
    played: list[dict[str, Any]] = []

    def play(**p: Any) -> str:
        played.append(p)
        return runner.PLAYED

    monkeypatch.setattr(runner, "play_move", play)
    with redis_server() as url:
        monkeypatch.setattr(tasks, "starts", handoff.Starts(Celery(broker=url), 60))
        before = metrics.dead_letters.labels(tasks.REDELIVERED)._value.get()
        for task_id, started in (("g1:12:1", False), ("g1:12:2", True)):
            if started:  # a worker died deciding it: its mark is still there
                redis.Redis.from_url(url).set(handoff.PREFIX + task_id, "1")
            tasks.choose_move.push_request(id=task_id, delivery_info={"redelivered": True})
            try:
                tasks.choose_move(**payload())
            finally:
                tasks.choose_move.pop_request()
    handed_back, poison = played
    assert "fallback_only" not in handed_back  # handed back on a clean stop: played as usual
    assert poison["fallback_only"] is True  # the fallback plays, the bot is not asked again
    assert metrics.dead_letters.labels(tasks.REDELIVERED)._value.get() == before + 1
