"""What a cut-short review costs, in one event loop, with a dispatcher that, like Celery,
returns nothing and lets the test answer each search (``SubmitAnalysis``): the searches a
cancelled review started run to their end and stay counted against the caller and the cap;
what they rate is kept; a restart of the same review waits for them instead of asking again
and goes on from what is kept; another review by the same caller waits for them; the start
rate refuses with its reason."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server import review
from engine_service.server.analysis import Analyses, AnalysisSettings
from engine_service.server.errors import ServiceError
from engine_service.server.games import Games
from engine_service.server.meta import GameMeta
from engine_service.server.metrics import Metrics
from engine_service.server.review import Reviews, ReviewSettings
from engine_service.server.tokens import AiCredentials, CredentialedDispatcher
from engine_service.store import MemoryStore
from engine_service.store.reviews import field
from tests.analysis.test_limits import Held
from tests.review.test_review_units import played

BUDGET = 100  # ms per decision
SEED = 33


async def until(predicate: Any, seconds: float = 10.0) -> None:
    """Yield to the loop until ``predicate()`` holds (bounded)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.001)


class Setup:
    def __init__(self, **review: Any) -> None:
        creds = AiCredentials.generate()
        self.held = Held()
        self.games = Games(MemoryStore(), CredentialedDispatcher(self.held, creds), Metrics(),
                           "127.0.0.1:1", None, creds)  # fmt: skip
        self.analyses = Analyses(self.games, AnalysisSettings(per_minute=0, grace_seconds=60))
        settings = {"parallel": 2, "per_minute": 0, "refusal_pause": 0.0, "budget_ms": BUDGET,
                    "max_budget_ms": BUDGET, **review}  # fmt: skip
        self.reviews = Reviews(self.analyses, ReviewSettings(**settings))
        self.answered = 0

    async def finished_game(self) -> epb.CreateGameResponse:
        """A game of two people played to its end through ``Games.submit``."""
        seats = [epb.SeatConfig(kind=pb.SeatInfo.HUMAN, name=n) for n in ("A", "B")]
        g = await self.games.create(epb.CreateGameRequest(seats=seats, seed=SEED, sets="ss"))
        s, log = played(SEED)
        assert s.over
        for version, (seat, action) in enumerate(log, start=1):
            await self.games.submit(epb.SubmitActionRequest(
                game_id=g.game_id, token=g.seat_tokens[seat], expected_version=version,
                action=action))  # fmt: skip
        return g

    async def answer(self, payload: dict[str, Any]) -> None:
        """The worker's answer to one search: its first legal action is the best."""
        legal = payload["legal"]
        reply = epb.SubmitAnalysisRequest(game_id=payload["game_id"],
                                          analysis_id=payload["analysis_id"],
                                          token=payload["token"], iterations=10)  # fmt: skip
        for i, a in enumerate(legal):
            # (visits enough to tell the actions apart: no second search of two alone)
            reply.candidates.add(action=a, visits=100 * (len(legal) - i),
                                 win_probability=0.5 - 0.01 * i)  # fmt: skip
        await self.analyses.deliver(reply)
        self.answered += 1


class Reading:
    """A ReviewGame stream read item by item, as gRPC reads a servicer's generator."""

    def __init__(self, reviews: Reviews, req: epb.ReviewGameRequest) -> None:
        self.gen: AsyncIterator[epb.DecisionReview] = reviews.review(req, None)
        self.got: list[epb.DecisionReview] = []
        self.next: asyncio.Future[epb.DecisionReview] = asyncio.ensure_future(anext(self.gen))

    async def take(self) -> epb.DecisionReview:
        r = await self.next
        self.got.append(r)
        self.next = asyncio.ensure_future(anext(self.gen))
        return r

    async def cancel(self) -> None:
        """What gRPC does when the client cancels: the pending read ends, the stream closes."""
        if not self.next.done():
            self.next.cancel()
            with pytest.raises(asyncio.CancelledError):
                await self.next
        await self.gen.aclose()  # type: ignore[attr-defined]


async def refusal(reviews: Reviews, req: epb.ReviewGameRequest) -> ServiceError:
    with pytest.raises(ServiceError) as e:
        await anext(reviews.review(req, None))
    return e.value


async def cut_short_and_restarted() -> None:
    t = Setup()
    g = await t.finished_game()
    gid, held, reviews = g.game_id, t.held, t.reviews
    mine = epb.ReviewGameRequest(game_id=gid, token=g.seat_tokens[0])

    first = Reading(reviews, mine)
    await until(lambda: len(held.sent) == 2)  # two searches at a time
    await first.cancel()
    await asyncio.sleep(0.05)
    # Cancelled: no search more is asked; the two asked still count, against the caller too.
    assert len(held.sent) == 2
    assert reviews.reserved_ms() == 2 * BUDGET
    versions = [p["version"] for p in held.sent]

    # The same review again takes them over: it asks nothing new while they run...
    second = Reading(reviews, mine)
    # (until it has taken the flight over: an answer before that is read from the store)
    await until(lambda: all(f.open for fs in reviews._flights.values() for f in fs))
    assert len(held.sent) == 2
    await t.answer(held.sent[0])
    r = await second.take()
    assert (r.version, r.index, r.stored) == (versions[0], 1, False)
    await until(lambda: len(held.sent) == 3)  # ...and goes on two at a time
    await second.cancel()
    for p in held.sent[1:]:
        await t.answer(p)
    await until(lambda: reviews.reserved_ms() == 0 and not reviews._flights)
    # What they rated after the cancel is kept.
    versions = [p["version"] for p in held.sent]
    kept = await reviews.store.get(gid, [field(0, v) for v in versions])
    assert sorted(kept) == sorted(field(0, v) for v in versions)

    # Once more: those three come from the store; only the rest is searched.
    third = Reading(reviews, mine)
    for _ in range(3):
        assert (await third.take()).stored
    await until(lambda: len(held.sent) == 5)
    assert [p["version"] for p in held.sent[:3]] == versions
    assert not {p["version"] for p in held.sent[3:]} & set(versions)
    await third.cancel()
    for p in held.sent[3:]:
        await t.answer(p)
    await until(lambda: not reviews._flights)
    assert t.answered == len(held.sent) == 5  # each search asked once, whatever the cancels


