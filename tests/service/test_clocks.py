"""Turn clocks against real engines on a real Redis: a human seat that never moves is played
for within its deadline plus 2 s under each policy, once however many engines sweep the same
store; an engine restart keeps the deadline; a late move is refused; moves played for a seat
are marked. The arithmetic of allowance, bank and increment is checked on its own first."""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc  # type: ignore[import-untyped]
import pytest

from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server import clocks
from tests.service import support

FORCED, BOT, FORFEIT = pb.TIMEOUT_POLICY_FORCED_MOVE, pb.TIMEOUT_POLICY_BOT, pb.TIMEOUT_POLICY_FORFEIT
SWEEP = {"ENGINE_CLOCK_SWEEP_SECONDS": "0.2"}


# ---- the arithmetic ---------------------------------------------------------------------


def _state() -> rules.State:
    return rules.new_game(rules.GameConfig(sets="ss", players=2, seed=3))


def test_time_beyond_the_allowance_comes_out_of_the_bank_and_a_turn_end_adds_the_increment() -> None:
    c = clocks.ClockSettings(turn_ms=10_000, bank_ms=60_000, increment_ms=5_000,
                             policy=clocks.FORCED_MOVE, bot_difficulty="")  # fmt: skip
    s = _state()
    human = (True, True)
    run = clocks.start(c, s, human, now_ms=0)
    q = run.seat
    assert q == s.to_move() and run.deadline_ms() == 70_000
    legal = rules.legal_actions(s)
    rules.apply(s, legal[0])  # (placing the ship: still q's turn)
    run = clocks.advance(c, run, s, human, 4_000, 2, q, timed_out=False)
    assert run.seat == q and run.turn_left[q] == 6_000 and run.bank[q] == 60_000
    assert run.deadline_ms() == 4_000 + 6_000 + 60_000
    rules.apply(s, A_END_TURN)
    run = clocks.advance(c, run, s, human, 30_000, 3, q, timed_out=False)  # 26 s: 6 + 20 of bank
    assert run.bank[q] == 60_000 - 20_000 + 5_000  # and the increment, the turn being over
    assert run.seat == 1 - q and run.turn_left == (10_000, 10_000)
    assert run.deadline_ms() == 30_000 + 10_000 + 60_000


def test_a_timeout_is_counted_once_per_stretch_and_its_moves_are_listed() -> None:
    c = clocks.ClockSettings(turn_ms=1_000, bank_ms=0, increment_ms=0,
                             policy=clocks.FORCED_MOVE, bot_difficulty="")  # fmt: skip
    s = _state()
    run = clocks.start(c, s, (True, True), now_ms=0)
    q = run.seat
    rules.apply(s, rules.legal_actions(s)[0])
    run = clocks.advance(c, run, s, (True, True), 1_100, 2, q, timed_out=True)
    assert run.ran_out(q, 1_100) and run.timeouts[q] == 1
    rules.apply(s, A_END_TURN)
    run = clocks.advance(c, run, s, (True, True), 1_150, 3, q, timed_out=True)
    assert run.timeouts[q] == 1 and run.timed_out == (2, 3)
    assert run.seat == 1 - q and not run.ran_out(1 - q, 1_150)


def test_the_forced_move_declines_or_ends_the_turn() -> None:
    s = _state()
    assert s.decision is not None  # (the first turn's placement: required)
    legal = rules.legal_actions(s)
    assert clocks.forced_move(s, legal) == legal[0]
    rules.apply(s, legal[0])
    assert clocks.forced_move(s, rules.legal_actions(s)) == A_END_TURN


A_END_TURN = rules.actions.END_TURN << 16


# ---- the service ------------------------------------------------------------------------


def _create(stub: rpc.EngineStub, policy: pb.TimeoutPolicy, turn: int = 1,
            bot_difficulty: str = "") -> epb.CreateGameResponse:  # fmt: skip
    clock = pb.ClockSettings(turn_seconds=turn, on_timeout=policy, bot_difficulty=bot_difficulty)
    req = epb.CreateGameRequest(sets="ss", seats=support.human_seats(2), clock=clock)
    resp: epb.CreateGameResponse = stub.CreateGame(req, timeout=support.CALL_TIMEOUT)
    return resp


def _played_for(updates: list[pb.GameUpdate], deadline_ms: int) -> pb.GameUpdate:
    """The first move made after ``deadline_ms``, checked to be marked as played for the seat."""
    late = [u for u in updates if u.version > 1 and u.time_unix_ms >= deadline_ms]
    assert late and late[0].timeout.startswith("time ran out"), [u.timeout for u in updates]
    return late[0]


