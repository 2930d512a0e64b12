"""Display names: what the engine refuses (disguises) and accepts (every script, symbols).

Through the real engine's CreateGame (every seat, human or AI) and the `ascension` command's
--name; the browser lobby's path (the gateway) is in tests/web/test_gateway.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine_service import names
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from tests.service import support

REFUSED = [
    ("Ann\u202eevil", "U+202E RIGHT-TO-LEFT OVERRIDE"),  # bidi override: shows "Annlive"
    ("\u2067Ann\u2069", "U+2067 RIGHT-TO-LEFT ISOLATE"),
    ("\u200b", "U+200B ZERO WIDTH SPACE"),
    ("\u200b\u200b\u200b", "U+200B ZERO WIDTH SPACE"),
    ("A\u200dnn", "U+200D ZERO WIDTH JOINER"),
    ("\ufeffAnn", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
    ("Ann\U000e0041", "U+E0041 TAG LATIN CAPITAL LETTER A"),
    ("Ann\u00ad", "U+00AD SOFT HYPHEN"),
    ("Ann\x7f", "U+007F, a control character"),
    ("Ann\x85", "U+0085, a control character"),
    ("Ann\nBob", "U+000A, a control character"),
    ("Ann\u2028Bob", "U+2028 LINE SEPARATOR"),
    ("Ann\u00a0", "U+00A0 NO-BREAK SPACE"),
    ("\ue000", "U+E000, a private-use character"),
    ("   ", "no visible character"),
    ("\u3164", "no visible character"),  # HANGUL FILLER: a letter that shows nothing
    ("\u2800\u2800", "no visible character"),  # BRAILLE PATTERN BLANK
    ("\u0301\u0301", "no visible character"),  # combining marks on nothing
    (" Ann", "a space at an end"),
    ("x" * 65, "65 characters"),
]
ACCEPTED = ["Ann", "Zoë", "李小龍", "Ωμέγα", "Анна", "אביגיל", "عائشة", "Ann-Marie O'Brien",
            "☠ Blackbeard ☠", "x" * 64, "🦜 Polly"]  # fmt: skip


@pytest.mark.parametrize(("name", "fault"), REFUSED)
def test_disguising_names_are_refused_with_the_rule(
    stub: rpc.EngineStub, name: str, fault: str
) -> None:
    for seat in (1, 0):  # a human seat, and an AI seat's name
        seats = [epb.SeatConfig(), epb.SeatConfig()]
        seats[seat] = (
            epb.SeatConfig(name=name)
            if seat
            else epb.SeatConfig(kind=pb.SeatInfo.AI, name=name, bot=epb.BotSettings(name="random"))
        )
        err = support.rpc_error(stub.CreateGame, epb.CreateGameRequest(seats=seats))
        assert err.code().name == "INVALID_ARGUMENT"
        assert err.details().startswith(f"seats[{seat}].name: {names.ALLOWED}; "), err.details()
        assert fault in err.details(), err.details()


def test_names_of_every_script_are_kept_as_given(stub: rpc.EngineStub) -> None:
    for name in ACCEPTED:
        game = stub.CreateGame(
            epb.CreateGameRequest(seats=[epb.SeatConfig(name=name), epb.SeatConfig()]), timeout=10
        )
        shown = [s.name for s in game.view.seat_info]
        assert shown == [name, "Seat 2"], shown  # empty: the default name
        stub.DeleteGame(
            epb.DeleteGameRequest(game_id=game.game_id, admin_token=game.admin_token), timeout=10
        )


def test_the_command_line_refuses_a_disguised_name_before_starting_anything() -> None:
    ascension = Path(sys.executable).with_name("ascension")
    for command in ("play", "web"):
        result = subprocess.run(
            [str(ascension), command, "--name", "Ann\u202eevil"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 2, result.stderr
        assert "--name" in result.stderr and "U+202E" in result.stderr, result.stderr
