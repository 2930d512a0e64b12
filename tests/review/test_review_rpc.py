"""ReviewGame on a real engine process (embedded store, the local AI pool), through the SDK:
what a review holds, that it equals the ratings of the same positions with every hidden card
dealt again, that it is kept, and who may ask for it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import grpc  # type: ignore[import-untyped]
import pytest

from ai_workers.bots.ismcts import ISMCTSBot, analyse
from ai_workers.bots.settings import BotSettings
from clients.sdk import (
    AsyncClient,
    Client,
    DecisionReview,
    GameNotFoundError,
    GameNotOverError,
    InvalidArgumentError,
    PermissionDeniedError,
    ReviewLabel,
    UnauthenticatedError,
    human,
)
from clients.sdk.errors import IllegalActionError
from engine_service import rules
from engine_service.server import review
from engine_service.server.meta import GameMeta
from tests.ai.test_hidden_information import differs_in_hidden_cards, other_deal
from tests.review.support import ITERATIONS, play, states_of
from tests.review.test_review_units import rating
from tests.service import support

CAP_MS = 5000  # the engine's cap: searches end at ITERATIONS long before it
OPERATOR_KEY = "review-tests-operator-key-0123456789"


@pytest.fixture(scope="module")
def engine() -> Iterator[support.Engine]:
    e = support.start_engine(
        ENGINE_AI_DISPATCH="local",
        ENGINE_LOCAL_AI_PROCESSES="2",
        ENGINE_LOCAL_ANALYSIS_PROCESSES="2",
        ENGINE_ANALYSIS_MAX_ITERATIONS=str(ITERATIONS),
        ENGINE_ANALYSIS_GRACE_SECONDS="20",  # a cold pool on a busy machine
        ENGINE_REVIEW_MAX_BUDGET_MS=str(CAP_MS),
        ENGINE_OPERATOR_KEYS=OPERATOR_KEY,
        ENGINE_PUBLIC_CREATE="1",
    )
    yield e
    e.stop()


@pytest.fixture()
def client(engine: support.Engine) -> Iterator[Client]:
    with Client(engine.address, timeout=60.0) as c:
        yield c


def content(r: DecisionReview) -> tuple[object, ...]:
    """A review but for whether it came from the store."""
    return (r.version, r.turn, r.seat, r.action, r.description, r.best_action,
            r.best_description, r.win_probability, r.best_win_probability, r.label,
            r.win_probabilities, r.index, r.total, r.iterations)  # fmt: skip


def test_a_seat_reviews_its_past_decisions_as_it_saw_them(client: Client) -> None:
    g, s, log = play(client, 21, sets="both", turns=6)
    assert not s.over
    got = list(client.review(g.game_id, g.token(0), budget_ms=2 * CAP_MS))
    meta = GameMeta("both", 2, 21, (), ("", ""), "", 0)
    expected = review.decisions(meta, log, 0, s)
    assert expected is not None and len(expected) >= 5
    assert [r.version for r in got] == [d.version for d in expected]
    assert [(r.index, r.total) for r in got] == [(i + 1, len(got)) for i in range(len(got))]
    for r, d in zip(got, expected, strict=True):
        assert (r.seat, r.turn, r.action) == (0, d.turn, d.action)
        assert r.description == d.descriptions[d.action]
        assert r.best_action in d.legal and r.best_description == d.descriptions[r.best_action]
        assert (
            0.0 <= r.win_probability <= r.best_win_probability <= 1.0 or r.label == ReviewLabel.BEST
        )
        assert len(r.win_probabilities) == 2 and r.win_probabilities[0] == r.win_probability
        assert (r.budget_ms, r.stored) == (CAP_MS, False)
        assert r.iterations in (ITERATIONS, 2 * ITERATIONS)  # (2: searched again, two alone)
        # BEST: the search's choice, or a drop within its noise (2 SE of the difference)
        noise = 2 * (r.standard_error**2 + r.best_standard_error**2) ** 0.5
        assert (r.label == ReviewLabel.BEST) == (not r.differs or r.drop <= noise) or r.explanation
        assert r.worse or r.label in (ReviewLabel.BEST, ReviewLabel.GOOD)
        assert bool(r.explanation) >= (r.label in (ReviewLabel.MISTAKE, ReviewLabel.BLUNDER))
        assert len(r.options) == len(d.legal) and r.options[0].action == r.best_action

    # Each decision rated again here, from the same position with every card the seat could
    # not see dealt again: the same review.
    states = states_of(21, log, "both")
    redealt = 0
    for i, (r, d) in enumerate(zip(got, expected, strict=True)):
        alt = other_deal(states[d.version], 0, i)
        redealt += differs_in_hidden_cards(states[d.version], alt, 0)
        here = rating(alt, d)
        assert (here.action, here.best_action, here.label) == (
            r.action,
            r.best_action,
            r.label.value,
        )
        assert here.win_probability == pytest.approx(r.win_probability, abs=1e-12)
        assert here.best_win_probability == pytest.approx(r.best_win_probability, abs=1e-12)
        assert list(here.win_probabilities) == pytest.approx(list(r.win_probabilities), abs=1e-12)
    assert redealt >= len(got) // 2  # (early on, the hidden cards may all be alike)


def test_asking_again_is_answered_from_the_store(client: Client) -> None:
    g, _, log = play(client, 22, turns=4)
    first = list(client.review(g.game_id, g.token(1), budget_ms=300))
    assert first and not any(r.stored for r in first) and first[0].budget_ms == 300
    assert all(r.view is None for r in first)
    # a smaller budget too; and the boards the seat saw then, with its legal actions
    again = list(client.review(g.game_id, g.token(1), budget_ms=200, with_views=True))
    assert all(r.stored for r in again) and [content(r) for r in again] == [
        content(r) for r in first
    ]
    states = states_of(22, log)
    for r in again:
        assert r.view is not None and (r.view.version, r.view.seat) == (r.version, 1)
        assert {r.action, r.best_action} <= {a.id for a in r.view.legal_actions}
        mine = next(x for x in r.view.board.seats if x.seat == 1)
        assert sorted(mine.hand) == sorted(states[r.version].hands[1])
        assert not r.view.rules_view
    # A larger budget rates the decisions again (and keeps those instead)
    larger = list(client.review(g.game_id, g.token(1), seat=1, budget_ms=600))
    assert not any(r.stored for r in larger) and {r.budget_ms for r in larger} == {600}
    assert all(r.stored for r in client.review(g.game_id, g.token(1), budget_ms=600))


def test_the_async_client_streams_the_same_review(engine: support.Engine, client: Client) -> None:
    g, _, _ = play(client, 23, turns=3)
    sync = [content(r) for r in client.review(g.game_id, g.token(0), budget_ms=100)]

    async def main() -> list[tuple[object, ...]]:
        async with AsyncClient(engine.address) as c:
            return [content(r) async for r in c.review(g.game_id, g.token(0), budget_ms=100)]

    assert asyncio.run(main()) == sync and sync


def first_of(client: Client, *args: object, **kwargs: object) -> DecisionReview:
    """The first decision of a review (the rest is cancelled)."""
    reviews = client.review(*args, **kwargs)  # type: ignore[arg-type]
    try:
        return next(reviews)
    finally:
        reviews.close()


def test_who_may_review_what(engine: support.Engine, client: Client) -> None:
    g, _, _ = play(client, 24, turns=3)
    gid = g.game_id
    with pytest.raises(PermissionDeniedError) as denied:
        first_of(client, gid, g.token(0), seat=1)
    assert denied.value.reason == "REVIEW_OTHER_SEAT" and denied.value.metadata["seat"] == "0"
    # during the game, neither the admin token nor an operator reviews anyone
    with pytest.raises(GameNotOverError) as early:
        first_of(client, gid, g.admin_token, seat=0)
    assert "once the game is over" in early.value.message
    with Client(engine.address, operator_key=OPERATOR_KEY) as op, pytest.raises(GameNotOverError):
        first_of(op, gid, seat=1)
    with pytest.raises(UnauthenticatedError) as anonymous:
        first_of(client, gid)
    assert anonymous.value.reason == "TOKEN_REQUIRED"
    with pytest.raises(UnauthenticatedError) as unknown:
        first_of(client, gid, "x" * 43)
    assert unknown.value.reason == "UNKNOWN_TOKEN"
    with pytest.raises(InvalidArgumentError) as seat:
        first_of(client, gid, g.token(0), seat=2)
    assert seat.value.metadata["field"] == "seat"
    with pytest.raises(InvalidArgumentError) as budget:
        first_of(client, gid, g.token(0), budget_ms=-1)
    assert budget.value.metadata["field"] == "budget_ms"

    # Once it is over: the admin token and an operator key review any seat (which one must
    # be said), a seat token its own by default
    g, s, _ = play(client, 24)
    assert s.over
    gid = g.game_id
    assert first_of(client, gid, g.admin_token, seat=1).seat == 1
    with pytest.raises(InvalidArgumentError):
        first_of(client, gid, g.admin_token)
    with Client(engine.address, operator_key=OPERATOR_KEY) as op:
        assert first_of(op, gid, seat=0).seat == 0
    with (
        Client(engine.address, operator_key="not-the-operator-key-0000") as op,
        pytest.raises(UnauthenticatedError) as bad_key,
    ):
        first_of(op, gid, seat=0)
    assert bad_key.value.reason == "UNKNOWN_OPERATOR_KEY"
    assert first_of(client, gid, g.token(1)).seat == 1
    # and a seat's token the other seat's too: the opponent's review beside yours
    assert first_of(client, gid, g.token(0), seat=1).seat == 1


def test_bytes_that_are_not_a_request_are_refused(engine: support.Engine) -> None:
    channel = grpc.insecure_channel(engine.address)
    call = channel.unary_stream("/ascension.v1.Engine/ReviewGame")
    with pytest.raises(grpc.RpcError) as e:
        list(call(b"\xff\xff\xff", timeout=10))
    channel.close()
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_a_server_without_ai_gives_no_reviews() -> None:
    e = support.start_engine()  # ENGINE_AI_DISPATCH=off
    try:
        with Client(e.address) as c:
            g = c.create_game([human("A"), human("B")], seed=5)
            with pytest.raises(IllegalActionError) as off:
                first_of(c, g.game_id, g.token(0))
    finally:
        e.stop()
    assert off.value.reason == "REVIEW_DISABLED"


def test_a_game_that_does_not_exist(client: Client) -> None:
    with pytest.raises(GameNotFoundError):
        first_of(client, "0" * 22, "x" * 43)


class Saboteur:
    """The ISMCTS bot, but for a few decisions where it plays, on purpose, the action its own
    larger search rates far below the best: those versions are ``sabotaged``."""

    def __init__(self, count: int, from_turn: int, gap: float) -> None:
        self.bot = ISMCTSBot()
        self.count, self.from_turn, self.gap = count, from_turn, gap
        self.sabotaged: list[int] = []
        self.own: list[int] = []  # versions of the bot's own decisions with a real choice

    def __call__(self, s: rules.State, legal: list[int], version: int) -> int:
        view = rules.view(s, s.to_move())
        a = self.bot.choose(view, legal, BotSettings(iterations=100, seed=7))
        if not review.real_choice(s, legal, a):
            return a
        if len(self.sabotaged) < self.count and s.turn >= self.from_turn:
            rated = analyse(view, legal, BotSettings(iterations=300, seed=3))
            cands = [c for c in rated if c.visits]
            worst = min(cands, key=lambda c: c.win_probability)
            if cands[0].win_probability - worst.win_probability >= self.gap:
                self.sabotaged.append(version)
                return worst.action
        self.own.append(version)
        return a


def test_deliberately_bad_decisions_are_mistakes_and_the_bots_own_mostly_good(
    client: Client,
) -> None:
    saboteur = Saboteur(count=3, from_turn=6, gap=0.12)
    g, _, _ = play(client, 51, choose={0: saboteur}, until=lambda s: len(saboteur.sabotaged) == 3)
    assert len(saboteur.sabotaged) == 3, "no decision with a large enough gap to spoil"
    got = {r.version: r for r in client.review(g.game_id, g.token(0), budget_ms=CAP_MS)}
    assert set(got) == set(saboteur.sabotaged) | set(saboteur.own)
    for v in saboteur.sabotaged:
        assert got[v].label in (ReviewLabel.MISTAKE, ReviewLabel.BLUNDER), got[v]
        assert got[v].differs and got[v].drop >= review.INACCURACY_BELOW
    own = [got[v].label for v in saboteur.own]
    good = sum(lbl in (ReviewLabel.BEST, ReviewLabel.GOOD) for lbl in own)
    print("own decisions:", sorted(lbl.name for lbl in own))
    assert len(own) >= 8 and good >= 0.6 * len(own), own