@pytest.fixture
def own_redis() -> Iterator[str]:
    """A Redis of the test's own: every engine on a store enforces its clocks, so a test that
    counts who did must not share its store with other tests' engines."""
    with support.redis_server() as url:
        yield url


# Every engine on a store enforces its clocks: each engine these tests start has a Redis of
# its own (or of its test's), so that what a test counts is its engines' doing.


@pytest.fixture(scope="module")
def clocked() -> Iterator[support.Engine]:
    with support.redis_server() as url:
        e = support.start_engine(url, **SWEEP)
        yield e
        e.stop()


def test_a_seat_that_never_moves_gets_its_default_played_within_its_deadline_plus_2s(
    clocked: support.Engine,
) -> None:
    stub = clocked.stub()
    game = _create(stub, FORCED)
    deadline = game.view.clock.deadline_unix_ms
    first = game.view.clock.seat
    assert first == game.view.to_move and deadline - game.view.clock.started_unix_ms == 1000
    watcher = support.Watcher(stub, game.game_id)
    updates = watcher.until(4)
    u = _played_for(updates, deadline)
    assert u.seat == first and u.time_unix_ms - deadline < 2000
    assert "default" in u.timeout and u.clock.timeouts[first] == 1
    # The seat's own move, once its time ran out, is refused while the engine plays for it.
    view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[first]),
                        timeout=support.CALL_TIMEOUT)  # fmt: skip
    assert support.metric(clocked, "ascension_clock_timeouts_total") >= 1
    assert view.clock.settings.turn_seconds == 1


def test_a_late_move_is_refused_with_time_ran_out(own_redis: str) -> None:
    redis_url = own_redis
    # An engine that does not sweep (housekeeping in another process would): the seat's time
    # runs out and nobody has played for it yet.
    e = support.start_engine(redis_url, ENGINE_CLOCK_SWEEP_SECONDS="3600")
    try:
        stub = e.stub()
        game = _create(stub, FORCED)
        seat = game.view.to_move
        view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[seat]),
                            timeout=support.CALL_TIMEOUT)  # fmt: skip
        while time.time() * 1000 < view.clock.deadline_unix_ms:
            time.sleep(0.05)
        err = support.rpc_error(stub.SubmitAction, epb.SubmitActionRequest(
            game_id=game.game_id, token=game.seat_tokens[seat], expected_version=view.version,
            action=view.legal_actions[0].id))  # fmt: skip
        assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "time ran out" in (err.details() or "")
    finally:
        e.stop()


def test_a_bot_plays_the_rest_of_the_turn_of_a_seat_out_of_time(own_redis: str) -> None:
    redis_url = own_redis
    # (an AI move dispatched while the local AI process is still starting is sent again by
    # the AI sweeper: within seconds here, not its default minute)
    e = support.start_engine(redis_url, ENGINE_AI_DISPATCH="local", ENGINE_AI_SWEEP_SECONDS="1",
                             ENGINE_AI_STALL_SECONDS="20", **SWEEP)  # fmt: skip
    try:
        stub = e.stub()
        game = _create(stub, BOT, bot_difficulty="easy")
        first = game.view.to_move
        assert game.view.clock.settings.bot_difficulty == "easy"
        watcher = support.Watcher(stub, game.game_id)
        updates = watcher.until(3, timeout=180)
        u = _played_for(updates, game.view.clock.deadline_unix_ms)
        assert u.seat == first
        # The seat's whole part of the turn is the bot's (the hand-over's own timing is the
        # sweep's, as for the forced moves above; the bot's move takes what the bot takes).
        mine = [x for x in updates[1:] if x.seat == first]
        assert mine and all("played by the easy bot" in x.timeout for x in mine)
        assert support.metric(e, 'ascension_clock_timeouts_total{policy="bot"}') == 1
    finally:
        e.stop()


def test_a_seat_out_of_time_forfeits_when_the_game_says_so(clocked: support.Engine) -> None:
    stub = clocked.stub()
    game = _create(stub, FORFEIT)
    first = game.view.to_move
    updates = support.Watcher(stub, game.game_id).result(timeout=60)  # (to its end)
    u = updates[-1]
    assert u.version == 2 and u.seat == first and u.action_kind == "resign" and u.over
    assert u.timeout == "time ran out: the seat forfeits"
    assert 0 <= u.time_unix_ms - game.view.clock.deadline_unix_ms < 2000
    view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=support.CALL_TIMEOUT)
    assert view.over and view.winner == 1 - first and view.seat_info[first].resigned
    assert list(view.clock.timeouts)[first] == 1


