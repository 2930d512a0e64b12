"""Small pieces without a server: error mapping, the runner's arithmetic, the CLI's options."""

from __future__ import annotations

from typing import Any

import pytest

from clients import bots_runner, cli
from clients.sdk import errors
from clients.sdk._grpc import grpc
from clients.sdk._requests import RetryPolicy, create_game_request
from clients.sdk.types import bot, human


class FakeRpcError(grpc.RpcError):  # type: ignore[misc]
    def __init__(self, code: Any, details: str, trailing: Any = ()) -> None:
        self._code, self._details, self._trailing = code, details, trailing

    def code(self) -> Any:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> Any:
        return self._trailing


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (grpc.StatusCode.INVALID_ARGUMENT, errors.InvalidArgumentError),
        (grpc.StatusCode.NOT_FOUND, errors.GameNotFoundError),
        (grpc.StatusCode.UNAUTHENTICATED, errors.UnauthenticatedError),
        (grpc.StatusCode.PERMISSION_DENIED, errors.PermissionDeniedError),
        (grpc.StatusCode.FAILED_PRECONDITION, errors.IllegalActionError),
        (grpc.StatusCode.OUT_OF_RANGE, errors.HistoryGoneError),
        (grpc.StatusCode.UNAVAILABLE, errors.UnavailableError),
        (grpc.StatusCode.DEADLINE_EXCEEDED, errors.UnavailableError),
        (grpc.StatusCode.INTERNAL, errors.ServerError),
    ],
)
def test_status_codes_map_to_sdk_errors(code: Any, cls: type[errors.AscensionError]) -> None:
    e = errors.from_rpc_error(FakeRpcError(code, "the server's words"))
    assert type(e) is cls
    assert str(e) == "the server's words" and e.code == code.name


def test_aborted_carries_the_current_version() -> None:
    e = errors.from_rpc_error(
        FakeRpcError(grpc.StatusCode.ABORTED, "moved first", (("current-version", "17"),))
    )
    assert isinstance(e, errors.VersionConflictError) and e.current_version == 17
    e = errors.from_rpc_error(FakeRpcError(grpc.StatusCode.ABORTED, "moved first"))
    assert isinstance(e, errors.VersionConflictError) and e.current_version is None


def test_create_request_and_retry_policy() -> None:
    req = create_game_request([human("Ann"), bot("ismcts", time_ms=300, seed=4)], "both", 9)
    assert req.sets == "both" and req.seed == 9 and req.HasField("seed")
    assert req.seats[0].name == "Ann" and not req.seats[0].HasField("bot")
    assert req.seats[1].bot.name == "ismcts" and req.seats[1].bot.time_ms == 300
    assert not create_game_request([human(), human()], "ss", None).HasField("seed")
    with pytest.raises(ValueError, match="sets"):
        create_game_request([human()], "xx", None)
    policy = RetryPolicy(backoff_s=0.1, max_backoff_s=0.5)
    assert [policy.delay(i) for i in range(4)] == [0.1, 0.2, 0.4, 0.5]


def test_seats_rotate_and_stats_add_up() -> None:
    cfg = bots_runner.BotsConfig(bots=("a", "b", "c"), games=3, players=2)
    assert [cfg.seating(i) for i in range(3)] == [["a", "b"], ["b", "c"], ["c", "a"]]
    results = [
        bots_runner.GameResult(0, "g0", ["a", "b"], scores=[30, 20], winner=0),
        bots_runner.GameResult(1, "g1", ["b", "a"], scores=[25, 35], winner=1),
        bots_runner.GameResult(2, "g2", ["a", "b"], error="boom"),
    ]
    st = {s.name: s for s in bots_runner.stats(results)}
    assert st["a"].seats == 2 and st["a"].wins == 2 and st["a"].win_rate == 1.0
    assert st["a"].honor == 65 and st["a"].margin == 20
    assert st["b"].wins == 0 and st["b"].margin == -20
    table = bots_runner.results_table(cfg, results)
    assert table.row_count == 2 and "2/3 games" in str(table.title)


def test_cli_defaults() -> None:
    args = cli.build_parser().parse_args(["play"])
    assert args.bot == ["ismcts"] and args.budget_ms == 300 and args.players == 2
    assert args.sets == "ss" and args.seed is None
    args = cli.build_parser().parse_args(["bots", "--bots", "ismcts, heuristic", "--games", "4"])
    assert args.bots == ["ismcts", "heuristic"] and args.games == 4
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["play", "--sets", "nope"])


def test_cli_rejects_half_a_join(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASCENSION_ADDRESS", raising=False)
    assert cli.main(["play", "--game", "abc"]) == 2
    assert "--token" in capsys.readouterr().out
    assert cli.main(["watch", "g"]) == 2
    assert "--address" in capsys.readouterr().out