async def another_review_waits() -> None:
    """The admin token (one caller) reviews seat 0, cuts it short, asks for seat 1: refused
    while seat 0's searches run, admitted once they end."""
    t = Setup()
    g = await t.finished_game()
    seat0 = epb.ReviewGameRequest(game_id=g.game_id, token=g.admin_token, seat=0)
    seat1 = epb.ReviewGameRequest(game_id=g.game_id, token=g.admin_token, seat=1)
    first = Reading(t.reviews, seat0)
    await until(lambda: len(t.held.sent) == 2)
    await first.cancel()
    busy = await refusal(t.reviews, seat1)
    assert (busy.reason, busy.metadata["limit"]) == ("REVIEW_IN_PROGRESS", "ENGINE_REVIEW_PER_CALLER")
    assert "cut short counts until the searches it started have ended" in busy.message
    for p in t.held.sent[:2]:
        await t.answer(p)
    await until(lambda: not t.reviews._flights)
    other = Reading(t.reviews, seat1)
    await until(lambda: len(t.held.sent) == 4)
    assert {p["seat"] for p in t.held.sent[2:]} == {1}
    await other.cancel()


async def the_capacity_counts_cancelled_searches() -> None:
    """Seat 0's cancelled searches still hold their part of ENGINE_REVIEW_MAX_TOTAL_MS."""
    s, log = played(SEED)
    meta = GameMeta("ss", 2, SEED, (), ("", ""), "", 0)
    counts = [len(review.decisions(meta, log, seat, s) or ()) for seat in (0, 1)]
    small, large = sorted((0, 1), key=lambda seat: counts[seat])
    # a cap that the larger review fits in, but not beside two searches still running
    t = Setup(max_total_ms=(counts[large] + 1) * BUDGET)
    g = await t.finished_game()
    first = Reading(t.reviews, epb.ReviewGameRequest(game_id=g.game_id, token=g.seat_tokens[small]))
    second = epb.ReviewGameRequest(game_id=g.game_id, token=g.seat_tokens[large])
    await until(lambda: len(t.held.sent) == 2)
    await first.cancel()
    full = await refusal(t.reviews, second)
    assert (full.reason, full.metadata["limit"]) == ("REVIEW_CAPACITY", "ENGINE_REVIEW_MAX_TOTAL_MS")
    await t.answer(t.held.sent[0])
    await until(lambda: t.reviews.reserved_ms() == BUDGET)
    admitted = Reading(t.reviews, second)
    await until(lambda: len(t.held.sent) == 4)
    await admitted.cancel()


async def start_rate() -> None:
    t = Setup(per_minute=2, refusal_pause=0.2)
    g = await t.finished_game()
    req = epb.ReviewGameRequest(game_id=g.game_id, token=g.seat_tokens[1])
    for _ in range(2):
        r = Reading(t.reviews, req)
        await until(lambda: len(t.held.sent) >= 2)
        await r.cancel()
        for p in t.held.sent:
            await t.answer(p)
        t.held.sent.clear()
        await until(lambda: not t.reviews._flights)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    limited = await refusal(t.reviews, req)
    assert loop.time() - t0 >= 0.2  # answered after the pause
    assert (limited.code.value, limited.reason) == ("RESOURCE_EXHAUSTED", "RATE_LIMITED")
    assert limited.metadata["limit"] == "ENGINE_REVIEW_PER_MINUTE"
    assert limited.metadata["peer"] == f"{g.game_id}/1"
    assert "ENGINE_REVIEW_PER_MINUTE" in limited.message and limited.retry_after
    assert not t.held.sent  # refused before anything was searched
    # another caller has its own count
    other = Reading(t.reviews, epb.ReviewGameRequest(game_id=g.game_id, token=g.seat_tokens[0]))
    await until(lambda: len(t.held.sent) == 2)
    await other.cancel()


def test_a_cut_short_review_is_kept_and_a_restart_goes_on_from_it() -> None:
    asyncio.run(cut_short_and_restarted())


def test_the_callers_other_review_waits_for_the_searches_of_the_one_cut_short() -> None:
    asyncio.run(another_review_waits())


def test_the_cap_counts_the_searches_of_a_review_cut_short() -> None:
    asyncio.run(the_capacity_counts_cancelled_searches())


def test_review_starts_have_a_rate_per_caller() -> None:
    asyncio.run(start_rate())
