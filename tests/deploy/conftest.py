"""Fixtures of the deployment tests; constants and helpers live in deploy_support.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.deploy import deploy_support


@pytest.fixture(scope="session")
def check_command() -> Callable[[list[str], str], None]:
    check: Callable[[list[str], str], None] = deploy_support.check_command
    return check
