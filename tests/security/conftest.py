"""Fixtures of the security tests: a throwaway Redis of their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.service import support


@pytest.fixture(scope="session")
def security_redis() -> Iterator[str]:
    with support.redis_server() as url:
        yield url
