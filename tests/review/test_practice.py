"""PracticeFromHere on real engine processes, through the SDK: the new game starts at the
decision asked for, shows its player exactly what the seat knew then, deals every card the
seat could not see again (never the original's cards), plays on against the bots, replays from
its first state; who may ask, bad requests, and the limit per peer."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from clients.sdk import (
    Client,
    GameNotOverError,
    IllegalActionError,
    InvalidArgumentError,
    PermissionDeniedError,
    RateLimitedError,
    UnauthenticatedError,
    bot,
)
from clients.sdk.types import BotSpec
from engine_service import rules
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server import convert, explain, review, seats
from tests.ai.test_hidden_information import differs_in_hidden_cards
from tests.review.support import play, states_of
from tests.service import support

SEED = 31


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """A Redis of the module's own (the production store: the practice game's first state
    is kept in its record)."""
    with support.redis_server() as url:
        yield url


@pytest.fixture(scope="module")
def engine(redis_url: str) -> Iterator[support.Engine]:
    e = support.start_engine(
        redis_url,
        ENGINE_AI_DISPATCH="local",
        ENGINE_LOCAL_AI_PROCESSES="1",
        ENGINE_LOCAL_ANALYSIS_PROCESSES="1",
        ENGINE_ANALYSIS_MAX_ITERATIONS="40",
        ENGINE_ANALYSIS_GRACE_SECONDS="30",  # a cold pool on a busy machine
        ENGINE_PRACTICE_PER_MINUTE="0",
    )
    yield e
    e.stop()


@pytest.fixture()
def client(engine: support.Engine) -> Iterator[Client]:
    with Client(engine.address, timeout=60.0) as c:
        yield c


def decision_of(states: dict[int, rules.State], log: list[tuple[int, int]], seat: int,
                min_turn: int) -> int:  # fmt: skip
    """The last version at which ``seat`` had a real choice, from turn ``min_turn`` on."""
    found = [
        v
        for v, s in states.items()
        if s.turn >= min_turn
        and log[v - 1][0] == seat
        and review.real_choice(s, rules.legal_actions(s), log[v - 1][1])
    ]
    assert found, "the game gave the seat no real choice"
    return found[-1]


def first_state(client: Client, game_id: str) -> rules.State:
    replay = client.get_replay(game_id)
    assert replay.start_state and replay.practice.game_id
    return rules.deserialize(replay.start_state)


def test_practice_starts_at_the_decision_with_what_the_seat_knew_and_no_more(
    client: Client,
) -> None:
    g, s, log = play(client, SEED, turns=5)
    assert not s.over
    states = states_of(SEED, log)
    v = decision_of(states, log, 0, 3)
    at = states[v]
    a = client.practice(g.game_id, g.token(0), v)
    b = client.practice(g.game_id, g.token(0), v)
    for p in (a, b):
        assert (p.seat, p.from_game, p.from_version, p.from_turn) == (0, g.game_id, v, at.turn)
        assert p.game_id not in (g.game_id, a.game_id if p is b else "")
        view = p.view
        assert (view.version, view.seat, view.to_move, view.over) == (1, 0, 0, False)
        assert (view.practice.game_id, view.practice.version) == (g.game_id, v)
        assert sorted(x.id for x in view.legal_actions) == sorted(rules.legal_actions(at))
        # The board as the seat saw it then, to the last multiset: nothing more, nothing less.
        assert rules.View.deserialize(view.rules_view) == rules.view(at, 0)
        assert [i.kind for i in view.seat_info] == [pb.SeatInfo.HUMAN, pb.SeatInfo.AI]
        assert view.seat_info[1].difficulty == "normal"  # (seat 1 was a person's)
        assert view.seat_info[0].name == "A"
    # The original goes on, untouched; once the practice games end, their first states show
    # what was dealt: the seat's view of the decision, every hidden card dealt again.
    assert client.get_view(g.game_id).version == len(log) + 1
    for p in (a, b):
        client.resign(p.game_id, p.token)
    sa, sb = first_state(client, a.game_id), first_state(client, b.game_id)
    for start in (sa, sb):
        assert rules.view(start, 0) == rules.view(at, 0)
        assert differs_in_hidden_cards(start, at, 0)
    assert differs_in_hidden_cards(sa, sb, 0)


def test_a_practice_game_plays_on_replays_and_is_reviewed_from_its_first_state(
    client: Client,
) -> None:
    g, _, log = play(client, SEED + 1, sets="both", turns=3)
    states = states_of(SEED + 1, log, sets="both")
    v = decision_of(states, log, 1, 2)
    p = client.practice(g.game_id, g.token(1), v, opponents=bot("heuristic"))
    assert p.seat == 1 and p.view.seat_info[0].kind == pb.SeatInfo.AI
    hint = client.analyze(p.game_id, p.token, 200)
    assert hint.chance_is_guess == explain.chance_is_guess(states[v])
    rng = random.Random(3)
    turns_of_the_bot = 0
    view = p.view
    for _ in range(400):  # the seat's moves, until the bot has played two of its turns
        if view.over or turns_of_the_bot >= 2:
            break
        before = view.version
        chosen = support.pick(view, rng)
        client.submit(p.game_id, p.token, chosen)
        view = client.wait_turn(p.game_id, p.token, timeout=120)
        if view.version > before + 1:
            turns_of_the_bot += 1
    assert turns_of_the_bot >= 2 or view.over
    reviewed = list(client.review(p.game_id, p.token, budget_ms=200))
    assert reviewed and all(r.seat == 1 for r in reviewed)
    assert any(r.chance_is_guess for r in reviewed) == explain.chance_is_guess(states[v])
    if not view.over:
        client.resign(p.game_id, p.token)
    # The history from the first version is rebuilt from the practice game's first state.
    replay = client.get_replay(p.game_id)
    seen = [u.version for u in client.watch(p.game_id, 0)]
    assert seen == list(range(1, replay.version + 1))
    again = rules.deserialize(replay.start_state)
    for step in replay.steps:
        if not seats.is_table_action(step.action):
            rules.apply(again, step.action)
    assert [x.total for x in replay.scores] == [x.total for x in convert.scores(again)]
    assert replay.version == len(replay.steps) + 1 > view.version - 1


def test_who_may_practise_and_what_is_refused(client: Client) -> None:
    g, _, log = play(client, SEED + 2, turns=3)
    states = states_of(SEED + 2, log)
    v0 = decision_of(states, log, 0, 1)
    v1 = decision_of(states, log, 1, 1)
    with pytest.raises(PermissionDeniedError) as other:
        client.practice(g.game_id, g.token(0), v1, seat=1)
    assert other.value.reason == "PRACTICE_OTHER_SEAT"
    with pytest.raises(GameNotOverError):
        client.practice(g.game_id, g.admin_token, v0, seat=0)
    with pytest.raises(IllegalActionError) as not_mine:
        client.practice(g.game_id, g.token(0), v1)
    assert not_mine.value.reason == "NOT_A_DECISION" and not_mine.value.metadata["to_move"] == "1"
    with pytest.raises(InvalidArgumentError) as late:
        client.practice(g.game_id, g.token(0), len(log) + 5)
    assert late.value.violations[0].field == "version"
    with pytest.raises(InvalidArgumentError) as level:
        client.practice(g.game_id, g.token(0), v0, opponents=BotSpec(difficulty="godlike"))
    assert level.value.violations[0].field == "opponents.difficulty"
    with pytest.raises(UnauthenticatedError):
        client.practice(g.game_id, "not-a-token", v0)
    # Once the game is over: the opponent's decisions too, and the admin token's any seat.
    client.resign(g.game_id, g.token(1))
    assert client.practice(g.game_id, g.token(0), v1, seat=1).seat == 1
    assert client.practice(g.game_id, g.admin_token, v0, seat=0).seat == 0
    with pytest.raises(InvalidArgumentError) as seatless:
        client.practice(g.game_id, g.admin_token, v0)
    assert seatless.value.violations[0].field == "seat"
    with pytest.raises(IllegalActionError) as over:
        client.practice(g.game_id, g.token(0), 0)  # (now: the game is over)
    assert over.value.reason == "NOT_A_DECISION"


def test_practice_games_are_limited_per_peer() -> None:
    e = support.start_engine(ENGINE_PRACTICE_PER_MINUTE="2")
    try:
        with Client(e.address, timeout=30.0) as c:
            g = support.create(c._stub, seed=5)  # (two people; dispatch is off: no bot moves)
            first = c.practice(g.game_id, g.seat_tokens[0])
            c.practice(first.game_id, first.token)  # (a practice of a practice counts too)
            with pytest.raises(RateLimitedError) as limited:
                c.practice(g.game_id, g.seat_tokens[0])
            assert limited.value.metadata["limit"] == "ENGINE_PRACTICE_PER_MINUTE"
    finally:
        e.stop()
