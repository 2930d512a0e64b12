"""Fixtures of the service tests: a real Redis and real ``ascension-engine serve`` processes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from tests.service import support


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A real Redis for the whole session. testcontainers starts one when a Docker engine
    answers; this machine (and CI) has none, so the fallback starts its own ``redis-server``
    on a free port with persistence off, so that no test touches a Redis it does not own."""
    with support.redis_server() as url:
        yield url


@pytest.fixture(scope="session")
def engine(redis_url: str) -> Iterator[support.Engine]:
    """The engine on Redis (the production setup), shared by the tests that do not stop it."""
    e = support.start_engine(redis_url)
    yield e
    e.stop()


@pytest.fixture(scope="session")
def stub(engine: support.Engine) -> rpc.EngineStub:
    return engine.stub()


@pytest.fixture(scope="session")
def memory_engine() -> Iterator[support.Engine]:
    """The embedded default: no REDIS_URL, games kept in the server process."""
    e = support.start_engine()
    yield e
    e.stop()
