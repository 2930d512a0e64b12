"""The engines' own view of their store (ascension_store_up), which the alert
AscensionRedisDown reads when no Redis exporter can: a real engine, a real redis-server that
goes away and comes back on the same port."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.deploy.deploy_support import engine_settings
from tests.reliability.redis_proc import RedisProcess
from tests.service import support


def wait_for(predicate: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"not within {seconds:g}s: {what}"
        time.sleep(0.1)


def test_the_gauge_follows_the_store_going_and_coming_back(tmp_path: Path) -> None:
    redis = RedisProcess(tmp_path / "redis").start()
    engine = support.start_engine(redis.url, ENGINE_STORE_PROBE_SECONDS="0.5")
    try:

        def up() -> float:
            return support.metric(engine, "ascension_store_up")

        wait_for(lambda: up() == 1, 30, "ascension_store_up 1 with Redis answering")
        redis.kill()
        wait_for(lambda: up() == 0, 60, "ascension_store_up 0 once Redis is gone")
        wait_for(
            lambda: "the store does not answer its health probe" in engine.log(), 10, "a warning"
        )
        redis.start()
        wait_for(lambda: up() == 1, 60, "ascension_store_up 1 once Redis is back")
        assert "the store answers its health probe again" in engine.log()
    finally:
        engine.stop()
        redis.stop()


@pytest.mark.parametrize("value", ["0", "-1"])
def test_the_probe_period_must_be_positive(value: str) -> None:
    with pytest.raises(ValueError, match="ENGINE_STORE_PROBE_SECONDS must be more than 0"):
        engine_settings({"ENGINE_STORE_PROBE_SECONDS": value})