def _settled(stub: rpc.EngineStub, game_id: str) -> pb.GameView:
    """The game once its clocks stopped (every seat away: the engine stops playing for them)."""
    deadline = time.monotonic() + 60
    while True:
        view = stub.GetGame(epb.GetGameRequest(game_id=game_id), timeout=support.CALL_TIMEOUT)
        if view.clock.seat == -1:
            return view
        assert time.monotonic() < deadline, "the clocks did not stop"
        time.sleep(0.1)


def _timeouts_counted(*engines: support.Engine) -> float:
    return sum(support.metric(x, "ascension_clock_timeouts_total") for x in engines)


def test_two_engines_sweeping_one_store_play_each_timeout_once(own_redis: str) -> None:
    redis_url = own_redis
    a = support.start_engine(redis_url, **SWEEP)
    b = support.start_engine(redis_url, **SWEEP)
    try:
        game = _create(a.stub(), FORCED)
        view = _settled(b.stub(), game.game_id)
        # Each seat timed out twice (placing its ship and ending its first turn, then ending
        # its second): seven versions, whichever engine played each move, none played twice.
        assert view.version == 7 and list(view.clock.timeouts) == [2, 2]
        updates = support.Watcher(b.stub(), game.game_id).until(7)
        kinds = [(u.seat, u.action_kind) for u in updates[1:]]
        first = game.view.to_move
        other = 1 - first
        assert kinds == [(first, "place_ship"), (first, "end_turn"), (other, "place_ship"),
                         (other, "end_turn"), (first, "end_turn"), (other, "end_turn")]  # fmt: skip
        assert all(u.timeout for u in updates[1:])
        # One count per timeout, across the two (an engine counts just after its commit,
        # which the test may have seen first: wait for the fourth, then none more).
        deadline = time.monotonic() + 30
        while (counted := _timeouts_counted(a, b)) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert counted == 4
    finally:
        a.stop()
        b.stop()


def test_a_player_coming_back_starts_the_clocks_again(clocked: support.Engine) -> None:
    stub = clocked.stub()
    game = _create(stub, FORCED, turn=1)
    view = _settled(stub, game.game_id)
    seat = view.to_move
    mine = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[seat]),
                        timeout=support.CALL_TIMEOUT)  # fmt: skip
    end = next(a.id for a in mine.legal_actions if a.kind == "end_turn")
    resp = stub.SubmitAction(epb.SubmitActionRequest(
        game_id=game.game_id, token=game.seat_tokens[seat], expected_version=mine.version,
        action=end))  # fmt: skip
    assert resp.update.timeout == "" and resp.view.clock.seat == 1 - seat
    assert resp.view.clock.deadline_unix_ms > 0


def test_an_engine_restart_keeps_the_deadline(own_redis: str) -> None:
    redis_url = own_redis
    a = support.start_engine(redis_url, **SWEEP)
    try:
        game = _create(a.stub(), FORCED, turn=4)
        deadline = game.view.clock.deadline_unix_ms
    finally:
        a.stop()
    b = support.start_engine(redis_url, **SWEEP)
    try:
        view = b.stub().GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=support.CALL_TIMEOUT)
        assert view.clock.deadline_unix_ms == deadline and view.version == 1
        updates = support.Watcher(b.stub(), game.game_id).until(2, timeout=30)
        u = _played_for(updates, deadline)
        assert 0 <= u.time_unix_ms - deadline < 2000
    finally:
        b.stop()


@pytest.mark.parametrize(
    ("clock", "field"),
    [
        (pb.ClockSettings(), "clock"),
        (pb.ClockSettings(turn_seconds=-1), "clock.turn_seconds"),
        (pb.ClockSettings(bank_seconds=10**7), "clock.bank_seconds"),
        (pb.ClockSettings(turn_seconds=5, on_timeout=9), "clock.on_timeout"),  # type: ignore[arg-type]
        (pb.ClockSettings(turn_seconds=5, bot_difficulty="easy"), "clock.bot_difficulty"),
        (pb.ClockSettings(turn_seconds=5, on_timeout=BOT, bot_difficulty="godlike"), "clock.bot_difficulty"),
    ],
)
def test_bad_clock_settings_name_the_field(stub: rpc.EngineStub, clock: pb.ClockSettings, field: str) -> None:
    req = epb.CreateGameRequest(sets="ss", seats=support.human_seats(2), clock=clock)
    err = support.rpc_error(stub.CreateGame, req)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and field in (err.details() or "")


def test_a_game_without_clocks_has_none(stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    assert not game.view.HasField("clock")
    view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=support.CALL_TIMEOUT)
    assert not view.HasField("clock")
