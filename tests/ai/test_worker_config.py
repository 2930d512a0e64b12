"""The worker's configuration: the Celery task's reliability settings and the CLI."""

from __future__ import annotations

import pytest

from ai_workers import cli, config
from ai_workers.bots.settings import MAX_TIME_MS


def test_task_is_registered_by_name_with_late_acks_bounded_retries_and_time_limits() -> None:
    from ai_workers.celery_app import app
    from ai_workers.engine_client import TransientEngineError

    task = app.tasks[config.TASK_NAME]
    assert config.TASK_NAME == "ascension.choose_move" and config.QUEUE == "ascension.moves"
    assert task.acks_late and task.reject_on_worker_lost and task.ignore_result
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


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"WORKER_CONCURRENCY": "two"}, "WORKER_CONCURRENCY='two' is not an integer"),
        ({"WORKER_CONCURRENCY": "0"}, "WORKER_CONCURRENCY must be at least 1"),
        ({"WORKER_METRICS_PORT": "70000"}, "WORKER_METRICS_PORT must be 0..65535"),
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL must be"),
        ({"WORKER_SOFT_TIME_LIMIT": "30"}, "< WORKER_SOFT_TIME_LIMIT"),
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
