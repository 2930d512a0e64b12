"""The limits of ReviewGame on a real engine: one review in flight per caller, a cap on the
search time the reviews in flight still need, a review too large for the cap refused at once,
the slot given back once the searches of a cancelled review have ended, and the start rate per
caller (counted in the engine's metrics)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from clients.sdk import Client, InvalidArgumentError, RateLimitedError, ResourceExhaustedError
from engine_service import rules
from engine_service.server import review
from engine_service.server.meta import GameMeta
from tests.review.support import play
from tests.service import support

BUDGET_MS = 300  # per decision: searches that take their time (no iteration cap)
TOTAL_MS = 3000  # the cap of the search time reviews in flight may still need: 10 decisions


@pytest.fixture(scope="module")
def engine() -> Iterator[support.Engine]:
    e = support.start_engine(
        ENGINE_AI_DISPATCH="local",
        ENGINE_LOCAL_AI_PROCESSES="1",
        ENGINE_ANALYSIS_GRACE_SECONDS="20",
        ENGINE_REVIEW_MAX_BUDGET_MS=str(BUDGET_MS),
        ENGINE_REVIEW_BUDGET_MS=str(BUDGET_MS),
        ENGINE_REVIEW_MAX_TOTAL_MS=str(TOTAL_MS),
        ENGINE_REVIEW_PARALLEL="1",
    )
    yield e
    e.stop()


def decisions_of(
    seed: int, log: list[tuple[int, int]], s: rules.State, seat: int
) -> list[review.Decision]:
    found = review.decisions(GameMeta("ss", 2, seed, (), ("", ""), "", 0), log, seat, s)
    assert found is not None
    return found


def admitted(client: Client, game_id: str, token: str, seconds: float = 10.0) -> bool:
    """Whether a review is let in within ``seconds`` (asked again while refused as busy)."""
    deadline = time.monotonic() + seconds
    while True:
        reviews = client.review(game_id, token)
        try:
            next(reviews)
            return True
        except ResourceExhaustedError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        finally:
            reviews.close()


def test_one_review_per_caller_and_a_cap_on_their_search_time(engine: support.Engine) -> None:
    with Client(engine.address, timeout=60.0) as c:
        g, s, log = play(c, 31, turns=6)
        counts = [len(decisions_of(31, log, s, seat)) for seat in (0, 1)]
        assert all(6 <= n <= 10 for n in counts), counts  # each fits the cap, not both
        gid = g.game_id
        running = c.review(gid, g.token(0))
        first = next(running)  # rated: the review is in flight, its other decisions to come
        assert (first.budget_ms, first.total) == (BUDGET_MS, counts[0])
        with pytest.raises(ResourceExhaustedError) as busy:
            next(c.review(gid, g.token(0)))
        assert busy.value.reason == "REVIEW_IN_PROGRESS"
        assert busy.value.metadata["limit"] == "ENGINE_REVIEW_PER_CALLER"
        # another caller: its review would pass the cap with the one in flight
        with pytest.raises(ResourceExhaustedError) as full:
            next(c.review(gid, g.token(1)))
        assert full.value.reason == "REVIEW_CAPACITY"
        assert "ENGINE_REVIEW_MAX_TOTAL_MS" in full.value.message
        running.close()  # cancelled: its slot and search time are given back as its search ends
        assert admitted(c, gid, g.token(1))
        assert admitted(c, gid, g.token(0))


def test_a_review_larger_than_the_cap_is_refused_at_once(engine: support.Engine) -> None:
    with Client(engine.address, timeout=60.0) as c:
        g, s, log = play(c, 32, turns=16)
        assert len(decisions_of(32, log, s, 0)) * BUDGET_MS > TOTAL_MS
        t0 = time.monotonic()
        with pytest.raises(InvalidArgumentError) as big:
            next(c.review(g.game_id, g.token(0)))
        assert time.monotonic() - t0 < 10
    assert big.value.metadata["field"] == "budget_ms"
    assert "ENGINE_REVIEW_MAX_TOTAL_MS" in big.value.message


def test_review_starts_have_a_rate_per_caller() -> None:
    e = support.start_engine(ENGINE_AI_DISPATCH="local", ENGINE_ANALYSIS_GRACE_SECONDS="20",
                             ENGINE_REVIEW_PER_MINUTE="2", ENGINE_REFUSAL_PAUSE_SECONDS="0.5",
                             ENGINE_ANALYSIS_MAX_ITERATIONS="50")  # fmt: skip
    try:
        with Client(e.address, timeout=60.0) as c:
            g, _, _ = play(c, 33, turns=2)
            for _ in range(2):
                assert list(c.review(g.game_id, g.token(0)))
            t0 = time.monotonic()
            with pytest.raises(RateLimitedError) as limited:
                list(c.review(g.game_id, g.token(0)))
            waited = time.monotonic() - t0
            assert list(c.review(g.game_id, g.token(1)))  # another caller, its own count
        name = 'ascension_limit_refusals_total{limit="ENGINE_REVIEW_PER_MINUTE",reason="RATE_LIMITED"}'
        assert support.metric(e, name) == 1
    finally:
        e.stop()
    assert limited.value.reason == "RATE_LIMITED"
    assert limited.value.metadata["limit"] == "ENGINE_REVIEW_PER_MINUTE"
    assert "ENGINE_REVIEW_PER_MINUTE" in limited.value.message
    assert waited >= 0.5  # answered after the pause: a client asking again at once waits too
