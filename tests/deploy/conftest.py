"""Fixtures of the deployment tests; constants and helpers live in deploy_support.py."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# Make deploy_support importable whatever pytest's import mode is.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import deploy_support


@pytest.fixture(scope="session")
def check_command() -> Callable[[list[str], str], None]:
    check: Callable[[list[str], str], None] = deploy_support.check_command
    return check
