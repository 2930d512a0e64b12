"""Hostile input, in CI: hypothesis over every request message of the Engine API and raw bytes
to every method (tests/security/fuzzing.py says what is checked). A few thousand cases,
deterministic (derandomized); benchmarks/fuzz.py runs longer and at random."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.security.fuzzing import METHODS, Checker, Harness, Known, raw_bytes, request

CASES = {"WatchGame": 80}  # a watch of a live game waits out its short deadline
DEFAULT_CASES = 220
RAW_CASES = 90


@pytest.fixture(scope="module")
def checker() -> Iterator[Checker]:
    with Harness() as h:
        c = Checker(h, Known())
        c.setup()
        yield c
        assert not list(c.all_replay())
        assert not h.logs.problems()


def _settings(n: int) -> settings:
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


@pytest.mark.parametrize("method", sorted(METHODS))
def test_fuzzed_messages(checker: Checker, method: str) -> None:
    @_settings(CASES.get(method, DEFAULT_CASES))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        checker.call(method, data.draw(request(method, checker.known)))

    run()
    assert not list(checker.all_replay())


@pytest.mark.parametrize("method", sorted(METHODS))
def test_raw_bytes(checker: Checker, method: str) -> None:
    @_settings(RAW_CASES if method != "WatchGame" else 40)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        checker.call_raw(method, data.draw(raw_bytes(method, checker.known)))

    run()


def test_the_fuzz_reached_past_the_first_checks(checker: Checker) -> None:
    """The cases were not all refused at the door: some were accepted, some refused deep."""
    assert checker.cases >= 2000, checker.cases
    for code in ("OK", "INVALID_ARGUMENT", "NOT_FOUND", "UNAUTHENTICATED", "FAILED_PRECONDITION"):
        assert checker.answers.get(code, 0) > 0, checker.answers
