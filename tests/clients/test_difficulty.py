"""Difficulty levels: a seat named by its level gets that level's bot and budget, from the
engine (CreateGame), the SDK and the command line alike."""

from __future__ import annotations

from typing import Any

import pytest

from clients import cli
from clients.sdk import DIFFICULTIES, Client, InvalidArgumentError, bot, human
from clients.terminal.style import seat_name
from engine_service.api.ascension.v1 import engine_pb2, game_pb2
from engine_service.server import validate
from engine_service.server.bots import DIFFICULTIES as LEVELS
from engine_service.server.errors import ServiceError
from tests.clients.conftest import requires_ai


def _request(**bot_fields: Any) -> engine_pb2.CreateGameRequest:
    return engine_pb2.CreateGameRequest(
        seats=[
            engine_pb2.SeatConfig(kind=game_pb2.SeatInfo.HUMAN),
            engine_pb2.SeatConfig(
                kind=game_pb2.SeatInfo.AI, bot=engine_pb2.BotSettings(**bot_fields)
            ),
        ]
    )


def test_the_sdk_and_the_engine_name_the_same_levels_weakest_first() -> None:
    assert tuple(LEVELS) == DIFFICULTIES == ("easy", "normal", "hard", "expert")


@pytest.mark.parametrize("level", DIFFICULTIES)
def test_a_level_becomes_its_bot_and_budget(level: str) -> None:
    seats = validate.seats(_request(difficulty=level, seed=5))
    b = seats[1].bot
    assert b is not None
    want = LEVELS[level]
    assert (b.name, b.iterations, b.time_ms, b.seed) == (
        want.bot,
        want.iterations,
        want.time_ms,
        5,
    )


def test_the_search_levels_count_iterations() -> None:
    """So that a level is as strong on a busy machine as on an idle one."""
    for level in ("hard", "expert"):
        assert LEVELS[level].iterations > 0
    assert LEVELS["expert"].iterations > LEVELS["hard"].iterations


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"difficulty": "godlike"}, "unknown difficulty 'godlike'; one of: easy, normal"),
        ({"difficulty": "hard", "name": "ismcts"}, "leave name, iterations and time_ms unset"),
        ({"difficulty": "hard", "time_ms": 300}, "leave name, iterations and time_ms unset"),
    ],
)
def test_a_wrong_level_is_refused_naming_the_field(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ServiceError) as e:
        validate.seats(_request(**fields))
    assert e.value.violations[0][0] == "seats[1].bot.difficulty"
    assert says in e.value.message


def test_the_sdk_refuses_an_unknown_level_before_asking() -> None:
    with pytest.raises(ValueError, match="unknown difficulty 'godlike'"):
        bot(difficulty="godlike")
    spec = bot(difficulty="hard", seed=3).bot
    assert spec is not None
    msg = spec.to_proto()
    assert (msg.difficulty, msg.name, msg.iterations, msg.time_ms, msg.seed) == (
        "hard",
        "",
        0,
        0,
        3,
    )


def test_the_command_line_takes_a_level() -> None:
    args = cli.build_parser().parse_args(["play", "--difficulty", "expert"])
    assert args.difficulty == "expert"
    assert cli.build_parser().parse_args(["play"]).difficulty is None
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["play", "--difficulty", "godlike"])
    assert cli.build_parser().parse_args(["web", "--difficulty", "easy"]).difficulty == "easy"


@requires_ai
def test_levels_over_the_api(client: Client) -> None:
    game = client.create_game(
        [human("Ann"), bot(difficulty="expert", seed=1), bot(difficulty="easy", seed=2)], sets="ss"
    )
    names = {s.seat: s.bot_name for s in game.view.seat_info}
    assert names[1] == LEVELS["expert"].bot and names[2] == LEVELS["easy"].bot
    # the level is shown, not only its bot (Hard and Expert are both ismcts)
    levels = {s.seat: s.difficulty for s in client.get_view(game.game_id).seat_info}
    assert levels == {0: "", 1: "expert", 2: "easy"}
    hard = client.create_game([human("Bo"), bot(difficulty="hard", seed=1),
                               bot("ismcts", time_ms=300, seed=2)], sets="ss")  # fmt: skip
    assert [s.difficulty for s in hard.view.seat_info] == ["", "hard", ""]
    assert seat_name(hard.view, 1) == "Seat 2 (ismcts, Hard)"
    assert seat_name(hard.view, 2) == "Seat 3 (ismcts)"
    # the engine's own check, through the wire: a level with a name is refused
    request = _request(difficulty="hard", name="ismcts")
    with pytest.raises(InvalidArgumentError) as e:
        client._call(lambda: client._stub.CreateGame(request, timeout=10))
    assert e.value.violations[0].field == "seats[1].bot.difficulty"


@requires_ai
def test_a_level_plays(client: Client) -> None:
    """Two levels' bots play each other: the game moves on without anyone at the keyboard."""
    game = client.create_game(
        [bot(difficulty="hard", seed=1), bot(difficulty="normal", seed=2)], sets="ss"
    )
    with client.watch(game.game_id, after_version=0) as updates:
        for update in updates:
            if update.version >= 12 or update.over:
                break
    assert client.get_view(game.game_id).version >= 12


def test_the_help_says_what_each_level_and_bot_is(capsys: pytest.CaptureFixture[str]) -> None:
    """`--help` names each level's bot and budget as the engine sets them, and says that the
    `expert` bot is not the Expert level (it is rated below Hard)."""
    assert list(cli.LEVELS) == list(LEVELS)
    for level, d in LEVELS.items():
        said = cli.LEVELS[level]
        assert d.bot in said, (level, said)
        if d.iterations:
            assert f"{d.iterations:,} iterations" in said, (level, said)
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["play", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "expert: a scripted planner (despite its name, rated below --difficulty hard" in shown
    assert "hard (ismcts, 100 iterations a move)" in shown
