"""AnalyzePosition on a real engine process (embedded store, the local AI pool): what a hint
holds, who may ask for one, the budget cap, the limits per seat, and the SDK's methods."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from clients.sdk import (
    AsyncClient,
    Client,
    InvalidArgumentError,
    NotYourTurnError,
    RateLimitedError,
    UnauthenticatedError,
    human,
)
from clients.sdk.errors import IllegalActionError
from tests.service import support

CAP_MS = 150
PER_MINUTE = 3


@pytest.fixture(scope="module")
def engine() -> Iterator[support.Engine]:
    e = support.start_engine(
        ENGINE_AI_DISPATCH="local",
        ENGINE_LOCAL_AI_PROCESSES="1",
        ENGINE_ANALYSIS_MAX_BUDGET_MS=str(CAP_MS),
        ENGINE_ANALYSIS_PER_MINUTE=str(PER_MINUTE),
    )
    yield e
    e.stop()


@pytest.fixture()
def client(engine: support.Engine) -> Iterator[Client]:
    with Client(engine.address, timeout=30.0) as c:
        yield c


def new_game(client: Client, seed: int) -> tuple[str, str, str]:
    """A game of two people: (id, token of the seat to move, token of the other seat)."""
    g = client.create_game([human("A"), human("B")], seed=seed)
    to_move = g.view.to_move
    return g.game_id, g.token(to_move), g.token(1 - to_move)


def test_a_hint_rates_every_legal_action_best_first(client: Client) -> None:
    gid, mine, _ = new_game(client, 5)
    view = client.get_view(gid, mine)
    a = client.analyze(gid, mine, 100)
    assert (a.version, a.seat, a.budget_ms) == (view.version, view.seat, 100)
    legal = {x.id: x.description for x in view.legal_actions}
    assert len(legal) > 1
    assert sorted(c.action for c in a.candidates) == sorted(legal)
    assert all(c.description == legal[c.action] for c in a.candidates)
    assert all(0.0 <= c.win_probability <= 1.0 for c in a.candidates)
    assert sum(c.visits for c in a.candidates) == a.iterations > 0
    ranked = [(c.visits, c.win_probability) for c in a.candidates]
    assert ranked == sorted(ranked, reverse=True)


def test_the_server_caps_the_budget(client: Client) -> None:
    gid, mine, _ = new_game(client, 6)
    assert client.analyze(gid, mine, 60_000).budget_ms == CAP_MS
    assert client.analyze(gid, mine, 0).budget_ms == CAP_MS  # 0: the cap
    with pytest.raises(InvalidArgumentError) as e:
        client.analyze(gid, mine, -1)
    assert [v.field for v in e.value.violations] == ["budget_ms"]


def test_only_the_seat_to_move_may_ask(client: Client) -> None:
    gid, mine, other = new_game(client, 7)
    _, other_game_token, _ = new_game(client, 8)
    with pytest.raises(UnauthenticatedError) as e:
        client.analyze(gid, "")  # a spectator
    assert e.value.reason == "TOKEN_REQUIRED"
    for token in ("forged", other_game_token):
        with pytest.raises(UnauthenticatedError) as e:
            client.analyze(gid, token)
        assert e.value.reason == "UNKNOWN_TOKEN"
    with pytest.raises(NotYourTurnError) as turn:
        client.analyze(gid, other)  # a seat of the game, not the one to move
    assert "hints are for the seat to move" in turn.value.message
    assert client.analyze(gid, mine, 20).candidates  # the seat to move is answered


def test_analyses_are_limited_per_seat(client: Client, engine: support.Engine) -> None:
    gid, mine, _ = new_game(client, 9)

    async def three() -> int:
        async with AsyncClient(engine.address, timeout=30.0) as ac:
            n = 0
            for _ in range(PER_MINUTE):
                n += len((await ac.analyze(gid, mine, 10)).candidates) > 0
            return n

    assert asyncio.run(three()) == PER_MINUTE
    with pytest.raises(RateLimitedError) as e:
        client.analyze(gid, mine, 10)
    assert e.value.metadata["limit"] == "ENGINE_ANALYSIS_PER_MINUTE"
    assert "per seat" in e.value.message and e.value.retry_after is not None
    other_gid, other_seat, _ = new_game(client, 10)  # another seat has its own count
    assert client.analyze(other_gid, other_seat, 10).candidates


def test_no_hints_without_ai_or_with_a_zero_cap() -> None:
    for env in ({"ENGINE_AI_DISPATCH": "off"}, {"ENGINE_ANALYSIS_MAX_BUDGET_MS": "0"}):
        e = support.start_engine(**{"ENGINE_AI_DISPATCH": "local", **env})
        try:
            with Client(e.address, timeout=30.0) as c:
                gid, mine, _ = new_game(c, 11)
                with pytest.raises(IllegalActionError) as refused:
                    c.analyze(gid, mine)
                assert refused.value.reason == "ANALYSIS_DISABLED", env
                assert refused.value.code == "FAILED_PRECONDITION"
        finally:
            e.stop()
