"""Operator credentials, who may choose a seed, per-peer rate limits and the cap on live games:
each refusal says which credential or limit, as a typed SDK exception."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from clients.sdk import (
    Client,
    GameNotFoundError,
    LiveGamesLimitError,
    OperatorCredentialError,
    RateLimitedError,
    SeedNotAllowedError,
    bot,
    human,
)
from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from tests.service import support

KEY = "operator-key-" + "k" * 24
OTHER = "operator-key-" + "z" * 24
PEOPLE = [human("A"), human("B")]
BOTS = [bot("random", seed=1), bot("random", seed=2)]


@pytest.fixture(scope="module")
def closed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[support.Engine]:
    """Operator keys from a secret file; CreateGame rate-limited (operators are not counted)."""
    keys = tmp_path_factory.mktemp("keys") / "operator-keys"
    keys.write_text(f"# operators\n{KEY}\n{OTHER}\n")
    e = support.start_engine(
        ENGINE_OPERATOR_KEYS_FILE=str(keys),
        ENGINE_CALLER_SEEDS="operator",
        ENGINE_PUBLIC_CREATE="false",
    )
    yield e
    e.stop()


@pytest.fixture(scope="module")
def open_server() -> Iterator[support.Engine]:
    """No operator keys; seeds as in production (ENGINE_CALLER_SEEDS=operator, the default)."""
    e = support.start_engine(ENGINE_CALLER_SEEDS="operator")
    yield e
    e.stop()


@contextlib.contextmanager
def _engine(**env: str) -> Iterator[support.Engine]:
    e = support.start_engine(**env)
    try:
        yield e
    finally:
        e.stop()


def test_operator_calls_need_a_key(closed: support.Engine) -> None:
    with Client(closed.address, timeout=10.0) as anon:
        with pytest.raises(OperatorCredentialError) as info:
            anon.create_game(PEOPLE)
        assert info.value.reason == "OPERATOR_CREDENTIAL_REQUIRED" and "authorization" in str(info.value)
        with pytest.raises(OperatorCredentialError):
            anon.list_games()
    with Client(closed.address, timeout=10.0, operator_key="not-a-key-of-this-server") as wrong:
        with pytest.raises(OperatorCredentialError) as info:
            wrong.create_game(PEOPLE)
        assert info.value.reason == "UNKNOWN_OPERATOR_KEY"
    with Client(closed.address, timeout=10.0, operator_key=OTHER) as op:
        game = op.create_game(PEOPLE, seed=12)  # an operator may choose the seed of any game
        assert game.game_id in {g.game_id for g in op.list_games().games}
        with Client(closed.address, timeout=10.0) as anon:
            # the game itself is open to its seats and spectators, without the operator key
            assert anon.get_view(game.game_id, game.token(0)).seat == 0
            with pytest.raises(OperatorCredentialError):
                anon.delete_game(game.game_id, game.admin_token)
        op.delete_game(game.game_id, "")  # operators delete without the admin token
        with pytest.raises(GameNotFoundError):
            op.get_view(game.game_id)


def test_public_create_with_operator_keys() -> None:
    e = support.start_engine(ENGINE_OPERATOR_KEYS=KEY, ENGINE_PUBLIC_CREATE="true",
                             ENGINE_CALLER_SEEDS="operator")  # fmt: skip
    try:
        with Client(e.address, timeout=10.0) as anon:
            anon.create_game(PEOPLE)
            with pytest.raises(SeedNotAllowedError):
                anon.create_game(PEOPLE, seed=3)
            with pytest.raises(OperatorCredentialError):
                anon.list_games()
    finally:
        e.stop()


def test_seeds_of_games_with_people_are_the_servers(open_server: support.Engine) -> None:
    with Client(open_server.address, timeout=10.0) as c:
        with pytest.raises(SeedNotAllowedError) as info:
            c.create_game([human("A"), bot("random", seed=1)], seed=42)
        assert info.value.code == "PERMISSION_DENIED" and "seed" in str(info.value)
        assert info.value.reason == "SEED_NEEDS_OPERATOR"
        c.create_game(BOTS, seed=42)  # no human seat: nobody to deceive
    # the server's secret seed: GetReplay gives it once the game is over, and it replays
    stub = open_server.stub()
    game = support.create(stub, seed=None)
    final, _ = support.play_to_end(stub, game, seed=4)
    replay = stub.GetReplay(epb.GetReplayRequest(game_id=game.game_id), timeout=10)
    s = rules.new_game(rules.GameConfig(sets=replay.sets, players=replay.players, seed=replay.seed))
    for step in replay.steps:
        rules.apply(s, step.action)
    assert final.over and s.over and replay.winner == rules.winner(s)


def test_create_rate_limit_names_itself() -> None:
    with _engine(ENGINE_LIMIT_CREATE_PER_MINUTE="3") as e, Client(e.address, timeout=10.0) as c:
        made = []
        with pytest.raises(RateLimitedError) as info:
            for _ in range(10):
                made.append(c.create_game(BOTS))
        assert len(made) == 3
        err = info.value
        assert err.code == "RESOURCE_EXHAUSTED" and "ENGINE_LIMIT_CREATE_PER_MINUTE" in str(err)
        assert err.limit == "ENGINE_LIMIT_CREATE_PER_MINUTE"
        assert err.retry_after is not None and 0 < err.retry_after <= 20


def test_submit_rate_limit_names_itself() -> None:
    with _engine(ENGINE_LIMIT_SUBMIT_PER_SECOND="2") as e:
        stub = e.stub()
        codes = []
        for _ in range(10):  # counted before anything else: even requests that are refused
            req = epb.SubmitActionRequest(game_id="0" * 22, token="t", expected_version=1)
            err = support.rpc_error(stub.SubmitAction, req)
            codes.append(err.code().name)
            if codes[-1] == "RESOURCE_EXHAUSTED":
                assert "ENGINE_LIMIT_SUBMIT_PER_SECOND" in err.details()
                break
        assert codes[0] == "NOT_FOUND" and codes[-1] == "RESOURCE_EXHAUSTED", codes


def test_live_games_cap_names_itself() -> None:
    with (
        _engine(ENGINE_MAX_LIVE_GAMES="3", ENGINE_AI_DISPATCH="off") as e,
        Client(e.address, timeout=10.0) as c,
    ):
        made = [c.create_game(BOTS) for _ in range(3)]
        with pytest.raises(LiveGamesLimitError) as info:
            c.create_game(BOTS)
        assert "ENGINE_MAX_LIVE_GAMES" in str(info.value) and info.value.limit == "ENGINE_MAX_LIVE_GAMES"
        c.delete_game(made[0].game_id, made[0].admin_token)
        c.create_game(BOTS)  # room again


def test_unknown_bearer_scheme_is_no_key(closed: support.Engine) -> None:
    stub = closed.stub()
    err = support.rpc_error(stub.ListGames, epb.ListGamesRequest(),
                            metadata=(("authorization", f"Basic {KEY}"),))  # fmt: skip
    assert err.code().name == "UNAUTHENTICATED"
    ok = stub.ListGames(epb.ListGamesRequest(), timeout=10,
                        metadata=(("authorization", f"bearer {KEY}"),))  # fmt: skip
    assert ok is not None


def test_the_live_games_cap_counts_again_only_near_the_cap() -> None:
    """Counting live games reads 64 indexes: far from the cap a count under a second old plus
    this replica's creates since does; within 10% of it every CreateGame counts again, and the
    cap is never passed by one replica's own creates."""
    import asyncio

    from engine_service.server.errors import ServiceError
    from engine_service.server.limits import LiveGamesCap

    live = [0]
    reads = [0]
    now = [0.0]

    async def count() -> int:
        reads[0] += 1
        return live[0]

    async def run() -> None:
        cap = LiveGamesCap(100, count, clock=lambda: now[0])
        for _ in range(90):  # one count read (0), then the creates let through here, up to 90%
            await cap.check()
            live[0] += 1
        assert reads[0] == 1
        for _ in range(10):  # within 10% of the cap: each check counts again
            await cap.check()
            live[0] += 1
        assert reads[0] == 11 and live[0] == 100
        with pytest.raises(ServiceError) as e:
            await cap.check()
        assert e.value.reason == "LIVE_GAMES_LIMIT" and reads[0] == 12
        # Games end; a count older than a second is read again.
        live[0] = 10
        now[0] += 2.0
        await cap.check()
        await cap.check()
        assert reads[0] == 13

    asyncio.run(run())
