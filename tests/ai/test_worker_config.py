"""The worker's configuration: the Celery task's reliability settings and the CLI."""

from __future__ import annotations

import pytest

from ai_workers import cli, config
from ai_workers.bots.settings import MAX_TIME_MS


def test_task_is_registered_by_name_with_late_acks_bounded_retries_and_time_limits() -> None:
    from ai_workers.celery_app import TASK_MODULES, app
    from ai_workers.engine_client import TransientEngineError

    assert app.conf.include == TASK_MODULES  # what a worker imports as it starts
    app.loader.import_default_modules()

    task = app.tasks[config.TASK_NAME]
    assert config.TASK_NAME == "ascension.choose_move" and config.QUEUE == "ascension.moves"
    assert task.acks_late and task.ignore_result
    # a task that killed its worker is acknowledged and dead-lettered, not delivered again
    assert not task.reject_on_worker_lost and not app.conf.task_reject_on_worker_lost
    assert app.conf.task_acks_on_failure_or_timeout
    assert task.autoretry_for == (TransientEngineError,) and 0 < task.max_retries <= 5
    assert MAX_TIME_MS / 1000 < task.soft_time_limit < task.time_limit
    conf = app.conf
    assert conf.worker_prefetch_multiplier == 1 and conf.task_acks_late
    assert conf.task_default_queue == config.QUEUE
    assert conf.task_routes[config.TASK_NAME]["queue"] == config.QUEUE
    assert conf.broker_transport_options["visibility_timeout"] > task.time_limit


def test_defaults_and_environment() -> None:
    cfg = config.load({})
    assert cfg.broker_url == "redis://localhost:6379/0" and cfg.engine_address == "localhost:50051"
    assert cfg.metrics_port == 9101 and cfg.concurrency >= 1 and cfg.log_level == "INFO"
    cfg = config.load({"CELERY_BROKER_URL": "amqp://mq//", "WORKER_CONCURRENCY": "3",
                       "WORKER_METRICS_PORT": "0", "LOG_LEVEL": "debug", "WORKER_NODE_NAME": "a@%h"})  # fmt: skip
    assert (cfg.broker_url, cfg.concurrency, cfg.metrics_port, cfg.log_level) == (
        "amqp://mq//",
        3,
        0,
        "DEBUG",
    )
    assert cfg.node.startswith("a@") and "%h" not in cfg.node


def test_bad_bot_settings_and_slots_per_bot() -> None:
    cfg = config.load({"WORKER_CONCURRENCY": "4"})
    assert (cfg.decision_grace, cfg.bot_load_seconds) == (5.0, 30.0)
    assert (cfg.quarantine_failures, cfg.quarantine_seconds) == (3, 300.0)
    assert cfg.bot_slots == 3  # all but one
    assert config.load({"WORKER_CONCURRENCY": "1"}).bot_slots == 1
    cfg = config.load({"WORKER_CONCURRENCY": "4", "WORKER_SLOTS_PER_BOT": "9",
                       "WORKER_DECISION_GRACE_SECONDS": "0.5"})  # fmt: skip
    assert cfg.bot_slots == 4 and cfg.decision_grace == 0.5


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"WORKER_CONCURRENCY": "two"}, "WORKER_CONCURRENCY='two' is not an integer"),
        ({"WORKER_CONCURRENCY": "0"}, "WORKER_CONCURRENCY must be at least 1"),
        ({"WORKER_METRICS_PORT": "70000"}, "WORKER_METRICS_PORT must be 0..65535"),
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL must be"),
        ({"WORKER_SOFT_TIME_LIMIT": "30"}, "< WORKER_SOFT_TIME_LIMIT"),
        ({"WORKER_DECISION_GRACE_SECONDS": "0"}, "WORKER_DECISION_GRACE_SECONDS must be above 0"),
        ({"WORKER_DECISION_GRACE_SECONDS": "nan"}, "is not a finite number"),
        ({"WORKER_BOT_LOAD_SECONDS": "soon"}, "WORKER_BOT_LOAD_SECONDS='soon' is not a number"),
        ({"WORKER_SLOTS_PER_BOT": "-1"}, "WORKER_SLOTS_PER_BOT must be 0"),
        ({"WORKER_BOT_QUARANTINE_FAILURES": "-2"}, "WORKER_BOT_QUARANTINE_FAILURES must be 0"),
        ({"CELERY_BROKER_URL": "http://:pw@mq:5672"}, "CELERY_BROKER_URL: http:// is not a Celery broker"),
    ],
)
def test_bad_settings_are_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config.load(env)


def test_cli_sweeper_and_configuration_errors(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli.main(["sweeper"]) == 0
    assert "re-dispatched by the engine" in capsys.readouterr().out
    monkeypatch.setenv("WORKER_CONCURRENCY", "-1")
    assert cli.main(["check"]) == 2
    assert "configuration error: WORKER_CONCURRENCY" in capsys.readouterr().err


def test_check_fails_without_a_worker(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:1/0")  # nothing listens there
    assert cli.main(["check", "--timeout", "0.5"]) == 1


def test_check_without_a_broker_setting_says_so_and_probes_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in config.BROKER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    pinged: list[object] = []
    monkeypatch.setattr("celery.app.control.Control.ping", lambda *a, **k: pinged.append(a))
    assert cli.main(["check", "--timeout", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "no broker set (CELERY_BROKER_URL or CELERY_BROKER_URL_FILE)" in err
    assert "check --local" in err and not pinged


def test_run_without_a_broker_setting_says_so_and_starts_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `check`: no silent default of localhost:6379 (on a shared host, someone else's)."""
    for name in config.BROKER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    started: list[object] = []

    def run(cfg: object) -> int:
        started.append(cfg)
        return 0

    monkeypatch.setattr(cli, "run", run)
    assert cli.main(["run"]) == 2 and not started
    err = capsys.readouterr().err
    assert "ascension-worker run: no broker set (CELERY_BROKER_URL or CELERY_BROKER_URL_FILE)" in err
    assert "CELERY_BROKER_URL=redis://localhost:6379/0" in err


def test_log_lines_never_show_a_token(caplog: pytest.LogCaptureFixture) -> None:
    """Celery's pool logs message bodies at DEBUG: the worker's handlers mask token values."""
    import logging
    import weakref

    from celery import signals

    from ai_workers import celery_app

    receivers = [
        r[1]() if isinstance(r[1], weakref.ReferenceType) else r[1]
        for r in signals.after_setup_logger.receivers
    ]
    assert celery_app._redact_worker_logs in receivers  # on every handler Celery sets up
    logger = logging.getLogger("test.redaction")
    handler = logging.Handler()
    seen: list[str] = []
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logger.addHandler(handler)
    logger.propagate = False
    celery_app.install_redaction(logger)
    body = b'[[], {"game_id": "g", "token": "s3cr3t-T0ken_x", "seat": 1}, {}]'
    logger.warning("TaskPool: Apply (args:%r)", ("ascension.choose_move", body))
    logger.warning("kwargs %s", {"token": "s3cr3t-T0ken_x"})
    assert seen and all("s3cr3t" not in line for line in seen)
    assert "game_id" in seen[0] and "<redacted>" in seen[0]


def test_describe_shows_the_move_not_the_token() -> None:
    from ai_workers import runner
    from engine_service.server import dispatch

    payload = {"game_id": "g1", "seat": 1, "version": 7, "token": "s3cr3t", "attempt": 2,
               "bot": {"name": "ismcts", "seed": 3}}  # fmt: skip
    for text in (runner.describe(payload), dispatch.describe(payload)):
        assert "s3cr3t" not in text and "g1" in text and "ismcts" in text and "7" in text
    assert dispatch.task_id(payload) == "g1:7:2"


def test_a_bad_broker_url_stops_the_worker_with_exit_2() -> None:
    """The real `ascension-worker run`: one line naming the variable, not kombu's traceback."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    result = subprocess.run(
        [str(Path(sys.executable).with_name("ascension-worker")), "run"],
        env={**os.environ, "CELERY_BROKER_URL": "http://:secret-pw@mq:5672", "WORKER_METRICS_PORT": "0"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-2000:]
    (line,) = result.stderr.strip().splitlines()
    assert "CELERY_BROKER_URL" in line and "secret-pw" not in line, line


def test_a_metrics_port_in_use_stops_the_worker_saying_which() -> None:
    """Two workers on one host: the second is told to choose another port, not a traceback."""
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        port = held.getsockname()[1]
        result = subprocess.run(
            [str(Path(sys.executable).with_name("ascension-worker")), "run"],
            env={**os.environ, "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",
                 "WORKER_METRICS_PORT": str(port)},
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert result.returncode == 2, result.stderr[-2000:]
    assert f"WORKER_METRICS_PORT {port}: Address already in use; set another port" in result.stderr
